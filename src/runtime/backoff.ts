/**
 * Per-key retry backoff: each key walks its own cockatiel backoff sequence, so one failing tenant
 * slows down without delaying the others (client-go's ItemExponentialFailureRateLimiter).
 */
import { decorrelatedJitterGenerator, ExponentialBackoff, type IBackoff, type IBackoffFactory } from 'cockatiel';

const DEFAULT_BACKOFF_BASE_MS = 200;
export const DEFAULT_BACKOFF_CAP_MS = 60_000;

export interface KeyedBackoffOptions {
  /** Scale of the first retry in ms (cockatiel's initialDelay). Default 200. */
  readonly baseMs?: number;
  /** Upper bound of any single delay in ms. Default 60 000. */
  readonly capMs?: number;
  /**
   * Source of delay sequences; replaces the default decorrelated-jitter exponential backoff, in
   * which case baseMs is unused. capMs still applies.
   */
  readonly factory?: IBackoffFactory<unknown>;
}

interface KeyState {
  readonly backoff: IBackoff<unknown>;
  readonly attempts: number;
}

export class KeyedBackoff {
  readonly #factory: IBackoffFactory<unknown>;
  readonly #capMs: number;
  readonly #keys = new Map<string, KeyState>();

  constructor(options: KeyedBackoffOptions = {}) {
    this.#capMs = options.capMs ?? DEFAULT_BACKOFF_CAP_MS;
    this.#factory =
      options.factory ??
      new ExponentialBackoff({
        generator: decorrelatedJitterGenerator,
        initialDelay: options.baseMs ?? DEFAULT_BACKOFF_BASE_MS,
        maxDelay: this.#capMs,
      });
  }

  /** Counts one more failure of `key` and returns how long to wait before retrying it, in ms. */
  next(key: string): number {
    const previous = this.#keys.get(key);
    // cockatiel's backoffs are immutable steps: keep the last one to continue the key's sequence.
    const backoff = previous ? previous.backoff.next(undefined) : this.#factory.next(undefined);
    this.#keys.set(key, { backoff, attempts: (previous?.attempts ?? 0) + 1 });
    // Clamp again so an injected factory cannot exceed the cap or go negative.
    return Math.min(this.#capMs, Math.max(0, backoff.duration));
  }

  /** Failures counted for `key` since it was last forgotten. */
  retries(key: string): number {
    return this.#keys.get(key)?.attempts ?? 0;
  }

  /** Resets `key` (it succeeded or is gone), so its next failure starts again from the base delay. */
  forget(key: string): void {
    this.#keys.delete(key);
  }

  /** Keys currently tracked; callers must forget keys that are deleted, or this grows. */
  get size(): number {
    return this.#keys.size;
  }
}
