/**
 * The controller's work queue, with client-go workqueue semantics: keys are deduplicated while
 * waiting, a key is never handled twice at once (a key added while in flight is marked dirty and
 * handled once more afterwards), and keys can be requeued after a delay or with per-key backoff.
 */
import { KeyedBackoff, type KeyedBackoffOptions } from './backoff.ts';

/** Handles one key. `signal` aborts on shutdown so long steps can stop early. */
export type WorkHandler = (key: string, signal: AbortSignal) => Promise<void>;

export interface WorkQueueOptions {
  readonly backoff?: KeyedBackoffOptions;
  /** Called with the number of waiting keys whenever it changes (queue-depth metric). */
  readonly onDepthChange?: (depth: number) => void;
  /** Called when a handler throws or rejects; the worker carries on either way. */
  readonly onHandlerError?: (key: string, error: unknown) => void;
  /** Monotonic clock in ms, used to decide which of two delays is earlier. */
  readonly now?: () => number;
}

interface Scheduled {
  readonly due: number;
  readonly timer: NodeJS.Timeout;
}

// setTimeout fires at once for larger delays; clamping keeps huge delays long instead.
const MAX_TIMER_MS = 2 ** 31 - 1;

function defaultHandlerError(key: string, error: unknown): void {
  console.error(`workqueue: handler for ${key} failed`, error);
}

export class WorkQueue {
  // A Set is both FIFO (insertion order) and a dedupe index.
  readonly #waiting = new Set<string>();
  readonly #processing = new Set<string>();
  // Keys added again while processing; they go back to #waiting when their handler returns.
  readonly #dirty = new Set<string>();
  readonly #scheduled = new Map<string, Scheduled>();
  readonly #backoff: KeyedBackoff;
  readonly #abort = new AbortController();
  readonly #drained = Promise.withResolvers<undefined>();
  readonly #now: () => number;
  readonly #onDepthChange: ((depth: number) => void) | undefined;
  readonly #onHandlerError: (key: string, error: unknown) => void;
  #handler: WorkHandler | undefined;
  #concurrency = 0;
  #shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.#backoff = new KeyedBackoff(options.backoff);
    this.#now = options.now ?? (() => performance.now());
    this.#onDepthChange = options.onDepthChange;
    this.#onHandlerError = options.onHandlerError ?? defaultHandlerError;
  }

  /** Keys ready to be handled (not in flight, not delayed). */
  get length(): number {
    return this.#waiting.size;
  }

  /** Keys whose handler is running. */
  get processingCount(): number {
    return this.#processing.size;
  }

  /** Keys waiting on an addAfter/addRateLimited timer. */
  get scheduledCount(): number {
    return this.#scheduled.size;
  }

  get isShuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Queues `key` now; supersedes any pending delay for it. */
  add(key: string): void {
    if (this.#shuttingDown) return;
    this.#cancelScheduled(key);
    if (this.#processing.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#waiting.has(key)) return;
    this.#waiting.add(key);
    this.#depthChanged();
    this.#pump();
  }

  /** Queues `key` after `delayMs`; if it is already due sooner (waiting, dirty or scheduled earlier), that wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (!(delayMs > 0)) {
      this.add(key);
      return;
    }
    if (this.#waiting.has(key) || this.#dirty.has(key)) return;
    const due = this.#now() + delayMs;
    const existing = this.#scheduled.get(key);
    if (existing && existing.due <= due) return;
    this.#cancelScheduled(key);
    this.#schedule(key, due, delayMs);
  }

  /**
   * Queues `key` after its next backoff delay and counts the attempt. Returns the delay in ms, or
   * undefined when the queue is shutting down (nothing is counted then).
   */
  addRateLimited(key: string): number | undefined {
    if (this.#shuttingDown) return undefined;
    const delayMs = this.#backoff.next(key);
    this.addAfter(key, delayMs);
    return delayMs;
  }

  /** Resets `key`'s backoff; call after a successful reconcile or when the object is gone. */
  forget(key: string): void {
    this.#backoff.forget(key);
  }

  /** Backoff attempts counted for `key` since it was last forgotten. */
  retries(key: string): number {
    return this.#backoff.retries(key);
  }

  /**
   * Handles up to `concurrency` distinct keys at a time with `handler`. Resolves once the queue
   * is shut down and every in-flight handler has returned.
   */
  run(concurrency: number, handler: WorkHandler): Promise<void> {
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new RangeError(`concurrency must be a positive integer, got ${concurrency}`);
    }
    if (this.#handler) throw new Error('WorkQueue.run was already called');
    this.#handler = handler;
    this.#concurrency = concurrency;
    this.#pump();
    return this.#drained.promise;
  }

  /**
   * Stops starting work, drops waiting and delayed keys, aborts in-flight handlers' signal and
   * resolves once they have all returned. Later adds are ignored. Safe to call repeatedly.
   */
  shutDown(): Promise<void> {
    if (this.#shuttingDown) return this.#drained.promise;
    this.#shuttingDown = true;
    for (const key of [...this.#scheduled.keys()]) this.#cancelScheduled(key);
    this.#dirty.clear();
    if (this.#waiting.size > 0) {
      this.#waiting.clear();
      this.#depthChanged();
    }
    this.#abort.abort();
    this.#resolveIfDrained();
    return this.#drained.promise;
  }

  #schedule(key: string, due: number, delayMs: number): void {
    // Round up: timers truncate fractional ms, and firing early would break "not before due".
    const timer = setTimeout(() => {
      this.#scheduled.delete(key);
      this.add(key);
    }, Math.ceil(Math.min(delayMs, MAX_TIMER_MS)));
    // A pending requeue alone should not keep the process alive.
    timer.unref();
    this.#scheduled.set(key, { due, timer });
  }

  #cancelScheduled(key: string): void {
    const scheduled = this.#scheduled.get(key);
    if (!scheduled) return;
    clearTimeout(scheduled.timer);
    this.#scheduled.delete(key);
  }

  /** Starts handlers for waiting keys while there are free slots. */
  #pump(): void {
    const handler = this.#handler;
    if (!handler) return;
    while (!this.#shuttingDown && this.#processing.size < this.#concurrency) {
      const key = this.#takeNext();
      if (key === undefined) return;
      this.#processing.add(key);
      void this.#process(key, handler);
    }
  }

  #takeNext(): string | undefined {
    const next = this.#waiting.values().next();
    if (next.done === true) return undefined;
    this.#waiting.delete(next.value);
    this.#depthChanged();
    return next.value;
  }

  async #process(key: string, handler: WorkHandler): Promise<void> {
    try {
      // Defer the handler so add()/run() never call back into user code synchronously.
      await Promise.resolve();
      await handler(key, this.#abort.signal);
    } catch (error) {
      this.#reportHandlerError(key, error);
    } finally {
      this.#finish(key);
    }
  }

  #finish(key: string): void {
    this.#processing.delete(key);
    // shutDown() clears #dirty and add() is ignored afterwards, so nothing is requeued then.
    if (this.#dirty.delete(key)) {
      this.#waiting.add(key);
      this.#depthChanged();
    }
    this.#resolveIfDrained();
    this.#pump();
  }

  #resolveIfDrained(): void {
    if (this.#shuttingDown && this.#processing.size === 0) this.#drained.resolve(undefined);
  }

  #reportHandlerError(key: string, error: unknown): void {
    try {
      this.#onHandlerError(key, error);
    } catch {
      // The reporter failing must not stop the worker; there is nowhere left to report to.
    }
  }

  #depthChanged(): void {
    try {
      this.#onDepthChange?.(this.#waiting.size);
    } catch {
      // A metrics callback must never corrupt queue state mid-update.
    }
  }
}
