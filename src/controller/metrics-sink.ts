/** What the controller records; implemented by metrics/metrics.ts (OperatorMetrics). */
import type { Tier } from '../api/constants.ts';
import type { StepName } from '../steps/step.ts';

export interface OperatorMetricsSink {
  observeStep(step: StepName, tier: Tier, seconds: number): void;
  observeTimeToActive(tier: Tier, seconds: number): void;
  setQueueDepth(code: string, stream: string, messages: number): void;
  forgetQueueDepth(code: string, stream: string): void;
  forgetTenant(code: string): void;
}
