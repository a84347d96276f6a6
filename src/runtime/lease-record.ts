/**
 * The Lease as one candidate reads and writes it (client-go's resourcelock): every write carries the
 * resourceVersion that was read, so of two candidates racing, one gets 409 Conflict ('conflict').
 * It remembers the copy it last wrote (renewals and the release start from it) and when the
 * resourceVersion it last saw first appeared (expiry is judged on the local clock from then). When to
 * acquire, renew and release is the elector's to decide (leader-elector.ts).
 */
import type { V1Lease } from '@kubernetes/client-node';
import type { Clock } from './clock.ts';
import { claimedSpec, judgeLease, releasedSpec, withSpec } from './lease-math.ts';
import type { LeaseStore } from './lease-store.ts';

export type Attempt =
  | { readonly kind: 'held'; readonly renewedAt: number }
  | { readonly kind: 'busy'; readonly holder: string }
  | { readonly kind: 'conflict' }
  | { readonly kind: 'failed'; readonly error: unknown };

export interface LeaseRecordOptions {
  readonly store: LeaseStore;
  readonly clock: Clock;
  /** This candidate: the holderIdentity it writes. */
  readonly identity: string;
  readonly namespace: string;
  readonly leaseName: string;
  readonly leaseDurationSeconds: number;
  /** Told the holder of every Lease read or written ('' when released). */
  readonly onHolderSeen: (holder: string) => void;
}

export class LeaseRecord {
  readonly #options: LeaseRecordOptions;
  /** The Lease as this candidate last wrote it. */
  #written: V1Lease | undefined;
  /** The resourceVersion last seen, and when (local clock) it was first seen. */
  #observed: { readonly resourceVersion: string; readonly at: number } | undefined;

  constructor(options: LeaseRecordOptions) {
    this.#options = options;
  }

  /** Takes the Lease if it is free or expired (as judgeLease decides); creates it if there is none. */
  async tryAcquire(signal: AbortSignal): Promise<Attempt> {
    const lease = await this.#options.store.get(signal);
    if (lease === undefined) return this.#create(signal);
    this.#observe(lease);
    const verdict = judgeLease(lease.spec, this.#options.identity, this.#options.clock.now(), this.#observed?.at);
    if (!verdict.canAcquire) return { kind: 'busy', holder: verdict.holder };
    return this.#claim(lease, signal);
  }

  /** Renews the Lease this candidate holds; 'busy' once someone else holds it (or it is gone). */
  async tryRenew(signal: AbortSignal): Promise<Attempt> {
    // Fast path: write over the Lease as we last wrote it, one request; 409 means it moved on.
    if (this.#written !== undefined) {
      const renewed = await this.#claim(this.#written, signal);
      if (renewed.kind === 'held') return renewed;
    }
    const lease = await this.#options.store.get(signal);
    if (lease !== undefined) this.#observe(lease);
    // Never take it back from someone else while leading: whoever holds it may already be acting.
    if (lease?.spec?.holderIdentity !== this.#options.identity) return { kind: 'busy', holder: lease?.spec?.holderIdentity ?? '' };
    return this.#claim(lease, signal);
  }

  /** Writes the Lease released (no holder), if it is still this candidate's; false when it is not. */
  async tryRelease(signal: AbortSignal): Promise<boolean> {
    if (this.#written !== undefined && (await this.#writeRelease(this.#written, signal))) return true;
    const lease = await this.#options.store.get(signal);
    if (lease?.spec?.holderIdentity !== this.#options.identity) return false;
    return this.#writeRelease(lease, signal);
  }

  async #create(signal: AbortSignal): Promise<Attempt> {
    const now = this.#options.clock.now();
    const body: V1Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.#options.leaseName, namespace: this.#options.namespace },
      spec: claimedSpec(undefined, this.#options.identity, now, this.#options.leaseDurationSeconds),
    };
    const written = await this.#options.store.create(body, signal);
    return this.#recordClaim(written, now);
  }

  async #claim(lease: V1Lease, signal: AbortSignal): Promise<Attempt> {
    const now = this.#options.clock.now();
    const spec = claimedSpec(lease.spec, this.#options.identity, now, this.#options.leaseDurationSeconds);
    const written = await this.#options.store.replace(withSpec(lease, spec), signal);
    return this.#recordClaim(written, now);
  }

  #recordClaim(written: V1Lease | undefined, renewedAt: number): Attempt {
    if (written === undefined) return { kind: 'conflict' };
    this.#written = written;
    this.#observe(written);
    return { kind: 'held', renewedAt };
  }

  #observe(lease: V1Lease): void {
    const resourceVersion = lease.metadata?.resourceVersion ?? '';
    if (this.#observed?.resourceVersion !== resourceVersion) this.#observed = { resourceVersion, at: this.#options.clock.now() };
    this.#options.onHolderSeen(lease.spec?.holderIdentity ?? '');
  }

  async #writeRelease(lease: V1Lease, signal: AbortSignal): Promise<boolean> {
    const written = await this.#options.store.replace(withSpec(lease, releasedSpec(lease.spec ?? {}, this.#options.clock.now())), signal);
    if (written !== undefined) this.#written = written;
    return written !== undefined;
  }
}
