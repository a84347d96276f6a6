/**
 * The rollout controller's metrics (controller/metrics-sink.ts's RolloutMetricsSink), registered with
 * the operator's others: where each rollout stands, kube-state-metrics style (one series per phase,
 * 1 for the current one), the tenants it moved, and the verdicts of its gates. A rollout's name is a
 * label: there are few, and each is an object someone applied.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { type GateResult, ROLLOUT_PHASES, type RolloutPhase } from '../api/evarollout.ts';

export class RolloutMetrics {
  private readonly phase: Gauge<'rollout' | 'phase'>;
  private readonly moved: Gauge<'rollout'>;
  private readonly gateResults: Counter<'rollout' | 'gate' | 'verdict'>;

  constructor(registers: Registry[]) {
    this.phase = new Gauge({
      name: 'eva_rollout_phase',
      help: "EvaRollouts by status.phase: 1 for the rollout's current phase, 0 for the others (reported by the operator that runs rollouts).",
      labelNames: ['rollout', 'phase'],
      registers,
    });
    this.moved = new Gauge({
      name: 'eva_rollout_tenants_moved',
      help: 'Tenants an EvaRollout has moved to its target version and not returned (status.moved).',
      labelNames: ['rollout'],
      registers,
    });
    this.gateResults = new Counter({
      name: 'eva_rollout_gate_results_total',
      help: "Gate verdicts (Passed, Failed, Unknown) of the batches an EvaRollout judged, by gate: one per gate each time a batch's verdicts decide its next step.",
      labelNames: ['rollout', 'gate', 'verdict'],
      registers,
    });
  }

  setRolloutProgress(rollout: string, phase: RolloutPhase, moved: number): void {
    for (const each of ROLLOUT_PHASES) this.phase.set({ rollout, phase: each }, each === phase ? 1 : 0);
    this.moved.set({ rollout }, moved);
  }

  countGateResult(rollout: string, gate: GateResult['gate'], verdict: GateResult['verdict']): void {
    this.gateResults.inc({ rollout, gate, verdict });
  }

  /** The gauges only: a counter keeps its series for the life of the process, as counters do. */
  forgetRollout(rollout: string): void {
    for (const phase of ROLLOUT_PHASES) this.phase.remove({ rollout, phase });
    this.moved.remove({ rollout });
  }
}
