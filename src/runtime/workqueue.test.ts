/** The WorkQueue's contract, one describe per behaviour; one file over ~350 lines because every part shares the fake-time harness below. */
import { IterableBackoff } from 'cockatiel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WorkQueue, type WorkHandler } from './workqueue.ts';
import { seededRandom } from '../../test/support/random.ts';

// Captured before any test fakes timers: one real macrotask turn flushes every pending microtask.
const realSetImmediate = globalThis.setImmediate;
const settle = (): Promise<void> => new Promise((resolve) => realSetImmediate(resolve));


const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A handler whose every invocation blocks until the test releases it. */
function gatedHandler(): {
  handler: WorkHandler;
  started: string[];
  gates: Map<string, PromiseWithResolvers<undefined>[]>;
  release: (key: string, error?: Error) => void;
  maxInFlight: () => number;
} {
  const started: string[] = [];
  const gates = new Map<string, PromiseWithResolvers<undefined>[]>();
  let inFlight = 0;
  let max = 0;
  const handler: WorkHandler = async (key) => {
    started.push(key);
    inFlight++;
    max = Math.max(max, inFlight);
    const gate = Promise.withResolvers<undefined>();
    gates.set(key, [...(gates.get(key) ?? []), gate]);
    try {
      await gate.promise;
    } finally {
      inFlight--;
    }
  };
  const release = (key: string, error?: Error): void => {
    const gate = gates.get(key)?.shift();
    if (!gate) throw new Error(`no in-flight gate for ${key}`);
    if (error) gate.reject(error);
    else gate.resolve(undefined);
  };
  return { handler, started, gates, release, maxInFlight: () => max };
}

/** Records each start with the (fake) time it happened. */
function timedRecorder(): { handler: WorkHandler; runs: Array<[string, number]> } {
  const runs: Array<[string, number]> = [];
  return {
    runs,
    handler: async (key) => {
      runs.push([key, performance.now()]);
      await Promise.resolve();
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('WorkQueue: dedupe and per-key exclusivity', () => {
  it('does not add a waiting key twice and reports depth changes', async () => {
    const depths: number[] = [];
    const queue = new WorkQueue({ onDepthChange: (d) => depths.push(d) });
    queue.add('a');
    queue.add('b');
    queue.add('a');
    queue.add('a');
    queue.add('b');
    expect(queue.length).toBe(2);
    expect(depths).toEqual([1, 2]);

    const seen: string[] = [];
    const done = queue.run(1, async (key) => {
      seen.push(key);
      await Promise.resolve();
    });
    await settle();
    expect(seen).toEqual(['a', 'b']);
    expect(depths).toEqual([1, 2, 1, 0]);
    expect(queue.length).toBe(0);
    await queue.shutDown();
    await done;
  });

  it('never calls the handler synchronously from add()', async () => {
    const queue = new WorkQueue();
    let calls = 0;
    void queue.run(1, async () => {
      calls++;
      await Promise.resolve();
    });
    queue.add('a');
    expect(calls).toBe(0);
    expect(queue.processingCount).toBe(1);
    await settle();
    expect(calls).toBe(1);
    await queue.shutDown();
  });

  it('re-queues a key added during processing exactly once, after it finishes', async () => {
    const queue = new WorkQueue();
    const gated = gatedHandler();
    void queue.run(4, gated.handler);
    queue.add('a');
    await settle();
    expect(gated.started).toEqual(['a']);

    for (let i = 0; i < 10; i++) queue.add('a');
    await settle();
    // Dirty, not waiting: not counted as depth and not started alongside itself.
    expect(queue.length).toBe(0);
    expect(queue.processingCount).toBe(1);
    expect(gated.started).toEqual(['a']);

    gated.release('a');
    await settle();
    expect(gated.started).toEqual(['a', 'a']);

    gated.release('a');
    await settle();
    expect(gated.started).toEqual(['a', 'a']);
    expect(queue.processingCount).toBe(0);
    expect(queue.length).toBe(0);
    expect(gated.maxInFlight()).toBe(1);
    await queue.shutDown();
  });

  it('runs one key at a time under a storm of adds, and collapses the storm', async () => {
    vi.useFakeTimers();
    const rand = seededRandom(99);
    const keys = ['t0', 't1', 't2', 't3', 't4', 't5', 't6', 't7'];
    const active = new Map<string, number>();
    const maxActive = new Map<string, number>();
    const runs = new Map<string, number>();
    const lastStart = new Map<string, number>();
    const lastAdd = new Map<string, number>();
    let seq = 0;
    const queue = new WorkQueue();
    void queue.run(4, async (key) => {
      lastStart.set(key, ++seq);
      runs.set(key, (runs.get(key) ?? 0) + 1);
      active.set(key, (active.get(key) ?? 0) + 1);
      maxActive.set(key, Math.max(maxActive.get(key) ?? 0, active.get(key)!));
      await sleep(5);
      active.set(key, active.get(key)! - 1);
    });

    let adds = 0;
    for (let ms = 0; ms < 200; ms++) {
      for (let i = 0; i < 20; i++) {
        const key = keys[Math.floor(rand() * keys.length)]!;
        lastAdd.set(key, ++seq);
        queue.add(key);
        adds++;
      }
      await vi.advanceTimersByTimeAsync(1);
    }
    await vi.advanceTimersByTimeAsync(100);
    await settle();

    expect(adds).toBe(4_000);
    for (const key of keys) {
      expect(maxActive.get(key)).toBe(1);
      // Every add was followed by a run that started after it (nothing lost).
      expect(lastStart.get(key)!).toBeGreaterThan(lastAdd.get(key)!);
      // 200 ms of 5 ms runs: dedupe keeps each key near that bound instead of one run per add.
      expect(runs.get(key)!).toBeLessThanOrEqual(200 / 5 + 2);
    }
    expect(queue.processingCount).toBe(0);
    await queue.shutDown();
  });
});

describe('WorkQueue: concurrency', () => {
  it('keeps exactly N distinct keys in flight and processes them FIFO', async () => {
    const queue = new WorkQueue();
    const gated = gatedHandler();
    const keys = Array.from({ length: 20 }, (_, i) => `tenant-${i}`);
    for (const key of keys) queue.add(key);
    void queue.run(4, gated.handler);
    await settle();
    expect(queue.processingCount).toBe(4);
    expect(queue.length).toBe(16);
    expect(gated.started).toEqual(keys.slice(0, 4));

    // Each completion frees exactly one slot, which the next key takes at once.
    for (let done = 0; done < keys.length; done++) {
      gated.release(keys[done]!);
      await settle();
      expect(queue.processingCount).toBe(Math.min(4, keys.length - done - 1));
    }
    expect(gated.started).toEqual(keys);
    expect(gated.maxInFlight()).toBe(4);
    await queue.shutDown();
  });

  it('reaches full parallelism in wall time (handlers overlap)', async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue();
    const ends: number[] = [];
    for (let i = 0; i < 12; i++) queue.add(`tenant-${i}`);
    void queue.run(3, async () => {
      await sleep(100);
      ends.push(performance.now());
    });
    await vi.advanceTimersByTimeAsync(400);
    // 12 keys, 3 at a time, 100 ms each: four waves.
    expect(ends).toEqual([100, 100, 100, 200, 200, 200, 300, 300, 300, 400, 400, 400]);
    await queue.shutDown();
  });

  it('uses a single slot for a single key even when more slots are free', async () => {
    const queue = new WorkQueue();
    const gated = gatedHandler();
    void queue.run(8, gated.handler);
    queue.add('only');
    await settle();
    queue.add('only');
    queue.add('only');
    await settle();
    expect(queue.processingCount).toBe(1);
    gated.release('only');
    await settle();
    gated.release('only');
    await settle();
    expect(gated.started).toEqual(['only', 'only']);
    expect(gated.maxInFlight()).toBe(1);
    await queue.shutDown();
  });

  it('rejects invalid concurrency and a second run', () => {
    const queue = new WorkQueue();
    const noop: WorkHandler = async () => {};
    expect(() => queue.run(0, noop)).toThrow(RangeError);
    expect(() => queue.run(1.5, noop)).toThrow(RangeError);
    expect(() => queue.run(Number.NaN, noop)).toThrow(RangeError);
    void queue.run(1, noop);
    expect(() => queue.run(1, noop)).toThrow(/already/);
  });
});

describe('WorkQueue: addAfter', () => {
  it('releases delayed keys in due order, not before their time', async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue();
    const rec = timedRecorder();
    void queue.run(4, rec.handler);
    queue.addAfter('a', 300);
    queue.addAfter('b', 100);
    queue.addAfter('c', 200);
    expect(queue.scheduledCount).toBe(3);
    expect(queue.length).toBe(0);
    await vi.advanceTimersByTimeAsync(99);
    expect(rec.runs).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(rec.runs).toEqual([['b', 100]]);
    await vi.advanceTimersByTimeAsync(300);
    expect(rec.runs).toEqual([
      ['b', 100],
      ['c', 200],
      ['a', 300],
    ]);
    expect(queue.scheduledCount).toBe(0);
  });

  it('keeps the earlier time when a later delay is requested', async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue();
    const rec = timedRecorder();
    void queue.run(1, rec.handler);
    queue.addAfter('a', 100);
    queue.addAfter('a', 500);
    expect(queue.scheduledCount).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(rec.runs).toEqual([['a', 100]]);
  });

  it('moves to the earlier time when an earlier delay is requested', async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue();
    const rec = timedRecorder();
    void queue.run(1, rec.handler);
    queue.addAfter('a', 500);
    await vi.advanceTimersByTimeAsync(50);
    queue.addAfter('a', 100);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(rec.runs).toEqual([['a', 150]]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('lets an immediate add supersede a pending delay', async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue();
    const rec = timedRecorder();
    void queue.run(1, rec.handler);
    queue.addAfter('a', 1_000);
    await vi.advanceTimersByTimeAsync(10);
    queue.add('a');
    expect(queue.scheduledCount).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(rec.runs).toEqual([['a', 10]]);
  });

  it('ignores a delay for a key that is already waiting, and treats delay <= 0 as add', () => {
    vi.useFakeTimers();
    const queue = new WorkQueue();
    queue.add('a');
    queue.addAfter('a', 100);
    expect(queue.scheduledCount).toBe(0);
    expect(queue.length).toBe(1);
    queue.addAfter('b', 0);
    queue.addAfter('c', -5);
    queue.addAfter('d', Number.NaN);
    expect(queue.length).toBe(4);
    expect(queue.scheduledCount).toBe(0);
  });

  it('requeues a key scheduled during its own processing once it is due', async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue();
    const starts: Array<[string, number]> = [];
    let first = true;
    void queue.run(2, async (key) => {
      starts.push([key, performance.now()]);
      if (first) {
        first = false;
        // The usual "requeue after" from inside a reconcile.
        queue.addAfter(key, 50);
        await sleep(10);
      }
    });
    queue.add('a');
    await vi.advanceTimersByTimeAsync(200);
    expect(starts).toEqual([
      ['a', 0],
      ['a', 50],
    ]);
  });

  it('marks a key dirty when its timer fires mid-processing, and runs it right after', async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue();
    const starts: Array<[string, number]> = [];
    void queue.run(2, async (key) => {
      starts.push([key, performance.now()]);
      if (starts.length === 1) {
        queue.addAfter(key, 20);
        await sleep(100);
      }
    });
    queue.add('a');
    await vi.advanceTimersByTimeAsync(300);
    expect(starts).toEqual([
      ['a', 0],
      ['a', 100],
    ]);
  });

  it('rounds fractional delays up so a key never runs before it is due', async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue();
    const rec = timedRecorder();
    void queue.run(1, rec.handler);
    queue.addAfter('a', 10.2);
    await vi.advanceTimersByTimeAsync(10);
    expect(rec.runs).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(rec.runs).toEqual([['a', 11]]);
  });
});

describe('WorkQueue: addRateLimited', () => {
  it('delays by the key backoff, counts retries and resets on forget', async () => {
    vi.useFakeTimers();
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const queue = new WorkQueue();
    const rec = timedRecorder();
    void queue.run(1, rec.handler);

    const first = queue.addRateLimited('a')!;
    expect(first).toBeGreaterThan(150);
    expect(first).toBeLessThan(200);
    expect(queue.retries('a')).toBe(1);
    await vi.advanceTimersByTimeAsync(Math.floor(first));
    expect(rec.runs).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(rec.runs).toEqual([['a', Math.ceil(first)]]);

    const second = queue.addRateLimited('a')!;
    const third = queue.addRateLimited('a')!; // earlier (second) time wins; attempt still counted
    expect(second).toBeGreaterThan(first);
    expect(third).toBeGreaterThan(second);
    expect(queue.retries('a')).toBe(3);
    expect(queue.retries('b')).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(rec.runs).toEqual([
      ['a', Math.ceil(first)],
      ['a', Math.ceil(first) + Math.ceil(second)],
    ]);

    queue.forget('a');
    expect(queue.retries('a')).toBe(0);
    expect(queue.addRateLimited('a')).toBe(first);
  });

  it('uses backoff options (injected cockatiel factory) with the cap applied', async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue({ backoff: { factory: new IterableBackoff([100, 400, 90_000]), capMs: 1_000 } });
    const rec = timedRecorder();
    void queue.run(1, rec.handler);
    expect(queue.addRateLimited('a')).toBe(100);
    await vi.advanceTimersByTimeAsync(100);
    expect(queue.addRateLimited('a')).toBe(400);
    await vi.advanceTimersByTimeAsync(400);
    expect(queue.addRateLimited('a')).toBe(1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(rec.runs).toEqual([
      ['a', 100],
      ['a', 500],
      ['a', 1_500],
    ]);
  });
});

describe('WorkQueue: shutdown', () => {
  it('aborts in-flight handlers, drains them and starts nothing new', async () => {
    const queue = new WorkQueue();
    const signals: AbortSignal[] = [];
    const gated = gatedHandler();
    const running = queue.run(2, async (key, signal) => {
      signals.push(signal);
      await gated.handler(key, signal);
    });
    queue.add('a');
    queue.add('b');
    queue.add('c');
    await settle();
    expect(signals.every((s) => !s.aborted)).toBe(true);

    let drained = false;
    let ran = false;
    void queue.shutDown().then(() => (drained = true));
    void running.then(() => (ran = true));
    expect(queue.isShuttingDown).toBe(true);
    expect(queue.length).toBe(0);
    expect(signals.map((s) => s.aborted)).toEqual([true, true]);

    queue.add('d');
    queue.addAfter('e', 10);
    expect(queue.addRateLimited('f')).toBeUndefined();
    expect(queue.retries('f')).toBe(0);
    expect(queue.length).toBe(0);
    expect(queue.scheduledCount).toBe(0);

    gated.release('a');
    await settle();
    expect(drained).toBe(false);
    expect(queue.processingCount).toBe(1);

    gated.release('b');
    await settle();
    expect(drained).toBe(true);
    expect(ran).toBe(true);
    expect(gated.started).toEqual(['a', 'b']);
  });

  it('lets a handler use the signal to stop its current step early', async () => {
    const queue = new WorkQueue();
    const steps: string[] = [];
    void queue.run(1, async (key, signal) => {
      steps.push(`start ${key}`);
      await new Promise<void>((resolve) => {
        signal.addEventListener('abort', () => {
          resolve();
        }, { once: true });
      });
      steps.push(`aborted ${key}`);
    });
    queue.add('a');
    await settle();
    await queue.shutDown();
    expect(steps).toEqual(['start a', 'aborted a']);
  });

  it('clears pending timers and drops dirty keys', async () => {
    vi.useFakeTimers();
    const queue = new WorkQueue();
    const gated = gatedHandler();
    void queue.run(1, gated.handler);
    queue.add('a');
    await vi.advanceTimersByTimeAsync(0);
    queue.add('a'); // dirty
    queue.addAfter('b', 100);
    queue.addAfter('c', 5_000);
    queue.addRateLimited('d');
    expect(vi.getTimerCount()).toBe(3);

    const drained = queue.shutDown();
    expect(queue.scheduledCount).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    gated.release('a');
    await drained;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(gated.started).toEqual(['a']);
    expect(queue.length).toBe(0);
  });

  it('resolves at once without run, and every call returns the same drain', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    const first = queue.shutDown();
    expect(queue.shutDown()).toBe(first);
    await first;
    expect(queue.length).toBe(0);
    // A late run has nothing to do and is already drained.
    let called = false;
    await queue.run(1, () => {
      called = true;
      return Promise.resolve();
    });
    expect(called).toBe(false);
  });
});

describe('WorkQueue: handler errors', () => {
  it('reports throws and rejections and keeps working', async () => {
    const errors: Array<[string, unknown]> = [];
    const queue = new WorkQueue({ onHandlerError: (key, error) => errors.push([key, error]) });
    const seen: string[] = [];
    const syncBoom = new Error('sync boom');
    const asyncBoom = new Error('async boom');
    const handler = ((key: string): Promise<void> => {
      seen.push(key);
      if (key === 'sync') throw syncBoom;
      if (key === 'async') return Promise.reject(asyncBoom);
      return Promise.resolve();
    }) satisfies WorkHandler;
    void queue.run(1, handler);
    queue.add('sync');
    queue.add('async');
    queue.add('ok');
    await settle();
    expect(seen).toEqual(['sync', 'async', 'ok']);
    expect(errors).toEqual([
      ['sync', syncBoom],
      ['async', asyncBoom],
    ]);
    expect(queue.processingCount).toBe(0);

    // The failed key is free again: it can be re-added and runs.
    queue.add('sync');
    await settle();
    expect(seen).toEqual(['sync', 'async', 'ok', 'sync']);
    await queue.shutDown();
  });

  it('survives a throwing error reporter and a throwing depth callback', async () => {
    const queue = new WorkQueue({
      onHandlerError: () => {
        throw new Error('reporter broke');
      },
      onDepthChange: () => {
        throw new Error('metrics broke');
      },
    });
    const seen: string[] = [];
    void queue.run(1, async (key) => {
      seen.push(key);
      await Promise.resolve();
      throw new Error('handler broke');
    });
    queue.add('a');
    queue.add('b');
    await settle();
    expect(seen).toEqual(['a', 'b']);
    expect(queue.processingCount).toBe(0);
    await queue.shutDown();
  });

  it('falls back to console.error when no reporter is given', async () => {
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    const queue = new WorkQueue();
    void queue.run(1, async () => {
      await Promise.resolve();
      throw new Error('boom');
    });
    queue.add('a');
    await settle();
    expect(log).toHaveBeenCalledOnce();
    expect(String(log.mock.calls[0]?.[0])).toContain('a');
    await queue.shutDown();
  });
});

interface Request {
  readonly immediate: boolean;
  readonly due: number;
}

/**
 * One randomized run. Invariants: a key never runs twice at once; at most N handlers run and no
 * slot idles while keys wait; every start is explained by a request since the key's previous
 * start (no duplicate runs) and, if all such requests were delayed, not before the earliest is
 * due; every request is eventually followed by a start (nothing lost); retries match the model.
 */
async function randomScenario(seed: number): Promise<string[]> {
  vi.useFakeTimers();
  const rand = seededRandom(seed);
  vi.spyOn(Math, 'random').mockImplementation(rand);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
  const concurrency = 1 + Math.floor(rand() * 6);
  const keys = Array.from({ length: 40 }, (_, i) => `tenant-${i}`);
  const pending = new Map<string, Request[]>();
  const active = new Map<string, number>();
  const expectedRetries = new Map<string, number>();
  const violations: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let starts = 0;
  let requestsOpen = true;
  const queue = new WorkQueue({ onHandlerError: () => {} });

  const note = (key: string, delay: number): void => {
    const now = performance.now();
    pending.set(key, [...(pending.get(key) ?? []), { immediate: !(delay > 0), due: now + Math.max(0, delay) }]);
  };
  const randomRequest = (): void => {
    const key = pick(keys);
    const roll = rand();
    if (roll < 0.5) {
      note(key, 0);
      queue.add(key);
    } else if (roll < 0.75) {
      const delay = Math.floor(rand() * 200);
      note(key, delay);
      queue.addAfter(key, delay);
    } else if (roll < 0.9) {
      note(key, queue.addRateLimited(key)!);
      expectedRetries.set(key, (expectedRetries.get(key) ?? 0) + 1);
    } else {
      queue.forget(key);
      expectedRetries.delete(key);
    }
  };

  const checkStart = (key: string): void => {
    const now = performance.now();
    const requests = pending.get(key) ?? [];
    if (requests.length === 0) violations.push(`${key} started at ${now} without a request`);
    const earliest = Math.min(...requests.map((r) => r.due));
    if (!requests.some((r) => r.immediate) && now < earliest) violations.push(`${key} started at ${now}, due ${earliest}`);
    pending.set(key, []);
  };

  const running = queue.run(concurrency, async (key) => {
    checkStart(key);
    starts++;
    active.set(key, (active.get(key) ?? 0) + 1);
    if (active.get(key)! > 1) violations.push(`${key} ran concurrently`);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      await sleep(Math.floor(rand() * 30));
      if (requestsOpen && rand() < 0.3) randomRequest();
      if (rand() < 0.1) throw new Error('reconcile failed');
    } finally {
      inFlight--;
      active.set(key, active.get(key)! - 1);
    }
  });

  const checkSlots = (when: string): void => {
    if (queue.processingCount > concurrency) violations.push(`${when}: ${queue.processingCount} in flight`);
    if (queue.length > 0 && queue.processingCount < concurrency) violations.push(`${when}: idle slot while keys wait`);
    if (queue.processingCount !== inFlight) violations.push(`${when}: queue says ${queue.processingCount}, saw ${inFlight}`);
  };

  for (let step = 0; step < 600; step++) {
    const burst = 1 + Math.floor(rand() * 4);
    for (let i = 0; i < burst; i++) randomRequest();
    await vi.advanceTimersByTimeAsync(Math.floor(rand() * 8));
    await settle();
    checkSlots(`step ${step}`);
  }

  requestsOpen = false;
  for (let i = 0; i < 100 && queue.length + queue.processingCount + queue.scheduledCount > 0; i++) {
    await vi.advanceTimersByTimeAsync(5_000);
    await settle();
  }
  for (const [key, requests] of pending) if (requests.length > 0) violations.push(`${key} lost ${requests.length} requests`);
  for (const key of keys) {
    if (queue.retries(key) !== (expectedRetries.get(key) ?? 0)) violations.push(`${key} retries ${queue.retries(key)}`);
  }
  if (maxInFlight !== concurrency) violations.push(`max in flight ${maxInFlight} != ${concurrency}`);
  if (starts < 200) violations.push(`only ${starts} starts`);

  await queue.shutDown();
  await running;
  vi.restoreAllMocks();
  vi.useRealTimers();
  return violations;
}

describe('WorkQueue: randomized invariants', () => {
  it.each([1, 2, 3, 42, 1337, 20240601])('seed %i', async (seed) => {
    expect(await randomScenario(seed)).toEqual([]);
  });
});
