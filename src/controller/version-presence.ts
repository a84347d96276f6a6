/**
 * A tenant pinned to an operator version that no running operator has would otherwise be ignored
 * forever. Every running version holds a Lease (leader election); a pin whose Lease is missing or
 * expired is reported: a Warning Event on the tenant (once per pin per quarter hour) and the
 * eva_tenants_pinned_to_absent_version gauge.
 */
import type { CoordinationV1Api, V1Lease } from '@kubernetes/client-node';
import type { EvaTenant } from '../api/evatenant.ts';
import type { Kube } from '../adapters/kube.ts';
import type { Logger } from '../log.ts';
import { leaseExpiresAt, leaseNameForVersion } from './lease.ts';

const REPORT_EVERY_MS = 15 * 60_000;

/** Lease names of the operator versions that are running now. */
export function presentLeases(leases: readonly V1Lease[], now: number): Set<string> {
  return new Set(
    leases
      .filter((l) => l.metadata?.name?.startsWith('eva-operator-') && l.spec?.holderIdentity && leaseExpiresAt(l.spec) > now)
      .map((l) => l.metadata?.name ?? ''),
  );
}

/** The tenants whose pin no running operator can honour (tenants being deleted included: they need an owner too). */
export function pinnedToAbsent(tenants: readonly EvaTenant[], present: ReadonlySet<string>): EvaTenant[] {
  return tenants.filter((t) => {
    const pin = t.spec.operatorVersion;
    return pin !== undefined && !present.has(leaseNameForVersion(pin));
  });
}

export interface PresenceSink {
  setTenantsPinnedToAbsentVersion(count: number): void;
}

export class VersionPresenceReporter {
  private readonly api: CoordinationV1Api;
  private readonly reported = new Map<string, number>();
  private readonly options: { kube: Kube; namespace: string; tenants: () => EvaTenant[]; metrics: PresenceSink; log: Logger };

  constructor(options: { kube: Kube; namespace: string; tenants: () => EvaTenant[]; metrics: PresenceSink; log: Logger }) {
    this.options = options;
    this.api = options.kube.coordination;
  }

  /** One pass: read the Leases, count and report tenants pinned to absent versions. */
  async check(now = Date.now()): Promise<number> {
    const { items } = await this.api.listNamespacedLease({ namespace: this.options.namespace });
    const absent = pinnedToAbsent(this.options.tenants(), presentLeases(items, now));
    this.options.metrics.setTenantsPinnedToAbsentVersion(absent.length);
    for (const tenant of absent) await this.report(tenant, now);
    return absent.length;
  }

  private async report(tenant: EvaTenant, now: number): Promise<void> {
    const pin = tenant.spec.operatorVersion ?? '';
    const key = `${tenant.metadata.uid ?? tenant.metadata.name}/${pin}`;
    if (now - (this.reported.get(key) ?? Number.NEGATIVE_INFINITY) < REPORT_EVERY_MS) return;
    this.reported.set(key, now);
    const message = `spec.operatorVersion ${pin} is not running (no live Lease ${leaseNameForVersion(pin)} in ${this.options.namespace}); no operator will act on this tenant until that version runs or the pin changes`;
    this.options.log.warn({ tenant: tenant.spec.capsuleCode, pin }, 'tenant pinned to an absent operator version');
    await this.options.kube.recordEvent(tenant, 'Warning', 'OperatorVersionAbsent', message).catch((err: unknown) => {
      this.options.log.warn({ err }, 'could not record event');
    });
  }

  /** Checks now and then every `intervalMs` until `signal` aborts. */
  async runUntil(signal: AbortSignal, intervalMs: number): Promise<void> {
    while (!signal.aborted) {
      await this.check().catch((err: unknown) => {
        this.options.log.warn({ err }, 'version presence check failed');
      });
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve(undefined);
        }, { once: true });
      });
    }
  }
}
