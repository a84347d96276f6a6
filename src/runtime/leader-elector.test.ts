/** The elector against a fake clock and an in-memory Lease server; one file (over ~350 lines) because every case shares that harness. */
import { V1MicroTime, type V1Lease, type V1LeaseSpec } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import type { LeaseStore } from './lease-store.ts';
import { microTimeMs } from './lease-math.ts';
import type { Clock } from './clock.ts';
import { LeaderElector } from './leader-elector.ts';

const log = createLogger('silent');
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const s = (seconds: number): number => T0 + seconds * 1000;

// One real macrotask turn drains every pending microtask; the fakes below never use real timers.
const realSetImmediate = globalThis.setImmediate;
async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => realSetImmediate(resolve));
}

class FakeClock implements Clock {
  #now = T0;
  #seq = 0;
  readonly #timers = new Map<number, { at: number; callback: () => void }>();

  now(): number {
    return this.#now;
  }

  setTimer(callback: () => void, ms: number): () => void {
    const id = ++this.#seq;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), callback });
    return () => this.#timers.delete(id);
  }

  /** Moves time to T0 + `seconds`, firing due timers in order and letting promises settle between them. */
  async to(seconds: number): Promise<void> {
    const end = s(seconds);
    await flush();
    for (;;) {
      const due = [...this.#timers.entries()].filter(([, t]) => t.at <= end).sort(([a, x], [b, y]) => x.at - y.at || a - b)[0];
      if (!due) break;
      this.#timers.delete(due[0]);
      this.#now = Math.max(this.#now, due[1].at);
      due[1].callback();
      await flush();
    }
    this.#now = Math.max(this.#now, end);
    await flush();
  }

  get seconds(): number {
    return (this.#now - T0) / 1000;
  }
}

const wire = <T,>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** The API server's Lease semantics that matter here: resourceVersion preconditions, 409 on a race. */
class FakeLeaseServer {
  lease: V1Lease | undefined;
  #rv = 0;

  get spec(): V1LeaseSpec {
    if (!this.lease?.spec) throw new Error('no lease');
    return this.lease.spec;
  }

  store(lease: V1Lease): V1Lease {
    const stored = wire(lease);
    (stored.metadata ??= {}).resourceVersion = String(++this.#rv);
    this.lease = stored;
    return wire(stored);
  }

  /** Someone outside the election rewrites the spec. */
  overwrite(spec: Partial<V1LeaseSpec>): void {
    const lease = wire(this.lease ?? {});
    lease.spec = Object.assign(lease.spec ?? {}, spec);
    this.store(lease);
  }
}

type Mode = 'ok' | 'fail' | 'hang';

/** One replica's connection to the server; `mode` breaks it. */
class FakeClient implements LeaseStore {
  mode: Mode = 'ok';
  /** Writes refused with 409. */
  conflicts = 0;
  readonly #server: FakeLeaseServer;

  constructor(server: FakeLeaseServer) {
    this.#server = server;
  }

  async get(signal: AbortSignal): Promise<V1Lease | undefined> {
    await this.#network(signal);
    return this.#server.lease ? wire(this.#server.lease) : undefined;
  }

  async create(lease: V1Lease, signal: AbortSignal): Promise<V1Lease | undefined> {
    await this.#network(signal);
    if (!this.#server.lease) return this.#server.store(lease);
    this.conflicts++;
    return undefined;
  }

  async replace(lease: V1Lease, signal: AbortSignal): Promise<V1Lease | undefined> {
    await this.#network(signal);
    if (lease.metadata?.resourceVersion === this.#server.lease?.metadata?.resourceVersion) return this.#server.store(lease);
    this.conflicts++;
    return undefined;
  }

  async #network(signal: AbortSignal): Promise<void> {
    await Promise.resolve();
    if (this.mode === 'fail') throw new Error('connection refused');
    if (this.mode === 'hang') {
      await new Promise((_resolve, reject) => {
        signal.addEventListener('abort', () => {
          reject(new Error('aborted'));
        });
      });
    }
  }
}

interface Replica {
  readonly elector: LeaderElector;
  readonly client: FakeClient;
  readonly run: Promise<void>;
  readonly signal: () => AbortSignal | undefined;
}

interface World {
  readonly clock: FakeClock;
  readonly server: FakeLeaseServer;
  /** What happened when, in seconds since T0: `A started`, `B stopped`, `A sees leader B`, ... */
  readonly timeline: string[];
  readonly at: (event: string) => number | undefined;
  readonly replica: (identity: string, work?: (signal: AbortSignal) => Promise<void> | void) => Replica;
}

function world(): World {
  const clock = new FakeClock();
  const server = new FakeLeaseServer();
  const timeline: string[] = [];
  const record = (event: string): void => {
    timeline.push(`${clock.seconds}s ${event}`);
  };
  const at = (event: string): number | undefined => {
    const entry = timeline.find((e) => e.endsWith(` ${event}`));
    return entry === undefined ? undefined : Number.parseFloat(entry);
  };
  const replica = (identity: string, work?: (signal: AbortSignal) => Promise<void> | void): Replica => {
    const client = new FakeClient(server);
    const elector = new LeaderElector({ store: client, namespace: 'eva-system', leaseName: 'eva-operator-1-4-0', identity, log, clock });
    let signal: AbortSignal | undefined;
    const run = elector.run({
      onStartedLeading: (leading) => {
        signal = leading;
        record(`${identity} started`);
        leading.addEventListener('abort', () => {
          record(`${identity} aborted`);
        });
        return work?.(leading);
      },
      onStoppedLeading: () => {
        record(`${identity} stopped`);
      },
      onNewLeader: (leader) => {
        record(`${identity} sees leader ${leader}`);
      },
    });
    run.catch(() => undefined);
    return { elector, client, run, signal: () => signal };
  };
  return { clock, server, timeline, at, replica };
}

describe('LeaderElector (fake clock, fake lease server)', () => {
  it('creates the lease, leads, and renews every retryPeriod', async () => {
    const { clock, server, timeline, replica } = world();
    const a = replica('a');
    await clock.to(0);
    expect(a.elector.isLeader).toBe(true);
    expect(timeline).toEqual(['0s a sees leader a', '0s a started']);
    expect(server.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 0, leaseDurationSeconds: 15 });
    expect(server.spec.renewTime).toBe('2030-01-01T00:00:00.000000Z');

    await clock.to(10);
    expect(server.spec.renewTime).toBe('2030-01-01T00:00:10.000000Z');
    expect(server.spec.acquireTime).toBe('2030-01-01T00:00:00.000000Z');
    expect(server.lease?.metadata?.resourceVersion).toBe('6'); // created, then renewed at 2, 4, 6, 8, 10
    await a.elector.stop();
  });

  it('lets exactly one of two candidates lead, for as long as it renews', async () => {
    const { clock, server, replica } = world();
    const a = replica('a');
    const b = replica('b');
    await clock.to(120);
    expect([a.elector.isLeader, b.elector.isLeader]).toEqual([true, false]);
    expect(server.spec.holderIdentity).toBe('a');
    expect(server.spec.leaseTransitions).toBe(0);
    await Promise.all([a.elector.stop(), b.elector.stop()]);
  });

  it('settles a race for a free lease by resourceVersion: one winner, one transition', async () => {
    const { clock, server, replica } = world();
    server.store({ metadata: { name: 'eva-operator-1-4-0' }, spec: { holderIdentity: '', leaseDurationSeconds: 1, renewTime: new V1MicroTime(s(-1)), leaseTransitions: 7 } });
    const a = replica('a');
    const b = replica('b');
    // Both read the same resourceVersion and write at once; the second write is a 409.
    await clock.to(0);
    expect([a.elector.isLeader, b.elector.isLeader].filter(Boolean)).toHaveLength(1);
    expect(a.client.conflicts + b.client.conflicts).toBe(1);
    expect(server.spec.leaseTransitions).toBe(8);
    await Promise.all([a.elector.stop(), b.elector.stop()]);
  });

  it('waits a full leaseDuration from its own first sighting of a foreign holder (clock-skew safety)', async () => {
    const { clock, server, at, replica } = world();
    server.store({ metadata: { name: 'eva-operator-1-4-0' }, spec: { holderIdentity: 'ghost', leaseDurationSeconds: 15, renewTime: new V1MicroTime(s(-3600)) } });
    const b = replica('b');
    await clock.to(14.9);
    expect(b.elector.isLeader).toBe(false);
    await clock.to(20);
    expect(at('b started')).toBeGreaterThanOrEqual(15);
    expect(at('b started')).toBeLessThanOrEqual(15 + 2.4);
    expect(server.spec.leaseTransitions).toBe(1);
    await b.elector.stop();
  });

  it.each(['fail', 'hang'] as const)(
    'steps down renewDeadline after the last renewal when renewals %s, before the lease can be taken',
    async (mode) => {
      const { clock, server, at, timeline, replica } = world();
      const a = replica('a');
      await clock.to(0);
      const b = replica('b');
      await clock.to(5);
      a.client.mode = mode; // last successful renewal was sent at 4 s
      await clock.to(13.999);
      expect(a.elector.isLeader).toBe(true);
      await clock.to(14);
      expect(a.elector.isLeader).toBe(false);
      expect(a.signal()?.aborted).toBe(true);
      expect(at('a stopped')).toBe(14);
      await a.run; // the term is over
      // No release: the holder stays a until the lease expires, so b waits for it.
      expect(server.spec.holderIdentity).toBe('a');
      await clock.to(30);
      expect(at('b started')).toBeGreaterThanOrEqual(4 + 15);
      expect(at('b started')).toBeLessThanOrEqual(4 + 2.4 + 15 + 2.4);
      expect(timeline.filter((e) => e.endsWith('stopped'))).toEqual(['14s a stopped']);
      expect(server.spec.leaseTransitions).toBe(1);
      await b.elector.stop();
    },
  );

  it('steps down at the next renewal when someone else holds the lease', async () => {
    const { clock, server, at, replica } = world();
    const a = replica('a');
    await clock.to(3);
    server.overwrite({ holderIdentity: 'intruder' });
    await clock.to(4);
    expect(a.elector.isLeader).toBe(false);
    expect(at('a sees leader intruder')).toBe(4);
    expect(at('a stopped')).toBe(4);
    expect(server.spec.holderIdentity).toBe('intruder');
  });

  it('on stop(), keeps renewing while the work drains, releases, then reports stopped; the other takes over at once', async () => {
    const { clock, server, at, timeline, replica } = world();
    const drainSeconds = 5;
    const work = (signal: AbortSignal): Promise<void> =>
      new Promise((resolve) => {
        signal.addEventListener('abort', () => clock.setTimer(resolve, drainSeconds * 1000));
      });
    const a = replica('a', work);
    await clock.to(0);
    const b = replica('b');
    await clock.to(3);
    const stopped = a.elector.stop();
    await clock.to(7.9);
    expect(server.spec.holderIdentity).toBe('a');
    expect(microTimeMs(server.spec.renewTime)).toBe(s(6)); // still renewing while draining
    await clock.to(8);
    await stopped;
    expect(server.spec.holderIdentity).toBe('');
    expect(server.spec.leaseDurationSeconds).toBe(1);
    expect(timeline.filter((e) => e.startsWith('3s') || e.startsWith('8s'))).toEqual(['3s a aborted', '8s a stopped']);
    await clock.to(12);
    expect(at('b started')).toBeGreaterThan(8);
    expect(at('b started')).toBeLessThanOrEqual(8 + 2.4);
    expect(server.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1, leaseDurationSeconds: 15 });
    await b.elector.stop();
  });

  it('a renewal lost while the work drains on stop(): stop() still waits for the work, and releases nothing', async () => {
    const { clock, server, at, replica } = world();
    const drainSeconds = 20;
    const work = (signal: AbortSignal): Promise<void> =>
      new Promise((resolve) => {
        signal.addEventListener('abort', () => clock.setTimer(resolve, drainSeconds * 1000));
      });
    const a = replica('a', work);
    await clock.to(3); // renewed at 2 s
    a.client.mode = 'fail';
    let stoppedAt: number | undefined;
    void a.elector.stop().then(() => (stoppedAt = clock.seconds));
    await clock.to(22.9);
    expect(a.elector.isLeader).toBe(false);
    expect(stoppedAt, 'stop() returned while the leader work still ran').toBeUndefined();
    expect(at('a stopped')).toBeUndefined();
    await clock.to(24);
    expect(stoppedAt).toBe(23);
    expect(at('a stopped')).toBe(23);
    // Not released: the Lease was lost, not handed back.
    expect(server.spec).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 15 });
    expect(microTimeMs(server.spec.renewTime)).toBe(s(2));
  });

  it('after crash(), the other takes over only once the lease expires', async () => {
    const { clock, server, at, timeline, replica } = world();
    const a = replica('a');
    await clock.to(0);
    const b = replica('b');
    await clock.to(5); // last renewal at 4 s
    a.elector.crash();
    await a.run;
    expect(a.signal()?.aborted).toBe(true);
    await clock.to(18.9);
    expect(b.elector.isLeader).toBe(false);
    expect(server.spec.holderIdentity).toBe('a');
    await clock.to(30);
    expect(at('b started')).toBeGreaterThanOrEqual(19);
    expect(at('b started')).toBeLessThanOrEqual(4 + 2.4 + 15 + 2.4);
    expect(timeline.some((e) => e.endsWith('a stopped'))).toBe(false);
    expect(server.spec.leaseTransitions).toBe(1);
    await b.elector.stop();
  });

  it('stop() of a candidate returns without touching the lease', async () => {
    const { clock, server, at, replica } = world();
    const a = replica('a');
    await clock.to(0);
    const b = replica('b');
    await clock.to(3);
    const before = server.lease?.metadata?.resourceVersion;
    await b.elector.stop();
    await b.run;
    expect(at('b started')).toBeUndefined();
    expect(server.lease?.metadata?.resourceVersion).toBe(before);
    await a.elector.stop();
  });

  it('hands back a lease won by an attempt that was in flight when stop() came', async () => {
    const { clock, server, at, replica } = world();
    const a = replica('a');
    const stopped = a.elector.stop(); // the first attempt (a create) is already under way
    await clock.to(0);
    await stopped;
    expect(at('a started')).toBeUndefined();
    expect(server.spec.holderIdentity).toBe('');
    expect(server.lease?.metadata?.resourceVersion).toBe('2'); // created, then released
  });

  it('steps down and releases when the leader work fails; run() rejects with the error', async () => {
    const { clock, server, at, replica } = world();
    const a = replica('a', async (signal) => {
      await new Promise((resolve) => clock.setTimer(() => { resolve(undefined); }, 3000));
      if (!signal.aborted) throw new Error('informer died');
    });
    await clock.to(5);
    await expect(a.run).rejects.toThrow('informer died');
    expect(at('a stopped')).toBe(3);
    expect(server.spec.holderIdentity).toBe('');
  });

  it('retries after failed requests while standing', async () => {
    const { clock, replica } = world();
    const a = replica('a');
    a.client.mode = 'fail';
    await clock.to(10);
    expect(a.elector.isLeader).toBe(false);
    a.client.mode = 'ok';
    await clock.to(12.5);
    expect(a.elector.isLeader).toBe(true);
    await a.elector.stop();
  });

  it('stands once', async () => {
    const { clock, replica } = world();
    const a = replica('a');
    await clock.to(0);
    await expect(a.elector.run({ onStartedLeading: () => undefined, onStoppedLeading: () => undefined })).rejects.toThrow(/stands once/);
    await a.elector.stop();
  });
});
