import { describe, expect, it } from 'vitest';
import { API_VERSION, KIND, OWNER_ANNOTATION } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { ROLLOUT_ANNOTATIONS } from '../api/evarollout.ts';
import { fleetTenant, movePatch, returnPatch } from './tenants.ts';

function tenant(change: { annotations?: Record<string, string>; pin?: string; ready?: 'True' | 'False'; observed?: number } = {}): EvaTenant {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: 'acme', generation: 3, resourceVersion: '42', annotations: { [OWNER_ANNOTATION]: '1.4.0', ...change.annotations } },
    spec: { capsuleCode: 'ACMEAA', tier: 'Starter', lifecycle: 'Active', wave: 2, ...(change.pin === undefined ? {} : { operatorVersion: change.pin }) },
    status: {
      observedGeneration: change.observed ?? 3,
      conditions: [{ type: 'Ready', status: change.ready ?? 'True', reason: 'Succeeded', message: '', lastTransitionTime: '2030-01-01T00:00:00Z' }],
    },
  };
}

describe('a tenant as a rollout sees it', () => {
  it('is Ready only with its observedGeneration current', () => {
    expect(fleetTenant(tenant())).toMatchObject({ name: 'acme', wave: 2, owner: '1.4.0', pinnedTo: undefined, ready: true, suspended: false, moved: undefined });
    expect(fleetTenant(tenant({ observed: 2 })).ready).toBe(false);
    expect(fleetTenant(tenant({ ready: 'False' })).ready).toBe(false);
  });

  it("reads the owner's version from a sharded operator's annotation (version/shard)", () => {
    const sharded = tenant({ annotations: { [OWNER_ANNOTATION]: '1.4.0/eu' } });
    expect(fleetTenant(sharded).owner).toBe('1.4.0');
    expect(movePatch(sharded, 'r', '1.5.0', { wave: 2, batch: 1 }).metadata.annotations[ROLLOUT_ANNOTATIONS.from]).toBe('1.4.0');
  });

  it('reads a move only when the whole record is there and well formed', () => {
    const record = { [ROLLOUT_ANNOTATIONS.rollout]: 'r', [ROLLOUT_ANNOTATIONS.wave]: '2', [ROLLOUT_ANNOTATIONS.batch]: '7', [ROLLOUT_ANNOTATIONS.from]: '1.4.0' };
    expect(fleetTenant(tenant({ annotations: record })).moved).toEqual({ rollout: 'r', wave: 2, batch: 7, from: '1.4.0' });
    expect(fleetTenant(tenant({ annotations: { ...record, [ROLLOUT_ANNOTATIONS.batch]: '0x7' } })).moved).toBeUndefined();
    expect(fleetTenant(tenant({ annotations: { ...record, [ROLLOUT_ANNOTATIONS.from]: '' } })).moved).toBeUndefined();
  });

  it('moves with one patch guarded by the resourceVersion read, recording the version it leaves', () => {
    expect(movePatch(tenant(), 'r', '1.5.0', { wave: 2, batch: 3 })).toEqual({
      metadata: {
        resourceVersion: '42',
        annotations: { [ROLLOUT_ANNOTATIONS.rollout]: 'r', [ROLLOUT_ANNOTATIONS.wave]: '2', [ROLLOUT_ANNOTATIONS.batch]: '3', [ROLLOUT_ANNOTATIONS.from]: '1.4.0' },
      },
      spec: { operatorVersion: '1.5.0' },
    });
    // A pin wins over the owner: it is what the tenant returns to.
    expect(movePatch(tenant({ pin: '1.3.9' }), 'r', '1.5.0', { wave: 2, batch: 3 }).metadata.annotations[ROLLOUT_ANNOTATIONS.from]).toBe('1.3.9');
    expect(returnPatch(tenant({ pin: '1.5.0' }), '1.4.0')).toEqual({ metadata: { resourceVersion: '42' }, spec: { operatorVersion: '1.4.0' } });
  });
});
