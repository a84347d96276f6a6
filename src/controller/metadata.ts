/**
 * The tenant's own metadata, kept in one place: the protection finalizer, the ownership annotation
 * (blue/green between operator versions) and the wave label that mirrors spec.wave. All changes go
 * out as one merge patch guarded by resourceVersion, so exactly one of two racing operators wins.
 */
import { FINALIZER, OWNER_ANNOTATION, WAVE_LABEL } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import type { TenantStore } from './tenant-store.ts';

export type Ownership =
  | { kind: 'mine' }
  | { kind: 'claim' }
  /** The pin moved to another version: finish, persist, hand the tenant over. */
  | { kind: 'release'; to: string }
  | { kind: 'notMine'; owner?: string; pinnedTo?: string; reason: string };

export function decideOwnership(tenant: EvaTenant, myVersion: string, maxWave: number): Ownership {
  const owner = tenant.metadata.annotations?.[OWNER_ANNOTATION];
  const pin = tenant.spec.operatorVersion;
  if (owner === myVersion) return pin && pin !== myVersion ? { kind: 'release', to: pin } : { kind: 'mine' };
  if (owner) return { kind: 'notMine', owner, reason: `owned by operator ${owner}` };
  if (pin) return pin === myVersion ? { kind: 'claim' } : { kind: 'notMine', pinnedTo: pin, reason: `pinned to operator ${pin}` };
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
