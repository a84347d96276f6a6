/**
 * Builds the status written after each saga transition: derived conditions, phase, timings and the
 * persisted snapshot. A status equal to the one already stored is not written again, so an idle
 * drift check makes no API write.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../canonical-json.ts';
import type { EvaTenant, EvaTenantStatus } from '../api/evatenant.ts';
import { PROVISIONING_CONDITIONS, ROTATE_NATS_CREDENTIALS_ANNOTATION } from '../api/constants.ts';
import { sagaRecord, sagaRecordOf } from '../saga/persisted.ts';
import { allConditions, type ConditionState, hibernatedConditions, hibernatedPhase, mergeConditions, phaseOf, progressConditions, type SagaView } from '../saga/conditions.ts';

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
  const hibernated = tenant.spec.lifecycle === 'Suspended';
  const desired = hibernated ? hibernatedConditions(view) : allConditions(view);
  const conditions = mergeConditions(previous.conditions ?? [], desired, now.toISOString(), tenant.metadata.generation);
  const status: EvaTenantStatus = {
    phase: hibernated ? hibernatedPhase(view) : phaseOf(view),
    conditions,
    ...timings(previous, view, conditions, now),
    saga: sagaRecord(persisted, provisionedSpecDigest(tenant)),
  };
  if (tenant.metadata.generation !== undefined) status.observedGeneration = tenant.metadata.generation;
  return status;
}

/** The summary conditions a held status replaces; the saga's own five stay as they were. */
const SUMMARY_TYPES = new Set(['Ready', 'Reconciling', 'Stalled', 'Suspended']);

/**
 * A status for a tenant the saga does not run for (decommissioning, suspended, unclaimed): the
 * stored status with a new summary (Ready, and Reconciling or Stalled as kstatus reads them) at the
 * current generation (no `ready`: the stored Ready is kept). `extra` adds conditions of its own (Suspended).
 * `base` replaces the stored status as the starting point (a decommission starts from nothing).
 */
export function heldStatus(
  tenant: EvaTenant,
  summary: { ready?: ConditionState; stalled?: ConditionState; idle?: boolean; extra?: Record<string, ConditionState> },
  now: Date,
  base: EvaTenantStatus = tenant.status ?? {},
): EvaTenantStatus {
  const previous = tenant.status?.conditions ?? [];
  const { ready, stalled, idle = false, extra } = summary;
  // No new Ready: the stored one stays as it is.
  const kept = (base.conditions ?? []).filter((c) => !SUMMARY_TYPES.has(c.type) || (c.type === 'Ready' && ready === undefined));
  // Idle (suspended): nobody works towards the spec, so no Reconciling even while Ready is not True.
  const progress = idle || ready === undefined ? {} : progressConditions(ready, stalled);
  const desired = { ...(ready ? { Ready: ready } : {}), ...progress, ...extra };
  const status: EvaTenantStatus = { ...base, conditions: [...kept, ...mergeConditions(previous, desired, now.toISOString(), tenant.metadata.generation)] };
  if (tenant.metadata.generation !== undefined) status.observedGeneration = tenant.metadata.generation;
  return status;
}

/**
 * What provisioning acts on: the spec, and a rotation of the NATS credentials asked for by annotation.
 * The pin (operatorVersion) only says which operator version acts on the tenant; nothing provisioned
 * depends on it.
 */
function provisionedSpecDigest(tenant: Pick<EvaTenant, 'spec' | 'metadata'>): string {
  const rotation = tenant.metadata.annotations?.[ROTATE_NATS_CREDENTIALS_ANNOTATION];
  return createHash('sha256').update(canonicalJson({ ...tenant.spec, operatorVersion: undefined, rotation })).digest('hex');
}

/**
 * Whether the tenant asks for something provisioning has not acted on yet. A new pin alone (a
 * hand-over between operator versions) is not: the new owner resumes, it does not re-provision. A
 * status without a digest (written by an older operator) counts any new generation.
 */
export function provisionedSpecChanged(tenant: EvaTenant): boolean {
  const stored = sagaRecordOf(tenant.status).specDigest;
  if (stored === undefined) {
    const observed = tenant.status?.observedGeneration;
    return observed !== undefined && observed !== tenant.metadata.generation;
  }
  return stored !== provisionedSpecDigest(tenant);
}

/** Equal as stored JSON (key order aside): such a status needs no write. */
export function sameStatus(a: EvaTenantStatus | undefined, b: EvaTenantStatus): boolean {
  return canonicalJson(a ?? {}) === canonicalJson(b);
}

export function persistedSnapshotOf(tenant: EvaTenant): unknown {
  return sagaRecordOf(tenant.status).snapshot;
}
