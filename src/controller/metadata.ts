/**
 * The tenant's own metadata, kept in one place: the protection finalizer, the ownership annotation
 * (blue/green between operator versions) and the wave label that mirrors spec.wave. All changes go
 * out as one merge patch guarded by resourceVersion, so exactly one of two racing operators wins.
 */
import { FINALIZER, OWNER_ANNOTATION, SHARD_LABEL, WAVE_LABEL } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { shardName } from './lease-names.ts';
import type { TenantStore } from '../adapters/tenant-store.ts';

export type Ownership =
  | { kind: 'mine' }
  | { kind: 'claim' }
  /** The pin moved to another version: finish, persist, hand the tenant over. */
  | { kind: 'release'; to: string }
  | { kind: 'notMine'; owner?: string; pinnedTo?: string; reason: string };

/** An operator Deployment: its version and, when sharded, its shard (SHARD). */
export interface OperatorSelf {
  version: string;
  shard?: string | undefined;
}

/** The owner annotation's value: the version (default shard) or `version/shard`. */
export const ownerValue = (self: OperatorSelf): string => (self.shard === undefined ? self.version : `${self.version}/${self.shard}`);

/** The tenant's shard label; absent or empty is the default shard. */
export function shardOf(tenant: EvaTenant): string | undefined {
  const shard = tenant.metadata.labels?.[SHARD_LABEL];
  return shard === undefined || shard === '' ? undefined : shard;
}


/**
 * Whose tenant this is. The owner annotation decides while it is set: only its owner acts, and it
 * lets go (release) when the pin or the shard label moved away; only then may another claim it, so
 * there are never two owners. Unowned, a tenant is claimed by the operator of its shard and pin.
 */
export function decideOwnership(tenant: EvaTenant, self: OperatorSelf, maxWave: number): Ownership {
  const owner = tenant.metadata.annotations?.[OWNER_ANNOTATION];
  const pin = tenant.spec.operatorVersion;
  const shard = shardOf(tenant);
  if (owner === ownerValue(self)) {
    if (pin && pin !== self.version) return { kind: 'release', to: `operator ${pin}` };
    return shard === self.shard ? { kind: 'mine' } : { kind: 'release', to: shardName(shard) };
  }
  if (owner) return { kind: 'notMine', owner, reason: `owned by operator ${owner}` };
  if (shard !== self.shard) return { kind: 'notMine', reason: `in ${shardName(shard)}` };
  if (pin) return pin === self.version ? { kind: 'claim' } : { kind: 'notMine', pinnedTo: pin, reason: `pinned to operator ${pin}` };
  if (tenant.spec.wave > maxWave) return { kind: 'notMine', reason: `wave ${tenant.spec.wave} is above MAX_WAVE ${maxWave}` };
  return { kind: 'claim' };
}

export interface MetadataIntent {
  finalizer: boolean;
  owner?: string | null;
}

/** The metadata patch needed to reach the intent (undefined when nothing differs). */
export function metadataPatch(tenant: EvaTenant, intent: MetadataIntent): Record<string, unknown> | undefined {
  const patch: Record<string, unknown> = {};
  const finalizers = tenant.metadata.finalizers ?? [];
  if (intent.finalizer && !finalizers.includes(FINALIZER)) patch['finalizers'] = [...finalizers, FINALIZER];
  const owner = tenant.metadata.annotations?.[OWNER_ANNOTATION];
  if (intent.owner !== undefined && (intent.owner ?? undefined) !== owner) patch['annotations'] = { [OWNER_ANNOTATION]: intent.owner };
  const wave = String(tenant.spec.wave);
  if (tenant.metadata.labels?.[WAVE_LABEL] !== wave) patch['labels'] = { [WAVE_LABEL]: wave };
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** Writes the intent if anything differs; returns the tenant as it now is. A 409 propagates. */
export async function syncMetadata(tenants: TenantStore, tenant: EvaTenant, intent: MetadataIntent): Promise<EvaTenant> {
  const patch = metadataPatch(tenant, intent);
  return patch ? tenants.patchMetadata(tenant, patch) : tenant;
}

/** Removes the finalizer, and only it, only if it is still where we saw it (JSON patch test). */
export async function removeFinalizer(tenants: TenantStore, tenant: EvaTenant): Promise<void> {
  const index = (tenant.metadata.finalizers ?? []).indexOf(FINALIZER);
  if (index < 0) return;
  const path = `/metadata/finalizers/${index}`;
  await tenants.jsonPatch(tenant.metadata.name, [
    { op: 'test', path, value: FINALIZER },
    { op: 'remove', path },
  ]);
}
