/**
 * A pool of NATS clients, one per account, opened on first use and closed when idle (nats.ts opens
 * and maps the connections themselves).
 */
import { createNatsClient, type NatsClient, type NatsClientOptions, type NatsSession } from './nats.ts';

export interface NatsPoolOptions {
  /** A client unused for this long is closed (its next use reconnects). */
  readonly idleMs?: number;
  /** At most this many clients stay open; beyond it the least recently used idle one is closed. */
  readonly maxOpen?: number;
}

interface Pooled {
  readonly client: NatsClient;
  lastUsed: number;
  inUse: number;
}

/**
 * One client per key (an account), opened on first use and closed when idle: the operator works in
 * hundreds of tenant accounts, each reconcile in one or two of them, so connections come and go.
 */
export class NatsPool {
  private readonly clients = new Map<string, Pooled>();
  private readonly idleMs: number;
  private readonly maxOpen: number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(options: NatsPoolOptions = {}) {
    this.idleMs = options.idleMs ?? 30_000;
    this.maxOpen = options.maxOpen ?? 64;
    this.sweeper = setInterval(() => {
      void this.closeIdle(Date.now() - this.idleMs);
    }, Math.max(1_000, this.idleMs / 2));
    this.sweeper.unref();
  }

  /** Runs `fn` on the pooled client for `key`, creating it with `options` when there is none. */
  async run<T>(key: string, options: () => NatsClientOptions, fn: (session: NatsSession) => Promise<T>): Promise<T> {
    const pooled = this.checkout(key, options);
    try {
      return await pooled.client.run(fn);
    } finally {
      pooled.inUse--;
      pooled.lastUsed = Date.now();
    }
  }

  /** Closes the client for `key` (e.g. its account was deleted): the next use connects afresh. */
  async evict(key: string): Promise<void> {
    const pooled = this.clients.get(key);
    this.clients.delete(key);
    await pooled?.client.close();
  }

  get size(): number {
    return this.clients.size;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((p) => p.client.close()));
  }

  private checkout(key: string, options: () => NatsClientOptions): Pooled {
    let pooled = this.clients.get(key);
    if (pooled === undefined) {
      pooled = { client: createNatsClient(options()), lastUsed: Date.now(), inUse: 0 };
      this.clients.set(key, pooled);
      void this.shrink();
    }
    pooled.inUse++;
    return pooled;
  }

  private async closeIdle(before: number): Promise<void> {
    const idle = [...this.clients].filter(([, p]) => p.inUse === 0 && p.lastUsed < before);
    await Promise.all(idle.map(([key]) => this.evict(key)));
  }

  /** Keeps at most maxOpen clients: the least recently used idle ones go first. */
  private async shrink(): Promise<void> {
    const excess = this.clients.size - this.maxOpen;
    if (excess <= 0) return;
    const idle = [...this.clients].filter(([, p]) => p.inUse === 0).sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
    await Promise.all(idle.slice(0, excess).map(([key]) => this.evict(key)));
  }
}
