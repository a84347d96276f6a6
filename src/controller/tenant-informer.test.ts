import { describe, expect, it } from 'vitest';
import { PhaseCounts } from './tenant-informer.ts';

describe('tenants by phase, kept as informer events arrive', () => {
  it('counts each tenant once, in its latest phase, and forgets deleted ones', () => {
    const counts = new PhaseCounts();
    expect(counts.set('a', 'Requested')).toBe(true);
    expect(counts.set('b', 'Requested')).toBe(true);
    expect(counts.snapshot()).toEqual({ Requested: 2 });
    expect(counts.set('a', 'Provisioning')).toBe(true);
    expect(counts.set('a', 'Active')).toBe(true);
    expect(counts.snapshot()).toEqual({ Requested: 1, Active: 1 });
    expect(counts.set('b', undefined)).toBe(true);
    expect(counts.snapshot()).toEqual({ Active: 1 });
  });

  it('an event that leaves the phase as it was (a status write within a phase) changes nothing', () => {
    const counts = new PhaseCounts();
    counts.set('a', 'Active');
    expect(counts.set('a', 'Active')).toBe(false);
    expect(counts.set('gone', undefined)).toBe(false);
    expect(counts.snapshot()).toEqual({ Active: 1 });
  });
});
