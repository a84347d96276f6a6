import { describe, expect, it } from 'vitest';
import { OWNER_ANNOTATION } from '../api/constants.ts';
import type { Condition, EvaTenant } from '../api/evatenant.ts';
import { REASON_GUIDE } from '../api/reason-guide.ts';
import { testTenant } from '../../test/support/fixtures.ts';
import { ageOf, formatElapsed } from './duration.ts';
import { EVENTS_SHOWN, renderStatus, statusView, type TenantEvent } from './status-view.ts';

const NOW = new Date('2026-11-28T12:00:00Z');
const ago = (seconds: number): string => new Date(NOW.getTime() - seconds * 1000).toISOString();
const condition = (type: string, status: Condition['status'], reason: string, secondsAgo: number, message = ''): Condition => ({ type, status, reason, message, lastTransitionTime: ago(secondsAgo) });

describe('formatElapsed', () => {
  it.each([
    [0, '0s'],
    [42_900, '42s'],
    [252_000, '4m12s'],
    [240_000, '4m'],
    [3 * 3600_000 + 5 * 60_000 + 9_000, '3h5m'],
    [2 * 86_400_000 + 7 * 3600_000, '2d7h'],
    [3 * 86_400_000, '3d'],
    [-5_000, '0s'],
  ])('%i ms is %s', (millis, shown) => {
    expect(formatElapsed(millis)).toBe(shown);
  });

  it('ageOf measures from an RFC 3339 time; without a readable time it is -', () => {
    expect(ageOf(ago(252), NOW)).toBe('4m12s');
    expect(ageOf(undefined, NOW)).toBe('-');
    expect(ageOf('yesterday', NOW)).toBe('-');
  });
});

function activeTenant(): EvaTenant {
  const tenant = testTenant({ code: 'ACMECO', uid: 'uid-acmeco', annotations: { [OWNER_ANNOTATION]: '1.4.0' } });
  tenant.status = {
    phase: 'Active',
    url: 'https://acmeco.tenants.example',
    conditions: [
      condition('NamespaceReady', 'True', 'NamespaceActive', 400),
      condition('Provisioned', 'True', 'TenantRecordStored', 380),
      condition('SeedLoaded', 'True', 'SeedApplied', 370),
      condition('ModulesDeployed', 'True', 'ReleasesDeployed', 300),
      condition('IngressReady', 'True', 'IngressAdmitted', 252),
      condition('Ready', 'True', 'Provisioned', 252, 'all five conditions are True'),
    ],
    modules: { 'eva-api': { chartVersion: '1.2.0', readyReplicas: 1, replicas: 1, message: 'available' } },
  };
  return tenant;
}

function stuckTenant(): EvaTenant {
  const tenant = activeTenant();
  tenant.status = {
    phase: 'Provisioning',
    conditions: [
      ...(activeTenant().status?.conditions ?? []).filter((c) => !['IngressReady', 'Ready'].includes(c.type)),
      condition('IngressReady', 'False', 'WaitingForAddress', 65, 'the Ingress has no address yet'),
      condition('Ready', 'False', 'WaitingForAddress', 65, 'IngressReady: the Ingress has no address yet'),
    ],
  };
  return tenant;
}

describe('statusView', () => {
  it('an Active tenant: phase, owner, URL, Ready first then the five conditions in saga order with their ages; no troubleshooting', () => {
    const view = statusView(activeTenant(), [], NOW);
    expect(view).toMatchObject({ name: 'acmeco', uid: 'uid-acmeco', phase: 'Active', ownerVersion: '1.4.0', url: 'https://acmeco.tenants.example' });
    expect(view.conditions.map((c) => [c.type, c.status, c.age])).toEqual([
      ['Ready', 'True', '4m12s'],
      ['NamespaceReady', 'True', '6m40s'],
      ['Provisioned', 'True', '6m20s'],
      ['SeedLoaded', 'True', '6m10s'],
      ['ModulesDeployed', 'True', '5m'],
      ['IngressReady', 'True', '4m12s'],
    ]);
    expect(view.troubleshooting).toEqual([]);
    expect(view.modules).toEqual([{ module: 'eva-api', chartVersion: '1.2.0', ready: '1/1', message: 'available' }]);
  });

  it('a stuck tenant: the reason not True gets its troubleshooting entry once (Ready repeats it), with the link to its heading', () => {
    const view = statusView(stuckTenant(), [], NOW);
    const { meaning, cause, action } = REASON_GUIDE.WaitingForAddress;
    expect(view.troubleshooting).toEqual([{ reason: 'WaitingForAddress', conditions: ['Ready', 'IngressReady'], meaning, cause, action, link: 'docs/troubleshooting.md#waitingforaddress' }]);
    const text = renderStatus(view);
    expect(text).toContain('WaitingForAddress (Ready, IngressReady): docs/troubleshooting.md#waitingforaddress');
    expect(text).toContain(`What to do:   ${REASON_GUIDE.WaitingForAddress.action}`);
    expect(text).toMatch(/IngressReady\s+False\s+WaitingForAddress\s+1m5s\s+the Ingress has no address yet/);
  });

  it('a reason this version does not know is named, not explained; a condition not written yet shows as -', () => {
    const tenant = testTenant();
    tenant.status = { conditions: [condition('NamespaceReady', 'False', 'SomethingNewer', 10)] };
    const view = statusView(tenant, [], NOW);
    expect(view.unknownReasons).toEqual(['SomethingNewer']);
    expect(view.troubleshooting).toEqual([]);
    expect(view.conditions.find((c) => c.type === 'Provisioned')).toMatchObject({ status: '-', age: '-' });
    expect(view.ownerVersion).toMatch(/^none/);
  });

  it(`keeps the newest ${String(EVENTS_SHOWN)} Events, newest first, with their age`, () => {
    const events: TenantEvent[] = Array.from({ length: 12 }, (_, i) => ({ type: 'Normal', reason: `R${String(i)}`, message: '', count: 1, lastSeen: ago(100 - i) }));
    const view = statusView(activeTenant(), events, NOW);
    expect(view.events.map((e) => e.reason)).toEqual(['R11', 'R10', 'R9', 'R8', 'R7', 'R6', 'R5', 'R4', 'R3', 'R2']);
    expect(view.events[0]?.age).toBe('1m29s');
  });
});
