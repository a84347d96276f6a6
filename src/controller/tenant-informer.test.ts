import { describe, expect, it } from 'vitest';
import { OWNER_ANNOTATION } from '../api/constants.ts';
import { ownerVersion, TenantCounts } from './tenant-informer.ts';

describe('tenants by phase, kept as informer events arrive', () => {
  it('counts each tenant once, in its latest phase, and forgets deleted ones', () => {
    const counts = new TenantCounts();
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
    const counts = new TenantCounts();
    counts.set('a', 'Active');
    expect(counts.set('a', 'Active')).toBe(false);
    expect(counts.set('gone', undefined)).toBe(false);
    expect(counts.snapshot()).toEqual({ Active: 1 });
  });
});

describe('tenants by owning operator version', () => {
  const owned = (owner?: string) => ({ metadata: { name: 't', ...(owner === undefined ? {} : { annotations: { [OWNER_ANNOTATION]: owner } }) } });

  it("reads the version of the owner annotation, a sharded owner's too; an unowned tenant has none", () => {
    expect(ownerVersion(owned('1.4.0'))).toBe('1.4.0');
    expect(ownerVersion(owned('1.5.0/gitops'))).toBe('1.5.0');
    expect(ownerVersion(owned(''))).toBeUndefined();
    expect(ownerVersion(owned())).toBeUndefined();
  });

  it('a hand-over moves a tenant from one version to the other; one let go and not yet claimed counts nowhere', () => {
    const counts = new TenantCounts();
    counts.set('a', ownerVersion(owned('1.4.0')));
    counts.set('b', ownerVersion(owned('1.4.0/gitops')));
    expect(counts.snapshot()).toEqual({ '1.4.0': 2 });
    counts.set('a', ownerVersion(owned()));
    expect(counts.snapshot()).toEqual({ '1.4.0': 1 });
    counts.set('a', ownerVersion(owned('1.5.0')));
    expect(counts.snapshot()).toEqual({ '1.4.0': 1, '1.5.0': 1 });
  });
});
