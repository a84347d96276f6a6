/**
 * An EvaTenant as a rollout sees it, and the patches that move it: pure, so that what a move writes
 * is checked without a cluster. A move and its record are one merge patch guarded by the
 * resourceVersion that was read: a tenant changed meanwhile is read again, never moved blindly.
 */
import { OWNER_ANNOTATION, ownerVersion } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { ROLLOUT_ANNOTATIONS } from '../api/evarollout.ts';
import type { FleetTenant } from './plan.ts';

/** A positive decimal as the rollout writes it ("7"; not "0x7", "7.0" or " 7"). */
const positive = (text: string | undefined): number | undefined => (text !== undefined && /^[1-9][0-9]{0,8}$/.test(text) ? Number(text) : undefined);

/** The move a rollout recorded on the tenant, if all of it is there and well formed (else none: a hand-written half is not a move). */
function moveOf(annotations: Readonly<Record<string, string>>): FleetTenant['moved'] {
  const rollout = annotations[ROLLOUT_ANNOTATIONS.rollout];
  const wave = positive(annotations[ROLLOUT_ANNOTATIONS.wave]);
  const batch = positive(annotations[ROLLOUT_ANNOTATIONS.batch]);
  const from = annotations[ROLLOUT_ANNOTATIONS.from];
  if (rollout === undefined || wave === undefined || batch === undefined || from === undefined || from === '') return undefined;
  return { rollout, wave, batch, from };
}

export function fleetTenant(tenant: EvaTenant): FleetTenant {
  const annotations = tenant.metadata.annotations ?? {};
  const ready = tenant.status?.conditions?.find((c) => c.type === 'Ready');
  const current = tenant.status?.observedGeneration !== undefined && tenant.status.observedGeneration === tenant.metadata.generation;
  return {
    name: tenant.metadata.name,
    wave: tenant.spec.wave,
    owner: ownerVersion(annotations[OWNER_ANNOTATION]),
    pinnedTo: tenant.spec.operatorVersion,
    suspended: tenant.spec.suspend === true,
    ready: ready?.status === 'True' && current,
    moved: moveOf(annotations),
  };
}

interface MergePatch {
  readonly metadata: { readonly resourceVersion: string; readonly annotations: Readonly<Record<string, string>> };
  readonly spec: { readonly operatorVersion: string };
}

/** Pins the tenant to the target and records the move (the version it leaves: its pin, else its owner). */
export function movePatch(tenant: EvaTenant, rollout: string, target: string, place: { wave: number; batch: number }): MergePatch {
  const from = tenant.spec.operatorVersion ?? ownerVersion(tenant.metadata.annotations?.[OWNER_ANNOTATION]);
  if (from === undefined) throw new Error(`tenant ${tenant.metadata.name} has no version to leave: a rollout moves owned tenants only`);
  return {
    metadata: {
      resourceVersion: tenant.metadata.resourceVersion ?? '',
      annotations: {
        [ROLLOUT_ANNOTATIONS.rollout]: rollout,
        [ROLLOUT_ANNOTATIONS.wave]: String(place.wave),
        [ROLLOUT_ANNOTATIONS.batch]: String(place.batch),
        [ROLLOUT_ANNOTATIONS.from]: from,
      },
    },
    spec: { operatorVersion: target },
  };
}

/** Pins a moved tenant back to the version it came from; the record stays (the rollout's history, and what keeps it from moving again). */
export function returnPatch(tenant: EvaTenant, to: string): Omit<MergePatch, 'metadata'> & { metadata: { resourceVersion: string } } {
  return { metadata: { resourceVersion: tenant.metadata.resourceVersion ?? '' }, spec: { operatorVersion: to } };
}
