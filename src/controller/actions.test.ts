import { describe, expect, it } from 'vitest';
import { Reason } from '../api/reasons.ts';
import { ApiException } from '@kubernetes/client-node';
import { InputError } from '../errors.ts';
import { actionFor, driftDelayMs, errorPolicy, USER_ERROR_RECHECK_MS, WAITING_POLL_MS, WATCHED_WAITING_POLL_MS } from './actions.ts';

const DRIFT = { intervalSeconds: 300, key: 'uid-1' };

describe('actionFor', () => {
  it('re-checks an Active tenant at its own phase of the drift interval', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    const action = actionFor({ stage: 'active', wasActive: true }, { ...DRIFT, now });
    expect(action).toEqual({ kind: 'requeue', afterMs: driftDelayMs({ ...DRIFT, now }) });
  });

  it('polls a waiting tenant at a steady short pace, not with growing backoff', () => {
    for (let i = 0; i < 20; i += 1) {
      const action = actionFor({ stage: 'waiting', wasActive: false }, DRIFT);
      expect(action.kind).toBe('requeue');
      if (action.kind === 'requeue') expect(action.afterMs).toBeLessThanOrEqual(WAITING_POLL_MS * 1.2);
    }
  });

  it('polls a step woken by a watch only as a safety net, less often the longer it waits', () => {
    const waitingOn = (step: 'modules' | 'seed'): Parameters<typeof actionFor>[0] => ({
      stage: 'waiting',
      wasActive: false,
      problem: { step, reason: 'DeploymentUnavailable', message: 'm', needsUser: false },
    });
    const watched = (step: string): boolean => step === 'modules';
    const within = (action: ReturnType<typeof actionFor>, ms: number): boolean => action.kind === 'requeue' && action.afterMs >= ms * 0.8 && action.afterMs <= ms * 1.2;
    const { first, max } = WATCHED_WAITING_POLL_MS;
    for (let i = 0; i < 20; i += 1) {
      expect(within(actionFor(waitingOn('modules'), DRIFT, watched), first)).toBe(true);
      expect(within(actionFor(waitingOn('modules'), DRIFT, watched, 2_000), first)).toBe(true);
      expect(within(actionFor(waitingOn('modules'), DRIFT, watched, 20_000), 20_000)).toBe(true);
      expect(within(actionFor(waitingOn('modules'), DRIFT, watched, 3_600_000), max)).toBe(true);
      expect(within(actionFor(waitingOn('seed'), DRIFT, watched, 20_000), WAITING_POLL_MS)).toBe(true);
    }
  });

  it.each([
    [{ stage: 'failed' as const, wasActive: false, problem: { step: 'seed' as const, reason: Reason.UnknownSeedsVersion, message: 'm', needsUser: true } }, { kind: 'requeue', afterMs: USER_ERROR_RECHECK_MS, failed: Reason.UnknownSeedsVersion }],
    [{ stage: 'failed' as const, wasActive: false, problem: { step: 'streams' as const, reason: Reason.NatsUnavailable, message: 'm', needsUser: false } }, { kind: 'backoff', failed: Reason.NatsUnavailable }],
    [{ stage: 'interrupted' as const, wasActive: false }, { kind: 'done' }],
    [{ stage: 'degraded' as const, wasActive: true }, { kind: 'backoff' }],
  ])('%o -> %o', (view, expected) => {
    expect(actionFor(view, DRIFT)).toEqual(expected);
  });
});

describe('errorPolicy', () => {
  it('retries a conflict with backoff (not a failure), re-checks input errors slowly, names the reason of a failure', () => {
    expect(errorPolicy(new ApiException(409, 'Conflict', {}, {}))).toEqual({ kind: 'backoff' });
    expect(errorPolicy(new InputError(Reason.InvalidHelmValues, 'bad'))).toEqual({ kind: 'requeue', afterMs: USER_ERROR_RECHECK_MS, failed: Reason.InvalidHelmValues });
    expect(errorPolicy(new Error('boom'))).toEqual({ kind: 'backoff', failed: Reason.ReconcileFailed });
  });
});

describe('driftDelayMs', () => {
  const interval = 300;
  const t0 = Date.parse('2026-01-01T00:00:00Z');

  it('is within (0, interval], and a tenant keeps its phase: checked on time, its next check is one interval on', () => {
    for (let i = 0; i < 200; i += 1) {
      const key = `uid-${i}`;
      const delay = driftDelayMs({ intervalSeconds: interval, key, now: t0 + i * 7_919 });
      expect(delay).toBeGreaterThan(0);
      expect(delay).toBeLessThanOrEqual(interval * 1000);
      const due = t0 + i * 7_919 + delay;
      expect(driftDelayMs({ intervalSeconds: interval, key, now: due })).toBe(interval * 1000);
      expect(driftDelayMs({ intervalSeconds: interval, key, now: due + 1 })).toBe(interval * 1000 - 1);
    }
  });

  it('spreads 1,000 tenants checked at the same moment (a restart) evenly over the interval', () => {
    const buckets = new Map<number, number>();
    for (let i = 0; i < 1_000; i += 1) {
      const tenth = Math.min(9, Math.floor(driftDelayMs({ intervalSeconds: interval, key: `tenant-${i}`, now: t0 }) / (interval * 100)));
      buckets.set(tenth, (buckets.get(tenth) ?? 0) + 1);
    }
    expect(buckets.size).toBe(10);
    // 100 expected per tenth of the interval; a bunch (the old ±10% jitter) would put them all in one or two.
    for (const count of buckets.values()) expect(count).toBeGreaterThan(60);
    for (const count of buckets.values()) expect(count).toBeLessThan(140);
  });
});
