/**
 * The rollout's decisions over a simulated fleet: the simulation applies each action as the
 * controller will (pins and annotations on the tenants, the status), and a tenant becomes Ready on
 * the version that owns it after one pass, unless the version is "bad" for it.
 */
import { describe, expect, it } from 'vitest';
import type { EvaRolloutSpec, EvaRolloutStatus } from '../api/evarollout.ts';
import { decide, needsQuery, type RolloutAction, type RolloutWorld } from './decide.ts';
import type { FleetTenant } from './plan.ts';
import { counts, statusAfter } from './record.ts';

const OLD = '1.4.0';
const NEW = '1.5.0';
const T0 = Date.parse('2030-01-01T00:00:00Z');

type Tenant = { -readonly [K in keyof FleetTenant]: FleetTenant[K] };

function fleetOf(perWave: readonly number[]): Tenant[] {
  return perWave.flatMap((count, i) =>
    Array.from({ length: count }, (_, n) => ({ name: `w${String(i + 1)}-t${String(n).padStart(2, '0')}`, wave: i + 1, owner: OLD, pinnedTo: undefined, suspended: false, ready: true, moved: undefined })),
  );
}

const SPEC: EvaRolloutSpec = {
  targetVersion: NEW,
  waves: [
    { wave: 1, batch: { count: 5 }, bakeSeconds: 60 },
    { wave: 2, batch: { percent: 50 }, bakeSeconds: 60 },
    { wave: 3, batch: { percent: 100 }, bakeSeconds: 0 },
  ],
  onFailure: 'Rollback',
};

/** SPEC with only its first `n` waves (a plan naming a wave with no tenant does not start). */
const specOf = (n: number): EvaRolloutSpec => ({ ...SPEC, waves: SPEC.waves.slice(0, n) });

interface Run {
  readonly actions: RolloutAction['kind'][];
  /** Seconds since the start at which each action was decided. */
  readonly at: number[];
  readonly status: EvaRolloutStatus;
  readonly fleet: Tenant[];
}

/** A tenant is claimed by the version it is pinned to, and Ready a pass later unless that version fails it. */
function settle(fleet: Tenant[], failsOn: string | undefined): void {
  for (const t of fleet) {
    if (t.pinnedTo !== undefined && t.owner !== t.pinnedTo) [t.owner, t.ready] = [t.pinnedTo, false];
    else if (!t.ready && t.owner !== failsOn) t.ready = true;
  }
}

/** Pins a batch's tenants as the controller will: to the target (with the move's record) or back. */
function pin(fleet: Tenant[], action: Extract<RolloutAction, { kind: 'move' | 'return' }>, target: string): void {
  for (const name of action.batch.tenants) {
    const t = fleet.find((x) => x.name === name);
    if (!t) throw new Error(`no tenant ${name}`);
    if (action.kind === 'move') [t.pinnedTo, t.moved] = [target, { rollout: 'r', wave: action.batch.wave, batch: action.batch.batch, from: t.owner ?? '' }];
    else t.pinnedTo = action.to.get(name);
  }
}

/** A rollout rests when it ended, stalled or is paused: the simulation stops there. */
const rests = (action: RolloutAction): boolean =>
  action.kind === 'succeeded' || action.kind === 'rolledBack' || action.kind === 'stall' || (action.kind === 'wait' && (action.reason === 'Paused' || action.reason === 'Ended'));

/**
 * Drives a rollout to rest (or `maxPasses`), 30 s between passes; `failsOn` names a version on
 * which tenants never get Ready.
 */
function simulate(spec: EvaRolloutSpec, fleet: Tenant[], options: { failsOn?: string; targetRuns?: boolean; maxPasses?: number; from?: EvaRolloutStatus } = {}): Run {
  let status: EvaRolloutStatus = options.from ?? {};
  const actions: RolloutAction['kind'][] = [];
  const at: number[] = [];
  for (let pass = 0; pass < (options.maxPasses ?? 500); pass++) {
    const now = T0 + pass * 30_000;
    settle(fleet, options.failsOn);
    const action = decide({ name: 'r', spec, status, fleet, pods: new Map(), targetRuns: options.targetRuns ?? true, overlapping: undefined, answer: undefined, now });
    actions.push(action.kind);
    at.push(pass * 30);
    if (action.kind === 'move' || action.kind === 'return') pin(fleet, action, spec.targetVersion);
    status = statusAfter(action, status, new Date(now).toISOString());
    if (rests(action)) return { actions, at, status, fleet };
  }
  return { actions, at, status, fleet };
}

/** The world of a further pass after `run`, under `spec`. */
const worldOf = (spec: EvaRolloutSpec, run: Run): RolloutWorld => ({ name: 'r', spec, status: run.status, fleet: run.fleet, pods: new Map(), targetRuns: true, overlapping: undefined, answer: undefined, now: T0 });

const count = (run: Run, kind: RolloutAction['kind']): number => run.actions.filter((a) => a === kind).length;

describe('a rollout over a simulated fleet of 30 tenants in three waves', () => {
  it('a good version moves every tenant, wave by wave, each batch baked before the next moves', () => {
    const run = simulate(SPEC, fleetOf([10, 10, 10]));
    expect(run.status.phase).toBe('Succeeded');
    expect(run.fleet.every((t) => t.owner === NEW && t.ready)).toBe(true);
    expect(counts(run.fleet, SPEC, 'r')).toEqual({ total: 30, moved: 30 });
    // wave 1: 2 batches of 5; wave 2: 2 of 50 %; wave 3: 1 of 100 %.
    expect(count(run, 'move')).toBe(5);
    expect(new Set(run.fleet.map((t) => `${String(t.moved?.wave)}-${String(t.moved?.batch)}`))).toEqual(new Set(['1-1', '1-2', '2-3', '2-4', '3-5']));
    // No batch moves before the one before it was Ready and baked.
    const order = run.actions.filter((a) => a === 'move' || a === 'ready');
    expect(order).toEqual(['move', 'ready', 'move', 'ready', 'move', 'ready', 'move', 'ready', 'move', 'ready']);
    // ... and each move after a Ready batch waited out that batch's bake (60 s in waves 1 and 2).
    const timeOf = (kind: string, nth: number): number => run.at.filter((_, i) => run.actions[i] === kind)[nth] ?? Number.NaN;
    for (const n of [0, 1, 2, 3]) expect(timeOf('move', n + 1) - timeOf('ready', n)).toBeGreaterThanOrEqual(60);
  });

  it('a version whose tenants never get Ready is halted in wave 1 and rolled back; waves 2 and 3 are never touched', () => {
    const spec = { ...SPEC, gates: { readyTimeoutSeconds: 120 } };
    const run = simulate(spec, fleetOf([10, 10, 10]), { failsOn: NEW });
    expect(run.status.phase).toBe('RolledBack');
    expect(counts(run.fleet, spec, 'r')).toEqual({ total: 30, moved: 0 });
    expect(count(run, 'move')).toBe(1);
    expect(count(run, 'return')).toBe(1);
    expect(run.status.gates?.[0]).toMatchObject({ gate: 'TenantsReady', verdict: 'Failed' });
    expect(run.status.gates?.[0]?.tenants).toHaveLength(5);
    expect(run.fleet.every((t) => t.owner === OLD && t.ready)).toBe(true);
    expect(run.fleet.filter((t) => t.wave > 1).every((t) => t.moved === undefined && t.pinnedTo === undefined)).toBe(true);
  });

  it('with onFailure Halt, a failed gate stops the rollout and leaves the moved batch where it is', () => {
    const run = simulate({ ...SPEC, onFailure: 'Halt', gates: { readyTimeoutSeconds: 60 } }, fleetOf([10, 10, 10]), { failsOn: NEW });
    expect(run.status.phase).toBe('Halted');
    expect(run.fleet.filter((t) => t.pinnedTo === NEW)).toHaveLength(5);
  });

  it('a person skips the failed gate of a halted rollout (spec.skipGates): it moves on, the skipped gate passing and saying so', () => {
    const spec: EvaRolloutSpec = { ...SPEC, onFailure: 'Halt', gates: { readyTimeoutSeconds: 60 } };
    const fleet = fleetOf([10, 10, 10]);
    const halted = simulate(spec, fleet, { failsOn: NEW });
    expect(halted.status.phase).toBe('Halted');
    expect(decide(worldOf({ ...spec, skipGates: ['PodRestarts'] }, halted)).kind).toBe('wait');
    const resumed = simulate({ ...spec, skipGates: ['TenantsReady'] }, fleet, { failsOn: NEW, from: halted.status });
    expect(resumed.status.phase).toBe('Succeeded');
    expect(resumed.status.gates?.find((g) => g.gate === 'TenantsReady')).toMatchObject({ verdict: 'Passed', message: expect.stringMatching(/^skipped \(spec.skipGates\)/) as unknown });
  });

  it('spec.abort stops a rollout in progress as a failed gate does: with onFailure Rollback, the moved tenants return', () => {
    const fleet = fleetOf([10, 10]);
    const first = simulate(specOf(2), fleet, { maxPasses: 2 });
    expect(fleet.some((t) => t.pinnedTo === NEW)).toBe(true);
    const aborted = simulate({ ...specOf(2), abort: true }, fleet, { from: first.status });
    expect(aborted.status).toMatchObject({ phase: 'RolledBack', gates: [{ gate: 'Aborted', verdict: 'Failed' }] });
    expect(fleet.every((t) => t.owner === OLD && t.pinnedTo !== NEW && t.ready)).toBe(true);
  });

  it('a move whose status write failed is caught up from the tenants, not followed by another batch unbaked', () => {
    const spec = specOf(1);
    const fleet = fleetOf([10]);
    const first = simulate(spec, fleet, { maxPasses: 1 });
    // Baked: the next pass moves batch 2; its patches land, its status write does not.
    const baked = { ...first.status, phase: 'Baking' as const, readyAt: new Date(T0 - 120_000).toISOString() };
    settle(fleet, undefined); // claimed by the target
    settle(fleet, undefined); // Ready on it
    const next = decide({ ...worldOf(spec, { ...first, status: baked }), fleet });
    if (next.kind !== 'move') throw new Error(`expected a move, got ${next.kind}`);
    pin(fleet, next, NEW);
    const after = decide({ ...worldOf(spec, { ...first, status: baked }), fleet });
    expect(after).toMatchObject({ kind: 'recorded', batch: { batch: 2, tenants: next.batch.tenants } });
    expect(statusAfter(after, baked, new Date(T0).toISOString())).toMatchObject({ phase: 'Moving', batch: 2 });
  });

  it('stalls before its first move, naming the wave, when a wave of the plan has no tenant to move', () => {
    const run = simulate(SPEC, fleetOf([3, 3]));
    expect(run.actions).toEqual(['stall']);
    expect(decide(worldOf(SPEC, run))).toMatchObject({ kind: 'stall', reason: 'WaveEmpty', message: 'spec.waves[2]: wave 3 has no tenant to move' });
    expect(run.fleet.every((t) => t.pinnedTo === undefined)).toBe(true);
  });

  it('stalls, moving nothing, when no operator of the target version runs', () => {
    const run = simulate(SPEC, fleetOf([3]), { targetRuns: false });
    expect(run.actions).toEqual(['stall']);
    expect(run.fleet.every((t) => t.pinnedTo === undefined)).toBe(true);
  });

  it('a pause holds the next move; the batch in flight is still judged', () => {
    const run = simulate({ ...specOf(1), paused: true }, fleetOf([3]));
    expect(run.actions).toEqual(['wait']);
    expect(run.fleet.every((t) => t.pinnedTo === undefined)).toBe(true);
  });

  it('resumes from its status after a restart without moving a tenant twice', () => {
    const fleet = fleetOf([10, 10]);
    const first = simulate({ ...SPEC, waves: SPEC.waves.slice(0, 2) }, fleet, { maxPasses: 4 });
    const movedBefore = fleet.filter((t) => t.moved !== undefined).map((t) => t.name);
    expect(movedBefore.length).toBeGreaterThan(0);
    const world: RolloutWorld = { name: 'r', spec: SPEC, status: first.status, fleet, pods: new Map(), targetRuns: true, overlapping: undefined, answer: undefined, now: T0 + 4 * 30_000 };
    const next = decide(world);
    if (next.kind === 'move') expect(next.batch.tenants.filter((n) => movedBefore.includes(n))).toEqual([]);
    else expect(['ready', 'wait']).toContain(next.kind);
  });
});

describe('the verdicts a pass reached (judged)', () => {
  /** Batch 1 (five tenants of wave 1) moved and Ready at T0, judged two minutes later (its bake is 60 s). */
  const baked = (spec: EvaRolloutSpec, ready = true): RolloutWorld => {
    const moved = { rollout: 'r', wave: 1, batch: 1, from: OLD };
    const fleet = fleetOf([10]).map((t, i) => (i < 5 ? { ...t, owner: NEW, pinnedTo: NEW, ready, moved } : t));
    const at = new Date(T0).toISOString();
    return { name: 'r', spec, status: { phase: 'Baking', wave: 1, batch: 1, movedAt: at, readyAt: at }, fleet, pods: new Map(), targetRuns: true, overlapping: undefined, answer: undefined, now: T0 + 120_000 };
  };
  const shown = (action: RolloutAction): string[] | undefined => action.judged?.map((g) => `${g.gate} ${g.verdict}`);

  it('a batch that passes carries its verdicts to the next move; a pause does not (the batch is judged again when it is lifted)', () => {
    const next = decide(baked(SPEC));
    expect(next.kind).toBe('move');
    expect(shown(next)).toEqual(['TenantsReady Passed', 'PodRestarts Passed', 'PodsReady Passed']);
    const paused = decide(baked({ ...SPEC, paused: true }));
    expect(paused).toMatchObject({ kind: 'wait', reason: 'Paused' });
    expect(paused.judged).toBeUndefined();
  });

  it('a halt carries the verdicts that stopped it; a wait for Ready or the bake carries none', () => {
    const halted = decide(baked(SPEC, false));
    expect(halted.kind).toBe('halt');
    expect(shown(halted)).toEqual(['TenantsReady Failed', 'PodRestarts Passed', 'PodsReady Passed']);
    const baking = decide({ ...baked(SPEC), now: T0 + 30_000 });
    expect(baking).toMatchObject({ kind: 'wait', reason: 'Baking' });
    expect(baking.judged).toBeUndefined();
  });
});

describe('needsQuery', () => {
  it('asks Prometheus only for a baked batch of a spec that names a query', () => {
    const spec = { ...SPEC, gates: { prometheus: { url: 'http://127.0.0.1:9090', query: 'up', max: 1 } } };
    const baking: EvaRolloutStatus = { phase: 'Baking', wave: 1, batch: 1, readyAt: new Date(T0).toISOString() };
    expect(needsQuery(spec, baking, T0 + 30_000)).toBe(false);
    expect(needsQuery(spec, baking, T0 + 60_000)).toBe(true);
    expect(needsQuery(SPEC, baking, T0 + 60_000)).toBe(false);
  });
});
