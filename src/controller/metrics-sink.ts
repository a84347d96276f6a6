/** What the controllers record; implemented by metrics/metrics.ts (OperatorMetrics and its part `rollouts`). */
import type { Tier } from '../api/constants.ts';
import type { GateResult, RolloutPhase } from '../api/evarollout.ts';
import type { StepMetrics } from '../saga/tenant-steps.ts';

export interface OperatorMetricsSink extends StepMetrics {
  observeTimeToActive(tier: Tier, seconds: number): void;
  forgetTenant(code: string): void;
}

export interface RolloutMetricsSink {
  /** Where a rollout stands after a pass: its phase, and the tenants it moved and has not returned. */
  setRolloutProgress(rollout: string, phase: RolloutPhase, moved: number): void;
  countGateResult(rollout: string, gate: GateResult['gate'], verdict: GateResult['verdict']): void;
  /** Drops a rollout's gauges: it was deleted, or this operator stopped running rollouts (the next one reports them). */
  forgetRollout(rollout: string): void;
}
