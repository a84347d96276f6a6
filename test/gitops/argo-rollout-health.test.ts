/**
 * deploy/argocd/rollout-health.lua run as Argo CD runs it (test/tools/argo-health), and the kstatus
 * library Flux uses (test/tools/kstatus), on EvaRollouts whose status one real rollout pass wrote
 * (controller/rollout-reconciler.ts over an in-memory world: its conditions are summarizeRollout's),
 * one object for each place a rollout can stand. The Lua reads what the TypeScript writes, so the two
 * cannot drift apart unseen.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { OWNER_ANNOTATION } from '../../src/api/constants.ts';
import type { EvaTenant } from '../../src/api/evatenant.ts';
import type { EvaRollout, EvaRolloutStatus } from '../../src/api/evarollout.ts';
import { reconcileRollout } from '../../src/controller/rollout-reconciler.ts';
import { ARGO_HEALTH, buildTool, judge, labelled, type Verdict } from '../support/health-tools.ts';
import { movedTenant, NEW, OLD, ports, rollout, tenant, type WorldOptions } from '../support/rollout-world.ts';

const fleet = (): EvaTenant[] => [tenant('a', 1), tenant('b', 1), tenant('c', 1), tenant('d', 2)];
/** Batch 1 (a, b) moved to NEW by rollout r. */
const firstBatchMoved = (options: Parameters<typeof movedTenant>[1] = {}): EvaTenant[] => fleet().map((t) => (t.metadata.name === 'a' || t.metadata.name === 'b' ? movedTenant(t, options) : t));
const ownedByTarget = (t: EvaTenant): EvaTenant => ({ ...t, metadata: { ...t.metadata, annotations: { [OWNER_ANNOTATION]: NEW } } });

/** The clock of the world is 00:10: batch 1 moved at 00:00 (or 00:09, still coming up), Ready at 00:05 (baked: 60 s) or 00:09:30 (baking). */
const MOVING: EvaRolloutStatus = { phase: 'Moving', wave: 1, batch: 1, movedAt: '2030-01-01T00:09:00Z' };
const BAKED: EvaRolloutStatus = { phase: 'Baking', wave: 1, batch: 1, movedAt: '2030-01-01T00:00:00Z', readyAt: '2030-01-01T00:05:00Z' };
const BAKING: EvaRolloutStatus = { ...BAKED, readyAt: '2030-01-01T00:09:30Z' };
const RETURNED: EvaRolloutStatus = { phase: 'RollingBack', wave: 1, batch: 1, movedAt: '2030-01-01T00:05:00Z' };

/** The rollout as the API server serves it after one pass over the world: with the status the pass wrote. */
async function afterPass(r: EvaRollout, tenants: EvaTenant[], options: WorldOptions = {}): Promise<EvaRollout> {
  const world = ports(tenants, options);
  await reconcileRollout(r, world);
  const status = world.statuses.at(-1);
  if (status === undefined) throw new Error(`the pass over ${r.metadata.name} wrote no status`);
  return { ...r, status };
}

/** A later spec change: generation moves on, the status stays where it was. */
const edited = (r: EvaRollout): EvaRollout => ({ ...r, metadata: { ...r.metadata, generation: 2 } });

/** Each place a rollout can stand, by label. */
async function objects(): Promise<Record<string, EvaRollout>> {
  const moving = await afterPass(rollout('r'), fleet());
  const succeeded = await afterPass(rollout('r', BAKED), [movedTenant(tenant('a', 1)), movedTenant(tenant('b', 1))], { answer: { value: 0 } });
  const rolledBack = await afterPass(rollout('r', RETURNED), firstBatchMoved({ pin: OLD }));
  return {
    'no status': rollout('r'),
    moving,
    baking: await afterPass(rollout('r', BAKING), firstBatchMoved()),
    'rolling back': await afterPass(rollout('r', BAKED), firstBatchMoved()),
    'rolled back': rolledBack,
    halted: await afterPass(rollout('r', BAKED, undefined, { onFailure: 'Halt' }), firstBatchMoved()),
    'target absent': await afterPass(rollout('r'), fleet(), { versions: [OLD] }),
    overlapping: await afterPass(rollout('r', undefined, '2030-01-01T00:05:00Z'), fleet(), { rollouts: [rollout('first', { phase: 'Moving' })] }),
    'nothing to move': await afterPass(rollout('r'), fleet().map(ownedByTarget)),
    succeeded,
    paused: await afterPass(rollout('r', undefined, undefined, { paused: true }), fleet()),
    'paused after a batch': await afterPass(rollout('r', BAKED, undefined, { paused: true }), firstBatchMoved(), { answer: { value: 0 } }),
    'paused, batch in flight': await afterPass(rollout('r', MOVING, undefined, { paused: true }), firstBatchMoved({ ready: false })),
    'spec change not observed': edited(moving),
    'succeeded, then edited': edited(succeeded),
    'rolled back, then edited': edited(rolledBack),
  };
}

describe('the Argo CD health check of EvaRollout, on the statuses a rollout pass writes', () => {
  let rollouts: Record<string, EvaRollout>;
  let argo: Record<string, Verdict>;
  let flux: Record<string, Verdict>;

  beforeAll(async () => {
    rollouts = await objects();
    const labelledObjects = Object.entries(rollouts).map(([label, r]) => labelled(label, r));
    argo = judge(buildTool('argo-health'), [ARGO_HEALTH.EvaRollout], labelledObjects);
    flux = judge(buildTool('kstatus'), [], labelledObjects);
  }, 600_000);

  /** Per place: kstatus (Flux), the Argo CD health, and how the Argo CD message starts (the condition's reason). */
  const EXPECTED: Record<string, [string, string, string]> = {
    'no status': ['Current', 'Progressing', 'waiting for the operator'],
    moving: ['InProgress', 'Progressing', 'RolloutMoving: '],
    baking: ['InProgress', 'Progressing', 'RolloutBaking: '],
    'rolling back': ['InProgress', 'Progressing', 'RollingBack: Prometheus Unknown'],
    'rolled back': ['Failed', 'Degraded', 'RolledBack: '],
    halted: ['Failed', 'Degraded', 'GateFailed: Prometheus Unknown'],
    'target absent': ['Failed', 'Degraded', 'TargetVersionAbsent: '],
    overlapping: ['Failed', 'Degraded', 'RolloutOverlaps: '],
    'nothing to move': ['Failed', 'Degraded', 'NothingToMove: '],
    succeeded: ['Current', 'Healthy', 'RolloutSucceeded: '],
    paused: ['InProgress', 'Suspended', 'RolloutPaused: paused before wave 1 batch 1'],
    'paused after a batch': ['InProgress', 'Suspended', 'RolloutPaused: paused before wave 1 batch 2'],
    'paused, batch in flight': ['InProgress', 'Progressing', 'RolloutMoving: '],
    'spec change not observed': ['InProgress', 'Progressing', 'the operator has not observed generation 2 yet'],
    // The operator does not look at an ended rollout again (rollout-reconciler.ts): observedGeneration stays behind.
    'succeeded, then edited': ['InProgress', 'Healthy', 'RolloutSucceeded: '],
    'rolled back, then edited': ['InProgress', 'Degraded', 'RolledBack: '],
  };

  it('gives each place a rollout stands its verdict, with the condition that says why (kstatus beside it)', () => {
    const table = Object.entries(rollouts).map(([label, r]) => {
      const phase = r.status?.phase ?? '(none)';
      return `${label.padEnd(26)} ${phase.padEnd(12)} ${(flux[label]?.status ?? '?').padEnd(12)} ${(argo[label]?.status ?? '?').padEnd(12)} ${argo[label]?.message ?? ''}`;
    });
    console.log(['[argo-rollout-health] rollout          phase        kstatus      argo health  argo message', ...table].join('\n'));
    const seen = Object.fromEntries(Object.keys(rollouts).map((label) => [label, [flux[label]?.status, argo[label]?.status, argo[label]?.message.slice(0, EXPECTED[label]?.[2].length)]]));
    expect(seen).toEqual(EXPECTED);
  });

  it('the statuses are the ones each verdict is about: the phase, and the batch in flight', () => {
    expect(Object.fromEntries(Object.entries(rollouts).map(([label, r]) => [label, r.status?.phase]))).toMatchObject({
      moving: 'Moving', baking: 'Baking', 'rolling back': 'RollingBack', 'rolled back': 'RolledBack', halted: 'Halted', succeeded: 'Succeeded',
      // A pause after a batch passed its gates leaves the phase where it was: the conditions say that nothing is in flight.
      'paused after a batch': 'Baking', 'paused, batch in flight': 'Moving',
    });
    expect(new Set(Object.values(argo).map((v) => v.status))).toEqual(new Set(['Progressing', 'Degraded', 'Healthy', 'Suspended']));
  });
});
