/**
 * Multi-cluster benchmark (docs/multi-cluster.md; a benchmark that prints figures, not a test).
 *
 *   npm run bench:multi-cluster -- [--count 100]
 *
 * Three local control planes of its own (a hub and two members, each member with its own NATS and an
 * operator as admin, as the other benchmarks run theirs), joined by Open Cluster Management. First on
 * one cluster (member-eu alone, EvaTenants applied there): one Starter tenant, then `count`, timed
 * until Active on that cluster; they are deleted before the rest. Then through the hub: one tenant,
 * then `count` over the two members (half each: a Placement per tenant by region, the works applied
 * once the engine decided), timed until Active as the hub sees them (the member's status fed back).
 */
import { parseArgs } from 'node:util';
import { API_VERSION, KIND } from '../src/api/constants.ts';
import type { TenantManifest } from '../src/multicluster/manifest-work.ts';
import { HubTenants, IN_CLUSTER_SET, isActiveOnHub } from '../test/support/hub-tenants.ts';
import { eventually } from '../test/support/kubectl.ts';
import { installMemberChart, OcmHub, type Plane, planeDown, planeUp } from '../test/support/multi-cluster.ts';
import { type OperatorProcess, startOperator } from '../test/support/operator.ts';
import { capsuleCodes } from '../test/support/random.ts';
import { binDir } from '../test/support/tools.ts';

const STEP_MS = 1_800_000;
const nextCode = capsuleCodes('B');

function options(): { count: number } {
  const { values } = parseArgs({ options: { count: { type: 'string', default: '100' } } });
  const count = Number(values.count);
  if (!Number.isInteger(count) || count < 2 || count % 2 !== 0) throw new Error('--count must be an even integer of at least 2 (half the tenants per member)');
  return { count };
}

const seconds = (since: number): number => (Date.now() - since) / 1000;
const manifest = (name: string): TenantManifest => ({ apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec: { capsuleCode: nextCode(), tier: 'Starter' } });
const named = (prefix: string, count: number): TenantManifest[] => Array.from({ length: count }, (_, i) => manifest(`${prefix}-${String(i)}`));

/** The operator of a member, as the benchmarks run theirs: the member's admin, leases in `default`. */
async function memberOperator(plane: Plane): Promise<OperatorProcess> {
  installMemberChart(plane);
  const operator = startOperator({ ...plane.env, POD_NAMESPACE: 'default' });
  await operator.ready();
  return operator;
}

function activeOnMember(plane: Plane, names: ReadonlySet<string>): number {
  const list = JSON.parse(plane.kubectl(['get', 'evt', '-o', 'json'])) as { items: { metadata: { name: string; generation?: number }; status?: { phase?: string; observedGeneration?: number } }[] };
  return list.items.filter((t) => names.has(t.metadata.name) && t.status?.phase === 'Active' && t.status.observedGeneration === t.metadata.generation).length;
}

/** Seconds until every tenant of `tenants` is Active on `plane`, applied there directly. */
async function onOneCluster(plane: Plane, tenants: readonly TenantManifest[]): Promise<number> {
  const started = Date.now();
  plane.kubectl(['apply', '--server-side', '-f', '-'], tenants.map((t) => JSON.stringify(t)).join('\n'));
  const names = new Set(tenants.map((t) => t.metadata.name));
  if (!(await eventually(() => activeOnMember(plane, names) === names.size, STEP_MS, 1_000))) throw new Error(`not every tenant became Active on ${plane.name}`);
  return seconds(started);
}

/** Seconds until every tenant is Active as the hub sees it, placed half on each region. */
async function throughHub(hub: HubTenants, tenants: readonly TenantManifest[]): Promise<number> {
  const started = Date.now();
  const half = Math.ceil(tenants.length / 2);
  await hub.placeAll(tenants.slice(0, half), { region: 'eu' });
  if (tenants.length > half) await hub.placeAll(tenants.slice(half), { region: 'us' });
  const names = new Set(tenants.map((t) => t.metadata.name));
  const active = (): number => ['member-eu', 'member-us'].flatMap((cluster) => hub.views(cluster)).filter((v) => names.has(v.tenant.metadata.name) && isActiveOnHub(v)).length;
  if (!(await eventually(() => active() === names.size, STEP_MS, 1_000))) throw new Error('not every tenant became Active as the hub sees it');
  return seconds(started);
}

async function main(): Promise<void> {
  const { count } = options();
  const planes = [planeUp('bench-hub', 3), planeUp('bench-member-eu', 4), planeUp('bench-member-us', 5)];
  const [hubPlane, eu, us] = planes as [Plane, Plane, Plane];
  // What the operator helpers read from the environment (each operator is then given its member's own).
  Object.assign(process.env, eu.env, { EVA_TOOLS_DIR: binDir() });
  const engine = await OcmHub.start(hubPlane);
  const operators: OperatorProcess[] = [];
  try {
    await engine.join(eu, 'member-eu', { ...IN_CLUSTER_SET, region: 'eu' });
    await engine.join(us, 'member-us', { ...IN_CLUSTER_SET, region: 'us' });
    const hub = await HubTenants.setUp(engine);
    operators.push(await memberOperator(eu), await memberOperator(us));

    const oneAlone = await onOneCluster(eu, named('alone', 1));
    const manyAlone = await onOneCluster(eu, named('alone-many', count));
    eu.kubectl(['delete', 'evt', '--all', '--wait=true', '--timeout=30m']);
    const oneHub = await throughHub(hub, named('hub', 1));
    const manyHub = await throughHub(hub, named('hub-many', count));

    console.info(`\nmulti-cluster benchmark: Starter tenants, seconds until Active (${String(count)} tenants: half on each member through the hub)`);
    console.table([
      { where: 'one cluster (member-eu alone, applied there)', 'one tenant': oneAlone.toFixed(1), [`${String(count)} tenants`]: manyAlone.toFixed(1) },
      { where: 'through the hub (Placement + ManifestWork, two members)', 'one tenant': oneHub.toFixed(1), [`${String(count)} tenants`]: manyHub.toFixed(1) },
    ]);
  } finally {
    await Promise.all(operators.map((op) => op.stop()));
    await engine.stop();
    for (const plane of planes) planeDown(plane);
  }
}

await main();
