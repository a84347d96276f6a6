/** One rollout pass against in-memory ports: what it patches, writes and records, and when it refuses to move. */
import { describe, expect, it } from 'vitest';
import type { EvaTenant } from '../api/evatenant.ts';
import { ROLLOUT_ANNOTATIONS } from '../api/evarollout.ts';
import { condition, movedTenant, NEW, NOW, OLD, ports, rollout, tenant } from '../../test/support/rollout-world.ts';
import type { RolloutMetricsSink } from './metrics-sink.ts';
import { reconcileRollout } from './rollout-reconciler.ts';

describe('one rollout pass', () => {
  const fleet = (): EvaTenant[] => [tenant('c', 1), tenant('a', 1), tenant('b', 1), tenant('d', 2)];

  it('leaves a tenant with spec.suspend where it is and lists it in status.skipped', async () => {
    const held = { ...tenant('e', 1), spec: { ...tenant('e', 1).spec, suspend: true } };
    const world = ports([...fleet(), held]);
    await reconcileRollout(rollout('r'), world);
    expect(world.patches.map((p) => p.name)).not.toContain('e');
    expect(world.statuses[0]?.skipped).toEqual(['e']);
  });

  it('pins the first batch with guarded patches that record the move, says so in status and an Event', async () => {
    const world = ports(fleet());
    expect(await reconcileRollout(rollout('r'), world)).toBe(5);
    expect(world.patches).toEqual(
      ['a', 'b'].map((name) => ({
        name,
        patch: {
          metadata: { resourceVersion: `${name}-rv`, annotations: { [ROLLOUT_ANNOTATIONS.rollout]: 'r', [ROLLOUT_ANNOTATIONS.wave]: '1', [ROLLOUT_ANNOTATIONS.batch]: '1', [ROLLOUT_ANNOTATIONS.from]: OLD } },
          spec: { operatorVersion: NEW },
        },
      })),
    );
    const [status] = world.statuses;
    expect(status).toMatchObject({ phase: 'Moving', wave: 1, batch: 1, movedAt: new Date(NOW).toISOString(), total: 4, moved: 2, observedGeneration: 1 });
    expect([condition(status, 'Ready'), condition(status, 'Reconciling')]).toEqual(['False/RolloutMoving', 'True/RolloutMoving']);
    expect(world.events).toEqual(['Normal RolloutMoving: wave 1 batch 1: moving a, b']);
    expect(world.asked).toEqual([]);
  });

  it('moves nothing and reports Stalled when no operator of the target version runs', async () => {
    const world = ports(fleet(), { versions: [OLD] });
    await reconcileRollout(rollout('r'), world);
    expect(world.patches).toEqual([]);
    expect(condition(world.statuses[0], 'Stalled')).toBe('True/TargetVersionAbsent');
  });

  it('a later rollout over the same tenants waits for the earlier one', async () => {
    const earlier = rollout('first', { phase: 'Moving' }, '2030-01-01T00:00:00Z');
    const world = ports(fleet(), { rollouts: [earlier] });
    await reconcileRollout(rollout('second', undefined, '2030-01-01T00:05:00Z'), world);
    expect(world.patches).toEqual([]);
    expect(world.statuses[0]?.conditions?.find((c) => c.type === 'Stalled')).toMatchObject({ reason: 'RolloutOverlaps', message: 'rollout first moves some of the same tenants' });
  });

  it('judges a baked batch with Prometheus, and an answer it cannot get halts and returns the batch', async () => {
    const moved = fleet().map((t) => (t.metadata.name === 'a' || t.metadata.name === 'b' ? movedTenant(t) : t));
    const baked = { phase: 'Baking' as const, wave: 1, batch: 1, movedAt: '2030-01-01T00:00:00Z', readyAt: '2030-01-01T00:05:00Z' };
    const world = ports(moved);
    await reconcileRollout(rollout('r', baked), world);
    expect(world.asked).toEqual(['sum(errors)']);
    expect(world.patches).toEqual([]);
    const [status] = world.statuses;
    expect(status?.phase).toBe('RollingBack');
    expect(status?.gates?.find((g) => g.gate === 'Prometheus')).toMatchObject({ verdict: 'Unknown', message: 'cannot evaluate sum(errors): connection refused' });
    expect(world.events[0]).toMatch(/^Warning GateFailed: Prometheus Unknown/);
    // The next pass returns the batch to where it came from.
    const next = ports(moved);
    await reconcileRollout(rollout('r', status), next);
    expect(next.patches.map((p) => [p.name, p.patch])).toEqual([
      ['a', { metadata: { resourceVersion: 'a-rv' }, spec: { operatorVersion: OLD } }],
      ['b', { metadata: { resourceVersion: 'b-rv' }, spec: { operatorVersion: OLD } }],
    ]);
  });
});

describe('what a pass records in metrics', () => {
  const fleet = (): EvaTenant[] => [tenant('c', 1), tenant('a', 1), tenant('b', 1), tenant('d', 2)];
  const baked = { phase: 'Baking' as const, wave: 1, batch: 1, movedAt: '2030-01-01T00:00:00Z', readyAt: '2030-01-01T00:05:00Z' };
  const firstBatchMoved = (): EvaTenant[] => fleet().map((t) => (t.metadata.name === 'a' || t.metadata.name === 'b' ? movedTenant(t) : t));

  function sink(): RolloutMetricsSink & { readonly seen: string[] } {
    const seen: string[] = [];
    return {
      seen,
      setRolloutProgress: (rollout, phase, moved) => seen.push(`${rollout} ${phase} moved=${String(moved)}`),
      countGateResult: (rollout, gate, verdict) => seen.push(`${rollout} ${gate} ${verdict}`),
      forgetRollout: (rollout) => seen.push(`forget ${rollout}`),
    };
  }

  it('where the rollout stands after the pass, and no verdict while none was reached', async () => {
    const metrics = sink();
    await reconcileRollout(rollout('r'), { ...ports(fleet()), metrics });
    expect(metrics.seen).toEqual(['r Moving moved=2']);
  });

  it('the verdicts of a judged batch, one per gate, once the status that follows from them is stored', async () => {
    const metrics = sink();
    await reconcileRollout(rollout('r', baked), { ...ports(firstBatchMoved()), metrics });
    expect(metrics.seen).toEqual(['r RollingBack moved=2', 'r TenantsReady Passed', 'r PodRestarts Passed', 'r PodsReady Passed', 'r Prometheus Unknown']);
    // Passing gates are counted on the move they lead to.
    const passing = sink();
    await reconcileRollout(rollout('r', baked), { ...ports(firstBatchMoved(), { answer: { value: 0 } }), metrics: passing });
    expect(passing.seen).toEqual(['r Moving moved=3', 'r TenantsReady Passed', 'r PodRestarts Passed', 'r PodsReady Passed', 'r Prometheus Passed']);
  });

  it('nothing when the status write fails (the retried pass judges again and counts then)', async () => {
    const metrics = sink();
    const failing = { ...ports(firstBatchMoved()), metrics, writeStatus: () => Promise.reject(new Error('409 Conflict')) };
    await expect(reconcileRollout(rollout('r', baked), failing)).rejects.toThrow('409');
    expect(metrics.seen).toEqual([]);
  });

  it('an ended rollout is not looked at again, but where it ended is still reported (an operator that took over has no series yet)', async () => {
    const metrics = sink();
    const world = { ...ports(fleet()), metrics };
    expect(await reconcileRollout(rollout('r', { phase: 'Succeeded', moved: 4, total: 4, observedGeneration: 1 }), world)).toBeUndefined();
    expect(metrics.seen).toEqual(['r Succeeded moved=4']);
    expect(world.statuses).toEqual([]);
  });

  it('an ended rollout whose spec was edited since acknowledges the generation, still ended, moving nothing', async () => {
    const world = ports(fleet());
    const edited = { ...rollout('r', { phase: 'RolledBack', moved: 0, total: 4, observedGeneration: 1 }), metadata: { name: 'r', generation: 2 } };
    expect(await reconcileRollout(edited, world)).toBeUndefined();
    expect(world.statuses).toMatchObject([{ phase: 'RolledBack', observedGeneration: 2, conditions: expect.arrayContaining([expect.objectContaining({ type: 'Stalled', status: 'True' })]) as unknown }]);
    expect(world.patches).toEqual([]);
  });
});

