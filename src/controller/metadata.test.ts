import { describe, expect, it } from 'vitest';
import { FINALIZER, OWNER_ANNOTATION, SHARD_LABEL, WAVE_LABEL } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { decideOwnership, metadataPatch, ownerValue } from './metadata.ts';
import { testTenant } from '../../test/support/fixtures.ts';

interface Shape {
  owner?: string;
  pin?: string;
  wave?: number;
  finalizers?: string[];
  waveLabel?: string;
  shard?: string;
}

function tenant({ owner, pin, wave = 1, finalizers = [], waveLabel, shard }: Shape): EvaTenant {
  return testTenant({
    name: 't',
    finalizers,
    annotations: owner ? { [OWNER_ANNOTATION]: owner } : {},
    labels: { ...(waveLabel ? { [WAVE_LABEL]: waveLabel } : {}), ...(shard !== undefined ? { [SHARD_LABEL]: shard } : {}) },
    spec: { wave, ...(pin ? { operatorVersion: pin } : {}) },
  });
}

describe('decideOwnership (me = 2.0.0, MAX_WAVE 1)', () => {
  it.each([
    ['unowned, unpinned, wave 1', {}, 'claim'],
    ['unowned, unpinned, wave 2 above MAX_WAVE', { wave: 2 }, 'notMine'],
    ['unowned, pinned to me (any wave)', { pin: '2.0.0', wave: 3 }, 'claim'],
    ['unowned, pinned elsewhere', { pin: '1.0.0' }, 'notMine'],
    ['owned by me', { owner: '2.0.0' }, 'mine'],
    ['owned by me, pinned to me', { owner: '2.0.0', pin: '2.0.0' }, 'mine'],
    ['owned by me, pin moved away', { owner: '2.0.0', pin: '1.0.0' }, 'release'],
    ['owned by another, unpinned', { owner: '1.0.0' }, 'notMine'],
    ['owned by another, pinned to me (it must release first)', { owner: '1.0.0', pin: '2.0.0' }, 'notMine'],
  ] as const)('%s -> %s', (_label, input, expected) => {
    expect(decideOwnership(tenant(input), { version: '2.0.0' }, 1).kind).toBe(expected);
  });
});

describe('decideOwnership with shards (me = 2.0.0 of shard eu, MAX_WAVE 1)', () => {
  const me = { version: '2.0.0', shard: 'eu' };
  it.each([
    ['unowned, in my shard', { shard: 'eu' }, 'claim'],
    ['unowned, in my shard, pinned to me', { shard: 'eu', pin: '2.0.0' }, 'claim'],
    ['unowned, in my shard, pinned elsewhere', { shard: 'eu', pin: '1.0.0' }, 'notMine'],
    ['unowned, in another shard', { shard: 'us' }, 'notMine'],
    ['unowned, no shard label (the default shard)', {}, 'notMine'],
    ['unowned, empty shard label (the default shard)', { shard: '' }, 'notMine'],
    ['owned by me', { shard: 'eu', owner: '2.0.0/eu' }, 'mine'],
    ['owned by me, relabelled to another shard', { shard: 'us', owner: '2.0.0/eu' }, 'release'],
    ['owned by me, label removed', { owner: '2.0.0/eu' }, 'release'],
    ['owned by me, pin moved away', { shard: 'eu', owner: '2.0.0/eu', pin: '1.0.0' }, 'release'],
    ['owned by my version in another shard (it must release first)', { shard: 'eu', owner: '2.0.0/us' }, 'notMine'],
    ['owned by my version of the default shard (it must release first)', { shard: 'eu', owner: '2.0.0' }, 'notMine'],
  ] as const)('%s -> %s', (_label, input, expected) => {
    expect(decideOwnership(tenant(input), me, 1).kind).toBe(expected);
  });

  it('the default shard lets go of a tenant labelled into a shard, and does not take it back', () => {
    expect(decideOwnership(tenant({ owner: '2.0.0', shard: 'eu' }), { version: '2.0.0' }, 1)).toEqual({ kind: 'release', to: 'shard eu' });
    expect(decideOwnership(tenant({ shard: 'eu' }), { version: '2.0.0' }, 1)).toMatchObject({ kind: 'notMine', reason: 'in shard eu' });
  });

  it('owner values: the version for the default shard, version/shard otherwise', () => {
    expect(ownerValue({ version: '2.0.0' })).toBe('2.0.0');
    expect(ownerValue(me)).toBe('2.0.0/eu');
  });
});

describe('metadataPatch', () => {
  it('adds the finalizer, claims and mirrors the wave in one patch', () => {
    expect(metadataPatch(tenant({ wave: 2 }), { finalizer: true, owner: '2.0.0' })).toEqual({
      finalizers: [FINALIZER],
      annotations: { [OWNER_ANNOTATION]: '2.0.0' },
      labels: { [WAVE_LABEL]: '2' },
    });
  });

  it('is empty when everything is in place (no write)', () => {
    expect(metadataPatch(tenant({ owner: '2.0.0', finalizers: [FINALIZER], waveLabel: '1' }), { finalizer: true, owner: '2.0.0' })).toBeUndefined();
  });

  it('releases with a null annotation and keeps other finalizers', () => {
    expect(metadataPatch(tenant({ owner: '2.0.0', finalizers: ['other/x', FINALIZER], waveLabel: '1' }), { finalizer: true, owner: null })).toEqual({
      annotations: { [OWNER_ANNOTATION]: null },
    });
  });
});

describe('MAX_WAVE 0', () => {
  it('claims only tenants pinned to this version', () => {
    expect(decideOwnership(tenant({}), { version: '2.0.0' }, 0).kind).toBe('notMine');
    expect(decideOwnership(tenant({ pin: '2.0.0' }), { version: '2.0.0' }, 0).kind).toBe('claim');
  });
});
