import { describe, expect, it } from 'vitest';
import type { V1Lease } from '@kubernetes/client-node';
import type { EvaTenant } from '../api/evatenant.ts';
import { pinnedToAbsent, presentLeases } from './version-presence.ts';
import { testTenant } from '../../test/support/fixtures.ts';

const now = Date.parse('2026-01-01T00:10:00Z');

function lease(name: string, holder: string, renewedSecondsAgo: number, duration = 15): V1Lease {
  return { metadata: { name }, spec: { holderIdentity: holder, leaseDurationSeconds: duration, renewTime: new Date(now - renewedSecondsAgo * 1000).toISOString() as unknown as Date } };
}

function tenant(name: string, pin?: string): EvaTenant {
  return testTenant({ name, uid: name, spec: pin ? { operatorVersion: pin } : {} });
}

describe('version presence', () => {
  it('counts only live, held operator leases', () => {
    const present = presentLeases([
      lease('eva-operator-1-0-0', 'pod-a', 3),
      lease('eva-operator-2-0-0', 'pod-b', 60),
      lease('eva-operator-3-0-0', '', 1),
      lease('kube-scheduler', 'x', 1),
    ], now);
    expect([...present]).toEqual(['eva-operator-1-0-0']);
  });

  it('reports pinned tenants whose version has no live lease, and never unpinned ones', () => {
    const present = new Set(['eva-operator-1-0-0']);
    const absent = pinnedToAbsent([tenant('a', '1.0.0'), tenant('b', '2.0.0'), tenant('c')], present);
    expect(absent.map((t) => t.metadata.name)).toEqual(['b']);
  });
});
