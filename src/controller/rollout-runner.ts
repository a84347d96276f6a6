/**
 * Rollouts run in one operator at a time, whatever its version: a leader of its own version Lease
 * stands for the Lease `eva-rollouts` too, and runs the rollout controller while it holds both. A
 * holder that loses `eva-rollouts` (a renewal missed) stands again; one that stops leading its
 * version lets it go, and a leader of another version takes over, resuming from the rollouts'
 * status and the tenants' move records (docs/rollouts.md).
 */
import type { Logger } from '../log.ts';
import { type Clock, sleep, systemClock, untilAborted } from '../runtime/clock.ts';
import type { LeaderElector } from '../runtime/leader-elector.ts';

/** What runs while the Lease is held: started, then stopped when the term ends. */
export interface RolloutWork {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface RolloutRunnerOptions {
  /** A new elector for each stand (an elector stands once). */
  elector: () => LeaderElector;
  /** A new controller for each term. */
  work: () => RolloutWork;
  log: Logger;
  clock?: Clock;
}

/** Between a lost or failed term and standing again. */
const STAND_AGAIN_MS = 10_000;

/**
 * The Lease `eva-rollouts` is held longer and polled less often than a version's Lease: every
 * operator but one stands by for it, reading it once per retry period, and a rollout moves in
 * batches minutes apart, so a takeover within about 35 s of a crash costs it nothing.
 */
export const ROLLOUTS_ELECTION = { leaseDurationSeconds: 30, renewDeadlineSeconds: 20, retryPeriodSeconds: 5 } as const;

async function oneTerm(elector: LeaderElector, work: () => RolloutWork, log: Logger): Promise<void> {
  await elector.run({
    onStartedLeading: async (held) => {
      const controller = work();
      log.info('running rollouts');
      try {
        await controller.start();
        await untilAborted(held);
      } finally {
        await controller.stop();
      }
    },
    onStoppedLeading: () => {
      log.info('no longer running rollouts');
    },
  });
}

/** Stands for the rollouts' Lease until `signal` aborts; returns once the last term has ended and the Lease is released. */
export async function runRollouts(signal: AbortSignal, { elector, work, log, clock = systemClock }: RolloutRunnerOptions): Promise<void> {
  while (!signal.aborted) {
    const current = elector();
    const stop = (): void => {
      void current.stop();
    };
    signal.addEventListener('abort', stop, { once: true });
    try {
      await oneTerm(current, work, log);
    } catch (err) {
      log.error({ err }, 'the rollout controller failed; standing again');
    } finally {
      signal.removeEventListener('abort', stop);
    }
    await sleep(clock, STAND_AGAIN_MS, signal);
  }
}
