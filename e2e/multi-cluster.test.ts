/**
 * Beyond one cluster (docs/multi-cluster.md): three local control planes, a hub and two members (each
 * with its own NATS and operator), joined by a real multi-cluster engine, Open Cluster Management
 * (test/tools/build-ocm.sh). Tenants are written on the hub as the engine's objects: a Placement
 * choosing a member by its labels, then the tenant's ManifestWork in the chosen member's namespace;
 * the member's work agent applies it, its operator provisions it, and the agent feeds the member's
 * status back to the hub. The hub's view of a tenant is judged by the same GitOps health checks as
 * the member's EvaTenant (kstatus, the Argo CD health check), and must give the same verdict.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, KIND } from '../src/api/constants.ts';
import type { HubTenantView, TenantManifest } from '../src/multicluster/manifest-work.ts';
import { placementName, unplacedConditions } from '../src/multicluster/placement.ts';
import { fluxAndArgo, labelled, type TenantObject } from '../test/support/health-verdicts.ts';
import { HubTenants, IN_CLUSTER_SET, isActiveOnHub, readyOf, TENANTS_NAMESPACE } from '../test/support/hub-tenants.ts';
import { eventually } from '../test/support/kubectl.ts';
import { type Member, type MemberOperator, OcmHub, type Plane, planeDown, planeUp, refusedOnPlane, startMemberOperator } from '../test/support/multi-cluster.ts';
import { capsuleCodes, runLetters } from '../test/support/random.ts';

const SETUP_MS = 600_000;
const nextCode = capsuleCodes('M');
const run = runLetters().toLowerCase();

let hub: OcmHub;
let tenants: HubTenants;
let planes: Plane[] = [];
const members: Record<'eu' | 'us', Member | undefined> = { eu: undefined, us: undefined };
const operators = new Map<Plane, MemberOperator>();

function member(region: 'eu' | 'us'): Member {
  const joined = members[region];
  if (joined === undefined) throw new Error(`member ${region} did not join`);
  return joined;
}

const tenant = (name: string): TenantManifest => ({ apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec: { capsuleCode: nextCode(), tier: 'Starter' } });

const memberTenant = (m: Member, name: string): TenantObject => JSON.parse(m.plane.kubectl(['get', 'evt', name, '-o', 'json'])) as TenantObject;

/** kstatus/Argo CD on the member's EvaTenant and on the hub's view of it, side by side. */
function verdicts(m: Member, name: string): { member: string; hub: string } {
  const view = tenants.view(name, m.cluster);
  if (view === undefined) throw new Error(`no work for ${name} on the hub`);
  const { verdicts: v } = fluxAndArgo([labelled('member', memberTenant(m, name)), labelled('hub', view.tenant as unknown as TenantObject)]);
  return { member: v['member'] ?? '?', hub: v['hub'] ?? '?' };
}

/**
 * Until the member's EvaTenant and the hub's view of it are both judged `expected` (the hub's view
 * follows the member's within the agent's status sync, so a snapshot mid-change may differ).
 */
async function judgedAlike(m: Member, name: string, expected: string): Promise<{ member: string; hub: string }> {
  let last = verdicts(m, name);
  await eventually(() => {
    last = verdicts(m, name);
    return last.member === expected && last.hub === expected;
  }, 60_000, 1_000);
  return last;
}

async function untilHub(name: string, cluster: string, check: (view: HubTenantView) => boolean, timeoutMs = 120_000): Promise<HubTenantView> {
  let view: HubTenantView | undefined;
  await eventually(() => {
    view = tenants.view(name, cluster);
    return view !== undefined && check(view);
  }, timeoutMs, 500);
  if (view === undefined || !check(view)) throw new Error(`the hub's view of ${name} on ${cluster}: ${JSON.stringify(view)}`);
  return view;
}


beforeAll(async () => {
  const started = Date.now();
  planes = [planeUp('hub', 0), planeUp('member-eu', 1), planeUp('member-us', 2)];
  const [hubPlane, eu, us] = planes as [Plane, Plane, Plane];
  hub = await OcmHub.start(hubPlane);
  members.eu = await hub.join(eu, 'member-eu', { ...IN_CLUSTER_SET, region: 'eu' });
  members.us = await hub.join(us, 'member-us', { ...IN_CLUSTER_SET, region: 'us' });
  tenants = new HubTenants(hub);
  tenants.bindClusterSet();
  // member-us gets its operator chart (CRD, operator) in the first test, after a tenant was placed there.
  operators.set(eu, await startMemberOperator(eu));
  console.info(`[multi-cluster] a hub and two members joined, member-eu's operator running, in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}, SETUP_MS);

afterAll(async () => {
  await Promise.all([...operators.values()].map(({ operator }) => operator.stop()));
  await hub.stop();
  for (const plane of planes) planeDown(plane);
}, SETUP_MS);

describe('tenants placed across member clusters by an existing engine', () => {
  const eu = `eu-${run}`;
  const us = `us-${run}`;

  it('go to the member their labels select, become Active there (once the member has the operator chart), and the hub shows what the member says', async () => {
    const started = Date.now();
    expect(await tenants.place(tenant(eu), { region: 'eu' })).toBe('member-eu');
    expect(await tenants.place(tenant(us), { region: 'us' })).toBe('member-us');
    const view = await untilHub(eu, 'member-eu', isActiveOnHub);
    console.info(`[multi-cluster] a tenant placed, Active as the hub sees it, in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    // member-us has no operator chart yet: its API server refuses the EvaTenant, and the hub says so.
    const refused = await untilHub(us, 'member-us', (v) => v.tenant.status.conditions.some((c) => c.type === 'Stalled' && c.reason === 'MemberRefusedTenant'));
    expect(refused.tenant.status.conditions.find((c) => c.type === 'Stalled')?.message).toMatch(/member-us refused the tenant: .*EvaTenant/);
    expect(fluxAndArgo([labelled('refused', refused.tenant as unknown as TenantObject)]).verdicts['refused']).toBe('Failed/Degraded');
    const installed = Date.now();
    const usPlane = member('us').plane;
    operators.set(usPlane, await startMemberOperator(usPlane));
    await untilHub(us, 'member-us', isActiveOnHub, 240_000);
    console.info(`[multi-cluster] the operator chart installed on member-us: its tenant Active on the hub ${((Date.now() - installed) / 1000).toFixed(1)} s later`);

    expect(view.cluster).toBe('member-eu');
    const onMember = memberTenant(member('eu'), eu) as { status?: { url?: string } };
    expect(view.tenant.status.url).toMatch(/^https?:\/\//);
    expect(view.tenant.status.url).toBe(onMember.status?.url);
    expect(Object.keys(view.tenant.status.modules).sort()).toEqual(['orbit-crm', 'orbit-itsm']);
    // Only where it was placed.
    expect(member('us').plane.kubectl(['get', 'evt', eu, '--ignore-not-found', '-o', 'name']).trim()).toBe('');
    expect(member('eu').plane.kubectl(['get', 'evt', us, '--ignore-not-found', '-o', 'name']).trim()).toBe('');
    expect(await judgedAlike(member('eu'), eu, 'Current/Healthy')).toEqual({ member: 'Current/Healthy', hub: 'Current/Healthy' });
  }, 300_000);

  it('whose labels match no member are placed nowhere, Stalled on the hub with the engine saying why', async () => {
    const nowhere = await tenants.decide(`mars-${run}`, { region: 'mars' });
    const conditions = unplacedConditions(nowhere);
    expect(conditions?.find((c) => c.type === 'Stalled')).toMatchObject({ status: 'True', reason: 'NoMemberMatches' });
    expect(conditions?.[0]?.message).toMatch(/placed tenant-mars-\w+ on no member: No ManagedCluster matches/);
    // The control: a region a member has is placed.
    expect(unplacedConditions(await tenants.decide(`eu2-${run}`, { region: 'eu' }))).toBeUndefined();
    for (const name of [`mars-${run}`, `eu2-${run}`]) hub.plane.kubectl(['delete', 'placement', placementName(name), '-n', TENANTS_NAMESPACE]);
  }, 120_000);

  it("shows a member's drift on the hub, judged as the member's own EvaTenant is", async () => {
    // The member's platform role suspends the tenant there: the hub wrote no such thing.
    member('eu').plane.kubectl(['patch', 'evt', eu, '--type', 'merge', '-p', JSON.stringify({ spec: { suspend: true } })]);
    const suspended = await untilHub(eu, 'member-eu', (v) => v.tenant.status.conditions.some((c) => c.type === 'Suspended' && c.status === 'True'));
    expect(suspended.tenant.metadata.generation).toBe(2);
    expect(suspended.tenant.spec.suspend).toBe(true);
    expect(await judgedAlike(member('eu'), eu, 'Current/Suspended')).toEqual({ member: 'Current/Suspended', hub: 'Current/Suspended' });
    // The control: the same view without the fed-back spec is judged otherwise, so the verdicts above
    // come from what the member reported, not from what any view of an Active tenant would get.
    const blind = { ...suspended.tenant, spec: {} } as unknown as TenantObject;
    expect(fluxAndArgo([labelled('blind', blind)]).verdicts['blind']).toBe('Current/Healthy');

    member('eu').plane.kubectl(['patch', 'evt', eu, '--type', 'merge', '-p', JSON.stringify({ spec: { suspend: false } })]);
    await untilHub(eu, 'member-eu', (v) => isActiveOnHub(v) && v.tenant.metadata.generation === 3 && v.tenant.spec.suspend === false);
    expect(await judgedAlike(member('eu'), eu, 'Current/Healthy')).toEqual({ member: 'Current/Healthy', hub: 'Current/Healthy' });
  }, 300_000);

  it("shows a member that stopped reporting: its tenants Stalled and Ready Unknown on the hub, the other member's as they are", async () => {
    const started = Date.now();
    await hub.disconnect(member('us'));
    const stale = await untilHub(us, 'member-us', (v) => readyOf(v) === 'Unknown', 120_000);
    console.info(`[multi-cluster] a member's agents stopped: its tenant shown stale on the hub after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(stale.tenant.status.conditions.find((c) => c.type === 'Stalled')).toMatchObject({ status: 'True', reason: 'MemberNotReporting' });
    // Its last report is kept (the member may still serve it), but no tool calls it Ready.
    expect(stale.tenant.status.phase).toBe('Active');
    expect(fluxAndArgo([labelled('stale', stale.tenant as unknown as TenantObject)]).verdicts['stale']).toBe('Failed/Degraded');
    // The positive control: the other member reports, its tenant is judged as before.
    expect(isActiveOnHub(await untilHub(eu, 'member-eu', isActiveOnHub))).toBe(true);
    expect(await judgedAlike(member('eu'), eu, 'Current/Healthy')).toEqual({ member: 'Current/Healthy', hub: 'Current/Healthy' });
  }, 300_000);

  it("left no write of the members' operators refused by the chart's RBAC or policy on their member", async () => {
    for (const m of [member('eu'), member('us')]) {
      const started = operators.get(m.plane);
      expect(started, m.cluster).toBeDefined();
      expect(await refusedOnPlane(m.plane, started?.auditFrom ?? 0), m.cluster).toEqual([]);
    }
  });
});
