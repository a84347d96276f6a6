import { describe, expect, it } from 'vitest';
import { Reason } from '../api/reasons.ts';
import { ApiException } from '@kubernetes/client-node';
import { InputError } from '../errors.ts';
import { actionFor, errorPolicy, USER_ERROR_RECHECK_MS, WAITING_POLL_MS, WATCHED_WAITING_POLL_MS } from './actions.ts';

describe('actionFor', () => {
  it('re-checks an Active tenant after the drift interval, with jitter', () => {
    const action = actionFor({ stage: 'active', wasActive: true }, 300);
    expect(action.kind).toBe('requeue');
    if (action.kind === 'requeue') expect(action.afterMs).toBeGreaterThanOrEqual(270_000);
  });

  it('polls a waiting tenant at a steady short pace, not with growing backoff', () => {
    for (let i = 0; i < 20; i += 1) {
      const action = actionFor({ stage: 'waiting', wasActive: false }, 300);
      expect(action.kind).toBe('requeue');
      if (action.kind === 'requeue') expect(action.afterMs).toBeLessThanOrEqual(WAITING_POLL_MS * 1.2);
    }
  });

  it('polls a step woken by a watch only as a safety net', () => {
    const waitingOn = (step: 'modules' | 'seed'): Parameters<typeof actionFor>[0] => ({
      stage: 'waiting',
      wasActive: false,
      problem: { step, reason: 'DeploymentUnavailable', message: 'm', needsUser: false },
    });
    const watched = (step: string): boolean => step === 'modules';
    for (let i = 0; i < 20; i += 1) {
      const slow = actionFor(waitingOn('modules'), 300, watched);
      const fast = actionFor(waitingOn('seed'), 300, watched);
      expect(slow.kind === 'requeue' && slow.afterMs >= WATCHED_WAITING_POLL_MS * 0.8 && slow.afterMs <= WATCHED_WAITING_POLL_MS * 1.2).toBe(true);
      expect(fast.kind === 'requeue' && fast.afterMs <= WAITING_POLL_MS * 1.2).toBe(true);
    }
  });

  it.each([
    [{ stage: 'failed' as const, wasActive: false, problem: { step: 'seed' as const, reason: Reason.UnknownSeedsVersion, message: 'm', needsUser: true } }, { kind: 'requeue', afterMs: USER_ERROR_RECHECK_MS, failed: Reason.UnknownSeedsVersion }],
    [{ stage: 'failed' as const, wasActive: false, problem: { step: 'streams' as const, reason: Reason.NatsUnavailable, message: 'm', needsUser: false } }, { kind: 'backoff', failed: Reason.NatsUnavailable }],
    [{ stage: 'interrupted' as const, wasActive: false }, { kind: 'done' }],
    [{ stage: 'degraded' as const, wasActive: true }, { kind: 'backoff' }],
  ])('%o -> %o', (view, expected) => {
    expect(actionFor(view, 300)).toEqual(expected);
  });
});

describe('errorPolicy', () => {
  it('retries a conflict with backoff (not a failure), re-checks input errors slowly, names the reason of a failure', () => {
    expect(errorPolicy(new ApiException(409, 'Conflict', {}, {}))).toEqual({ kind: 'backoff' });
    expect(errorPolicy(new InputError(Reason.InvalidHelmValues, 'bad'))).toEqual({ kind: 'requeue', afterMs: USER_ERROR_RECHECK_MS, failed: Reason.InvalidHelmValues });
    expect(errorPolicy(new Error('boom'))).toEqual({ kind: 'backoff', failed: Reason.ReconcileFailed });
  });
});
