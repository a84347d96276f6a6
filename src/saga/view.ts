/** Where the saga stands, read from its snapshot: what the status room (src/status/) derives the status from. */
import type { StepName } from '../steps/step.ts';
import type { StepProblem } from './provisioning-machine.ts';

export type SagaStage = 'requested' | 'provisioning' | 'waiting' | 'failed' | 'interrupted' | 'active' | 'checking' | 'degraded';

/** Where the saga stands, as read from its snapshot. */
export interface SagaView {
  stage: SagaStage;
  /** The step running now (provisioning), or the one a shutdown stopped the saga before (interrupted). */
  currentStep?: StepName;
  problem?: StepProblem;
  wasActive: boolean;
  /** A spec change is being applied (as opposed to drift being repaired). */
  updating?: boolean;
}
