import { describe, expect, it } from 'vitest';
import { isLeaseOfVersion, leaseNameForVersion } from './lease-names.ts';

describe('leaseNameForVersion', () => {
  it('names one lease per operator version', () => {
    expect(leaseNameForVersion('1.4.0')).toBe('eva-operator-1-4-0');
    expect(leaseNameForVersion('v2.0.0-RC.1+build.7')).toBe('eva-operator-v2-0-0-rc-1-build-7');
    expect(() => leaseNameForVersion('...')).toThrow(/cannot derive/);
  });

  it('and one per operator version and shard', () => {
    expect(leaseNameForVersion('1.4.0', 'eu-1')).toBe('eva-operator-1-4-0-shard-eu-1');
    expect(leaseNameForVersion('1.4.0', 'EU_1.b')).toBe('eva-operator-1-4-0-shard-eu-1-b');
  });
});

describe('isLeaseOfVersion', () => {
  it("knows a version's Leases, sharded or not, and no other version's", () => {
    expect(isLeaseOfVersion('eva-operator-1-4-0', '1.4.0')).toBe(true);
    expect(isLeaseOfVersion('eva-operator-1-4-0-shard-eu-1', '1.4.0')).toBe(true);
    expect(isLeaseOfVersion('eva-operator-1-4-0-1', '1.4.0')).toBe(false);
    expect(isLeaseOfVersion('eva-operator-1-4-1', '1.4.0')).toBe(false);
    expect(isLeaseOfVersion('eva-rollouts', '1.4.0')).toBe(false);
  });
});
