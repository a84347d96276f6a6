import { describe, expect, it } from 'vitest';
import type { V1Lease } from '@kubernetes/client-node';
import type { EvaTenant } from '../api/evatenant.ts';
import { absentOperators, isStatusWriter, presentLeases } from './version-presence.ts';
import { SHARD_LABEL } from '../api/constants.ts';
import { testTenant } from '../../test/support/fixtures.ts';

const now = Date.parse('2026-01-01T00:10:00Z');

function lease(name: string, holder: string, renewedSecondsAgo: number, duration = 15): V1Lease {
  return { metadata: { name }, spec: { holderIdentity: holder, leaseDurationSeconds: duration, renewTime: new Date(now - renewedSecondsAgo * 1000).toISOString() as unknown as Date } };
}

function tenant(name: string, pin?: string, shard?: string): EvaTenant {
  return testTenant({ name, uid: name, spec: pin ? { operatorVersion: pin } : {}, labels: shard ? { [SHARD_LABEL]: shard } : {} });
}

const absentIn = (tenants: EvaTenant[], leases: string[]): string[] =>
  absentOperators(tenants, new Set(leases), 'eva-system').map((a) => `${a.tenant.metadata.name}:${a.reason}`);

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
    expect(absentIn([tenant('a', '1.0.0'), tenant('b', '2.0.0'), tenant('c')], ['eva-operator-1-0-0'])).toEqual(['b:OperatorVersionAbsent']);
  });

  it('reports a shard no version serves, and a pin that does not run in the tenant\'s shard', () => {
    const leases = ['eva-operator-1-0-0', 'eva-operator-1-0-0-shard-eu', 'eva-operator-2-0-0-shard-us'];
    const tenants = [
      tenant('eu', undefined, 'eu'),
      tenant('us', undefined, 'us'),
      tenant('apac', undefined, 'apac'),
      tenant('apacpinned', '1.0.0', 'apac'),
      tenant('eupinned1', '1.0.0', 'eu'),
      tenant('eupinned2', '2.0.0', 'eu'),
      tenant('default', '2.0.0'),
    ];
    expect(absentIn(tenants, leases)).toEqual([
      'apac:OperatorShardAbsent',
      'apacpinned:OperatorShardAbsent',
      'eupinned2:OperatorVersionAbsent',
      'default:OperatorVersionAbsent',
    ]);
    const [apac] = absentOperators([tenant('apac', undefined, 'apac')], new Set(leases), 'eva-system');
    expect(apac?.message).toContain('SHARD=apac');
  });

  it('names one status writer among the live operators: the lowest Lease name', () => {
    const present = new Set(['eva-operator-9-8-1', 'eva-operator-9-8-0', 'eva-operator-9-8-0-shard-eu']);
    expect(['eva-operator-9-8-0', 'eva-operator-9-8-1', 'eva-operator-9-8-0-shard-eu'].filter((own) => isStatusWriter(present, own))).toEqual(['eva-operator-9-8-0']);
  });
});
