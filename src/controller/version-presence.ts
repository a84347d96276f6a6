/**
 * A tenant that no running operator will act on would otherwise be ignored forever: pinned to an
 * operator version that does not run, labelled with a shard nobody serves, owned by an operator that
 * no longer runs (for two minutes: a restarting one takes its Lease back sooner), or (unpinned and
 * unowned) with a wave above the MAX_WAVE of every running operator of its shard. Every running
 * version and shard holds a Lease (leader election) that publishes its MAX_WAVE; from the Leases
 * each leader finds such tenants and reports them: a Warning Event on the tenant (once per cause per
 * quarter hour), a gauge (eva_tenants_pinned_to_absent_version, eva_tenants_in_absent_shard,
 * eva_tenants_owned_by_absent_operator, eva_tenants_above_max_wave), and its status: Stalled and
 * Ready False with the reason, so kstatus (Flux) reads Failed and Argo CD Degraded instead of a
 * silent Current. Every leader sees such a
 * tenant; only one writes its status: the leader of the lowest live Lease name, and only when the
 * status differs (the same input gives the same status, so two leaders never alternate).
 */
import type { CoordinationV1Api, V1Lease } from '@kubernetes/client-node';
import type { EvaTenant } from '../api/evatenant.ts';
import { MAX_WAVE_ANNOTATION, OWNER_ANNOTATION } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import type { Kube } from '../adapters/kube.ts';
import type { Logger } from '../log.ts';
import { leaseExpiresAt, leaseNameForVersion, shardLeaseSuffix } from './lease.ts';
import { shardOf } from './metadata.ts';
import { heldStatus, sameStatus } from './tenant-status.ts';

const REPORT_EVERY_MS = 15 * 60_000;
/** How long an owner's Lease must have been gone before its tenants are reported: a restart (a new pod takes the Lease) is quicker. */
export const OWNER_GONE_MS = 2 * 60_000;

/**
 * The operators running now, by Lease name: the MAX_WAVE each publishes on its Lease (undefined: an
 * operator too old to publish it, taken to claim every wave).
 */
export type LiveOperators = ReadonlyMap<string, number | undefined>;

export function presentLeases(leases: readonly V1Lease[], now: number): Map<string, number | undefined> {
  const live = new Map<string, number | undefined>();
  for (const lease of leases) {
    const name = lease.metadata?.name;
    if (name?.startsWith('eva-operator-') && lease.spec?.holderIdentity && leaseExpiresAt(lease.spec) > now) live.set(name, publishedMaxWave(lease));
  }
  return live;
}

/** Operator Leases not live now, but live within the last `graceMs`: their operator may be restarting. */
export function recentlyGoneLeases(leases: readonly V1Lease[], now: number, graceMs = OWNER_GONE_MS): Set<string> {
  const gone = new Set<string>();
  for (const lease of leases) {
    const name = lease.metadata?.name;
    if (!name?.startsWith('eva-operator-') || lease.spec === undefined) continue;
    const expiresAt = leaseExpiresAt(lease.spec);
    if (expiresAt <= now && expiresAt > now - graceMs) gone.add(name);
  }
  return gone;
}

function publishedMaxWave(lease: V1Lease): number | undefined {
  const text = lease.metadata?.annotations?.[MAX_WAVE_ANNOTATION];
  const wave = text === undefined || text === '' ? Number.NaN : Number(text);
  return Number.isInteger(wave) ? wave : undefined;
}

/** Whether the operator of this Lease serves `shard` (undefined: the default shard, Leases without a shard suffix). */
const servesShard = (leaseName: string, shard: string | undefined): boolean =>
  shard === undefined ? !leaseName.includes(shardLeaseSuffix('')) : leaseName.endsWith(shardLeaseSuffix(shard));

/** Why no running operator acts on a tenant: its shard has no operator, its pinned version does not run, or no operator claims its wave. */
export interface Absence {
  readonly tenant: EvaTenant;
  readonly cause: 'shard' | 'owner' | 'version' | 'wave';
  readonly reason: typeof Reason.OperatorShardAbsent | typeof Reason.OperatorOwnerAbsent | typeof Reason.OperatorVersionAbsent | typeof Reason.OperatorWaveAbsent;
  readonly message: string;
}

/** The highest wave the running operators of one shard claim, and which they are (none: no operator). */
interface ShardWaves {
  readonly maxWave: number;
  readonly leases: readonly string[];
}

function shardWaves(present: LiveOperators, shard: string | undefined): ShardWaves {
  const leases = [...present.keys()].filter((name) => servesShard(name, shard)).sort();
  const maxWave = Math.max(...leases.map((name) => present.get(name) ?? Number.POSITIVE_INFINITY));
  return { maxWave, leases };
}

const shardName = (shard: string | undefined): string => (shard === undefined ? 'the default shard' : `shard ${shard}`);

/**
 * The tenants no running operator can take (tenants being deleted included: they need an owner
 * too). A shard is present when any version of it runs; an owner, when its Lease is live or was
 * within OWNER_GONE_MS (`recentlyGone`); a pin, when that version runs in the tenant's shard; the
 * wave of an unpinned tenant nobody owns yet, when an operator of its shard claims it (MAX_WAVE).
 * Tenants of a default shard without any operator are not judged.
 */
export function absentOperators(tenants: readonly EvaTenant[], present: LiveOperators, namespace: string, recentlyGone: ReadonlySet<string> = new Set()): Absence[] {
  // Per shard, not per tenant: a thousand tenants share a handful of shards.
  const waves = new Map<string | undefined, ShardWaves>();
  const wavesOf = (shard: string | undefined): ShardWaves => {
    const known = waves.get(shard) ?? shardWaves(present, shard);
    waves.set(shard, known);
    return known;
  };
  const ownerPresent = (lease: string): boolean => present.has(lease) || recentlyGone.has(lease);
  return tenants.map((tenant) => absenceOf(tenant, wavesOf(shardOf(tenant)), { present, ownerPresent, namespace })).filter((absence) => absence !== undefined);
}

interface Judging {
  readonly present: LiveOperators;
  readonly ownerPresent: (lease: string) => boolean;
  readonly namespace: string;
}

function absenceOf(tenant: EvaTenant, served: ShardWaves, judging: Judging): Absence | undefined {
  return shardAbsence(tenant, served, judging) ?? ownerAbsence(tenant, judging) ?? pinAbsence(tenant, judging) ?? waveAbsence(tenant, served, judging);
}

function shardAbsence(tenant: EvaTenant, served: ShardWaves, { namespace }: Judging): Absence | undefined {
  const shard = shardOf(tenant);
  if (shard === undefined || served.leases.length > 0) return undefined;
  const message = `shard ${shard} (label eva.aidonow.com/shard) has no running operator (no live Lease *${shardLeaseSuffix(shard)} in ${namespace}); no operator will act on this tenant until an operator with SHARD=${shard} runs or the label changes`;
  return { tenant, cause: 'shard', reason: Reason.OperatorShardAbsent, message };
}

function ownerAbsence(tenant: EvaTenant, { ownerPresent, namespace }: Judging): Absence | undefined {
  const owner = ownerOfTenant(tenant);
  const lease = ownerLeaseName(owner);
  if (lease === undefined || ownerPresent(lease)) return undefined;
  const message = `owned by operator ${owner} (annotation ${OWNER_ANNOTATION}), which is not running (no live Lease ${lease} in ${namespace}); no other operator takes a tenant another owns: run that version again, or remove the annotation (kubectl annotate evatenant ${tenant.metadata.name} ${OWNER_ANNOTATION}-) to let the operator of its pin, shard and wave claim it`;
  return { tenant, cause: 'owner', reason: Reason.OperatorOwnerAbsent, message };
}

function pinAbsence(tenant: EvaTenant, { present, namespace }: Judging): Absence | undefined {
  const pin = tenant.spec.operatorVersion;
  if (pin === undefined) return undefined;
  const shard = shardOf(tenant);
  const lease = leaseNameForVersion(pin, shard);
  if (present.has(lease)) return undefined;
  const message = `spec.operatorVersion ${pin} is not running${shard === undefined ? '' : ` in shard ${shard}`} (no live Lease ${lease} in ${namespace}); no operator will act on this tenant until that version runs or the pin changes`;
  return { tenant, cause: 'version', reason: Reason.OperatorVersionAbsent, message };
}

/** Pinned or owned, its operator acts on it whatever its wave; neither, only an operator whose MAX_WAVE reaches it claims it. */
function waveAbsence(tenant: EvaTenant, served: ShardWaves, { namespace }: Judging): Absence | undefined {
  const { wave } = tenant.spec;
  if (tenant.spec.operatorVersion !== undefined || ownerOfTenant(tenant) !== '' || served.leases.length === 0 || served.maxWave >= wave) return undefined;
  const message = `spec.wave ${String(wave)} is above the MAX_WAVE of every running operator of ${shardName(shardOf(tenant))} (at most ${String(served.maxWave)}: Leases ${served.leases.join(', ')} in ${namespace}); no operator will claim this tenant until one with MAX_WAVE >= ${String(wave)} runs, or spec.wave or spec.operatorVersion changes`;
  return { tenant, cause: 'wave', reason: Reason.OperatorWaveAbsent, message };
}

const ownerOfTenant = (tenant: EvaTenant): string => tenant.metadata.annotations?.[OWNER_ANNOTATION] ?? '';

/** The Lease of the operator an owner annotation names (`version` or `version/shard`); undefined when it names none. */
function ownerLeaseName(owner: string): string | undefined {
  if (owner === '') return undefined;
  const slash = owner.indexOf('/');
  try {
    return slash < 0 ? leaseNameForVersion(owner) : leaseNameForVersion(owner.slice(0, slash), owner.slice(slash + 1));
  } catch {
    return undefined;
  }
}

/** The one operator that writes unserved tenants' status: the holder of the lowest live Lease name. */
export function isStatusWriter(present: LiveOperators, ownLease: string): boolean {
  return [...present.keys()].sort()[0] === ownLease;
}

export interface PresenceSink {
  setTenantsPinnedToAbsentVersion(count: number): void;
  setTenantsInAbsentShard(count: number): void;
  setTenantsAboveMaxWave(count: number): void;
  setTenantsOwnedByAbsentOperator(count: number): void;
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

  /** One pass: read the Leases, count and report the tenants no running operator acts on. */
  async check(now = Date.now()): Promise<number> {
    const { items } = await this.api.listNamespacedLease({ namespace: this.options.namespace });
    const present = presentLeases(items, now);
    const absent = absentOperators(this.options.tenants(), present, this.options.namespace, recentlyGoneLeases(items, now));
    const count = (cause: Absence['cause']): number => absent.filter((a) => a.cause === cause).length;
    this.options.metrics.setTenantsPinnedToAbsentVersion(count('version'));
    this.options.metrics.setTenantsInAbsentShard(count('shard'));
    this.options.metrics.setTenantsOwnedByAbsentOperator(count('owner'));
    this.options.metrics.setTenantsAboveMaxWave(count('wave'));
    const writesStatus = isStatusWriter(present, this.options.leaseName);
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
