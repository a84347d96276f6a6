import { describe, expect, it } from 'vitest';
import { FINALIZER, OWNER_ANNOTATION, WAVE_LABEL } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { decideOwnership, metadataPatch } from './metadata.ts';
import { testTenant } from '../../test/support/fixtures.ts';

function tenant({ owner, pin, wave = 1, finalizers = [], waveLabel }: { owner?: string; pin?: string; wave?: number; finalizers?: string[]; waveLabel?: string }): EvaTenant {
  return testTenant({
    name: 't',
    finalizers,
    annotations: owner ? { [OWNER_ANNOTATION]: owner } : {},
    labels: waveLabel ? { [WAVE_LABEL]: waveLabel } : {},
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
    expect(decideOwnership(tenant(input), '2.0.0', 1).kind).toBe(expected);
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
    expect(decideOwnership(tenant({}), '2.0.0', 0).kind).toBe('notMine');
    expect(decideOwnership(tenant({ pin: '2.0.0' }), '2.0.0', 0).kind).toBe('claim');
  });
});
