import { describe, expect, it } from 'vitest';
import { judgeBatch, judgeQuery, passed, readiness, type TenantHealth } from './gates.ts';
import { batchSize, type FleetTenant, nextBatch, nextReturn, progress, skipped } from './plan.ts';

const healthy = (name: string, change: Partial<TenantHealth> = {}): TenantHealth => ({ name, readyOnTarget: true, podRestarts: 0, unreadyPods: 0, ...change });

describe('gates', () => {
  it('pass a healthy batch, and name the tenants of each failed gate', () => {
    expect(passed(judgeBatch([healthy('a'), healthy('b')], undefined))).toBe(true);
    const results = judgeBatch([healthy('a', { podRestarts: 4 }), healthy('b', { unreadyPods: 1 }), healthy('c', { readyOnTarget: false })], { maxPodRestarts: 3 });
    expect(results.map((r) => [r.gate, r.verdict, r.tenants])).toEqual([
      ['TenantsReady', 'Failed', ['c']],
      ['PodRestarts', 'Failed', ['a']],
      ['PodsReady', 'Failed', ['b']],
    ]);
  });

  it('never pass a Prometheus gate that cannot be evaluated', () => {
    const gate = { url: 'http://127.0.0.1:9090', query: 'sum(rate(errors_total[5m]))', max: 0.5 };
    expect(judgeQuery(gate, { value: 0.2 }).verdict).toBe('Passed');
    expect(judgeQuery(gate, { value: 0.7 })).toMatchObject({ verdict: 'Failed', message: 'sum(rate(errors_total[5m])) = 0.7 (max 0.5)' });
    expect(judgeQuery(gate, { error: 'connection refused' }).verdict).toBe('Unknown');
    expect(judgeQuery(gate, { value: Number.NaN }).verdict).toBe('Unknown');
    const results = judgeBatch([healthy('a')], { prometheus: gate });
    expect(results.at(-1)?.verdict).toBe('Unknown');
    expect(passed(results)).toBe(false);
  });

  it('wait for readiness until the timeout, then fail with the laggards', () => {
    const batch = [healthy('a'), healthy('b', { readyOnTarget: false })];
    expect(readiness([healthy('a')], 5, undefined)).toBe('ready');
    expect(readiness(batch, 100, { readyTimeoutSeconds: 120 })).toBe('waiting');
    expect(readiness(batch, 121, { readyTimeoutSeconds: 120 })).toMatchObject({ gate: 'TenantsReady', verdict: 'Failed', tenants: ['b'] });
  });
});

const tenant = (name: string, wave: number, owner: string, change: Partial<FleetTenant> = {}): FleetTenant => ({ name, wave, owner, pinnedTo: undefined, suspended: false, ready: true, moved: undefined, ...change });

describe('plan', () => {
  const spec = { targetVersion: '2.0.0', fromVersion: '1.0.0', waves: [{ wave: 2, batch: { percent: 34 } }, { wave: 1, batch: { count: 1 } }] };

  it('sizes batches by count or by a percentage rounded up, at least one', () => {
    expect(batchSize({ wave: 1, batch: { count: 5 } }, 3)).toBe(5);
    expect(batchSize({ wave: 1, batch: { percent: 34 } }, 10)).toBe(4);
    expect(batchSize({ wave: 1, batch: { percent: 1 } }, 10)).toBe(1);
  });

  it('moves the waves in the order of the plan, by name, from the named version only', () => {
    const fleet = [tenant('z', 2, '1.0.0'), tenant('b', 2, '1.0.0'), tenant('a', 2, '1.0.0'), tenant('x', 2, '1.1.0'), tenant('m', 1, '1.0.0'), tenant('n', 3, '1.0.0')];
    expect(nextBatch(fleet, spec, 'r')).toEqual({ wave: 2, batch: 1, tenants: ['a', 'b'] });
    const moved = (name: string, batch: number): FleetTenant =>
      tenant(name, 2, '2.0.0', { pinnedTo: '2.0.0', moved: { rollout: 'r', wave: 2, batch, from: '1.0.0' } });
    const after = [moved('a', 1), moved('b', 1), tenant('z', 2, '1.0.0'), tenant('m', 1, '1.0.0')];
    // Batches are numbered across the rollout: the second of wave 2 is batch 2, wave 1's first would be 3.
    expect(nextBatch(after, spec, 'r')).toEqual({ wave: 2, batch: 2, tenants: ['z'] });
    expect(progress(after, spec, 'r')).toEqual([{ wave: 2, total: 3, moved: 2 }, { wave: 1, total: 1, moved: 0 }]);
    // spec.suspend: skipped (no owner could hand it over), and listed.
    const withSuspended = [...fleet, tenant('c', 2, '1.0.0', { suspended: true })];
    expect(nextBatch(withSuspended, spec, 'r')?.tenants).toEqual(['a', 'b']);
    expect(skipped(withSuspended, spec, 'r')).toEqual(['c']);
    // Another rollout's moves are not this one's.
    expect(nextBatch([tenant('q', 2, '2.0.0', { moved: { rollout: 'other', wave: 2, batch: 1, from: '1.0.0' } })], spec, 'r')).toBeUndefined();
  });

  it('returns the batch moved last first, each tenant to the version it came from', () => {
    const moved = (name: string, wave: number, batch: number, from: string): FleetTenant =>
      tenant(name, wave, '2.0.0', { pinnedTo: '2.0.0', moved: { rollout: 'r', wave, batch, from } });
    // The plan ran wave 2 before wave 1: batch 3 (of wave 1) went last.
    const fleet = [moved('a', 2, 1, '1.0.0'), moved('b', 2, 2, '1.0.0'), moved('c', 1, 3, '1.1.0'), moved('d', 1, 3, '1.0.0')];
    const first = nextReturn(fleet, 'r');
    expect([first?.wave, first?.batch, first?.tenants, [...(first?.to ?? [])]]).toEqual([1, 3, ['c', 'd'], [['c', '1.1.0'], ['d', '1.0.0']]]);
    const returned = fleet.map((t) => (t.moved?.batch === 3 ? { ...t, pinnedTo: t.moved.from } : t));
    expect(nextReturn(returned, 'r')?.tenants).toEqual(['b']);
  });
});
