/**
 * What a decision does to where the rollout stands (its status's phase, the batch in flight, when it
 * moved and was Ready, the gate verdicts), and the counts the status shows. Pure: the conditions are
 * the status room's (status/summarize.ts, summarizeRollout), the write the controller's.
 */
import type { EvaRolloutSpec, EvaRolloutStatus } from '../api/evarollout.ts';
import type { RolloutAction } from './decide.ts';
import { type FleetTenant, progress } from './plan.ts';

/** The verdicts that let a batch go, kept in the status until the next batch is judged. */
const keptVerdicts = (action: RolloutAction): Pick<EvaRolloutStatus, 'gates'> => (action.judged === undefined ? {} : { gates: [...action.judged] });

/** The status after `action` was carried out at `at` (ISO time); a wait or a stall changes nothing here. */
export function statusAfter(action: RolloutAction, status: EvaRolloutStatus, at: string): EvaRolloutStatus {
  switch (action.kind) {
    case 'move':
    case 'recorded':
      return { ...status, phase: 'Moving', wave: action.batch.wave, batch: action.batch.batch, movedAt: at, ...keptVerdicts(action) };
    case 'return':
      return { ...status, phase: 'RollingBack', wave: action.batch.wave, batch: action.batch.batch, movedAt: at };
    case 'ready':
      return { ...status, phase: 'Baking', readyAt: at };
    case 'halt':
      return { ...status, phase: action.rollBack ? 'RollingBack' : 'Halted', gates: action.gates };
    case 'succeeded':
      return { ...status, phase: 'Succeeded', ...keptVerdicts(action) };
    case 'rolledBack':
      return { ...status, phase: 'RolledBack' };
    case 'wait':
    case 'stall':
      return status;
  }
}

/** Tenants the plan moves, and how many this rollout moved (and has not returned). */
export function counts(fleet: readonly FleetTenant[], spec: EvaRolloutSpec, rollout: string): { total: number; moved: number } {
  const waves = progress(fleet, spec, rollout);
  const returned = fleet.filter((t) => t.moved?.rollout === rollout && (t.pinnedTo ?? t.owner) === t.moved.from).length;
  return { total: waves.reduce((n, w) => n + w.total, 0), moved: waves.reduce((n, w) => n + w.moved, 0) - returned };
}
