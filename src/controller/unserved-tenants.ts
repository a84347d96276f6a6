/**
 * Which tenants no running operator will act on, and why (pure: Leases, tenants and the time in,
 * verdicts out; unserved-reporter.ts reports them). Such a tenant is pinned to an operator version
 * that does not run, labelled with a shard nobody serves, owned by an operator that no longer runs
 * (for two minutes: a restarting one takes its Lease back sooner), or (unpinned and unowned) has a
 * wave above the MAX_WAVE of every running operator of its shard. Every running version and shard
 * holds a Lease (leader election) that publishes its MAX_WAVE. Every leader sees such a tenant; only
 * one writes its status: the leader of the lowest live Lease name (`isStatusWriter`).
 */
import type { V1Lease } from '@kubernetes/client-node';
import type { EvaTenant } from '../api/evatenant.ts';
import { MAX_WAVE_ANNOTATION, OWNER_ANNOTATION } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import { leaseExpiresAt } from '../runtime/lease-math.ts';
import type { UnservedReason } from '../status/summarize.ts';
import { leaseNameForVersion, shardLeaseSuffix, shardName } from './lease-names.ts';
import { shardOf } from './metadata.ts';

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
  readonly reason: UnservedReason;
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

/** What the verdict on one tenant depends on besides the Leases: its pin, shard, owner and wave. */
export const judgedInputs = (tenant: EvaTenant): string =>
  JSON.stringify([tenant.spec.operatorVersion ?? null, shardOf(tenant) ?? null, ownerOfTenant(tenant), tenant.spec.wave]);
