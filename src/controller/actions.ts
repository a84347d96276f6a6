/**
 * What happens to a key after a reconcile (kube-rs's Action), and the error policy: the single
 * place where outcomes and errors become requeue decisions.
 */
import { createHash } from 'node:crypto';
import { isConflict } from '../adapters/kube.ts';
import type { SagaView } from '../saga/view.ts';
import { Reason } from '../api/reasons.ts';
import { InputError, problemOf } from '../errors.ts';
import type { StepName } from '../steps/step.ts';

export type Action =
  | { kind: 'done' }
  /** Run again after this delay (drift check, slow retries). */
  | { kind: 'requeue'; afterMs: number; failed?: Reason }
  /** Run again with the key's growing backoff (waiting on something, transient failure, lost race). */
  | { kind: 'backoff'; failed?: Reason };

export const DONE: Action = { kind: 'done' };

/** A tenant a human must fix is re-checked at this pace; fixing the spec triggers a watch event anyway. */
export const USER_ERROR_RECHECK_MS = 60_000;

/** How often a waiting tenant is looked at again. */
export const WAITING_POLL_MS = 1_000;

/**
 * A step woken by a watch (Deployments, Ingress) is polled only as a safety net, for what changes no
 * watched object (a pod's image pull): first after 20 s, then after as long as it has waited so far, at
 * most a minute. A steady 5 s cost a thousand waiting tenants a thousand reads a second; a first poll
 * at 5 s came during most new tenants' rollouts on a busy 2-core machine, a pass that read five
 * objects to find the rollout still going (bench:peers, 100 tenants: the operator's requests per
 * release 14.2 -> 12.6). An image that cannot be pulled is reported about 15 s later than it was.
 */
export const WATCHED_WAITING_POLL_MS = { first: 20_000, max: 60_000 } as const;

/** The safety net's next poll for a tenant that has waited `waitedMs` on a watched step. */
export function watchedPollMs(waitedMs: number): number {
  return Math.min(WATCHED_WAITING_POLL_MS.max, Math.max(WATCHED_WAITING_POLL_MS.first, waitedMs));
}

/** How a tenant's next drift check is timed: its interval, and its own phase within it. */
export interface DriftSchedule {
  intervalSeconds: number;
  /** Names the tenant (its uid): fixes the tenant's phase within the interval. */
  key: string;
  now?: number;
}

/**
 * Milliseconds to the tenant's next drift check: the next moment whose offset within the interval is
 * the tenant's own (a hash of its key). Tenants checked together (all of them, after a restart) thus
 * come back spread evenly over the interval instead of in a bunch, and each keeps its rhythm. In
 * (0, interval].
 */
export function driftDelayMs({ intervalSeconds, key, now = Date.now() }: DriftSchedule): number {
  const interval = intervalSeconds * 1000;
  const phase = createHash('sha256').update(key).digest().readUInt32BE(0) % interval;
  const sincePhase = (((now - phase) % interval) + interval) % interval;
  return interval - sincePhase;
}

/** `waitedMs`: how long the waiting step's condition has been False (paces a watched step's safety net). */
export function actionFor(view: SagaView, drift: DriftSchedule, isWatched: (step: StepName) => boolean = () => false, waitedMs = 0): Action {
  switch (view.stage) {
    case 'active':
      return { kind: 'requeue', afterMs: driftDelayMs(drift) };
    case 'interrupted':
      return DONE;
    case 'waiting': {
      // Waiting on something outside the operator (Deployments rolling out, an address): an unwatched
      // step is polled at a steady short pace (these checks only read; the key's exponential backoff
      // would leave ready tenants waiting up to a minute). A watched step is woken by its watch as soon
      // as the object changes; its poll grows with the wait.
      const poll = view.problem !== undefined && isWatched(view.problem.step) ? watchedPollMs(waitedMs) : WAITING_POLL_MS;
      return { kind: 'requeue', afterMs: Math.round(poll * (0.8 + Math.random() * 0.4)) };
    }
    case 'failed':
    case 'degraded':
      return retryAfterFailure(view.problem);
    default:
      return { kind: 'backoff' };
  }
}

/** A failed or degraded tenant is a reconcile error: its reason is what the metric counts by. */
function retryAfterFailure(problem: SagaView['problem']): Action {
  const retry: Action = problem?.needsUser ? { kind: 'requeue', afterMs: USER_ERROR_RECHECK_MS } : { kind: 'backoff' };
  return problem === undefined ? retry : { ...retry, failed: problem.reason };
}

export type ErrorClass = 'conflict' | 'input' | 'transient';

export function classifyError(err: unknown): ErrorClass {
  if (isConflict(err)) return 'conflict';
  if (err instanceof InputError) return 'input';
  return 'transient';
}

/** Errors that escaped a reconcile. A conflict is a retry (someone wrote first), not a failure. */
export function errorPolicy(err: unknown): Action {
  if (classifyError(err) === 'conflict') return { kind: 'backoff' };
  const failed = problemOf(err, Reason.ReconcileFailed).reason;
  return classifyError(err) === 'input' ? { kind: 'requeue', afterMs: USER_ERROR_RECHECK_MS, failed } : { kind: 'backoff', failed };
}
