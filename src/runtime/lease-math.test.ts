import { V1MicroTime, type V1LeaseSpec } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { claimedSpec, electionTiming, judgeLease, leaseExpiresAt, microTimeMs, releasedSpec } from './lease-math.ts';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const s = (seconds: number): number => T0 + seconds * 1000;
/** A MicroTime as the API server sends it (and client-node hands it over): a string. */
const wireTime = (seconds: number): string => new V1MicroTime(s(seconds)).toISOString();

describe('judgeLease', () => {
  // renewTime as client-node really delivers it: the wire string, whatever the declared type says.
  const held = (renewedAt: number | undefined, extra: Partial<V1LeaseSpec> = {}): V1LeaseSpec =>
    Object.assign(
      { holderIdentity: 'a', leaseDurationSeconds: 15 },
      renewedAt === undefined ? {} : { renewTime: wireTime(renewedAt) as unknown as V1MicroTime },
      extra,
    );
  const cases: [string, V1LeaseSpec | undefined, number, number | undefined, boolean, string][] = [
    ['no spec', undefined, 0, undefined, true, 'unheld'],
    ['no holder', { leaseDurationSeconds: 15, renewTime: new V1MicroTime(s(0)) }, 0, undefined, true, 'unheld'],
    ['released (empty holder)', held(0, { holderIdentity: '' }), 0, undefined, true, 'unheld'],
    ['held by me', held(0, { holderIdentity: 'me' }), 1, undefined, true, 'ours'],
    ['held, renewed just now', held(0), 0, undefined, false, 'a'],
    ['held, 1 ms before expiry', held(0), 14.999, undefined, false, 'a'],
    ['held, at expiry', held(0), 15, undefined, true, 'expired'],
    ['held, long expired', held(0), 3600, undefined, true, 'expired'],
    ['renewTime as a Date', held(undefined, { renewTime: new V1MicroTime(s(0)) }), 10, undefined, false, 'a'],
    ['no renewTime: acquireTime counts', held(undefined, { acquireTime: new V1MicroTime(s(0)) }), 10, undefined, false, 'a'],
    ['no times at all', held(undefined), 0, undefined, true, 'expired'],
    ['no duration', held(0, { leaseDurationSeconds: undefined }), 0, undefined, true, 'expired'],
    ['renewTime ahead of our clock', held(20), 30, undefined, false, 'a'],
    ['stale renewTime, but observed recently (holder clock behind)', held(0), 20, 10, false, 'a'],
    ['observed long ago', held(0), 20, 1, true, 'expired'],
  ];

  it.each(cases)('%s', (_name, spec, now, observedAt, canAcquire, whyOrHolder) => {
    const verdict = judgeLease(spec, 'me', s(now), observedAt === undefined ? undefined : s(observedAt));
    expect(verdict.canAcquire).toBe(canAcquire);
    expect(verdict.canAcquire ? verdict.why : verdict.holder).toBe(whyOrHolder);
  });

  it('reports when a live lease expires', () => {
    expect(judgeLease(held(0), 'me', s(1))).toEqual({ canAcquire: false, holder: 'a', expiresAt: s(15) });
    expect(leaseExpiresAt(held(0), s(4))).toBe(s(19));
  });
});

describe('lease records', () => {
  it('creates with no transitions and microsecond times', () => {
    const spec = claimedSpec(undefined, 'a', s(1.5), 15);
    expect(spec).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 0 });
    expect(JSON.stringify(spec.renewTime)).toBe('"2030-01-01T00:00:01.500000Z"');
    expect(JSON.stringify(spec.acquireTime)).toBe('"2030-01-01T00:00:01.500000Z"');
  });

  it('keeps acquireTime and transitions on renewal', () => {
    const current: V1LeaseSpec = { holderIdentity: 'a', acquireTime: wireTime(0) as unknown as V1MicroTime, renewTime: new V1MicroTime(s(2)), leaseTransitions: 3 };
    const spec = claimedSpec(current, 'a', s(4), 15);
    expect(spec.acquireTime).toBe(current.acquireTime);
    expect(microTimeMs(spec.renewTime)).toBe(s(4));
    expect(spec.leaseTransitions).toBe(3);
  });

  it('counts a takeover, from a holder or from a released lease', () => {
    const current: V1LeaseSpec = { holderIdentity: 'a', acquireTime: new V1MicroTime(s(0)), leaseTransitions: 3, strategy: 'OldestEmulationVersion' };
    const spec = claimedSpec(current, 'b', s(20), 15);
    expect(spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 4, strategy: 'OldestEmulationVersion' });
    expect(microTimeMs(spec.acquireTime)).toBe(s(20));
    expect(claimedSpec(releasedSpec(current, s(5)), 'b', s(6), 15).leaseTransitions).toBe(4);
  });

  it('releases like client-go: no holder, 1 s duration, transitions kept', () => {
    const released = releasedSpec({ holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 2 }, s(9));
    expect(released).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1, leaseTransitions: 2 });
    expect(judgeLease(released, 'b', s(9)).canAcquire).toBe(true);
  });

  it('reads MicroTime strings and Dates', () => {
    expect(microTimeMs('2030-01-01T00:00:01.123456Z')).toBe(s(1.123));
    expect(microTimeMs(new V1MicroTime(s(2)))).toBe(s(2));
    expect(microTimeMs(undefined)).toBeUndefined();
    expect(microTimeMs('not a time')).toBeUndefined();
  });

  it('validates durations as client-go does', () => {
    expect(electionTiming()).toEqual({ leaseDurationSeconds: 15, renewDeadlineMs: 10_000, retryPeriodMs: 2000, requestTimeoutMs: 5000 });
    expect(electionTiming(3, 2, 0.5)).toMatchObject({ renewDeadlineMs: 2000, retryPeriodMs: 500, requestTimeoutMs: 1000 });
    expect(() => electionTiming(10, 10, 2)).toThrow(/less than leaseDurationSeconds/);
    expect(() => electionTiming(15, 2, 2)).toThrow(/exceed/);
    expect(() => electionTiming(1.5, 1, 0.5)).toThrow(/positive integer/);
    expect(() => electionTiming(15, 10, 0)).toThrow(/positive/);
  });
});

