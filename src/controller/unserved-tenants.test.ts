import { describe, expect, it, vi } from 'vitest';
import type { V1Lease } from '@kubernetes/client-node';
import type { EvaTenant } from '../api/evatenant.ts';
import { absentOperators, isStatusWriter, type LiveOperators, OWNER_GONE_MS, presentLeases, recentlyGoneLeases } from './unserved-tenants.ts';
import { MAX_WAVE_ANNOTATION, OWNER_ANNOTATION, SHARD_LABEL } from '../api/constants.ts';
import { testTenant } from '../../test/support/fixtures.ts';
import { createLogger } from '../log.ts';
import { systemClock } from '../runtime/clock.ts';
import { UnservedTenantReporter } from './unserved-reporter.ts';

const now = Date.parse('2026-01-01T00:10:00Z');

function lease(name: string, holder: string, renewedSecondsAgo: number, duration = 15, maxWave?: string): V1Lease {
  return {
    metadata: { name, ...(maxWave === undefined ? {} : { annotations: { [MAX_WAVE_ANNOTATION]: maxWave } }) },
    spec: { holderIdentity: holder, leaseDurationSeconds: duration, renewTime: new Date(now - renewedSecondsAgo * 1000).toISOString() as unknown as Date },
  };
}

function tenant(name: string, pin?: string, shard?: string, options: { wave?: number; owner?: string } = {}): EvaTenant {
  return testTenant({
    name,
    uid: name,
    spec: { ...(pin ? { operatorVersion: pin } : {}), ...(options.wave === undefined ? {} : { wave: options.wave }) },
    labels: shard ? { [SHARD_LABEL]: shard } : {},
    ...(options.owner === undefined ? {} : { annotations: { [OWNER_ANNOTATION]: options.owner } }),
  });
}

/** Live operators by Lease name; a number is the MAX_WAVE its Lease publishes, undefined none. */
const live = (leases: Record<string, number | undefined> | string[]): LiveOperators =>
  new Map(Array.isArray(leases) ? leases.map((name) => [name, 3]) : Object.entries(leases));

const absentIn = (tenants: EvaTenant[], leases: Record<string, number | undefined> | string[]): string[] =>
  absentOperators(tenants, live(leases), 'eva-system').map((a) => `${a.tenant.metadata.name}:${a.reason}`);

describe('which tenants are unserved', () => {
  it('counts only live, held operator leases, with the MAX_WAVE each publishes', () => {
    const present = presentLeases([
      lease('eva-operator-1-0-0', 'pod-a', 3, 15, '1'),
      lease('eva-operator-1-1-0', 'pod-c', 3),
      lease('eva-operator-1-2-0', 'pod-d', 3, 15, 'three'),
      lease('eva-operator-2-0-0', 'pod-b', 60, 15, '3'),
      lease('eva-operator-3-0-0', '', 1),
      lease('kube-scheduler', 'x', 1),
    ], now);
    expect([...present]).toEqual([['eva-operator-1-0-0', 1], ['eva-operator-1-1-0', undefined], ['eva-operator-1-2-0', undefined]]);
  });

  it('reports pinned tenants whose version has no live lease, and never unpinned ones', () => {
    expect(absentIn([tenant('a', '1.0.0'), tenant('b', '2.0.0'), tenant('c')], ['eva-operator-1-0-0'])).toEqual(['b:OperatorVersionAbsent']);
  });

  it('reports a shard no version serves, and a pin that does not run in the tenant\'s shard', () => {
    const leases = ['eva-operator-1-0-0', 'eva-operator-1-0-0-shard-eu', 'eva-operator-2-0-0-shard-us'];
    const tenants = [
      tenant('eu', undefined, 'eu'),
      tenant('us', undefined, 'us'),
      tenant('apac', undefined, 'apac'),
      tenant('apacpinned', '1.0.0', 'apac'),
      tenant('eupinned1', '1.0.0', 'eu'),
      tenant('eupinned2', '2.0.0', 'eu'),
      tenant('default', '2.0.0'),
    ];
    expect(absentIn(tenants, leases)).toEqual([
      'apac:OperatorShardAbsent',
      'apacpinned:OperatorShardAbsent',
      'eupinned2:OperatorVersionAbsent',
      'default:OperatorVersionAbsent',
    ]);
    const [apac] = absentOperators([tenant('apac', undefined, 'apac')], live(leases), 'eva-system');
    expect(apac?.message).toContain('SHARD=apac');
  });

  it('reports an unpinned, unowned tenant whose wave is above the MAX_WAVE of every operator of its shard', () => {
    const leases = { 'eva-operator-2-0-0': 1, 'eva-operator-1-0-0': 0, 'eva-operator-2-0-0-shard-eu': 3 };
    const tenants = [
      tenant('w1', undefined, undefined, { wave: 1 }),
      tenant('w2', undefined, undefined, { wave: 2 }),
      tenant('w3', undefined, undefined, { wave: 3 }),
      // Owned, or pinned to a running version: its operator acts on it whatever its wave.
      tenant('owned', undefined, undefined, { wave: 3, owner: '1.0.0' }),
      tenant('pinned', '1.0.0', undefined, { wave: 3 }),
      // Another shard, with an operator that claims every wave.
      tenant('eu', undefined, 'eu', { wave: 3 }),
    ];
    expect(absentIn(tenants, leases)).toEqual(['w2:OperatorWaveAbsent', 'w3:OperatorWaveAbsent']);
    const [w3] = absentOperators([tenants[2] as EvaTenant], live(leases), 'eva-system');
    expect(w3?.message).toBe(
      'spec.wave 3 is above the MAX_WAVE of every running operator of the default shard (at most 1: Leases eva-operator-1-0-0, eva-operator-2-0-0 in eva-system); no operator will claim this tenant until one with MAX_WAVE >= 3 runs, or spec.wave or spec.operatorVersion changes',
    );
    // One operator that claims wave 3 (a positive control for each of the two above).
    expect(absentIn(tenants, { ...leases, 'eva-operator-3-0-0': 3 })).toEqual([]);
  });

  it('takes an operator that publishes no MAX_WAVE (an older version) to claim every wave, and judges no wave of a shard without operators', () => {
    const tenants = [tenant('w3', undefined, undefined, { wave: 3 }), tenant('eu', undefined, 'eu', { wave: 3 })];
    expect(absentIn(tenants, { 'eva-operator-1-0-0': 1, 'eva-operator-0-9-0': undefined, 'eva-operator-1-0-0-shard-eu': 1 })).toEqual(['eu:OperatorWaveAbsent']);
    expect(absentIn(tenants, { 'eva-operator-1-0-0-shard-eu': 3 })).toEqual([]);
  });

  it('reports a tenant whose owner has not run for OWNER_GONE_MS, whatever its pin or wave; not one whose owner runs or just stopped', () => {
    const leases = [
      lease('eva-operator-1-0-0', 'pod-a', 3, 15, '3'),
      // Released by a graceful stop (holder empty, 1 s) 30 s ago: a restart takes it back sooner than the grace.
      lease('eva-operator-2-0-0', '', 30, 1),
      lease('eva-operator-3-0-0', 'pod-c', (OWNER_GONE_MS + 20_000) / 1000, 15),
      lease('eva-operator-1-0-0-shard-eu', 'pod-d', 3, 15, '3'),
    ];
    const present = presentLeases(leases, now);
    const gone = recentlyGoneLeases(leases, now);
    expect([...gone]).toEqual(['eva-operator-2-0-0']);
    const owned = (name: string, owner: string, pin?: string, shard?: string): EvaTenant => tenant(name, pin, shard, { owner, wave: 3 });
    const tenants = [
      owned('live', '1.0.0'),
      owned('restarting', '2.0.0'),
      owned('long-gone', '3.0.0', '1.0.0'),
      owned('never-ran', '4.0.0'),
      owned('eu-live', '1.0.0/eu', undefined, 'eu'),
      owned('eu-gone', '2.0.0/eu', undefined, 'eu'),
      owned('garbled', '//'),
    ];
    expect(absentOperators(tenants, present, 'eva-system', gone).map((a) => `${a.tenant.metadata.name}:${a.reason}`)).toEqual([
      'long-gone:OperatorOwnerAbsent',
      'never-ran:OperatorOwnerAbsent',
      'eu-gone:OperatorOwnerAbsent',
    ]);
    const [longGone] = absentOperators([tenants[2] as EvaTenant], present, 'eva-system', gone);
    expect(longGone?.message).toBe(
      'owned by operator 3.0.0 (annotation eva.aidonow.com/operator-version), which is not running (no live Lease eva-operator-3-0-0 in eva-system); no other operator takes a tenant another owns: run that version again, or remove the annotation (kubectl annotate evatenant long-gone eva.aidonow.com/operator-version-) to let the operator of its pin, shard and wave claim it',
    );
  });

  it('names one status writer among the live operators: the lowest Lease name', () => {
    const present = live(['eva-operator-9-8-1', 'eva-operator-9-8-0', 'eva-operator-9-8-0-shard-eu']);
    expect(['eva-operator-9-8-0', 'eva-operator-9-8-1', 'eva-operator-9-8-0-shard-eu'].filter((own) => isStatusWriter(present, own))).toEqual(['eva-operator-9-8-0']);
  });
});

/** A reporter over tenants and Leases the test changes, recording its Lease listings, status writes, events and gauges. */
function reporterFixture(leases: V1Lease[]) {
  const tenants = new Map<string, EvaTenant>();
  const seen = { listings: 0, statuses: [] as string[], events: [] as string[], pinnedGauge: 0 };
  const reporter = new UnservedTenantReporter({
    leases: () => {
      seen.listings += 1;
      return Promise.resolve(leases);
    },
    namespace: 'eva-system',
    tenants: () => [...tenants.values()],
    tenant: (name) => tenants.get(name),
    store: {
      writeStatus: (tenant, status) => {
        seen.statuses.push(`${tenant.metadata.name}:${status.conditions?.find((c) => c.type === 'Stalled')?.reason ?? ''}`);
        return Promise.resolve(tenant);
      },
      recordEvent: (tenant, _type, reason) => {
        seen.events.push(`${tenant.metadata.name}:${reason}`);
        return Promise.resolve();
      },
    },
    leaseName: 'eva-operator-1-0-0',
    intervalMs: 3_600_000,
    metrics: {
      setTenantsPinnedToAbsentVersion: (count) => {
        seen.pinnedGauge = count;
      },
      setTenantsInAbsentShard: () => undefined,
      setTenantsAboveMaxWave: () => undefined,
      setTenantsOwnedByAbsentOperator: () => undefined,
    },
    log: createLogger('silent'),
    clock: { now: () => now, setTimer: (callback, ms) => systemClock.setTimer(callback, ms) },
  });
  const add = (t: EvaTenant): void => {
    tenants.set(t.metadata.name, t);
    reporter.observe(t.metadata.name);
  };
  return { reporter, seen, add, leases };
}

describe('the unserved-tenant reporter', () => {
  const own = (): V1Lease => lease('eva-operator-1-0-0', 'pod-a', 1);

  it('judges a tenant as its event arrives: a new pin nobody runs is reported without waiting for the next pass', async () => {
    const { reporter, seen, add } = reporterFixture([own()]);
    expect(await reporter.check(now)).toBe(0);
    add(tenant('late', '9.9.9'));
    await reporter.checkPending(now);
    expect(seen.statuses).toEqual(['late:OperatorVersionAbsent']);
    expect(seen.events).toEqual(['late:OperatorVersionAbsent']);
    expect(seen.pinnedGauge).toBe(1);
    // Looked unserved against the pass's Leases, so judged again against Leases listed now.
    expect(seen.listings).toBe(2);
  });

  it('an event that changes none of pin, shard, owner and wave costs nothing; a served tenant costs no listing', async () => {
    const { reporter, seen, add } = reporterFixture([own()]);
    await reporter.check(now);
    add(tenant('served', '1.0.0'));
    await reporter.checkPending(now);
    reporter.observe('served');
    await reporter.checkPending(now);
    expect({ listings: seen.listings, statuses: seen.statuses, events: seen.events }).toEqual({ listings: 1, statuses: [], events: [] });
  });

  it('an operator started since the last pass is not reported missing', async () => {
    const { reporter, seen, add, leases } = reporterFixture([own()]);
    await reporter.check(now);
    leases.push(lease('eva-operator-2-0-0', 'pod-b', 1));
    add(tenant('new-version', '2.0.0'));
    await reporter.checkPending(now);
    expect({ listings: seen.listings, statuses: seen.statuses, events: seen.events, gauge: seen.pinnedGauge }).toEqual({ listings: 2, statuses: [], events: [], gauge: 0 });
  });

  it('running, it wakes on an event (the next pass is an hour away)', async () => {
    const { reporter, seen, add } = reporterFixture([own()]);
    const stop = new AbortController();
    const running = reporter.runUntil(stop.signal);
    await vi.waitFor(() => {
      expect(seen.listings).toBe(1);
    }, { timeout: 10_000 });
    add(tenant('woken', '9.9.9'));
    await vi.waitFor(() => {
      expect(seen.statuses).toEqual(['woken:OperatorVersionAbsent']);
    }, { timeout: 10_000 });
    stop.abort();
    await running;
  });
});
