/**
 * Lease arithmetic, as client-go's leaderelection does it: pure functions of a Lease's spec, an
 * identity and the time (who holds it, until when, what a claim, a renewal or a release writes), and
 * the election's timing. No I/O: tested as tables (lease-math.test.ts). What the operator's Leases are called is
 * the controller's business (src/controller/lease-names.ts).
 */
import { V1MicroTime, type V1Lease, type V1LeaseSpec } from '@kubernetes/client-node';

/** Milliseconds since the epoch of a Lease MicroTime, or undefined when absent or unparsable. */
export function microTimeMs(value: Date | string | undefined): number | undefined {
  // client-node types these fields as V1MicroTime (a Date), but its deserializer has no entry for
  // V1MicroTime and hands back the wire string unchanged, so both shapes really arrive here.
  if (value === undefined) return undefined;
  const ms = value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * When the holder's claim runs out: leaseDurationSeconds after the later of its renewTime (the
 * holder's clock) and `observedAt`, when this candidate first saw that renewal (its own clock).
 * client-go measures from the observation only, so that clock skew between replicas cannot expire
 * a live lease early; the later of both keeps that guarantee and also honours a renewTime that is
 * ahead of us. Without `observedAt` this is renewTime + leaseDuration.
 */
export function leaseExpiresAt(spec: V1LeaseSpec, observedAt = Number.NEGATIVE_INFINITY): number {
  const renewedAt = microTimeMs(spec.renewTime) ?? microTimeMs(spec.acquireTime) ?? Number.NEGATIVE_INFINITY;
  return Math.max(renewedAt, observedAt) + (spec.leaseDurationSeconds ?? 0) * 1000;
}

export type LeaseVerdict =
  | { readonly canAcquire: true; readonly why: 'unheld' | 'ours' | 'expired' }
  | { readonly canAcquire: false; readonly holder: string; readonly expiresAt: number };

/** Can `identity` take (or keep) the Lease with this spec at `now`? */
export function judgeLease(spec: V1LeaseSpec | undefined, identity: string, now: number, observedAt?: number): LeaseVerdict {
  const holder = spec?.holderIdentity ?? '';
  if (spec === undefined || holder === '') return { canAcquire: true, why: 'unheld' };
  // A replica restarted under the same identity (same pod) resumes its lease at once, as in
  // client-go: the process that held it is gone, so no two replicas act on it.
  if (holder === identity) return { canAcquire: true, why: 'ours' };
  const expiresAt = leaseExpiresAt(spec, observedAt);
  return now >= expiresAt ? { canAcquire: true, why: 'expired' } : { canAcquire: false, holder, expiresAt };
}

/** The spec with which `identity` creates, takes over or renews the Lease at `now`. */
export function claimedSpec(current: V1LeaseSpec | undefined, identity: string, now: number, leaseDurationSeconds: number): V1LeaseSpec {
  // V1MicroTime serializes with six fractional digits; a plain Date's three are rejected by the
  // API server's MicroTime parser.
  const stamp = new V1MicroTime(now);
  const renewing = current !== undefined && current.holderIdentity === identity;
  return {
    ...coordinationFields(current),
    holderIdentity: identity,
    leaseDurationSeconds,
    acquireTime: renewing ? (current.acquireTime ?? stamp) : stamp,
    renewTime: stamp,
    leaseTransitions: transitionsAfterClaim(current, renewing),
  };
}

/** Fields this elector does not manage (coordinated leader election), carried over unchanged. */
function coordinationFields(spec: V1LeaseSpec | undefined): Pick<V1LeaseSpec, 'preferredHolder' | 'strategy'> {
  return { preferredHolder: spec?.preferredHolder, strategy: spec?.strategy };
}

function transitionsAfterClaim(current: V1LeaseSpec | undefined, renewing: boolean): number {
  if (current === undefined) return 0;
  const transitions = current.leaseTransitions ?? 0;
  // Taking over from anyone else, a released (empty) holder included, is a transition (client-go).
  return renewing ? transitions : transitions + 1;
}

/** client-go's ReleaseOnCancel record: no holder, so the next candidate need not wait for expiry. */
export function releasedSpec(current: V1LeaseSpec, now: number): V1LeaseSpec {
  const stamp = new V1MicroTime(now);
  return {
    ...coordinationFields(current),
    holderIdentity: '',
    leaseDurationSeconds: 1,
    acquireTime: stamp,
    renewTime: stamp,
    leaseTransitions: current.leaseTransitions ?? 0,
  };
}

/** `lease` with another spec; metadata (resourceVersion included) is kept for the optimistic write. */
export function withSpec(lease: V1Lease, spec: V1LeaseSpec): V1Lease {
  return { apiVersion: lease.apiVersion, kind: lease.kind, metadata: lease.metadata, spec };
}

// ---------------------------------------------------------------------------------------------
// Timing.

/** Wait between candidate polls is retryPeriod plus up to this fraction, so candidates spread out. */
export const ACQUIRE_JITTER = 0.2;

export interface ElectionTiming {
  readonly leaseDurationSeconds: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** Bound on one attempt's requests, so a hung connection cannot stall the loop. */
  readonly requestTimeoutMs: number;
}

/** Validates the durations as client-go does and converts them. */
export function electionTiming(leaseDurationSeconds = 15, renewDeadlineSeconds = 10, retryPeriodSeconds = 2): ElectionTiming {
  if (!Number.isInteger(leaseDurationSeconds) || leaseDurationSeconds < 1) {
    throw new Error(`leaseDurationSeconds must be a positive integer (the Lease field is), got ${leaseDurationSeconds}`);
  }
  if (!(retryPeriodSeconds > 0)) throw new Error(`retryPeriodSeconds must be positive, got ${retryPeriodSeconds}`);
  if (!(renewDeadlineSeconds < leaseDurationSeconds)) {
    throw new Error('renewDeadlineSeconds must be less than leaseDurationSeconds: the leader must stop before its lease can be taken');
  }
  if (!(renewDeadlineSeconds > retryPeriodSeconds * (1 + ACQUIRE_JITTER))) {
    throw new Error(`renewDeadlineSeconds must exceed ${1 + ACQUIRE_JITTER} × retryPeriodSeconds, or a single slow retry loses leadership`);
  }
  return {
    leaseDurationSeconds,
    renewDeadlineMs: renewDeadlineSeconds * 1000,
    retryPeriodMs: retryPeriodSeconds * 1000,
    // Half the deadline leaves room for a second attempt after a hung one.
    requestTimeoutMs: Math.max(retryPeriodSeconds, renewDeadlineSeconds / 2) * 1000,
  };
}
