/**
 * The EvaRollout API: one cluster-scoped object moves the tenants of a fleet to another operator
 * version, wave by wave and batch by batch, each batch judged by gates after a bake time, halted and
 * (if asked) rolled back on a failed gate. One source for the types, the parser and the CRD, like
 * evatenant.ts. Draft: the controller that acts on it is not written yet (docs/rollouts.md).
 */
import { type Static, Type } from '@sinclair/typebox';
import { CONDITION_STATUSES, GROUP, SEMVER_PATTERN, WAVES } from './constants.ts';
import { celRules, StringEnum } from './schema-kinds.ts';

export const ROLLOUT_KIND = 'EvaRollout';
export const ROLLOUT_PLURAL = 'evarollouts';
export const ROLLOUT_SHORT_NAMES = ['evr'] as const;

/**
 * On a tenant a rollout moved, written in the same patch as its pin: which rollout, the wave and the
 * batch (numbered across the rollout) it moved in, and the version it left (where a rollback returns it).
 */
export const ROLLOUT_ANNOTATIONS = {
  rollout: `${GROUP}/rollout`,
  wave: `${GROUP}/rollout-wave`,
  batch: `${GROUP}/rollout-batch`,
  from: `${GROUP}/rollout-from`,
} as const;

export const FAILURE_POLICIES = ['Halt', 'Rollback'] as const;
/** The gates a batch is judged by (src/rollout/gates.ts), as spec.skipGates and status.gates name them. */
export const GATE_NAMES = ['TenantsReady', 'PodRestarts', 'PodsReady', 'Prometheus'] as const;
export type GateName = (typeof GATE_NAMES)[number];
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];

/** How a wave is cut into batches: a count of tenants, or a percentage of the wave's tenants (rounded up). */
const BatchSizeSchema = Type.Object(
  {
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: 'Tenants per batch.' })),
    percent: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: "Per batch, this share of the wave's tenants, rounded up (at least one)." })),
  },
  celRules({ rule: 'has(self.count) != has(self.percent)', message: 'set exactly one of count and percent' }),
);

export const RolloutWaveSchema = Type.Object({
  wave: Type.Integer({ minimum: WAVES.min, maximum: WAVES.max, description: 'The tenants of this wave (spec.wave).' }),
  batch: BatchSizeSchema,
  bakeSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400, default: 300, description: 'Time after a batch is Ready before its gates are judged.' })),
});

const PrometheusGateSchema = Type.Object({
  url: Type.String({ pattern: '^https?://', maxLength: 512, description: 'The Prometheus server to ask (its HTTP API).' }),
  query: Type.String({ minLength: 1, maxLength: 4096, description: 'An instant PromQL query giving one number (e.g. an error rate of the moved tenants).' }),
  max: Type.Number({ description: 'The gate fails when the value is above this.' }),
});

export const RolloutGatesSchema = Type.Object({
  readyTimeoutSeconds: Type.Optional(
    Type.Integer({ minimum: 30, maximum: 86_400, default: 900, description: 'Every moved tenant Ready, on the target version, with observedGeneration current, within this time of its move.' }),
  ),
  maxPodRestarts: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000, default: 3, description: "Per moved tenant, at most this many container restarts of its module pods since the move." })),
  maxUnreadyPods: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000, default: 0, description: 'Per moved tenant, at most this many module pods not Ready once baked.' })),
  prometheus: Type.Optional(PrometheusGateSchema),
});

export const EvaRolloutSpecSchema = Type.Object({
  targetVersion: Type.String({
    pattern: SEMVER_PATTERN,
    maxLength: 64,
    description: 'The operator version to move tenants to: one that runs in the cluster (its Lease is held).',
    ...celRules({ rule: 'self == oldSelf', message: 'targetVersion is immutable: start another rollout' }),
  }),
  fromVersion: Type.Optional(
    Type.String({ pattern: SEMVER_PATTERN, maxLength: 64, description: 'Only tenants owned by this version move (default: every tenant owned by another version).' }),
  ),
  waves: Type.Array(RolloutWaveSchema, {
    minItems: 1,
    maxItems: 3,
    description: 'The waves in the order they move.',
    ...celRules({ rule: 'self.all(w, self.exists_one(o, o.wave == w.wave))', message: 'a wave is named once' }),
  }),
  gates: Type.Optional(RolloutGatesSchema),
  onFailure: Type.Optional(StringEnum(FAILURE_POLICIES, { default: 'Rollback', description: 'A failed gate halts the rollout; Rollback also returns the moved tenants, batch by batch.' })),
  paused: Type.Optional(Type.Boolean({ default: false, description: 'Stops before the next move (a batch in flight is judged).' })),
  skipGates: Type.Optional(
    Type.Array(StringEnum(GATE_NAMES), {
      maxItems: GATE_NAMES.length,
      description: 'Gates not judged (they pass, saying so). A rollout halted by gates that are all named here moves on.',
    }),
  ),
  abort: Type.Optional(Type.Boolean({ default: false, description: 'Stops the rollout as a failed gate would (onFailure: Rollback returns the moved tenants).' })),
});
export type EvaRolloutSpec = Static<typeof EvaRolloutSpecSchema>;
export type RolloutWave = Static<typeof RolloutWaveSchema>;
export type RolloutGates = Static<typeof RolloutGatesSchema>;

export const ROLLOUT_PHASES = ['Pending', 'Moving', 'Baking', 'Succeeded', 'Halted', 'RollingBack', 'RolledBack'] as const;
export type RolloutPhase = (typeof ROLLOUT_PHASES)[number];

export const GATE_VERDICTS = ['Passed', 'Failed', 'Unknown'] as const;
export type GateVerdictValue = (typeof GATE_VERDICTS)[number];

const GateResultSchema = Type.Object({
  gate: Type.String(),
  verdict: StringEnum(GATE_VERDICTS),
  message: Type.String(),
  tenants: Type.Optional(Type.Array(Type.String(), { maxItems: 50 })),
});

export const EvaRolloutStatusSchema = Type.Object({
  phase: Type.Optional(StringEnum(ROLLOUT_PHASES)),
  observedGeneration: Type.Optional(Type.Integer()),
  /** The wave and batch in flight (1-based batch). */
  wave: Type.Optional(Type.Integer()),
  batch: Type.Optional(Type.Integer()),
  /** When the batch in flight was moved (or, rolling back, returned), and when it was Ready on its version. */
  movedAt: Type.Optional(Type.String({ format: 'date-time' })),
  readyAt: Type.Optional(Type.String({ format: 'date-time' })),
  moved: Type.Optional(Type.Integer({ description: 'Tenants on the target version by this rollout.' })),
  total: Type.Optional(Type.Integer({ description: 'Tenants the plan moves.' })),
  gates: Type.Optional(Type.Array(GateResultSchema)),
  skipped: Type.Optional(Type.Array(Type.String(), { maxItems: 50, description: "Tenants of the plan's waves left where they are: spec.suspend stops their hand-over (first 50)." })),
  conditions: Type.Optional(
    Type.Array(
      Type.Object({
        type: Type.String(),
        status: StringEnum(CONDITION_STATUSES),
        reason: Type.String(),
        message: Type.String(),
        lastTransitionTime: Type.String({ format: 'date-time' }),
        observedGeneration: Type.Optional(Type.Integer()),
      }),
    ),
  ),
});
export type EvaRolloutStatus = Static<typeof EvaRolloutStatusSchema>;
export type GateResult = Static<typeof GateResultSchema>;

/** An EvaRollout as the operator reads it. */
export interface EvaRollout {
  apiVersion: string;
  kind: typeof ROLLOUT_KIND;
  metadata: { name: string; uid?: string; generation?: number; resourceVersion?: string; creationTimestamp?: string; deletionTimestamp?: string };
  spec: EvaRolloutSpec;
  status?: EvaRolloutStatus;
}
