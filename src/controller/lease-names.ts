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

/** A shard as messages name it. */
export const shardName = (shard: string | undefined): string => (shard === undefined ? 'the default shard' : `shard ${shard}`);
