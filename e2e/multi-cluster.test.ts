/**
 * Beyond one cluster (docs/multi-cluster.md): a hub (a local control plane) and two members, each a real
 * node with its own NATS and the operator chart installed by helm as users install it (its pod runs
 * the image this checkout built), joined by a real multi-cluster engine, Open Cluster Management
 * (test/tools/build-ocm.sh). Tenants are written on the hub as the engine's objects: a Placement
 * choosing a member by its labels, then the tenant's ManifestWork in the chosen member's namespace;
 * the member's work agent applies it, its operator provisions it, and the agent feeds the member's
 * status back to the hub. The hub's view of a tenant is judged by the same GitOps health checks as
 * the member's EvaTenant (kstatus, the Argo CD health check), and must give the same verdict.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, KIND } from '../src/api/constants.ts';
import { SUMMARY_TYPES } from '../src/status/summarize.ts';
import { type HubTenantView, type ManifestWork, TENANT_WORK_LABEL, type TenantManifest, tenantWork, type WorkExecutor, workName } from '../src/multicluster/manifest-work.ts';
import { placementName, tenantPlacement, unplacedConditions } from '../src/multicluster/placement.ts';
import { fluxAndArgo, labelled, type TenantObject } from '../test/support/health-verdicts.ts';
import { ARGO_HEALTH } from '../test/support/health-tools.ts';
import { binDir, repoRoot } from '../test/support/tools.ts';
import { boundServiceAccount, CLUSTER_SET, type HubControllerProcess, HubTenants, IN_CLUSTER_SET, installHubChart, isActiveOnHub, moveOf, readyOf, spawnHubController, startHubController, TENANTS_NAMESPACE } from '../test/support/hub-tenants.ts';
import { figures as moveFigures, type MoveProgress } from '../src/multicluster/move.ts';
import { connectAsModule, type Credentials, moduleCredentials, publishAsModule, readAsModule } from '../test/support/nats.ts';
import { testAccounts } from '../test/support/fixtures.ts';
import { dataBucket } from '../src/tenancy/names.ts';
import { SUITE_OPERATOR } from '../test/support/operator-identity.ts';
import { eventually } from '../test/support/kubectl.ts';
import { type Kubectl, type Member, MEMBER_EXECUTOR, memberDown, MemberOperator, type MemberPlane, memberUp, OcmHub, onPlane, peerMembers, type Plane, planeDown, planeUp, refusedOnPlane } from '../test/support/multi-cluster.ts';
import { runScript } from '../test/support/real-node.ts';
import { capsuleCodes, runLetters } from '../test/support/random.ts';

const SETUP_MS = 600_000;
const nextCode = capsuleCodes('M');
const run = runLetters().toLowerCase();

let hub: OcmHub;
let tenants: HubTenants;
let hubPlane: Plane | undefined;
const memberPlanes: MemberPlane[] = [];
const members: Record<'eu' | 'us', Member | undefined> = { eu: undefined, us: undefined };
const operators = new Map<Plane, MemberOperator>();
const times: Record<string, number> = {};
let controller: HubControllerProcess | undefined;

function member(region: 'eu' | 'us'): Member {
  const joined = members[region];
  if (joined === undefined) throw new Error(`member ${region} did not join`);
  return joined;
}

const tenant = (name: string): TenantManifest => ({ apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec: { capsuleCode: nextCode(), tier: 'Starter' } });

const memberTenant = (m: Member, name: string): TenantObject => JSON.parse(m.plane.kubectl(['get', 'evt', name, '-o', 'json'])) as TenantObject;

/** The Argo CD health check for ManifestWorks as docs/multi-cluster.md installs it (installedWorkHealthCheck). */
let workHealthLua = '';

/**
 * docs/multi-cluster.md's argocd-cm command, run as written on the hub (into an `argocd` namespace of
 * the test's own there), and the script read back from the ConfigMap to a file: what Argo CD would run.
 */
function installedWorkHealthCheck(plane: Plane): string {
  const page = readFileSync(join(repoRoot, 'docs/multi-cluster.md'), 'utf8');
  const block = [...page.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1] ?? '').find((b) => b.trim().startsWith('kubectl -n argocd patch configmap argocd-cm'));
  if (block === undefined) throw new Error('docs/multi-cluster.md has no argocd-cm block');
  plane.kubectl(['create', 'namespace', 'argocd']);
  plane.kubectl(['create', 'configmap', 'argocd-cm', '-n', 'argocd']);
  const env = { ...process.env, KUBECONFIG: plane.env.KUBECONFIG, PATH: `${binDir()}:${process.env['PATH'] ?? ''}` };
  execFileSync('bash', ['-euo', 'pipefail', '-c', block], { cwd: repoRoot, env, stdio: 'inherit' });
  const data = JSON.parse(plane.kubectl(['get', 'configmap', 'argocd-cm', '-n', 'argocd', '-o', 'jsonpath={.data}'])) as Record<string, string>;
  const script = data['resource.customizations.health.work.open-cluster-management.io_ManifestWork'];
  expect(script).toBe(readFileSync(ARGO_HEALTH.ManifestWork, 'utf8'));
  expect(data['resource.customizations.health.cluster.open-cluster-management.io_Placement']).toBe(script);
  const file = join(mkdtempSync(join(plane.dir, 'argocd-')), 'health.lua');
  writeFileSync(file, script ?? '');
  return file;
}

/** What GitOps tools say of the tenant's work on the hub, as the hub serves it (the hub controller's summary on it). */
function workVerdict(name: string, cluster: string): string {
  const work = tenants.work(name, cluster);
  if (work === undefined) throw new Error(`no work for ${name} on the hub`);
  return fluxAndArgo([labelled('work', work as unknown as TenantObject)], workHealthLua).verdicts['work'] ?? '?';
}

/**
 * kstatus/Argo CD on the member's EvaTenant, on the hub's view of it, and on its work on the hub,
 * side by side.
 */
function verdicts(m: Member, name: string): { member: string; hub: string; work: string } {
  const view = tenants.view(name, m.cluster);
  if (view === undefined) throw new Error(`no work for ${name} on the hub`);
  const { verdicts: v } = fluxAndArgo([labelled('member', memberTenant(m, name)), labelled('hub', view.tenant as unknown as TenantObject)]);
  return { member: v['member'] ?? '?', hub: v['hub'] ?? '?', work: workVerdict(name, m.cluster) };
}

const alike = (verdict: string): { member: string; hub: string; work: string } => ({ member: verdict, hub: verdict, work: verdict });

/**
 * Until the member's EvaTenant, the hub's view of it and its work are all judged `expected` (the hub
 * follows the member within the agent's status sync and the hub controller's pass, so a snapshot
 * mid-change may differ).
 */
async function judgedAlike(m: Member, name: string, expected: string): Promise<{ member: string; hub: string; work: string }> {
  let last = verdicts(m, name);
  await eventually(() => {
    last = verdicts(m, name);
    return last.member === expected && last.hub === expected && last.work === expected;
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


/** The member's operator the chart installed there. */
function operatorOf(plane: Plane): MemberOperator {
  const installed = operators.get(plane);
  if (installed === undefined) throw new Error(`no operator chart on ${plane.name}`);
  return installed;
}

beforeAll(async () => {
  const started = Date.now();
  times['image build'] = await runScript('scripts/build-image.sh', [], 1_500_000);
  hubPlane = planeUp('hub', 0);
  const eu = await memberUp('member-eu', 1, times);
  memberPlanes.push(eu);
  const us = await memberUp('member-us', 2);
  memberPlanes.push(us);
  await peerMembers(memberPlanes);
  hub = await OcmHub.start(hubPlane);
  members.eu = await hub.join(eu, 'member-eu', { ...IN_CLUSTER_SET, region: 'eu' });
  members.us = await hub.join(us, 'member-us', { ...IN_CLUSTER_SET, region: 'us' });
  tenants = await HubTenants.setUp(hub);
  // The hub chart's controller, moves on: the summary on every tenant work from the first one.
  controller = await startHubController(hub, [member('eu'), member('us')]);
  workHealthLua = installedWorkHealthCheck(hubPlane);
  // member-us gets its operator chart (CRD, operator) in the first test, after a tenant was placed there.
  operators.set(eu, await MemberOperator.install(eu, times));
  console.info(`[multi-cluster] a hub and two members (real nodes) joined, member-eu's operator chart installed and Ready, in ${((Date.now() - started) / 1000).toFixed(1)} s; stages (s): ${JSON.stringify(times)}`);
}, SETUP_MS);

afterAll(async () => {
  try {
    await controller?.stop();
    // Unset when the setup failed before the hub started.
    await (hub as OcmHub | undefined)?.stop();
  } finally {
    if (hubPlane !== undefined) planeDown(hubPlane);
    for (const plane of memberPlanes) await memberDown(plane);
  }
}, SETUP_MS);

/** The operator's view of a member's NATS (its system user and operator signing key), to look for accounts there. */
const natsOf = (plane: Plane): ReturnType<typeof testAccounts> =>
  testAccounts({ url: plane.env.NATS_URL, auth: { dir: '', systemCredsFile: plane.env.NATS_SYSTEM_CREDS_FILE, operatorSigningKeyFile: plane.env.NATS_OPERATOR_SIGNING_KEY_FILE } });

/** '' when `write` is admitted, else what the API server said. */
function refusalOf(write: () => string): string {
  try {
    write();
    return '';
  } catch (error) {
    return String((error as { stderr?: unknown }).stderr ?? error);
  }
}

/**
 * The tenant's module credentials on a member (its eva-nats Secret there, read as `plane`'s admin, so
 * under onPlane), and that member's NATS where the host reaches it: the Secret names the node address,
 * which answers inside the node only.
 */
const moduleCredentialsOn = (plane: Plane, code: string): Credentials => ({ ...moduleCredentials(code), url: plane.env.NATS_URL });

/** A server-side dry run of `work` as `kubectl`'s identity: '' when admitted, else the refusal. */
const dryRun = (kubectl: Kubectl, work: unknown): string => refusalOf(() => kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], JSON.stringify(work)));

/** A server-side dry run of kubectl `args` as the portal: '' when admitted, else the refusal. */
const asPortal = (args: string[], input?: string): string => refusalOf(() => tenants.portal([...args, '--dry-run=server'], input));

/** `work` with its EvaTenant changed by `change`. */
function withTenant(work: ManifestWork, change: (t: TenantManifest) => TenantManifest): ManifestWork {
  return { ...work, spec: { ...work.spec, workload: { manifests: work.spec.workload.manifests.map(change) } } };
}

const annotated = (key: string, value: string) => (t: TenantManifest): TenantManifest => ({ ...t, metadata: { ...t.metadata, annotations: { ...t.metadata.annotations, [key]: value } } });

/** The Applied condition of a work's first manifest on its member, as the engine reports it on the hub. */
function manifestApplied(name: string, cluster: string): { status?: string; message?: string } {
  const json = hub.plane.kubectl(['get', 'manifestwork', name, '-n', cluster, '-o', 'jsonpath={.status.resourceStatus.manifests[0].conditions[?(@.type=="Applied")]}']);
  return json.trim() === '' ? {} : (JSON.parse(json) as { status?: string; message?: string });
}

describe('who may write tenant works on the hub (the hub chart, and the members\' executor)', () => {
  const RESTORE = 'eva.aidonow.com/restore-from-uid';
  const work = tenantWork(tenant(`probe-${run}`), 'member-eu', MEMBER_EXECUTOR);
  const bad: [string, string, unknown][] = [
    ['a platform control (restore another tenant\'s data)', RESTORE, withTenant(work, annotated(RESTORE, '4f9a6c1e-0000-4000-8000-000000000001'))],
    ['spec.suspend', 'spec.suspend', withTenant(work, (t) => ({ ...t, spec: { ...t.spec, suspend: true } }))],
    ['no executor: the agent\'s own rights', 'spec.executor', { ...work, spec: { ...work.spec, executor: undefined } }],
    ['another executor', 'spec.executor', { ...work, spec: { ...work.spec, executor: { subject: { type: 'ServiceAccount', serviceAccount: { namespace: 'kube-system', name: 'clusterrole-aggregation-controller' } } } } }],
    ['a second object: cluster-admin for the portal', 'exactly one EvaTenant', { ...work, spec: { ...work.spec, workload: { manifests: [...work.spec.workload.manifests, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `portal-admin-${run}` }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' }, subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:authenticated' }] }] } } }],
    ['a forced apply: the member\'s own fields taken', 'unforced server-side apply', { ...work, spec: { ...work.spec, manifestConfigs: work.spec.manifestConfigs.map((c) => ({ ...c, updateStrategy: { type: 'ServerSideApply', serverSideApply: { ...c.updateStrategy.serverSideApply, force: true } } })) } }],
  ];

  it.each(bad)("refuses the portal a work with %s, naming it; the platform role's is admitted (the control)", (_what, named, badWork) => {
    const refused = dryRun(tenants.portal, badWork);
    expect(refused).toContain(named);
    expect(refused).toContain('eva-hub-platform-admin');
    expect(dryRun(hub.plane.kubectl, badWork)).toBe('');
  });

  it('admits the portal\'s tenant work as the portal writes it (one EvaTenant, the executor, unforced)', () => {
    expect(dryRun(tenants.portal, work)).toBe('');
  });

  it("keeps the platform's Placements from the portal (its own, labelled as a tenant's, it writes); the platform writes both (the control)", () => {
    const platforms = { apiVersion: 'cluster.open-cluster-management.io/v1beta1', kind: 'Placement', metadata: { name: `addons-${run}`, namespace: TENANTS_NAMESPACE }, spec: { clusterSets: ['eva-members'] } };
    hub.plane.kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(platforms));
    expect(asPortal(['delete', 'placement', platforms.metadata.name, '-n', TENANTS_NAMESPACE])).toContain('not a tenant placement');
    expect(asPortal(['apply', '--server-side', '-f', '-'], JSON.stringify({ ...platforms, spec: { ...platforms.spec, numberOfClusters: 0 } }))).toContain('not a tenant placement');
    const tenantsOwn = { ...platforms, metadata: { ...platforms.metadata, name: `tenant-probe-${run}`, labels: { 'eva.aidonow.com/tenant': `probe-${run}` } } };
    expect(asPortal(['apply', '--server-side', '-f', '-'], JSON.stringify(tenantsOwn))).toBe('');
    expect(refusalOf(() => hub.plane.kubectl(['delete', 'placement', platforms.metadata.name, '-n', TENANTS_NAMESPACE]))).toBe('');
  });

  it("judges the portal role alone: another writer of works (as the engine's add-on manager is) is not refused", async () => {
    const writer = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `works-writer-${run}` }, rules: [{ apiGroups: ['work.open-cluster-management.io'], resources: ['manifestworks'], verbs: ['get', 'create', 'update', 'patch', 'delete'] }] };
    hub.plane.kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(writer));
    const engine = await boundServiceAccount(hub.plane, { namespace: TENANTS_NAMESPACE, name: `engine-${run}` }, writer.metadata.name);
    const [, , noExecutor, , secondObject] = bad.map(([, , w]) => w);
    for (const other of [noExecutor, secondObject]) {
      expect(dryRun(engine, other)).toBe('');
      expect(dryRun(tenants.portal, other)).toContain('eva-hub-platform-admin');
    }
  });

  it('without the hub\'s policy, the portal\'s work sets a platform control on a member past the member\'s own policy: the threat the policy stops', async () => {
    const name = `threat-${run}`;
    const uid = '4f9a6c1e-0000-4000-8000-000000000002';
    const threat = withTenant(tenantWork(tenant(name), 'member-eu', MEMBER_EXECUTOR), annotated(RESTORE, uid));
    const eu = member('eu').plane;
    // On the member, the portal role (the executor) may not set it: the member's policy refuses it.
    const asExecutor = ['--as', `system:serviceaccount:${MEMBER_EXECUTOR.namespace}:${MEMBER_EXECUTOR.name}`];
    expect(refusalOf(() => eu.kubectl([...asExecutor, 'apply', '--server-side', '--dry-run=server', '-f', '-'], JSON.stringify(threat.spec.workload.manifests[0])))).toContain(RESTORE);
    hub.plane.kubectl(['delete', 'validatingadmissionpolicybinding', 'eva-hub-tenant-works']);
    try {
      expect(await eventually(() => dryRun(tenants.portal, threat) === '', 30_000)).toBe(true);
      tenants.portal(['apply', '--server-side', '-f', '-'], JSON.stringify(threat));
      const annotation = (): string => eu.kubectl(['get', 'evt', name, '--ignore-not-found', '-o', `jsonpath={.metadata.annotations.eva\\.aidonow\\.com/restore-from-uid}`]);
      expect(await eventually(() => annotation() === uid, 60_000)).toBe(true);
    } finally {
      tenants.portal(['delete', 'manifestwork', workName(name), '-n', 'member-eu', '--ignore-not-found', '--wait=false']);
      installHubChart(hub.plane);
    }
    expect(await eventually(() => dryRun(tenants.portal, threat).includes(RESTORE), 30_000)).toBe(true);
  }, 120_000);

  it('applies on a member only what the executor may write there; the same work without an executor is written with the agent\'s rights (the control); the platform\'s works are not the portal\'s to change or delete', async () => {
    const planted = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `planted-${run}`, namespace: 'kube-system' }, data: { by: 'a work' } };
    const plantingWork = (name: string, executor?: WorkExecutor) => ({
      apiVersion: 'work.open-cluster-management.io/v1',
      kind: 'ManifestWork',
      metadata: { name, namespace: 'member-eu' },
      spec: { ...(executor === undefined ? {} : { executor: { subject: { type: 'ServiceAccount', serviceAccount: executor } } }), workload: { manifests: [planted] } },
    });
    const eu = member('eu').plane;
    const present = (): boolean => eu.kubectl(['get', 'configmap', planted.metadata.name, '-n', 'kube-system', '--ignore-not-found', '-o', 'name']).trim() !== '';
    // The platform role writes both (the hub's policy does not judge it): the member's RBAC decides.
    hub.plane.kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(plantingWork(`planted-executor-${run}`, MEMBER_EXECUTOR)));
    const refused = await eventually(() => manifestApplied(`planted-executor-${run}`, 'member-eu').status === 'False', 60_000);
    expect(refused, hub.plane.kubectl(['get', 'manifestwork', `planted-executor-${run}`, '-n', 'member-eu', '-o', 'jsonpath={.status}'])).toBe(true);
    expect(manifestApplied(`planted-executor-${run}`, 'member-eu').message).toMatch(/not allowed/);
    expect(present()).toBe(false);
    hub.plane.kubectl(['delete', 'manifestwork', `planted-executor-${run}`, '-n', 'member-eu']);
    hub.plane.kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(plantingWork(`planted-agent-${run}`)));
    expect(await eventually(present, 60_000)).toBe(true);
    // A work of the platform's is not the portal's to delete or rewrite (the agent would remove from the member what it no longer carries).
    expect(asPortal(['delete', 'manifestwork', `planted-agent-${run}`, '-n', 'member-eu'])).toContain('not a tenant work');
    const takenOver = { ...work, metadata: { name: `planted-agent-${run}`, namespace: 'member-eu' } };
    expect(dryRun(tenants.portal, takenOver)).toContain('not a tenant work');
    // The control: the portal deletes a tenant work; the platform deletes its own.
    tenants.portal(['apply', '--server-side', '-f', '-'], JSON.stringify(work));
    expect(asPortal(['delete', 'manifestwork', work.metadata.name, '-n', 'member-eu'])).toBe('');
    tenants.portal(['delete', 'manifestwork', work.metadata.name, '-n', 'member-eu', '--wait=false']);
    hub.plane.kubectl(['delete', 'manifestwork', `planted-agent-${run}`, '-n', 'member-eu']);
    expect(await eventually(() => !present(), 60_000)).toBe(true);
  }, 180_000);
});

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
    expect(refused.tenant.status.conditions.find((c) => c.type === 'Stalled')?.message).toMatch(/member-us refused the tenant: .*(EvaTenant|evatenants)/);
    expect(fluxAndArgo([labelled('refused', refused.tenant as unknown as TenantObject)]).verdicts['refused']).toBe('Failed/Degraded');
    expect(await eventually(() => workVerdict(us, 'member-us') === 'Failed/Degraded', 30_000, 500)).toBe(true);
    const installed = Date.now();
    const usPlane = memberPlanes[1] as MemberPlane;
    operators.set(usPlane, await MemberOperator.install(usPlane));
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
    expect(await judgedAlike(member('eu'), eu, 'Current/Healthy')).toEqual(alike('Current/Healthy'));
  }, 300_000);

  it('whose labels match no member are placed nowhere, Stalled on the hub with the engine saying why', async () => {
    const nowhere = await tenants.decide(`mars-${run}`, { region: 'mars' });
    const conditions = unplacedConditions(nowhere);
    expect(conditions?.find((c) => c.type === 'Stalled')).toMatchObject({ status: 'True', reason: 'NoMemberMatches' });
    expect(conditions?.[0]?.message).toMatch(/placed tenant-mars-\w+ on no member: No ManagedCluster matches/);
    // What a GitOps tool reads on the hub, the Placement itself: the hub controller's Stalled on it.
    const judged = (name: string): string => fluxAndArgo([labelled('placement', JSON.parse(hub.plane.kubectl(['get', 'placement', placementName(name), '-n', TENANTS_NAMESPACE, '-o', 'json'])) as TenantObject)], workHealthLua).verdicts['placement'] ?? '?';
    expect(await eventually(() => judged(`mars-${run}`) === 'Failed/Degraded', 30_000, 500)).toBe(true);
    // The control: a region a member has is placed, and judged so.
    expect(unplacedConditions(await tenants.decide(`eu2-${run}`, { region: 'eu' }))).toBeUndefined();
    expect(judged(`eu2-${run}`)).toBe('Current/Healthy');
    for (const name of [`mars-${run}`, `eu2-${run}`]) hub.plane.kubectl(['delete', 'placement', placementName(name), '-n', TENANTS_NAMESPACE]);
  }, 120_000);

  it('keep a cordoned member (a NoSelectIfNew taint) from new tenants, and its tenants where they are', async () => {
    const cordon = (taints: object[]): string => hub.plane.kubectl(['patch', 'managedcluster', 'member-eu', '--type', 'merge', '-p', JSON.stringify({ spec: { taints } })]);
    cordon([{ key: 'eva.aidonow.com/maintenance', effect: 'NoSelectIfNew' }]);
    try {
      const conditions = unplacedConditions(await tenants.decide(`cordoned-${run}`, { region: 'eu' }));
      expect(conditions?.find((c) => c.type === 'Stalled')).toMatchObject({ status: 'True', reason: 'NoMemberMatches' });
      expect(conditions?.[0]?.message).toMatch(/placed tenant-cordoned-\w+ on no member/);
      // Decided before the cordon: still member-eu, its tenant Active there.
      const decided = hub.plane.kubectl(['get', 'placementdecisions', '-n', TENANTS_NAMESPACE, '-l', `cluster.open-cluster-management.io/placement=${placementName(eu)}`, '-o', 'jsonpath={.items[*].status.decisions[*].clusterName}']);
      expect(decided).toBe('member-eu');
      expect(isActiveOnHub(await untilHub(eu, 'member-eu', isActiveOnHub))).toBe(true);
    } finally {
      cordon([]);
    }
    // The control: uncordoned, the same labels place a new tenant there.
    expect(unplacedConditions(await tenants.decide(`uncordoned-${run}`, { region: 'eu' }))).toBeUndefined();
    for (const name of [`cordoned-${run}`, `uncordoned-${run}`]) hub.plane.kubectl(['delete', 'placement', placementName(name), '-n', TENANTS_NAMESPACE]);
  }, 120_000);

  it("shows a member's drift on the hub, judged as the member's own EvaTenant is", async () => {
    // The member's platform role suspends the tenant there: the hub wrote no such thing.
    member('eu').plane.kubectl(['patch', 'evt', eu, '--type', 'merge', '-p', JSON.stringify({ spec: { suspend: true } })]);
    const suspended = await untilHub(eu, 'member-eu', (v) => v.tenant.status.conditions.some((c) => c.type === 'Suspended' && c.status === 'True'));
    expect(suspended.tenant.metadata.generation).toBe(2);
    expect(suspended.tenant.spec.suspend).toBe(true);
    expect(await judgedAlike(member('eu'), eu, 'Current/Suspended')).toEqual(alike('Current/Suspended'));
    // The control: the same view without the fed-back spec is judged otherwise, so the verdicts above
    // come from what the member reported, not from what any view of an Active tenant would get.
    const blind = { ...suspended.tenant, spec: {} } as unknown as TenantObject;
    expect(fluxAndArgo([labelled('blind', blind)]).verdicts['blind']).toBe('Current/Healthy');

    member('eu').plane.kubectl(['patch', 'evt', eu, '--type', 'merge', '-p', JSON.stringify({ spec: { suspend: false } })]);
    await untilHub(eu, 'member-eu', (v) => isActiveOnHub(v) && v.tenant.metadata.generation === 3 && v.tenant.spec.suspend === false);
    expect(await judgedAlike(member('eu'), eu, 'Current/Healthy')).toEqual(alike('Current/Healthy'));
  }, 300_000);

  /**
   * Moves `name` (Active on member-eu, `messages` published by its modules and a value in its bucket)
   * to member-us by changing its placement, as the platform does; `during` runs while it moves. Then
   * every message and the value are read on member-us with the modules' credentials there, and
   * member-eu holds nothing of it.
   */
  async function movedWithData(name: string, messages: number, during: (code: string) => Promise<void> = () => Promise.resolve()): Promise<void> {
    const manifest = tenant(name);
    const code = manifest.spec.capsuleCode;
    expect(await tenants.place(manifest, { region: 'eu' })).toBe('member-eu');
    await untilHub(name, 'member-eu', isActiveOnHub, 240_000);
    const texts = Array.from({ length: messages }, (_, i) => `acknowledged before the move ${String(i)}`);
    await onPlane(member('eu').plane, async () => {
      const session = await connectAsModule(code, moduleCredentialsOn(member('eu').plane, code));
      try {
        await publishAsModule(code, texts, session);
        await (await session.existingKv(dataBucket(code)))?.put('customer.note', 'kept across the move');
      } finally {
        await session.nc.close();
      }
    });
    const started = Date.now();
    tenants.portal(['apply', '--server-side', '-f', '-'], JSON.stringify(tenantPlacement(name, TENANTS_NAMESPACE, CLUSTER_SET, { region: 'us' })));
    await during(code);
    await untilHub(name, 'member-us', isActiveOnHub, 300_000);
    expect(await eventually(() => moveOf(hub, name)?.progress.finishedAt !== undefined, 180_000, 500)).toBe(true);
    const { record, progress } = moveOf(hub, name) ?? {};
    const figures = record === undefined || progress === undefined ? undefined : moveFigures(progress, record, progress.finishedAt ?? '');
    console.info(`[multi-cluster] ${name} moved from member-eu to member-us with ${String(messages)} messages: ${((Date.now() - started) / 1000).toFixed(1)} s from the placement change to a finished move (the mover's count: ${String(figures?.seconds)} s), the tenant serving nothing for ${String(figures?.downtimeSeconds)} s`);

    // Every message acknowledged before the move, and the bucket's value, read there as the modules read them.
    const read = await onPlane(member('us').plane, () => readAsModule(code, messages, moduleCredentialsOn(member('us').plane, code)));
    expect(read.length).toBe(messages);
    expect(read).toEqual(texts);
    const note = await onPlane(member('us').plane, async () => {
      const session = await connectAsModule(code, moduleCredentialsOn(member('us').plane, code));
      try {
        return (await (await session.existingKv(dataBucket(code)))?.get('customer.note'))?.string();
      } finally {
        await session.nc.close();
      }
    });
    expect(note).toBe('kept across the move');
    // Nothing left on member-eu: no EvaTenant, namespace or keys Secret, and its NATS holds no account of the tenant.
    const eu = member('eu').plane;
    expect(eu.kubectl(['get', 'evt', name, '--ignore-not-found', '-o', 'name']).trim()).toBe('');
    expect(await eventually(() => eu.kubectl(['get', 'namespace', `eva-tenant-${code.toLowerCase()}`, '--ignore-not-found', '-o', 'name']).trim() === '', 60_000)).toBe(true);
    expect(eu.kubectl(['get', 'secret', `eva-nats-account-${code.toLowerCase()}`, '-n', SUITE_OPERATOR.namespace, '--ignore-not-found', '-o', 'name']).trim()).toBe('');
    const account = member('us').plane.kubectl(['get', 'secret', `eva-nats-account-${code.toLowerCase()}`, '-n', SUITE_OPERATOR.namespace, '-o', 'jsonpath={.data.account}']);
    const euNats = natsOf(eu);
    try {
      expect(await euNats.serverClaims(Buffer.from(account, 'base64').toString('utf8'))).toBeUndefined();
    } finally {
      await euNats.close();
    }
    // The hub: one work, on member-us, as its author wrote it (the executor back, no restore annotations).
    const works = JSON.parse(hub.plane.kubectl(['get', 'manifestwork', '-A', '-l', `${TENANT_WORK_LABEL}=${name}`, '-o', 'json'])) as { items: ManifestWork[] };
    expect(works.items.map((w) => w.metadata.namespace)).toEqual(['member-us']);
    const authored = tenantWork(manifest, 'member-us', MEMBER_EXECUTOR).spec;
    expect(works.items[0]?.spec.executor).toEqual(authored.executor);
    expect(works.items[0]?.spec.workload).toEqual(authored.workload);
    expect(await judgedAlike(member('us'), name, 'Current/Healthy')).toEqual(alike('Current/Healthy'));
  }

  it('moves a tenant whose placement changed to the other member with its data: every message there, nothing left behind', async () => {
    await movedWithData(`mv-${run}`, 10_000);
    // As the hub chart's ServiceAccount: nothing it does is refused on the hub or a member.
    expect(controller?.logs()).not.toMatch(/forbidden|Forbidden/);
  }, 600_000);

  /** A waiter on `name`'s move: until `reached` holds while it is under way; says where the move stood. */
  const untilMoveOf = (name: string) => async (what: string, reached: (p: MoveProgress) => boolean): Promise<void> => {
    const under = (): boolean => {
      const p = moveOf(hub, name)?.progress;
      return p !== undefined && p.finishedAt === undefined && reached(p);
    };
    expect(await eventually(under, 240_000, 100), what).toBe(true);
    console.info(`[multi-cluster] ${what}, the move at ${JSON.stringify(moveOf(hub, name)?.progress)}`);
  };

  it('converges when each party crashes during a move: the mover, the source member\'s operator, the destination member\'s operator', async () => {
    const name = `mvc-${run}`;
    const until = untilMoveOf(name);
    const [source, destination] = [operatorOf(member('eu').plane), operatorOf(member('us').plane)];
    await movedWithData(name, 1_000, async () => {
      await until('the mover crashes once it recorded the move', () => true);
      await controller?.kill();
      controller = spawnHubController(hub);
      await until("member-eu's operator crashes while it suspends the tenant", (p) => p.suspendedAt !== undefined);
      await source.crash();
      // As soon as the restoring EvaTenant is on member-us: its operator crashes mid-restore (its kubelet
      // starts it again); member-eu's goes down too and stays down until the mover has asked member-eu
      // to remove its copy.
      expect(await eventually(() => member('us').plane.kubectl(['get', 'evt', name, '--ignore-not-found', '-o', 'name']).trim() !== '', 240_000, 100)).toBe(true);
      await Promise.all([destination.crash(), source.down()]);
      console.info(`[multi-cluster] member-us's operator crashed restoring and started again, member-eu's down, the move at ${JSON.stringify(moveOf(hub, name)?.progress)}`);
      await until('the mover removes the source while member-eu\'s operator is down', (p) => p.activeAt !== undefined);
      source.start();
    });
  }, 600_000);

  it('halts a move while the destination member is lost (cut off from the hub and the engine), the tenant the source\'s meanwhile, and finishes it once the member is back', async () => {
    const name = `mvl-${run}`;
    const until = untilMoveOf(name);
    const destination = memberPlanes[1] as MemberPlane;
    await movedWithData(name, 100, async () => {
      await until('member-us is cut off once the source is suspended', (p) => p.suspendedAt !== undefined);
      await destination.cutOff();
      try {
        await until('the move halts, member-us not reporting', (p) => p.reason === 'MemberNotReporting');
        expect(moveOf(hub, name)?.progress.message).toMatch(/member-us does not answer \(the API server cannot be reached \(ECONNREFUSED 127\.0\.0\.1:/);
        // Never two copies: the source holds the tenant (suspended), and member-us (asked from inside its node) has none Active.
        const sourceLifecycle = (): string => member('eu').plane.kubectl(['get', 'evt', name, '-o', 'jsonpath={.spec.lifecycle}']);
        expect(await eventually(() => sourceLifecycle() === 'Suspended', 30_000)).toBe(true);
        const onDestination = destination.node.kubeOk(['get', 'evt', name, '--ignore-not-found', '-o', 'jsonpath={.status.phase}']);
        expect(onDestination).not.toBe('Active');
        await new Promise((resolve) => setTimeout(resolve, 5_000));
        expect(moveOf(hub, name)?.progress).toMatchObject({ reason: 'MemberNotReporting' });
      } finally {
        await destination.reconnect();
      }
    });
  }, 600_000);

  it("shows a member that stopped reporting: its tenants Stalled and Ready Unknown on the hub, the other member's as they are", async () => {
    const started = Date.now();
    await hub.disconnect(member('us'));
    const stale = await untilHub(us, 'member-us', (v) => readyOf(v) === 'Unknown', 120_000);
    console.info(`[multi-cluster] a member's agents stopped: its tenant shown stale on the hub after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(stale.tenant.status.conditions.find((c) => c.type === 'Stalled')).toMatchObject({ status: 'True', reason: 'MemberNotReporting' });
    // Its last report is kept (the member may still serve it), but no tool calls it Ready.
    expect(stale.tenant.status.phase).toBe('Active');
    expect(fluxAndArgo([labelled('stale', stale.tenant as unknown as TenantObject)]).verdicts['stale']).toBe('Failed/Degraded');
    // What a GitOps tool reads on the hub, the work itself: the hub controller's summary says so.
    expect(await eventually(() => workVerdict(us, 'member-us') === 'Failed/Degraded', 30_000, 500)).toBe(true);
    const work = tenants.work(us, 'member-us');
    expect(work?.status?.conditions?.find((c) => c.type === 'Stalled')).toMatchObject({ status: 'True', reason: 'MemberNotReporting', observedGeneration: work?.metadata.generation });
    // The control: the same work as the engine alone leaves it (the summary taken off, judged as any
    // work) still says Available, so a tool reading it would call a tenant nobody hears from Healthy.
    const engineOnly = { ...work, metadata: { ...work?.metadata, labels: {} }, status: { ...work?.status, conditions: work?.status?.conditions?.filter((c) => !SUMMARY_TYPES.has(c.type)) } };
    expect(fluxAndArgo([labelled('engine only', engineOnly as unknown as TenantObject)], workHealthLua).verdicts['engine only']).toBe('Current/Healthy');
    // The positive control: the other member reports, its tenant is judged as before.
    expect(isActiveOnHub(await untilHub(eu, 'member-eu', isActiveOnHub))).toBe(true);
    expect(await judgedAlike(member('eu'), eu, 'Current/Healthy')).toEqual(alike('Current/Healthy'));
  }, 300_000);

  it("left no write of the members' operators refused by the chart's RBAC or policy on their member", () => {
    for (const m of [member('eu'), member('us')]) {
      const started = operators.get(m.plane);
      expect(started, m.cluster).toBeDefined();
      expect(refusedOnPlane(m.plane, started?.auditFrom ?? 0), m.cluster).toEqual([]);
    }
  });
});
