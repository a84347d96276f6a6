/** One rollout pass against in-memory ports: what it patches, writes and records, and when it refuses to move. */
import { V1MicroTime, type V1Lease } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { API_VERSION, KIND, OWNER_ANNOTATION } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { type EvaRollout, type EvaRolloutStatus, ROLLOUT_ANNOTATIONS, ROLLOUT_KIND } from '../api/evarollout.ts';
import type { QueryAnswer } from '../rollout/gates.ts';
import { type RolloutPorts, reconcileRollout } from './rollout-reconciler.ts';

const NOW = Date.parse('2030-01-01T00:10:00Z');
const OLD = '1.4.0';
const NEW = '1.5.0';

const tenant = (name: string, wave: number): EvaTenant => ({
  apiVersion: API_VERSION,
  kind: KIND,
  metadata: { name, generation: 1, resourceVersion: `${name}-rv`, annotations: { [OWNER_ANNOTATION]: OLD } },
  spec: { capsuleCode: name.toUpperCase().padEnd(6, 'X').slice(0, 6), tier: 'Starter', lifecycle: 'Active', wave },
  status: { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True', reason: 'Provisioned', message: '', lastTransitionTime: '2030-01-01T00:00:00Z' }] },
});

const lease = (version: string): V1Lease => ({
  metadata: { name: `eva-operator-${version.replaceAll('.', '-')}` },
  spec: { holderIdentity: 'pod', leaseDurationSeconds: 15, renewTime: new V1MicroTime(NOW - 1000) },
});

const rollout = (name: string, status?: EvaRolloutStatus, created = '2030-01-01T00:00:00Z'): EvaRollout => ({
  apiVersion: API_VERSION,
  kind: ROLLOUT_KIND,
  metadata: { name, generation: 1, creationTimestamp: created },
  spec: { targetVersion: NEW, waves: [{ wave: 1, batch: { count: 2 }, bakeSeconds: 60 }, { wave: 2, batch: { percent: 100 } }], gates: { prometheus: { url: 'http://127.0.0.1:9', query: 'sum(errors)', max: 0 } } },
  ...(status === undefined ? {} : { status }),
});

interface Recorded {
  readonly patches: { name: string; patch: object }[];
  readonly statuses: EvaRolloutStatus[];
  readonly events: string[];
  readonly asked: string[];
}

function ports(tenants: EvaTenant[], options: { versions?: string[]; rollouts?: EvaRollout[]; answer?: QueryAnswer } = {}): RolloutPorts & Recorded {
  const recorded: Recorded = { patches: [], statuses: [], events: [], asked: [] };
  return {
    ...recorded,
    tenants: () => tenants,
    rollouts: () => options.rollouts ?? [],
    leases: () => Promise.resolve((options.versions ?? [OLD, NEW]).map(lease)),
    modulePods: () => Promise.resolve([]),
    ask: (_url, query) => {
      recorded.asked.push(query);
      return Promise.resolve(options.answer ?? { error: 'connection refused' });
    },
    patchTenant: (name, patch) => {
      recorded.patches.push({ name, patch });
      return Promise.resolve();
    },
    writeStatus: (_r, status) => {
      recorded.statuses.push(status);
      return Promise.resolve();
    },
    recordEvent: (_r, type, reason, message) => {
      recorded.events.push(`${type} ${reason}: ${message}`);
      return Promise.resolve();
    },
    now: () => NOW,
  };
}

const condition = (status: EvaRolloutStatus | undefined, type: string): string | undefined => {
  const c = status?.conditions?.find((x) => x.type === type);
  return c === undefined ? undefined : `${c.status}/${c.reason}`;
};

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
    const moved = fleet().map((t) =>
      t.metadata.name === 'a' || t.metadata.name === 'b'
        ? {
            ...t,
            metadata: { ...t.metadata, annotations: { [OWNER_ANNOTATION]: NEW, [ROLLOUT_ANNOTATIONS.rollout]: 'r', [ROLLOUT_ANNOTATIONS.wave]: '1', [ROLLOUT_ANNOTATIONS.batch]: '1', [ROLLOUT_ANNOTATIONS.from]: OLD } },
            spec: { ...t.spec, operatorVersion: NEW },
          }
        : t,
    );
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
