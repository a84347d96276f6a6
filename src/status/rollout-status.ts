/**
 * A rollout's status: where it stands (src/rollout/record.ts) with its summary conditions
 * (summarizeRollout), merged into the stored ones as every status here is (lastTransitionTime kept
 * while a condition's status holds), at the current generation.
 */
import type { EvaRollout, EvaRolloutStatus, RolloutPhase } from '../api/evarollout.ts';
import { mergeConditions } from './conditions.ts';
import { type RolloutStanding, summarizeRollout } from './summarize.ts';

const STANDING_OF_PHASE: Readonly<Record<RolloutPhase, Exclude<RolloutStanding['kind'], 'stalled' | 'paused'>>> = {
  Pending: 'moving',
  Moving: 'moving',
  Baking: 'baking',
  RollingBack: 'rollingBack',
  Succeeded: 'succeeded',
  RolledBack: 'rolledBack',
  Halted: 'halted',
};

/** Where a rollout stands for its summary: a stall or a pause, when the last decision was one; else its phase. */
export function rolloutStanding(status: EvaRolloutStatus, decided: { stalled?: Extract<RolloutStanding, { kind: 'stalled' }>; paused?: boolean }, message: string): RolloutStanding {
  if (decided.stalled !== undefined) return decided.stalled;
  if (decided.paused === true) return { kind: 'paused', message };
  return { kind: STANDING_OF_PHASE[status.phase ?? 'Pending'], message };
}

export function rolloutStatus(rollout: EvaRollout, status: EvaRolloutStatus, standing: RolloutStanding, now: Date): EvaRolloutStatus {
  const conditions = mergeConditions(rollout.status?.conditions ?? [], summarizeRollout(standing), now.toISOString(), rollout.metadata.generation);
  return { ...status, conditions, ...(rollout.metadata.generation === undefined ? {} : { observedGeneration: rollout.metadata.generation }) };
}
