/** Time for the runtime's loops (the elector, the reporters): the system clock, or a test's own (leader-elector.test.ts). */

export interface Clock {
  /** Wall-clock ms since the epoch: written into the Lease and compared with times read from it. */
  now(): number;
  /** Runs `callback` after `ms`; the returned function cancels it. */
  setTimer(callback: () => void, ms: number): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (callback, ms) => {
    const timer = setTimeout(callback, ms);
    return () => {
      clearTimeout(timer);
    };
  },
};

/** Resolves after `ms`, or as soon as `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    let cancel = (): void => undefined;
    const wake = (): void => {
      cancel();
      signal.removeEventListener('abort', wake);
      resolve();
    };
    cancel = clock.setTimer(wake, ms);
    signal.addEventListener('abort', wake, { once: true });
  });
}

/** Resolves once `signal` aborts (at once if it has). */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    signal.addEventListener('abort', () => {
      resolve();
    }, { once: true });
  });
}
