/**
 * Builds the status written after each saga transition: derived conditions, phase, timings and the
 * persisted snapshot. A status equal to the one already stored is not written again, so an idle
 * drift check makes no API write.
 */
import type { EvaTenant, EvaTenantStatus } from '../api/evatenant.ts';
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
    saga: { snapshot: persisted },
  };
  if (tenant.metadata.generation !== undefined) status.observedGeneration = tenant.metadata.generation;
  return status;
}

/** Equal as stored JSON (key order aside): such a status needs no write. */
export function sameStatus(a: EvaTenantStatus | undefined, b: EvaTenantStatus): boolean {
  return canonical(a ?? {}) === canonical(b);
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([x], [y]) => x.localeCompare(y)))
      : v,
  );
}

export function persistedSnapshotOf(tenant: EvaTenant): unknown {
  const saga = tenant.status?.saga;
  return saga && typeof saga === 'object' ? saga['snapshot'] : undefined;
}
