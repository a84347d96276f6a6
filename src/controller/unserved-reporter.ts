/**
 * The unserved-tenant reporter: a small controller beside the tenant controller, running while this
 * operator leads. It reports the tenants no running operator acts on (unserved-tenants.ts judges
 * them): a Warning Event on the tenant (once per cause per quarter hour), a gauge per cause, and,
 * from one leader only, the status Stalled and Ready False with the reason, so kstatus (Flux) reads
 * Failed and Argo CD Degraded instead of the Current it reads from an object without status.
 *
 * Two triggers. A full pass, over every tenant and Leases listed then, at start and every interval:
 * a Lease that runs out changes verdicts without any tenant event. And the tenant informer's events:
 * a tenant whose pin, shard, owner or wave is new to the reporter is judged at once against the last
 * pass's Leases, and when it looks unserved, again against Leases listed now (an operator started
 * since is not reported missing). Events that change none of those (status writes) cost nothing.
 */
import type { KubernetesObject, V1Lease } from '@kubernetes/client-node';
import type { EvaTenant } from '../api/evatenant.ts';
import type { CacheEvent } from '../adapters/tenant-objects.ts';
import type { Logger } from '../log.ts';
import { type Clock, sleep, systemClock } from '../runtime/clock.ts';
import { shardOf } from './metadata.ts';
import { heldStatus, sameStatus } from '../status/tenant-status.ts';
import type { TenantStore } from '../adapters/tenant-store.ts';
import { type Absence, absentOperators, isStatusWriter, judgedInputs, type LiveOperators, presentLeases, recentlyGoneLeases } from './unserved-tenants.ts';

const REPORT_EVERY_MS = 15 * 60_000;
/** How long a tenant event waits for others to join it: a burst of new tenants is judged at once. */
const SETTLE_MS = 200;

export interface UnservedSink {
  setTenantsPinnedToAbsentVersion(count: number): void;
  setTenantsInAbsentShard(count: number): void;
  setTenantsAboveMaxWave(count: number): void;
  setTenantsOwnedByAbsentOperator(count: number): void;
}

export interface UnservedReporterOptions {
  /** The Leases of the operators' namespace (src/adapters/kube-leases.ts). */
  leases: () => Promise<V1Lease[]>;
  /** Where the Leases are (named in messages). */
  namespace: string;
  /** Every tenant, and one by name, as the tenant informer's cache holds them. */
  tenants: () => EvaTenant[];
  tenant: (name: string) => EvaTenant | undefined;
  store: Pick<TenantStore, 'writeStatus' | 'recordEvent'>;
  /** This operator's own Lease (version and shard): decides whether it is the one status writer. */
  leaseName: string;
  /** Between full passes. */
  intervalMs: number;
  metrics: UnservedSink;
  log: Logger;
  clock?: Clock;
}

interface LeaseView {
  readonly present: LiveOperators;
  readonly recentlyGone: ReadonlySet<string>;
}

const viewOf = (leases: readonly V1Lease[], now: number): LeaseView => ({ present: presentLeases(leases, now), recentlyGone: recentlyGoneLeases(leases, now) });

export class UnservedTenantReporter {
  readonly #options: UnservedReporterOptions;
  readonly #clock: Clock;
  /** When each (tenant, message) was last reported by an Event. */
  readonly #reported = new Map<string, number>();
  /** The cause of each tenant judged unserved (the gauges count them). */
  readonly #causes = new Map<string, Absence['cause']>();
  /** Each tenant's judged inputs: an event that changes none of them needs no judging. */
  readonly #inputs = new Map<string, string>();
  /** Tenants named by events since the last pass. */
  readonly #pending = new Set<string>();
  #leases: LeaseView | undefined;
  #wake: (() => void) | undefined;

  constructor(options: UnservedReporterOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
  }

  /** Has the tenant informer's events judged as they come (before the informer starts: its first list arrives as events too). */
  subscribeTo(informer: { on(event: CacheEvent, handler: (obj: KubernetesObject) => void): void }): void {
    for (const event of ['add', 'update', 'delete'] as const) {
      informer.on(event, (obj) => {
        if (obj.metadata?.name !== undefined) this.observe(obj.metadata.name);
      });
    }
  }

  /** A tenant informer event: the tenant is judged soon if its pin, shard, owner or wave is new here. */
  observe(name: string): void {
    const tenant = this.#options.tenant(name);
    if (tenant === undefined) {
      this.#inputs.delete(name);
      this.#causes.delete(name);
      return;
    }
    const inputs = judgedInputs(tenant);
    if (this.#inputs.get(name) === inputs) return;
    this.#inputs.set(name, inputs);
    this.#pending.add(name);
    this.#wake?.();
  }

  /** A full pass: list the Leases, judge every tenant, report. Returns how many are unserved. */
  async check(now = this.#clock.now()): Promise<number> {
    this.#pending.clear();
    const tenants = this.#options.tenants();
    this.#leases = viewOf(await this.#options.leases(), now);
    this.#inputs.clear();
    for (const tenant of tenants) this.#inputs.set(tenant.metadata.name, judgedInputs(tenant));
    this.#causes.clear();
    const absent = this.#judge(tenants, this.#leases);
    await this.#report(absent, now);
    return absent.length;
  }

  /** The tenants events named since: judged against the last pass's Leases, and what looks unserved again against Leases listed now. */
  async checkPending(now = this.#clock.now()): Promise<void> {
    const tenants = [...this.#pending].map((name) => this.#options.tenant(name)).filter((tenant) => tenant !== undefined);
    this.#pending.clear();
    if (this.#leases === undefined || tenants.length === 0) return;
    let absent = this.#judge(tenants, this.#leases);
    if (absent.length > 0) {
      this.#leases = viewOf(await this.#options.leases(), now);
      absent = this.#judge(absent.map(({ tenant }) => tenant), this.#leases);
    }
    await this.#report(absent, now);
  }

  /** Full passes every interval and event-driven ones in between, until `signal` aborts. */
  async runUntil(signal: AbortSignal): Promise<void> {
    let nextPass = this.#clock.now();
    while (!signal.aborted) {
      const now = this.#clock.now();
      const full = now >= nextPass;
      if (full) nextPass = now + this.#options.intervalMs;
      await (full ? this.check(now) : this.checkPending(now)).catch((err: unknown) => {
        this.#options.log.warn({ err }, 'unserved-tenant check failed');
      });
      await this.#napUntil(nextPass, signal);
      if (this.#pending.size > 0) await sleep(this.#clock, SETTLE_MS, signal);
    }
  }

  /** Sleeps until `at`, or until an event names a tenant to judge. */
  async #napUntil(at: number, signal: AbortSignal): Promise<void> {
    if (this.#pending.size > 0) return;
    const woken = new AbortController();
    this.#wake = () => {
      woken.abort();
    };
    await sleep(this.#clock, at - this.#clock.now(), AbortSignal.any([signal, woken.signal]));
    this.#wake = undefined;
  }

  /** Judges `tenants`, and keeps their causes (none for the served ones). */
  #judge(tenants: readonly EvaTenant[], { present, recentlyGone }: LeaseView): Absence[] {
    for (const tenant of tenants) this.#causes.delete(tenant.metadata.name);
    const absent = absentOperators(tenants, present, this.#options.namespace, recentlyGone);
    for (const { tenant, cause } of absent) this.#causes.set(tenant.metadata.name, cause);
    return absent;
  }

  async #report(absent: readonly Absence[], now: number): Promise<void> {
    this.#publishCounts();
    const writesStatus = this.#leases !== undefined && isStatusWriter(this.#leases.present, this.#options.leaseName);
    for (const absence of absent) {
      await this.#recordEvent(absence, now);
      if (writesStatus) await this.#writeStatus(absence);
    }
  }

  #publishCounts(): void {
    const count = (cause: Absence['cause']): number => [...this.#causes.values()].filter((c) => c === cause).length;
    const { metrics } = this.#options;
    metrics.setTenantsPinnedToAbsentVersion(count('version'));
    metrics.setTenantsInAbsentShard(count('shard'));
    metrics.setTenantsOwnedByAbsentOperator(count('owner'));
    metrics.setTenantsAboveMaxWave(count('wave'));
  }

  /** Stalled with the reason, written only when the stored status says something else. */
  async #writeStatus({ tenant, reason, message }: Absence): Promise<void> {
    const status = heldStatus(tenant, { kind: 'unserved', reason, message }, new Date(this.#clock.now()));
    if (sameStatus(tenant.status, status)) return;
    await this.#options.store.writeStatus(tenant, status).catch((err: unknown) => {
      // A conflict means someone wrote first: the next pass judges the newer object.
      this.#options.log.warn({ err, tenant: tenant.spec.capsuleCode }, 'could not write the status of an unserved tenant');
    });
  }

  async #recordEvent({ tenant, reason, message }: Absence, now: number): Promise<void> {
    const key = `${tenant.metadata.uid ?? tenant.metadata.name}/${message}`;
    if (now - (this.#reported.get(key) ?? Number.NEGATIVE_INFINITY) < REPORT_EVERY_MS) return;
    this.#reported.set(key, now);
    this.#options.log.warn({ tenant: tenant.spec.capsuleCode, pin: tenant.spec.operatorVersion, shard: shardOf(tenant), reason }, 'no running operator serves this tenant');
    await this.#options.store.recordEvent(tenant, 'Warning', reason, message).catch((err: unknown) => {
      this.#options.log.warn({ err }, 'could not record event');
    });
  }
}
