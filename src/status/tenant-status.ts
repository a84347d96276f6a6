/**
 * Builds the status written after each saga transition: derived conditions, phase, timings and the
 * persisted snapshot. A status equal to the one already stored is not written again, so an idle
 * drift check makes no API write.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../canonical-json.ts';
import type { EvaTenant, EvaTenantStatus } from '../api/evatenant.ts';
import { PROVISIONING_CONDITIONS, ROTATE_NATS_CREDENTIALS_ANNOTATION } from '../api/constants.ts';
import { sagaRecord, sagaRecordOf } from './saga-record.ts';
import type { SagaView } from '../saga/view.ts';
import { atRest, type ConditionState, desiredConditions, hibernatedConditions, hibernatedPhase, mergeConditions, phaseOf } from './conditions.ts';
import { type Standing, summarize, SUMMARY_TYPES } from './summarize.ts';

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

/** The five from the saga's view (as a hibernated tenant keeps them, when it is one), and their summary. */
export function sagaConditions(view: SagaView, hibernated: boolean): Record<string, ConditionState> {
  if (hibernated && atRest(view)) return { ...hibernatedConditions(view), ...summarize({ kind: 'hibernated' }) };
  const five = desiredConditions(view);
  const needsUser = !atRest(view) && view.problem?.needsUser === true ? view.problem.reason : undefined;
  return { ...five, ...summarize({ kind: 'provisioning', conditions: five, ...(needsUser === undefined ? {} : { needsUser }) }) };
}

export function buildStatus(tenant: EvaTenant, view: SagaView, persisted: unknown, now: Date): EvaTenantStatus {
  const previous = tenant.status ?? {};
  const hibernated = tenant.spec.lifecycle === 'Suspended';
  const desired = sagaConditions(view, hibernated);
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

/**
 * A status for a tenant the saga does not run for (suspended, decommissioning, unserved): the stored
 * status (or `base`: a decommission starts from nothing) with the summary of where it stands, at the
 * current generation; the saga's own five stay as they were, and so does the stored Ready when the
 * summary has none (suspended).
 */
export function heldStatus(tenant: EvaTenant, standing: Exclude<Standing, { kind: 'provisioning' | 'hibernated' }>, now: Date, base: EvaTenantStatus = tenant.status ?? {}): EvaTenantStatus {
  const previous = tenant.status?.conditions ?? [];
  const desired = summarize(standing);
  const kept = (base.conditions ?? []).filter((c) => !SUMMARY_TYPES.has(c.type) || (c.type === 'Ready' && desired['Ready'] === undefined));
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
