/**
 * Builds the status written after each saga transition: derived conditions, phase, timings and the
 * persisted snapshot. A status equal to the one already stored is not written again, so an idle
 * drift check makes no API write.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../canonical-json.ts';
import type { EvaTenant, EvaTenantSpec, EvaTenantStatus } from '../api/evatenant.ts';
import { PROVISIONING_CONDITIONS } from '../api/constants.ts';
import { allConditions, mergeConditions, phaseOf, type SagaView } from '../saga/conditions.ts';

function elapsedSince(start: string, now: Date): number {
  return Math.max(0, Math.round((now.getTime() - Date.parse(start)) / 10) / 100);
}

function timings(previous: EvaTenantStatus, view: SagaView, conditions: EvaTenantStatus['conditions'], now: Date): Pick<EvaTenantStatus, 'provisioningStartedAt' | 'elapsedSeconds'> {
  if (view.stage === 'requested') return {};
  const startedAt = previous.provisioningStartedAt ?? now.toISOString();
  const elapsed = { ...(previous.elapsedSeconds ?? {}) };
  for (const type of [...PROVISIONING_CONDITIONS, 'Ready']) {
    const isTrue = conditions?.some((c) => c.type === type && c.status === 'True');
    if (isTrue && elapsed[type] === undefined) elapsed[type] = elapsedSince(startedAt, now);
  }
  return { provisioningStartedAt: startedAt, elapsedSeconds: elapsed };
}

export function buildStatus(tenant: EvaTenant, view: SagaView, persisted: unknown, now: Date): EvaTenantStatus {
  const previous = tenant.status ?? {};
  const conditions = mergeConditions(previous.conditions ?? [], allConditions(view), now.toISOString(), tenant.metadata.generation);
  const status: EvaTenantStatus = {
    phase: phaseOf(view),
    conditions,
    ...timings(previous, view, conditions, now),
    saga: { snapshot: persisted, specDigest: provisionedSpecDigest(tenant.spec) },
  };
  if (tenant.metadata.generation !== undefined) status.observedGeneration = tenant.metadata.generation;
  return status;
}

/**
 * The spec as provisioning sees it. The pin (operatorVersion) only says which operator version acts
 * on the tenant; nothing provisioned depends on it.
 */
export function provisionedSpecDigest(spec: EvaTenantSpec): string {
  return createHash('sha256').update(canonicalJson({ ...spec, operatorVersion: undefined })).digest('hex');
}

/**
 * Whether the spec changed since the stored status in a way provisioning must act on. A new pin
 * alone (a hand-over between operator versions) is not: the new owner resumes, it does not
 * re-provision. A status without a digest (written by an older operator) counts any new generation.
 */
export function provisionedSpecChanged(tenant: EvaTenant): boolean {
  const observed = tenant.status?.observedGeneration;
  if (observed === undefined || observed === tenant.metadata.generation) return false;
  return tenant.status?.saga?.['specDigest'] !== provisionedSpecDigest(tenant.spec);
}

/** Equal as stored JSON (key order aside): such a status needs no write. */
export function sameStatus(a: EvaTenantStatus | undefined, b: EvaTenantStatus): boolean {
  return canonicalJson(a ?? {}) === canonicalJson(b);
}

export function persistedSnapshotOf(tenant: EvaTenant): unknown {
  const saga = tenant.status?.saga;
  return saga && typeof saga === 'object' ? saga['snapshot'] : undefined;
}
