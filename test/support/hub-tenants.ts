/**
 * What a portal does on a multi-cluster hub (docs/multi-cluster.md), for the multi-cluster test and
 * benchmark: binds the members' cluster set to the namespace tenants are written in (as the platform
 * would, with the hub chart's roles and policy), then, as the portal (a ServiceAccount with the hub
 * chart's eva-hub-tenant-portal role, a token of its own), places a tenant (a Placement by labels,
 * then its ManifestWork where the engine decided, applied there as the members' executor) and reads
 * the hub's view.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { join } from 'node:path';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { MEMBER_LABEL, MOVE_LABEL, moveOfConfigMap, type StoredMove } from '../../src/hub/mover.ts';
import { killOnExit, stopChild } from './child-processes.ts';
import { repoRoot } from './tools.ts';
import { hubView, type HubTenantView, type ManifestWork, TENANT_WORK_LABEL, type TenantManifest, tenantWork, type WorkExecutor, workName } from '../../src/multicluster/manifest-work.ts';
import { decidedCluster, type Placement, placementName, type PlacementDecision, tenantPlacement } from '../../src/multicluster/placement.ts';
import { eventually } from './kubectl.ts';
import { type Kubectl, kubectlAs, MEMBER_EXECUTOR, type Member, type OcmHub, onPlane, type Plane } from './multi-cluster.ts';
import { renderChart, type ServiceAccountRef, serviceAccountKubeconfig, SUITE_OPERATOR } from './operator-identity.ts';

export const TENANTS_NAMESPACE = 'eva-tenants';
export const CLUSTER_SET = 'eva-members';
/** On a ManagedCluster: the cluster set it belongs to. */
export const IN_CLUSTER_SET = { 'cluster.open-cluster-management.io/clusterset': CLUSTER_SET } as const;
/** The portal's ServiceAccount on the hub. */
const PORTAL = { namespace: TENANTS_NAMESPACE, name: 'eva-portal' } as const;

/** The hub chart (charts/eva-hub) as the test installs it: its roles and its policy, naming the members' executor (its controller: startHubController). */
export function installHubChart(plane: Plane, executor: WorkExecutor = MEMBER_EXECUTOR): void {
  const rendered = renderChart('charts/eva-hub', { release: 'eva-hub', namespace: TENANTS_NAMESPACE }, ['--set', `executor.namespace=${executor.namespace}`, '--set', `executor.name=${executor.name}`, '--set', 'controller.enabled=false']);
  plane.kubectl(['apply', '--server-side', '-f', '-'], rendered);
}

/** kubectl on `plane` as ServiceAccount `account` bound to ClusterRole `role` (a token kubeconfig in the plane's state folder). */
export async function boundServiceAccount(plane: Plane, account: ServiceAccountRef, role: string): Promise<Kubectl> {
  const objects = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: account },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: `${account.name}-${role}` }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role }, subjects: [{ kind: 'ServiceAccount', ...account }] },
  ];
  plane.kubectl(['apply', '--server-side', '-f', '-'], objects.map((o) => JSON.stringify(o)).join('\n'));
  const kubeconfig = await onPlane(plane, () => Promise.resolve(serviceAccountKubeconfig(join(mkdtempSync(join(plane.dir, 'identity-')), 'kubeconfig'), account)));
  return kubectlAs(kubeconfig);
}

export class HubTenants {
  private readonly hub: OcmHub;
  /** kubectl on the hub as the portal. */
  readonly portal: Kubectl;

  private constructor(hub: OcmHub, portal: Kubectl) {
    this.hub = hub;
    this.portal = portal;
  }

  /**
   * As the platform: the cluster set the tenants' Placements choose from, bound to the namespace they
   * are written in, and the hub chart; then the portal's identity.
   */
  static async setUp(hub: OcmHub): Promise<HubTenants> {
    const objects = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: TENANTS_NAMESPACE } },
      { apiVersion: 'cluster.open-cluster-management.io/v1beta2', kind: 'ManagedClusterSet', metadata: { name: CLUSTER_SET }, spec: { clusterSelector: { selectorType: 'ExclusiveClusterSetLabel' } } },
      { apiVersion: 'cluster.open-cluster-management.io/v1beta2', kind: 'ManagedClusterSetBinding', metadata: { name: CLUSTER_SET, namespace: TENANTS_NAMESPACE }, spec: { clusterSet: CLUSTER_SET } },
    ];
    hub.plane.kubectl(['apply', '-f', '-'], objects.map((o) => JSON.stringify(o)).join('\n'));
    installHubChart(hub.plane);
    return new HubTenants(hub, await boundServiceAccount(hub.plane, PORTAL, 'eva-hub-tenant-portal'));
  }

  /** The Placement by labels for tenant `name`, once the engine has judged it (satisfied or not). */
  async decide(name: string, labels: Record<string, string>): Promise<Placement> {
    this.portal(['apply', '--server-side', '-f', '-'], JSON.stringify(tenantPlacement(name, TENANTS_NAMESPACE, CLUSTER_SET, labels)));
    let placement: Placement | undefined;
    const judged = (): boolean => {
      placement = JSON.parse(this.portal(['get', 'placement', placementName(name), '-n', TENANTS_NAMESPACE, '-o', 'json'])) as Placement;
      return placement.status?.conditions?.some((c) => c.type === 'PlacementSatisfied') ?? false;
    };
    if (!(await eventually(judged, 60_000)) || placement === undefined) throw new Error(`the engine did not judge the placement of ${name}`);
    return placement;
  }

  /** A Placement by labels, then the tenant's work where the engine decided; returns that member. */
  async place(manifest: TenantManifest, labels: Record<string, string>): Promise<string> {
    const [cluster] = await this.placeAll([manifest], labels);
    if (cluster === undefined) throw new Error(`the engine decided no cluster for ${manifest.metadata.name}`);
    return cluster;
  }

  /**
   * Every tenant's Placement in one apply, then, once the engine decided them all, every work in one
   * apply (as a portal placing a batch would); returns each tenant's member, in order.
   */
  async placeAll(manifests: readonly TenantManifest[], labels: Record<string, string>): Promise<string[]> {
    const placements = manifests.map((m) => tenantPlacement(m.metadata.name, TENANTS_NAMESPACE, CLUSTER_SET, labels));
    // Server-side: no last-applied copy of each object doubling what every read of them returns.
    this.portal(['apply', '--server-side', '-f', '-'], placements.map((p) => JSON.stringify(p)).join('\n'));
    let clusters: (string | undefined)[] = [];
    const decided = (): boolean => {
      const list = JSON.parse(this.portal(['get', 'placementdecisions', '-n', TENANTS_NAMESPACE, '-o', 'json'])) as { items: PlacementDecision[] };
      clusters = manifests.map((m) => decidedCluster(list.items.filter((d) => d.metadata.labels?.['cluster.open-cluster-management.io/placement'] === placementName(m.metadata.name))));
      return clusters.every((c) => c !== undefined);
    };
    if (!(await eventually(decided, 120_000))) throw new Error(`the engine decided no cluster for ${String(clusters.filter((c) => c === undefined).length)} tenants`);
    const works = manifests.map((m, i) => tenantWork(m, clusters[i] ?? '', MEMBER_EXECUTOR));
    this.portal(['apply', '--server-side', '-f', '-'], works.map((w) => JSON.stringify(w)).join('\n'));
    return clusters.map((c) => c ?? '');
  }

  /** The hub's view of every placed tenant on `cluster`. */
  views(cluster: string): HubTenantView[] {
    const list = JSON.parse(this.portal(['get', 'manifestwork', '-n', cluster, '-l', TENANT_WORK_LABEL, '-o', 'json'])) as { items: ManifestWork[] };
    const availability = this.hub.availability(cluster);
    return list.items.map((work) => hubView(work, availability));
  }

  /** The hub's view of tenant `name` on `cluster`, the member's availability included; undefined without a work. */
  view(name: string, cluster: string): HubTenantView | undefined {
    const work = this.work(name, cluster);
    return work === undefined ? undefined : hubView(work, this.hub.availability(cluster));
  }

  /** Tenant `name`'s work on `cluster` as the hub serves it (what a GitOps tool reads); undefined without one. */
  work(name: string, cluster: string): ManifestWork | undefined {
    const json = this.portal(['get', 'manifestwork', workName(name), '-n', cluster, '--ignore-not-found', '-o', 'json']);
    return json.trim() === '' ? undefined : (JSON.parse(json) as ManifestWork);
  }
}

export const readyOf = (view: HubTenantView): string | undefined => view.tenant.status.conditions.find((c) => c.type === 'Ready')?.status;

/** Active at its current generation as the hub sees it: applied, phase Active, Ready True. */
export const isActiveOnHub = (view: HubTenantView): boolean =>
  view.applied && view.tenant.status.phase === 'Active' && readyOf(view) === 'True' && view.tenant.status.observedGeneration === view.tenant.metadata.generation;

/** The hub controller's namespace (its member Secrets and move records), as the platform installs it. */
export const HUB_NAMESPACE = 'eva-hub';

export interface HubControllerProcess {
  logs(): string;
  stop(): Promise<void>;
  /** SIGKILL: a crash at whatever line it was on. */
  kill(): Promise<void>;
}

/**
 * As the platform: the hub chart's controller with moves (templates/controller.yaml as helm renders it,
 * its Deployment aside: the hub has no node) and its access to each member (a Secret with the member's
 * kubeconfig, its NATS as the other members reach it, its operator's namespace); then `eva-operator hub
 * --moves` as that ServiceAccount, a pass a second.
 */
export async function startHubController(hub: OcmHub, members: readonly Member[]): Promise<HubControllerProcess> {
  const rendered = renderChart('charts/eva-hub', { release: 'eva-hub-controller', namespace: HUB_NAMESPACE }, ['--set', 'controller.moves=true', '--set', `controller.tenantsNamespace=${TENANTS_NAMESPACE}`, '--show-only', 'templates/controller.yaml']);
  const rbac = parseAllDocuments(rendered).map((d) => d.toJS() as { kind?: string } | null).filter((o) => o !== null && o.kind !== 'Deployment');
  const secrets = members.map((m) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `member-${m.cluster}`, namespace: HUB_NAMESPACE, labels: { [MEMBER_LABEL]: m.cluster } },
    stringData: { kubeconfig: readFileSync(m.plane.env.KUBECONFIG, 'utf8'), natsUrl: m.plane.natsForPeers, operatorNamespace: SUITE_OPERATOR.namespace },
  }));
  const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: HUB_NAMESPACE } };
  hub.plane.kubectl(['apply', '--server-side', '-f', '-'], [namespace, ...rbac, ...secrets].map((o) => JSON.stringify(o)).join('\n'));
  const kubeconfig = await onPlane(hub.plane, () => Promise.resolve(serviceAccountKubeconfig(join(mkdtempSync(join(hub.plane.dir, 'controller-')), 'kubeconfig'), CONTROLLER, '3h')));
  controllerKubeconfig.set(hub, kubeconfig);
  return spawnHubController(hub);
}

/** The chart's controller ServiceAccount, and the kubeconfig of its token by hub. */
const CONTROLLER = { namespace: HUB_NAMESPACE, name: 'eva-hub-controller' } as const;
const controllerKubeconfig = new WeakMap<OcmHub, string>();

/** (Re)starts the hub controller process alone, as the chart's ServiceAccount (startHubController set it up). */
export function spawnHubController(hub: OcmHub): HubControllerProcess {
  const kubeconfig = controllerKubeconfig.get(hub);
  if (kubeconfig === undefined) throw new Error('spawnHubController before startHubController');
  const child = spawn(process.execPath, [join(repoRoot, 'src/cli.ts'), 'hub', '--namespace', HUB_NAMESPACE, '--tenants-namespace', TENANTS_NAMESPACE, '--moves', '--interval', '1'], {
    cwd: repoRoot,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', KUBECONFIG: kubeconfig },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killOnExit(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    logs: () => output,
    stop: async () => {
      await stopChild(child, 5_000);
    },
    kill: async () => {
      child.kill('SIGKILL');
      await stopChild(child, 5_000);
    },
  };
}

/** The mover's record of tenant `name`'s latest move, if any. */
export function moveOf(hub: OcmHub, name: string): StoredMove | undefined {
  const json = hub.plane.kubectl(['get', 'configmap', '-n', HUB_NAMESPACE, '-l', `${MOVE_LABEL}=${name}`, '-o', 'json']);
  const [configMap] = (JSON.parse(json) as { items: V1ConfigMap[] }).items;
  return configMap === undefined ? undefined : moveOfConfigMap(configMap);
}
