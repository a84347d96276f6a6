/** What the controller records; implemented by metrics/metrics.ts (OperatorMetrics). */
import type { Tier } from '../api/constants.ts';
import type { StepMetrics } from '../saga/tenant-steps.ts';

export interface OperatorMetricsSink extends StepMetrics {
  observeTimeToActive(tier: Tier, seconds: number): void;
  forgetTenant(code: string): void;
}
