/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection semantics.
 * Candidates read the Lease every retryPeriod and take it once it is free or expired; the leader
 * renews it every retryPeriod and steps down when no renewal succeeded within renewDeadline, which
 * is shorter than leaseDuration, so it stops acting before anyone else may take the Lease over.
 * Every write carries the resourceVersion that was read: of two candidates racing for the same
 * Lease, one gets 409 Conflict and keeps waiting (lease-record.ts reads and writes the Lease through
 * a lease-store.ts, lease-math.ts judges it, clock.ts is the time it runs on). Which Lease is the
 * caller's choice: the operator elects one per version and shard (src/controller/lease-names.ts).
 */
import type { Logger } from '../log.ts';
import { type Clock, sleep, systemClock } from './clock.ts';
import { type Attempt, LeaseRecord } from './lease-record.ts';
import { ACQUIRE_JITTER, electionTiming, type ElectionTiming } from './lease-math.ts';
import type { LeaseStore } from './lease-store.ts';

interface ElectionSettings {
  readonly namespace: string;
  readonly leaseName: string;
  /** Unique per replica and stable across container restarts: the pod name. */
  readonly identity: string;
  readonly leaseDurationSeconds?: number;
  readonly renewDeadlineSeconds?: number;
  readonly retryPeriodSeconds?: number;
  readonly log: Logger;
  readonly clock?: Clock;
}

/** The Lease is read and written through `store` (the API: src/adapters/kube-leases.ts). */
export type LeaderElectorOptions = ElectionSettings & { readonly store: LeaseStore };

export interface LeaderCallbacks {
  /**
   * Leadership was acquired; `signal` aborts when it ends. Return a promise that settles once the
   * work has stopped: stop() keeps renewing until then and only then releases the Lease. A
   * rejection while leading ends leadership (the Lease is released) and run() rejects with it.
   */
  readonly onStartedLeading: (signal: AbortSignal) => Promise<void> | void;
  /** Leadership ended: lost, or stopped (after the release). Not called if this replica never led, nor after crash(). */
  readonly onStoppedLeading: () => void;
  /** The observed holder changed to `identity` (this replica included). */
  readonly onNewLeader?: (identity: string) => void;
}

type Ending =
  | { readonly kind: 'stopped' }
  | { readonly kind: 'crashed' }
  | { readonly kind: 'lost'; readonly reason: string }
  | { readonly kind: 'failed'; readonly error: unknown };

interface Renewal {
  /** Resolves when leadership is lost: renewDeadline passed, or someone else holds the Lease. */
  readonly lost: Promise<Ending>;
  /** Stops renewing; resolves when the attempt in flight, if any, has finished. */
  halt(): Promise<void>;
}

interface LeaderWork {
  readonly settled: Promise<void>;
  /** Resolves only if the work rejects. */
  readonly failure: Promise<Ending>;
}

const never = new Promise<never>(() => undefined);

/** A call, not a property read: TypeScript would otherwise keep a narrowing from before an await. */
function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

function jittered(ms: number): number {
  return ms * (1 + ACQUIRE_JITTER * Math.random());
}

function startWork(callbacks: LeaderCallbacks, signal: AbortSignal): LeaderWork {
  const outcome = Promise.resolve()
    .then(() => callbacks.onStartedLeading(signal))
    .then(
      (): Ending | undefined => undefined,
      (error: unknown): Ending => ({ kind: 'failed', error }),
    );
  return { settled: outcome.then(() => undefined), failure: outcome.then((failed) => failed ?? never) };
}

/**
 * One candidacy: run() stands for leadership, leads until leadership is lost or stop() is called,
 * and resolves. To stand again, create a new elector (losing leadership usually means exiting).
 */
export class LeaderElector {
  readonly #lease: LeaseRecord;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #identity: string;
  readonly #timing: ElectionTiming;
  /** Aborted by stop() and crash(): ends the candidacy and wakes every wait. */
  readonly #halt = new AbortController();
  /** Aborted by crash(): in-flight requests die with the "process". */
  readonly #crash = new AbortController();
  readonly #crashed = Promise.withResolvers<Ending>();
  readonly #ending = Promise.withResolvers<Ending>();
  readonly #finished = Promise.withResolvers<undefined>();
  #started = false;
  #leading = false;
  /** Aborted when the current term of leadership ends. */
  #term: AbortController | undefined;
  #onNewLeader: ((identity: string) => void) | undefined;
  #reportedLeader = '';

  constructor(options: LeaderElectorOptions) {
    if (options.identity === '') throw new Error('identity must not be empty: an empty holder means "released"');
    this.#timing = electionTiming(options.leaseDurationSeconds, options.renewDeadlineSeconds, options.retryPeriodSeconds);
    this.#clock = options.clock ?? systemClock;
    this.#identity = options.identity;
    this.#lease = new LeaseRecord({
      store: options.store,
      clock: this.#clock,
      identity: options.identity,
      namespace: options.namespace,
      leaseName: options.leaseName,
      leaseDurationSeconds: this.#timing.leaseDurationSeconds,
      onHolderSeen: (holder) => {
        this.#report(holder);
      },
    });
    this.#log = options.log.child({ lease: `${options.namespace}/${options.leaseName}`, identity: options.identity });
  }

  get identity(): string {
    return this.#identity;
  }

  /** True from acquiring the Lease until the leading signal aborts. */
  get isLeader(): boolean {
    return this.#leading;
  }

  async run(callbacks: LeaderCallbacks): Promise<void> {
    if (this.#started) throw new Error('LeaderElector.run() stands once; create a new elector to stand again');
    this.#started = true;
    this.#onNewLeader = callbacks.onNewLeader;
    try {
      const renewedAt = await this.#acquire();
      if (renewedAt !== undefined) await this.#lead(callbacks, renewedAt);
    } finally {
      this.#finished.resolve(undefined);
    }
  }

  /** Stops standing or leading; a leader waits for its work, then releases the Lease. Never rejects. */
  async stop(): Promise<void> {
    this.#end({ kind: 'stopped' });
    if (this.#started) await this.#finished.promise;
  }

  /**
   * Simulates the process dying (tests): timers stop, requests in flight are abandoned, no callback
   * runs and the Lease is left to expire. The leading signal still aborts, so test work stops too.
   */
  crash(): void {
    // A dead process stops acting at once, not a few ticks later.
    this.#leading = false;
    this.#term?.abort();
    this.#crash.abort(new Error('crashed'));
    this.#crashed.resolve({ kind: 'crashed' });
    this.#end({ kind: 'crashed' });
  }

  #end(ending: Ending): void {
    this.#ending.resolve(ending);
    this.#halt.abort();
  }

  /** Polls until the Lease is ours; resolves with when it was claimed, or undefined when halted. */
  async #acquire(): Promise<number | undefined> {
    this.#log.info('standing for leadership');
    while (!aborted(this.#halt.signal)) {
      const attempt = await this.#attempt((signal) => this.#lease.tryAcquire(signal));
      if (attempt.kind === 'held') {
        if (!aborted(this.#halt.signal)) return attempt.renewedAt;
        // Won the race while stopping: give it straight back (after a crash nothing runs).
        if (!aborted(this.#crash.signal)) await this.#release();
        return undefined;
      }
      this.#logAttempt(attempt);
      await sleep(this.#clock, jittered(this.#timing.retryPeriodMs), this.#halt.signal);
    }
    return undefined;
  }

  async #lead(callbacks: LeaderCallbacks, renewedAt: number): Promise<void> {
    const term = new AbortController();
    this.#term = term;
    this.#leading = true;
    this.#log.info('acquired lease: leading');
    const renewal = this.#startRenewal(renewedAt);
    const work = startWork(callbacks, term.signal);
    let ending = await Promise.race([this.#ending.promise, renewal.lost, work.failure]);
    // Stop acting first, whatever follows.
    this.#leading = false;
    term.abort();
    if (ending.kind === 'stopped' || ending.kind === 'failed') ending = await this.#drain(work, renewal, ending);
    await this.#endTerm(callbacks, ending, renewal);
  }

  /**
   * Waits for the leader's work to stop while still renewing: the Lease must outlive the work. A
   * renewal lost meanwhile ends the renewing, not the wait: stop() promises the work has stopped,
   * and the Lease, no longer ours, is not released.
   */
  async #drain(work: LeaderWork, renewal: Renewal, ending: Ending): Promise<Ending> {
    this.#log.info('stopping: waiting for the leader work to finish before releasing the lease');
    const settled = work.settled.then(() => undefined);
    const interrupted = await Promise.race([settled, renewal.lost, this.#crashed.promise]);
    if (interrupted?.kind === 'lost') {
      this.#log.warn({ reason: interrupted.reason }, 'lost the lease while stopping: still waiting for the leader work, the lease is not released');
      void renewal.halt();
      await Promise.race([settled, this.#crashed.promise]);
    }
    return interrupted ?? ending;
  }

  async #endTerm(callbacks: LeaderCallbacks, ending: Ending, renewal: Renewal): Promise<void> {
    if (ending.kind === 'crashed' || this.#crash.signal.aborted) {
      void renewal.halt();
      this.#log.warn('crashed: the lease is left to expire');
      return;
    }
    if (ending.kind === 'lost') {
      // No release: the work may still be winding down, and the Lease keeps others out meanwhile.
      void renewal.halt();
      this.#log.warn({ reason: ending.reason }, 'lost leadership');
    } else {
      await renewal.halt();
      await this.#release();
    }
    this.#safely('onStoppedLeading', () => {
      callbacks.onStoppedLeading();
    });
    if (ending.kind === 'failed') throw ending.error;
  }

  #startRenewal(renewedAt: number): Renewal {
    const halted = new AbortController();
    const lost = Promise.withResolvers<Ending>();
    const seconds = this.#timing.renewDeadlineMs / 1000;
    let cancelDeadline = (): void => undefined;
    const renewed = (at: number): void => {
      cancelDeadline();
      // From when the renewal was sent, not answered: others measure expiry from no earlier than that.
      const remaining = at + this.#timing.renewDeadlineMs - this.#clock.now();
      cancelDeadline = this.#clock.setTimer(() => {
        lost.resolve({ kind: 'lost', reason: `no renewal succeeded within ${seconds}s` });
      }, remaining);
    };
    renewed(renewedAt);
    const loop = this.#renewLoop(halted.signal, renewed, (reason) => {
      lost.resolve({ kind: 'lost', reason });
    });
    const halt = (): Promise<void> => {
      halted.abort();
      cancelDeadline();
      return loop;
    };
    return { lost: lost.promise, halt };
  }

  async #renewLoop(halted: AbortSignal, renewed: (at: number) => void, lose: (reason: string) => void): Promise<void> {
    for (;;) {
      await sleep(this.#clock, this.#timing.retryPeriodMs, halted);
      if (aborted(halted)) return;
      const attempt = await this.#attempt((signal) => this.#lease.tryRenew(signal));
      if (aborted(halted)) return;
      if (attempt.kind === 'held') {
        renewed(attempt.renewedAt);
        this.#log.debug('renewed lease');
      } else if (attempt.kind === 'busy') {
        lose(attempt.holder === '' ? 'the lease was deleted or released by someone else' : `the lease is held by ${attempt.holder}`);
        return;
      } else {
        this.#logAttempt(attempt);
      }
    }
  }

  /** One bounded attempt; errors become a 'failed' attempt, retried like any other. */
  async #attempt(step: (signal: AbortSignal) => Promise<Attempt>): Promise<Attempt> {
    try {
      return await this.#bounded(step);
    } catch (error) {
      return { kind: 'failed', error };
    }
  }

  /** Runs `call` with a signal that aborts on the request timeout or a crash. */
  async #bounded<T>(call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const request = new AbortController();
    const cancel = this.#clock.setTimer(() => {
      request.abort(new Error(`lease request timed out after ${this.#timing.requestTimeoutMs} ms`));
    }, this.#timing.requestTimeoutMs);
    // A listener removed after every attempt, not AbortSignal.any: the crash signal lives as long
    // as the elector, and would otherwise collect one dependent signal per renewal.
    const onCrash = (): void => {
      request.abort(this.#crash.signal.reason);
    };
    this.#crash.signal.addEventListener('abort', onCrash, { once: true });
    try {
      return await call(request.signal);
    } finally {
      cancel();
      this.#crash.signal.removeEventListener('abort', onCrash);
    }
  }

  #report(holder: string): void {
    // An empty holder is a released lease, not a leader.
    if (holder === '' || holder === this.#reportedLeader) return;
    this.#reportedLeader = holder;
    this.#log.info({ leader: holder }, 'new leader observed');
    const onNewLeader = this.#onNewLeader;
    if (onNewLeader) {
      this.#safely('onNewLeader', () => {
        onNewLeader(holder);
      });
    }
  }

  /** Best effort: if it fails, the Lease simply expires. */
  async #release(): Promise<void> {
    try {
      const released = await this.#bounded((signal) => this.#lease.tryRelease(signal));
      this.#log.info(released ? 'released lease' : 'lease no longer ours: nothing to release');
    } catch (err) {
      this.#log.warn({ err }, 'could not release the lease; it will expire on its own');
    }
  }

  #logAttempt(attempt: Attempt): void {
    if (attempt.kind === 'failed') this.#log.warn({ err: attempt.error }, 'lease request failed; retrying');
    else if (attempt.kind === 'conflict') this.#log.debug('lost a write race on the lease; retrying');
    else if (attempt.kind === 'busy') this.#log.debug({ holder: attempt.holder }, 'lease held by another replica');
  }

  /** Callbacks are the caller's code: a throw is logged, never allowed to break the election. */
  #safely(name: string, callback: () => void): void {
    try {
      callback();
    } catch (err) {
      this.#log.error({ err }, `${name} threw`);
    }
  }
}
