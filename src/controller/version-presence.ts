/**
 * A tenant pinned to an operator version, or labelled with a shard, that no running operator serves
 * would otherwise be ignored forever. Every running version and shard holds a Lease (leader
 * election); a tenant whose Lease is missing or expired is reported: a Warning Event on the tenant
 * (once per cause per quarter hour), the eva_tenants_pinned_to_absent_version or
 * eva_tenants_in_absent_shard gauge, and its status: Stalled and Ready False with the reason, so
 * kstatus (Flux) reads Failed and Argo CD Degraded instead of a silent Current. Every leader sees
 * such a tenant; only one writes its status: the leader of the lowest live Lease name, and only when
 * the status differs (the same input gives the same status, so two leaders never alternate).
 */
import type { CoordinationV1Api, V1Lease } from '@kubernetes/client-node';
import type { EvaTenant } from '../api/evatenant.ts';
import { Reason } from '../api/reasons.ts';
import type { Kube } from '../adapters/kube.ts';
import type { Logger } from '../log.ts';
import { leaseExpiresAt, leaseNameForVersion, shardLeaseSuffix } from './lease.ts';
import { shardOf } from './metadata.ts';
import { heldStatus, sameStatus } from './tenant-status.ts';

const REPORT_EVERY_MS = 15 * 60_000;

/** Lease names of the operator versions that are running now. */
export function presentLeases(leases: readonly V1Lease[], now: number): Set<string> {
  return new Set(
    leases
      .filter((l) => l.metadata?.name?.startsWith('eva-operator-') && l.spec?.holderIdentity && leaseExpiresAt(l.spec) > now)
      .map((l) => l.metadata?.name ?? ''),
  );
}

/** Why no running operator acts on a tenant: its shard has no operator, or its pinned version does not run. */
export interface Absence {
  readonly tenant: EvaTenant;
  readonly cause: 'shard' | 'version';
  readonly reason: typeof Reason.OperatorShardAbsent | typeof Reason.OperatorVersionAbsent;
  readonly message: string;
}

/**
 * The tenants no running operator can take (tenants being deleted included: they need an owner
 * too). A shard is present when any version of it runs; a pin, when that version runs in the
 * tenant's shard. Unpinned tenants of the default shard are not judged (any version may take them).
 */
export function absentOperators(tenants: readonly EvaTenant[], present: ReadonlySet<string>, namespace: string): Absence[] {
  const absences: Absence[] = [];
  // Per shard, not per tenant: a thousand tenants share a handful of shards.
  const served = new Map<string, boolean>();
  const isServed = (shard: string): boolean => {
    const known = served.get(shard) ?? [...present].some((lease) => lease.endsWith(shardLeaseSuffix(shard)));
    served.set(shard, known);
    return known;
  };
  for (const tenant of tenants) {
    const shard = shardOf(tenant);
    const pin = tenant.spec.operatorVersion;
    if (shard !== undefined && !isServed(shard)) {
      const message = `shard ${shard} (label eva.aidonow.com/shard) has no running operator (no live Lease *${shardLeaseSuffix(shard)} in ${namespace}); no operator will act on this tenant until an operator with SHARD=${shard} runs or the label changes`;
      absences.push({ tenant, cause: 'shard', reason: Reason.OperatorShardAbsent, message });
    } else if (pin !== undefined && !present.has(leaseNameForVersion(pin, shard))) {
      const lease = leaseNameForVersion(pin, shard);
      const message = `spec.operatorVersion ${pin} is not running${shard === undefined ? '' : ` in shard ${shard}`} (no live Lease ${lease} in ${namespace}); no operator will act on this tenant until that version runs or the pin changes`;
      absences.push({ tenant, cause: 'version', reason: Reason.OperatorVersionAbsent, message });
    }
  }
  return absences;
}

/** The one operator that writes unserved tenants' status: the holder of the lowest live Lease name. */
export function isStatusWriter(present: ReadonlySet<string>, ownLease: string): boolean {
  return [...present].sort()[0] === ownLease;
}

export interface PresenceSink {
  setTenantsPinnedToAbsentVersion(count: number): void;
  setTenantsInAbsentShard(count: number): void;
}

export interface PresenceOptions {
  kube: Kube;
  /** Where the Leases are. */
  namespace: string;
  tenants: () => EvaTenant[];
  /** This operator's own Lease (version and shard): decides whether it is the one status writer. */
  leaseName: string;
  metrics: PresenceSink;
  log: Logger;
}

export class VersionPresenceReporter {
  private readonly api: CoordinationV1Api;
  private readonly reported = new Map<string, number>();
  private readonly options: PresenceOptions;

  constructor(options: PresenceOptions) {
    this.options = options;
    this.api = options.kube.coordination;
  }

  /** One pass: read the Leases, count and report tenants pinned to absent versions. */
  async check(now = Date.now()): Promise<number> {
    const { items } = await this.api.listNamespacedLease({ namespace: this.options.namespace });
    const absent = absentOperators(this.options.tenants(), presentLeases(items, now), this.options.namespace);
    this.options.metrics.setTenantsPinnedToAbsentVersion(absent.filter((a) => a.cause === 'version').length);
    this.options.metrics.setTenantsInAbsentShard(absent.filter((a) => a.cause === 'shard').length);
    const writesStatus = isStatusWriter(presentLeases(items, now), this.options.leaseName);
    for (const absence of absent) {
      await this.report(absence, now);
      if (writesStatus) await this.writeStatus(absence);
    }
    return absent.length;
  }

  /** Stalled with the reason, written only when the stored status says something else. */
  private async writeStatus({ tenant, reason, message }: Absence): Promise<void> {
    const status = heldStatus(tenant, { ready: { status: 'False', reason, message }, stalled: { status: 'True', reason, message } }, new Date());
    if (sameStatus(tenant.status, status)) return;
    await this.options.kube.writeTenantStatus(tenant, status).catch((err: unknown) => {
      // A conflict means someone wrote first: the next pass judges the newer object.
      this.options.log.warn({ err, tenant: tenant.spec.capsuleCode }, 'could not write the status of an unserved tenant');
    });
  }

  private async report({ tenant, reason, message }: Absence, now: number): Promise<void> {
    const key = `${tenant.metadata.uid ?? tenant.metadata.name}/${message}`;
    if (now - (this.reported.get(key) ?? Number.NEGATIVE_INFINITY) < REPORT_EVERY_MS) return;
    this.reported.set(key, now);
    this.options.log.warn({ tenant: tenant.spec.capsuleCode, pin: tenant.spec.operatorVersion, shard: shardOf(tenant), reason }, 'no running operator serves this tenant');
    await this.options.kube.recordEvent(tenant, 'Warning', reason, message).catch((err: unknown) => {
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
