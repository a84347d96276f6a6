/**
 * The three systems bench/peers.ts puts side by side, each as `prepare` (before the clock: CRDs,
 * controllers, namespaces) and then `start` (the clock runs) and `waitReady`. The same tenants, the
 * same charts, the same values (src/steps/modules/module-values.ts's moduleValues, with fresh credentials as the
 * operator makes them) and the same meaning of Ready: every Deployment as src/steps/modules/modules.ts's
 * deploymentProblem judges it (Available, rolled out), which kwok's pods make true.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubernetesObjectApi, PatchStrategy, Watch, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import { MODULES_BY_TIER, type ModuleName } from '../src/api/modules.ts';
import { parseEvaTenant } from '../src/api/parse.ts';
import { ImageCatalog } from '../src/bundle/images.ts';
import { loadKubeConfig } from '../src/adapters/kube.ts';
import { createLogger } from '../src/log.ts';
import { chartPath } from '../src/bundle/charts.ts';
import { SeedCatalog } from '../src/bundle/seeds.ts';
import { deploymentProblem } from '../src/steps/modules/module-readiness.ts';
import { EnvReader } from '../src/config/env-reader.ts';
import { readNetworkPolicy } from '../src/config/network-policy.ts';
import { desiredNamespace } from '../src/steps/namespace.ts';
import { desiredNetworkPolicy } from '../src/steps/network.ts';
import { desiredQuotaObjects } from '../src/steps/quotas.ts';
import { moduleValues, type ModuleValues } from '../src/steps/modules/module-values.ts';
import { helmServerPids } from '../test/support/helm.ts';
import { type OperatorProcess, startOperator } from '../test/support/operator.ts';
import { kubectlOk, requiredEnv, tenantManifest } from '../test/support/kubectl.ts';
import { repoRoot } from '../test/support/tools.ts';
import { FLUX_CONTROLLERS, type FluxProcesses, fluxDir, serveCharts, startFlux, type ChartRepository } from './peers-flux.ts';
import { applyInSlices, operatorEnv, waitAllActive } from './provision.ts';

export const SYSTEMS = ['eva', 'eva-helm-default', 'eva-cli', 'flux', 'flux-nowait', 'floor', 'floor-tenancy'] as const;
/** What a run measures unless --systems says otherwise; eva-helm-default, eva-cli and floor-tenancy are asked for by name. */
export const DEFAULT_SYSTEMS: readonly SystemName[] = ['eva', 'flux', 'flux-nowait', 'floor'];
export type SystemName = (typeof SYSTEMS)[number];

export const TIER = 'Starter';
export const MODULES: readonly ModuleName[] = MODULES_BY_TIER[TIER];
const OPERATOR_VERSION = '9.9.0';
const FLOOR_USER_AGENT = 'eva-bench-floor';

export interface RunSettings {
  codes: readonly string[];
  /** Releases in flight at once, on every side. */
  concurrency: number;
  /** The operator's entry and NODE_OPTIONS (the image's runtime, or the sources). */
  runtime: { entry: string; nodeOptions: string | undefined };
}

export interface PreparedSystem {
  /** The system's own processes: name -> pid (CPU and peak memory are read from /proc). */
  processes(): Record<string, number>;
  /** Processes whose reaped children belong to them (the operator's helm processes). */
  parentOfChildren(): string | undefined;
  start(): Promise<void>;
  /** Resolves with the number of releases (or tenants) not Ready at the deadline. */
  waitReady(): Promise<number>;
  stop(): Promise<void>;
}

export const namespaceOf = (code: string): string => `eva-tenant-${code.toLowerCase()}`;

// ---- values, as the operator makes them -----------------------------------------------------------

const images = (): ImageCatalog => ImageCatalog.fromFile(join(repoRoot, 'images.txt'));
const seeds = SeedCatalog.load(join(repoRoot, 'seeds'));

function tenantScopeOf(code: string): Parameters<typeof moduleValues>[0]['scope'] {
  const raw = JSON.parse(tenantManifest(code.toLowerCase(), { capsuleCode: code, tier: TIER, seedsVersion: '1.0.0', operatorVersion: OPERATOR_VERSION })) as unknown;
  return { tenant: parseEvaTenant(raw), code, namespace: namespaceOf(code), modules: MODULES, log: createLogger('silent'), signal: new AbortController().signal };
}

/** The operator's values for one tenant's module; credentials fresh, as the operator generates them. */
function valuesOf(code: string, module: ModuleName, catalog: ImageCatalog): ModuleValues {
  const credentials = Object.fromEntries(['db-password', 'api-key', 'jwt-secret'].map((key) => [key, randomBytes(24).toString('base64url')]));
  const deps = { images: catalog, seeds, config: {} };
  // No Secret eva-nats exists outside the operator's run: a revision of the same shape stands for it.
  return moduleValues({ module, scope: tenantScopeOf(code), deps, credentials, natsRevision: randomBytes(8).toString('hex') });
}

// ---- Ready, the same meaning everywhere -----------------------------------------------------------

interface Named {
  metadata?: { name?: string; namespace?: string };
}

/**
 * One watch in this process until every key in `expected` passed `isReady` (or 15 minutes passed):
 * a watch restarted without a resourceVersion replays everything, so nothing is missed.
 */
export function watchUntilReady(path: string, expected: ReadonlySet<string>, isReady: (item: Named) => boolean, timeoutMs = 900_000): { done: Promise<number>; abort(): void } {
  const pending = new Set(expected);
  const kubeConfig = loadKubeConfig();
  const watch = new Watch(kubeConfig);
  let request: AbortController | undefined;
  let stopped = false;
  const done = new Promise<number>((resolve) => {
    const onEvent = (_type: string, item: Named): void => {
      const key = `${item.metadata?.namespace ?? ''}/${item.metadata?.name ?? ''}`;
      if (pending.has(key) && isReady(item)) pending.delete(key);
      if (pending.size === 0) resolve(0);
    };
    const start = (): void => {
      if (stopped) return;
      void watch.watch(path, {}, onEvent, () => {
        if (pending.size > 0) setTimeout(start, 100);
      }).then((controller) => {
        request = controller;
      });
    };
    start();
    setTimeout(() => {
      resolve(pending.size);
    }, timeoutMs).unref();
  });
  return {
    done: done.finally(() => {
      stopped = true;
      request?.abort();
    }),
    abort: () => {
      stopped = true;
      request?.abort();
    },
  };
}

const deploymentReady = (item: Named): boolean => deploymentProblem(item) === undefined;

/** namespace/name of every Deployment the charts make for these tenants (from one rendering). */
function expectedDeployments(codes: readonly string[], rendered: ReadonlyMap<ModuleName, KubernetesObject[]>): Set<string> {
  const names = [...rendered.values()].flat().filter((o) => o.kind === 'Deployment').map((o) => o.metadata?.name ?? '');
  return new Set(codes.flatMap((code) => names.map((name) => `${namespaceOf(code)}/${name}`)));
}

// ---- helm template (the floor's objects, and the Deployments every side waits for) --------------

export function renderRelease(code: string, module: ModuleName, values: ModuleValues): KubernetesObject[] {
  // The values hold credentials: a tmpfs file, removed at once (never on a persistent disk).
  const dir = mkdtempSync('/dev/shm/eva-bench-values-');
  try {
    const file = join(dir, 'values.yaml');
    writeFileSync(file, stringify({ ...values.plain, ...values.secret }), { mode: 0o600 });
    const helm = join(requiredEnv('EVA_TOOLS_DIR'), 'helm');
    const out = execFileSync(helm, ['template', module, chartPath(join(repoRoot, 'charts'), module), '--namespace', namespaceOf(code), '--values', file], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
    return parseAllDocuments(out)
      .map((doc) => doc.toJS() as KubernetesObject | null)
      .filter((o): o is KubernetesObject => o !== null)
      .map((o) => Object.assign(o, { metadata: Object.assign(o.metadata ?? {}, { namespace: namespaceOf(code) }) }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One tenant's releases rendered, to learn the Deployments' names (the same for every tenant). */
function renderOneTenant(code: string): Map<ModuleName, KubernetesObject[]> {
  const catalog = images();
  return new Map(MODULES.map((module) => [module, renderRelease(code, module, valuesOf(code, module, catalog))]));
}

/** The namespaces first, then what goes in them: slices are applied four at once, so one slice may not wait for another's namespace. */
async function applyNamespaces(codes: readonly string[], extra: (code: string) => object[] = () => []): Promise<void> {
  await applyInSlices(codes.map((code) => JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespaceOf(code) } })));
  await applyInSlices(codes.flatMap((code) => extra(code).map((o) => JSON.stringify(o))));
}

/**
 * CRDs applied and served before a controller starts: one that starts first fails its REST mapping
 * ("no matches for kind OCIRepository", seen once in a 3-round run) and exits.
 */
function applyCrds(dir: string): void {
  kubectlOk(['apply', '--server-side', '-f', dir]);
  kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', dir]);
}

// ---- eva-operator ---------------------------------------------------------------------------------

interface EvaVariant {
  /**
   * Tenants in flight `concurrency` as on the other side, but helm operations at the operator's own
   * HELM_CONCURRENCY default (what the chart runs), not `concurrency`: the memory a pod holds as
   * shipped. Otherwise the same concurrency: tenants in flight and helm operations both `concurrency`.
   */
  helmAtDefault?: boolean;
  /** The helm CLI, a process per release (no helm server): the way releases ran before it. */
  cli?: boolean;
}

async function prepareEva(settings: RunSettings, variant: EvaVariant = {}): Promise<PreparedSystem> {
  applyCrds(join(repoRoot, 'crds'));
  const { concurrency, runtime, codes } = settings;
  const env = {
    ...operatorEnv(concurrency, variant.helmAtDefault === true ? undefined : String(concurrency), runtime.nodeOptions),
    OPERATOR_VERSION,
    ...(variant.cli === true ? { HELM_SERVER_BINARY: '' } : {}),
  };
  const operator: OperatorProcess = startOperator(env, undefined, runtime.entry);
  await operator.ready(120_000);
  // The operator makes each tenant's namespace itself (it refuses one it did not make): in its clock.
  return {
    // The helm server starts with the first release: in the list once it runs (its CPU is all in the clock).
    processes: () => ({ 'eva-operator': operator.pid, ...Object.fromEntries(helmServerPids(operator.pid).map((pid) => ['eva-helm-server', pid])) }),
    parentOfChildren: () => 'eva-operator',
    start: () => applyInSlices(codes.map((code) => tenantManifest(code.toLowerCase(), { capsuleCode: code, tier: TIER, seedsVersion: '1.0.0', operatorVersion: OPERATOR_VERSION }))),
    waitReady: async () => (await waitAllActive([...codes])).pending.size,
    stop: async () => {
      await operator.stop();
    },
  };
}

// ---- Flux -----------------------------------------------------------------------------------------

const HELM_REPOSITORY = 'eva-modules';
const CREDENTIALS_SECRET = 'eva-bench-credentials';

function helmRelease(code: string, module: ModuleName, values: ModuleValues, disableWait: boolean): object {
  const wait = disableWait ? { disableWait: true } : {};
  return {
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: 'HelmRelease',
    metadata: { name: module, namespace: namespaceOf(code) },
    spec: {
      interval: '10m',
      // The operator's helm timeout (src/steps/modules/modules.ts) and history (helm --history-max 5, Flux's default too).
      timeout: '2m',
      maxHistory: 5,
      chart: { spec: { chart: module, sourceRef: { kind: 'HelmRepository', name: HELM_REPOSITORY, namespace: 'flux-system' }, interval: '10m' } },
      values: values.plain,
      // The credentials as Flux users keep them: a Secret (made before the clock, as the namespace).
      valuesFrom: [{ kind: 'Secret', name: `${CREDENTIALS_SECRET}-${module}`, valuesKey: 'values.yaml' }],
      install: wait,
      upgrade: wait,
    },
  };
}

function credentialsSecret(code: string, module: ModuleName, values: ModuleValues): object {
  return { apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { name: `${CREDENTIALS_SECRET}-${module}`, namespace: namespaceOf(code) }, stringData: { 'values.yaml': stringify(values.secret) } };
}

interface FluxItem extends Named {
  status?: { conditions?: { type: string; status: string }[] };
}

const conditionReady = (item: Named): boolean =>
  (item as FluxItem).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

async function prepareFlux(settings: RunSettings, disableWait: boolean): Promise<PreparedSystem> {
  const { codes, concurrency } = settings;
  const dir = fluxDir();
  applyCrds(join(dir, 'crds'));
  kubectlOk(['create', 'namespace', 'flux-system']);
  const flux: FluxProcesses = await startFlux(dir, concurrency);
  const repository: ChartRepository = await serveCharts(MODULES.map((module) => chartPath(join(repoRoot, 'charts'), module)));
  kubectlOk(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'source.toolkit.fluxcd.io/v1', kind: 'HelmRepository', metadata: { name: HELM_REPOSITORY, namespace: 'flux-system' }, spec: { url: repository.url, interval: '10m' } }));
  // Waited for in this process (not `kubectl wait`, which would block the loop serving the charts).
  const repositoryReady = watchUntilReady('/apis/source.toolkit.fluxcd.io/v1/helmrepositories', new Set([`flux-system/${HELM_REPOSITORY}`]), conditionReady, 180_000);
  if ((await repositoryReady.done) > 0) throw new Error(`HelmRepository ${HELM_REPOSITORY} not Ready: ${flux.logs().slice(-2000)}`);
  const catalog = images();
  const values = new Map(codes.flatMap((code) => MODULES.map((module) => [`${code}/${module}`, valuesOf(code, module, catalog)] as const)));
  const valuesFor = (code: string, module: ModuleName): ModuleValues => values.get(`${code}/${module}`) ?? valuesOf(code, module, catalog);
  await applyNamespaces(codes, (code) => MODULES.map((module) => credentialsSecret(code, module, valuesFor(code, module))));
  const deployments = expectedDeployments(codes, renderOneTenant(codes[0] ?? 'BAAAAA'));
  const releases = new Set(codes.flatMap((code) => MODULES.map((module) => `${namespaceOf(code)}/${module}`)));
  let deploymentsWatch: ReturnType<typeof watchUntilReady> | undefined;
  let releasesWatch: ReturnType<typeof watchUntilReady> | undefined;
  return {
    processes: () => ({ ...flux.pids }),
    parentOfChildren: () => undefined,
    start: async () => {
      deploymentsWatch = watchUntilReady('/apis/apps/v1/deployments', deployments, deploymentReady);
      releasesWatch = watchUntilReady('/apis/helm.toolkit.fluxcd.io/v2/helmreleases', releases, conditionReady);
      await applyInSlices(codes.flatMap((code) => MODULES.map((module) => JSON.stringify(helmRelease(code, module, valuesFor(code, module), disableWait)))));
    },
    // Ready: every HelmRelease Ready AND every Deployment Available (without wait, the first comes sooner).
    waitReady: async () => (await Promise.all([releasesWatch?.done ?? Promise.resolve(releases.size), deploymentsWatch?.done ?? Promise.resolve(deployments.size)])).reduce((a, b) => Math.max(a, b), 0),
    stop: async () => {
      deploymentsWatch?.abort();
      releasesWatch?.abort();
      await flux.stop();
      await repository.close();
    },
  };
}

export const FLUX_PROCESS_NAMES: readonly string[] = FLUX_CONTROLLERS;

// ---- the floor: rendered objects applied straight, one client -------------------------------------

/**
 * What the floor applies for one tenant: its tenancy objects one after another (none for the plain
 * floor), then its releases side by side, each release's objects in order.
 */
interface FloorTenant {
  tenancy: KubernetesObject[];
  releases: KubernetesObject[][];
}

/** Server-side apply of every object of `tenants`, `concurrency` of them at once, from one client in this process. */
async function applyFloor(tenants: readonly FloorTenant[], concurrency: number): Promise<void> {
  const kubeConfig = loadKubeConfig();
  // Its own User-Agent, so the audit log tells the floor's requests from the harness's watches.
  Object.assign(kubeConfig, { userAgent: FLOOR_USER_AGENT });
  const client = KubernetesObjectApi.makeApiClient(kubeConfig);
  const apply = async (objects: readonly KubernetesObject[]): Promise<void> => {
    for (const object of objects) await client.patch(object, undefined, undefined, FLOOR_USER_AGENT, true, PatchStrategy.ServerSideApply);
  };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tenants.length) {
      const tenant = tenants[next];
      next += 1;
      if (tenant === undefined) continue;
      await apply(tenant.tenancy);
      await Promise.all(tenant.releases.map(apply));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** The operator's own NetworkPolicy settings (its defaults), NATS by address as the bench's NATS is. */
const FLOOR_NETWORK_POLICY = readNetworkPolicy(new EnvReader({ NETWORK_POLICY_NATS_CIDR: '127.0.0.1/32' }), { moduleUrl: 'nats://127.0.0.1:4222' }, 'eva-system');

/**
 * A tenant's namespace, ResourceQuota, LimitRange and NetworkPolicy as the operator writes them (its
 * steps' own builders), the namespace without its owner reference (no EvaTenant here to own it).
 */
function tenancyObjects(code: string): KubernetesObject[] {
  const scope = tenantScopeOf(code);
  const namespace = desiredNamespace(scope);
  delete namespace.metadata?.ownerReferences;
  return [namespace, ...desiredQuotaObjects(scope), desiredNetworkPolicy(scope, FLOOR_NETWORK_POLICY)];
}

/**
 * floor: each release a unit (`concurrency` releases in flight), namespaces made before the clock.
 * floor-tenancy: each tenant a unit (`concurrency` tenants in flight, as the operator reconciles them),
 * its namespace, quota, limits and NetworkPolicy applied in the clock before its two releases: what
 * the control plane alone costs for what eva makes of a tenant in Kubernetes, the helm records, the
 * operator's Secrets, the Ingress and the status aside.
 */
async function prepareFloor(settings: RunSettings, withTenancy: boolean): Promise<PreparedSystem> {
  const { codes, concurrency } = settings;
  if (!withTenancy) await applyNamespaces(codes);
  const catalog = images();
  // Rendered before the clock: helm's share is what the floor leaves out.
  const rendered = codes.map((code) => ({ code, releases: MODULES.map((module) => renderRelease(code, module, valuesOf(code, module, catalog))) }));
  const tenants: FloorTenant[] = withTenancy
    ? rendered.map(({ code, releases }) => ({ tenancy: tenancyObjects(code), releases }))
    : rendered.flatMap(({ releases }) => releases.map((release) => ({ tenancy: [], releases: [release] })));
  const deployments = new Set(rendered.flatMap(({ releases }) => releases.flat()).filter((o) => o.kind === 'Deployment').map((o) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`));
  let watch: ReturnType<typeof watchUntilReady> | undefined;
  return {
    processes: () => ({ 'floor client (this process)': process.pid }),
    parentOfChildren: () => undefined,
    start: async () => {
      watch = watchUntilReady('/apis/apps/v1/deployments', deployments, deploymentReady);
      await applyFloor(tenants, concurrency);
    },
    waitReady: () => watch?.done ?? Promise.resolve(deployments.size),
    stop: () => {
      watch?.abort();
      return Promise.resolve();
    },
  };
}

export function prepare(system: SystemName, settings: RunSettings): Promise<PreparedSystem> {
  switch (system) {
    case 'eva':
      return prepareEva(settings);
    case 'eva-helm-default':
      return prepareEva(settings, { helmAtDefault: true });
    case 'eva-cli':
      return prepareEva(settings, { cli: true });
    case 'flux':
      return prepareFlux(settings, false);
    case 'flux-nowait':
      return prepareFlux(settings, true);
    case 'floor':
      return prepareFloor(settings, false);
    case 'floor-tenancy':
      return prepareFloor(settings, true);
  }
}
