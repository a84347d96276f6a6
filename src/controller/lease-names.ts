/**
 * What the operator's Leases are called: one per operator version and shard, each electing on its
 * own, so that two versions (or two shards) run side by side with one leader each.
 */

const slug = (text: string): string => text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');

/** What ends the Lease name of every operator of one shard, whatever its version. */
export const shardLeaseSuffix = (shard: string): string => `-shard-${slug(shard)}`;

/**
 * The Lease of one operator version and shard (a valid object name): `1.4.0` → `eva-operator-1-4-0`;
 * `1.4.0` of shard `eu-1` → `eva-operator-1-4-0-shard-eu-1`. Each elects on its own.
 */
export function leaseNameForVersion(version: string, shard?: string): string {
  const versionSlug = slug(version);
  if (versionSlug === '') throw new Error(`cannot derive a lease name from version ${JSON.stringify(version)}`);
  return `eva-operator-${versionSlug}${shard === undefined ? '' : shardLeaseSuffix(shard)}`;
}

/** Whether `lease` is the Lease of an operator of `version`, of any shard. */
export function isLeaseOfVersion(lease: string, version: string): boolean {
  const unsharded = leaseNameForVersion(version);
  return lease === unsharded || lease.startsWith(`${unsharded}-shard-`);
}

/** A shard as messages name it. */
export const shardName = (shard: string | undefined): string => (shard === undefined ? 'the default shard' : `shard ${shard}`);

/**
 * The Lease of the rollout controller: one for every operator version and shard, since a rollout
 * moves tenants between versions (and a target version whose pods crash must still be rolled back by
 * the version it left). Not `eva-operator-*`: it serves no tenant, so the unserved-tenant reporter
 * does not count it.
 */
export const ROLLOUTS_LEASE = 'eva-rollouts';
