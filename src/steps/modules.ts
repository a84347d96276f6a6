/**
 * ModulesDeployed: one Helm release per module of the tenant's tier (release name = module name, in
 * the tenant namespace), from the charts bundled under <chartBasePath>/modules/<module>.
 *
 * Values: see module-values.ts (the tenant's, checked against the contract, and the operator's). The
 * NATS connection is not a value: the charts mount the Secret eva-nats that step 'account' writes; the
 * values only name it and carry a revision of its credentials, so a rotation rolls every module once.
 * A hash of chart + values is stored as a release label, so a repeat ensure compares labels and starts
 * no helm process, and verify (the drift check) reads release Secrets' labels and Deployments only.
 */
import { Reason } from '../api/reasons.ts';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Deployment, V1Pod, V1Secret } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { LABELS, MANAGED_BY, MODULE_LABEL } from '../api/constants.ts';
import { isModuleName, type ModuleName } from '../api/modules.ts';
import type { OperatorConfig } from '../config.ts';
import { type Helm, readReleases, type ReleaseRecord } from '../adapters/helm.ts';
import { actionFor, problemFor, recoverPendingRelease, type ReleaseState, releaseState, VALUES_HASH_LABEL } from './release-state.ts';
import type { ImageCatalog } from '../adapters/images.ts';
import { FIELD_MANAGER, isConflict, isNotFound, type Kube } from '../adapters/kube.ts';
import { NATS_CREDENTIALS_SECRET, NATS_CREDS_KEY } from './account.ts';
import { writeSecretValuesFile } from '../adapters/secret-values-file.ts';
import { DependencyError, InputError, messageOf, problemOf, type StepError } from '../errors.ts';
import { type ModuleValues, moduleValues, secretStrings, valuesFileContent, valuesHash } from './module-values.ts';
import { notReady, READY, type Step, type Verdict, wakeOn } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';
import { imageReference, withRenderGuard } from './render-guard-run.ts';
import { apiValuesSources, type ValuesSourceReads } from '../adapters/values-sources.ts';
import { loadValuesFrom, type ValuesFromByModule } from './values-from.ts';

export interface ModuleStepDeps {
  kube: Kube;
  helm: Helm;
  images: ImageCatalog;
  config: Pick<
    OperatorConfig,
    'chartBasePath' | 'seedsBasePath' | 'helmSecretsDir' | 'allowNonTmpfsSecrets' | 'moduleOtelEndpoint' | 'renderGuard' | 'leaseNamespace'
  >;
  /** Where spec.valuesFrom is read: the controller's watch caches; the API server when absent. */
  valuesSources?: ValuesSourceReads;
}

/** The credentials every module of the tenant gets (EVA_CREDENTIAL_<NAME> in the containers). */
const CREDENTIAL_KEYS = ['db-password', 'api-key', 'jwt-secret'] as const;
const HELM_TIMEOUT_SECONDS = 120;

export const credentialsSecretName = (code: string): string => `eva-${code.toLowerCase()}-credentials`;

type Problem = { reason: Reason; message: string };
type DeploymentCondition = NonNullable<NonNullable<V1Deployment['status']>['conditions']>[number];

/** Pods the ReplicaSet could not create (a quota, a LimitRange, Pod Security) or a stalled rollout. */
function conditionProblem(name: string, conditions: readonly DeploymentCondition[]): Problem | undefined {
  const failure = conditions.find((c) => c.type === 'ReplicaFailure' && c.status === 'True');
  if (failure !== undefined) {
    const message = `${name}: ${failure.message ?? failure.reason ?? 'cannot create pods'}`;
    return { reason: message.includes('exceeded quota') ? Reason.QuotaExceeded : Reason.ReplicaFailure, message };
  }
  const progressing = conditions.find((c) => c.type === 'Progressing');
  if (progressing?.reason !== 'ProgressDeadlineExceeded') return undefined;
  return { reason: Reason.DeploymentStalled, message: `${name}: ${progressing.message ?? 'progress deadline exceeded'}` };
}

/** The controller has seen the current spec and every wanted replica runs the current template. */
function rolloutProblem(name: string, deployment: V1Deployment): Problem | undefined {
  const { metadata, spec, status } = deployment;
  if ((status?.observedGeneration ?? 0) < (metadata?.generation ?? 0)) {
    return { reason: Reason.DeploymentProgressing, message: `${name}: the new spec is not observed yet` };
  }
  const wanted = spec?.replicas ?? 1;
  const updated = status?.updatedReplicas ?? 0;
  if (updated < wanted) return { reason: Reason.DeploymentProgressing, message: `${name}: ${updated}/${wanted} replicas updated` };
  return oldReplicasProblem(name, status, updated);
}

/**
 * Old pods still serving while the new ones do not start (e.g. their image cannot be pulled): the
 * Deployment stays Available, yet the rollout has not finished.
 */
function oldReplicasProblem(name: string, status: V1Deployment['status'], updated: number): Problem | undefined {
  const total = status?.replicas ?? 0;
  if (total <= updated) return undefined;
  return { reason: Reason.DeploymentProgressing, message: `${name}: ${total - updated} old replica(s) still running, ${updated} updated` };
}

/** Why a release's Deployment is not serving yet, or undefined when it is. */
export function deploymentProblem(deployment: V1Deployment): Problem | undefined {
  const name = deployment.metadata?.name ?? '?';
  const conditions = deployment.status?.conditions ?? [];
  const problem = conditionProblem(name, conditions) ?? rolloutProblem(name, deployment);
  if (problem !== undefined) return problem;
  const available = conditions.find((c) => c.type === 'Available');
  if (available?.status === 'True') return undefined;
  return { reason: Reason.DeploymentUnavailable, message: `${name}: ${available?.message ?? 'not available yet'}` };
}

/** What is wrong with the releases against the desired hashes (in module order), if anything. */
export function releaseProblems(
  desired: ReadonlyMap<ModuleName, string>,
  releases: readonly ReleaseRecord[],
  withDeployment: ReadonlySet<string>,
): Problem[] {
  const byName = new Map(releases.map((r) => [r.name, r]));
  const problems: Problem[] = [];
  for (const [module, hash] of desired) {
    const problem = problemFor(module, releaseState(hash, byName.get(module), withDeployment.has(module)));
    if (problem !== undefined) problems.push(problem);
  }
  for (const release of undesiredReleases(desired, releases)) {
    problems.push({ reason: Reason.UndesiredRelease, message: `${release.name} is installed but not part of the tier` });
  }
  return problems;
}

/** Releases this operator installed for modules the tenant no longer has (e.g. after a tier downgrade). */
export function undesiredReleases(desired: ReadonlyMap<ModuleName, string> | ReadonlySet<string>, releases: readonly ReleaseRecord[]): ReleaseRecord[] {
  return releases.filter((r) => isOurs(r) && !desired.has(r.name as ModuleName));
}

const isOurs = (release: ReleaseRecord): boolean =>
  release.labels[LABELS.managedBy] === MANAGED_BY && isModuleName(release.name);

function verdictOf(problems: readonly Problem[]): Verdict {
  const first = problems[0];
  if (first === undefined) return READY;
  return notReady(first.reason, problems.map((p) => p.message).join('; '));
}

// ---- chart fingerprint ----------------------------------------------------------------------------

export const chartPath = (chartBasePath: string, module: ModuleName): string => join(chartBasePath, 'modules', module);

/**
 * Chart version plus a digest of every file in the chart folder: an operator upgrade that ships a
 * changed chart under the same version still upgrades its releases.
 */
export function chartFingerprint(dir: string): string {
  let version: unknown;
  try {
    version = (parseYaml(readFileSync(join(dir, 'Chart.yaml'), 'utf8')) as { version?: unknown } | null)?.version;
  } catch (err) {
    throw new DependencyError(Reason.ChartMissing, `cannot read the module chart at ${dir}: ${(err as Error).message}`, { cause: err });
  }
  const files = (readdirSync(dir, { recursive: true }) as string[]).filter((f) => statSync(join(dir, f)).isFile()).sort();
  const digest = createHash('sha256');
  for (const file of files) digest.update(file).update('\0').update(readFileSync(join(dir, file))).update('\0');
  return `${String(version)}+${digest.digest('hex').slice(0, 16)}`;
}

// ---- credentials ----------------------------------------------------------------------------------

/** The shape createNamespacedSecret sends; a plain interface because the client's V1Secret is a class. */
interface SecretBody {
  apiVersion: 'v1';
  kind: 'Secret';
  type: 'Opaque';
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  stringData: Record<string, string>;
}

function credentialsSecret(scope: TenantScope): SecretBody {
  // 24 random bytes = 192 bits, URL-safe base64: no character needs quoting in YAML, env or URLs.
  const data = Object.fromEntries(CREDENTIAL_KEYS.map((key) => [key, randomBytes(24).toString('base64url')]));
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: credentialsSecretName(scope.code),
      namespace: scope.namespace,
      labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.capsuleCode]: scope.code },
    },
    stringData: data,
  };
}

function decodeSecret(secret: V1Secret): Record<string, string> {
  return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

async function readCredentials(kube: Kube, scope: TenantScope): Promise<Record<string, string> | undefined> {
  const secret = await kube.reads.get('Secret', scope.namespace, credentialsSecretName(scope.code));
  return secret === undefined ? undefined : decodeSecret(secret);
}

/** The tenant's credentials: generated once; an existing Secret (possibly rotated by hand) is never replaced. */
async function ensureCredentials(kube: Kube, scope: TenantScope): Promise<Record<string, string>> {
  const existing = await readCredentials(kube, scope);
  if (existing !== undefined) return existing;
  try {
    // Create, not apply: a lost race must keep the winner's values, never overwrite them.
    const body = credentialsSecret(scope);
    await kube.objects.create(body, undefined, undefined, FIELD_MANAGER);
    scope.log.info({ credentialsSecretName: credentialsSecretName(scope.code) }, 'module credentials generated');
    return body.stringData;
  } catch (err) {
    if (!isConflict(err)) throw err;
    const winner = await readCredentials(kube, scope);
    if (winner === undefined) throw err;
    return winner;
  }
}

/** A digest of the modules' NATS credentials (Secret eva-nats), or undefined when there are none yet. */
async function readNatsRevision(kube: Kube, scope: TenantScope): Promise<string | undefined> {
  const secret = await kube.reads.get('Secret', scope.namespace, NATS_CREDENTIALS_SECRET);
  const creds = secret?.data?.[NATS_CREDS_KEY];
  return creds === undefined ? undefined : createHash('sha256').update(creds).digest('hex').slice(0, 16);
}

// ---- ensure ---------------------------------------------------------------------------------------

interface DesiredRelease {
  module: ModuleName;
  chart: string;
  values: ModuleValues;
  hash: string;
}

/** What every release of the tenant is rendered with besides the spec: the two Secrets' contents, and spec.valuesFrom's objects. */
interface TenantSecrets {
  credentials: Record<string, string>;
  natsRevision: string;
  valuesFrom: ValuesFromByModule;
}

/** spec.valuesFrom as read now (the operator's namespace is POD_NAMESPACE, where its Leases are). */
const readValuesFrom = (scope: TenantScope, deps: ModuleStepDeps): Promise<ValuesFromByModule> =>
  loadValuesFrom(scope, deps.valuesSources ?? apiValuesSources(deps.kube), deps.config.leaseNamespace);

function desiredRelease(module: ModuleName, scope: TenantScope, deps: ModuleStepDeps, secrets: TenantSecrets): DesiredRelease {
  const chart = chartPath(deps.config.chartBasePath, module);
  const values = moduleValues({ module, scope, deps, ...secrets });
  return { module, chart, values, hash: valuesHash(chartFingerprint(chart), values) };
}

function assertNotShuttingDown(scope: TenantScope): void {
  if (scope.signal.aborted) throw new DependencyError(Reason.ShuttingDown, 'the operator is shutting down; helm was not started');
}

/** Runs helm for a release whose state calls for it (see release-state.ts). */
async function ensureRelease(scope: TenantScope, deps: ModuleStepDeps, desired: DesiredRelease, current: ReleaseRecord | undefined, state: ReleaseState): Promise<void> {
  const log = scope.log.child({ module: desired.module });
  if (actionFor(state) === 'unlock-then-upgrade' && current !== undefined) {
    assertNotShuttingDown(scope);
    const recovery = await recoverPendingRelease(deps.helm, scope.namespace, current);
    log.warn({ status: current.status, revision: current.version, action: recovery }, 'recovered a release left pending by an interrupted helm');
  }
  assertNotShuttingDown(scope);
  using file = writeSecretValuesFile(valuesFileContent(desired.values), {
    dir: deps.config.helmSecretsDir,
    allowNonTmpfs: deps.config.allowNonTmpfsSecrets,
    log,
  });
  const started = Date.now();
  // The catalogue's image, not the merged values': helm applies nothing else (steps/render-guard.ts).
  const image = imageReference(deps.images.resolveModule(desired.module, scope.tenant.spec.versions?.[desired.module]));
  const policy = { namespace: scope.namespace, release: desired.module, images: [image] };
  const guard = await withRenderGuard(deps.config.renderGuard, policy, (postRenderer) => deps.helm.upgradeInstall({
    release: desired.module,
    namespace: scope.namespace,
    chart: desired.chart,
    valuesFiles: [file.path],
    labels: {
      [LABELS.managedBy]: MANAGED_BY,
      [LABELS.capsuleCode]: scope.code,
      [MODULE_LABEL]: desired.module,
      [VALUES_HASH_LABEL]: desired.hash,
    },
    timeoutSeconds: HELM_TIMEOUT_SECONDS,
    sensitive: secretStrings(desired.values),
    postRenderer,
  }));
  log.info({ previousRevision: current?.version, ms: Date.now() - started, guardMs: guard?.ms, guardCpuMs: guard?.cpuMs }, current === undefined ? 'module installed' : 'module upgraded');
}

async function uninstallRelease(scope: TenantScope, deps: ModuleStepDeps, release: ReleaseRecord): Promise<void> {
  assertNotShuttingDown(scope);
  await deps.helm.uninstall(release.name, scope.namespace, { timeoutSeconds: HELM_TIMEOUT_SECONDS });
  scope.log.info({ module: release.name, revision: release.version }, 'module uninstalled');
}

/**
 * One error for several modules: the first InputError wins (the tenant must act, so its message must
 * surface), else the first failure; the message names every module that failed.
 */
export function combineFailures(failures: readonly { module: string; error: unknown }[]): StepError | undefined {
  const lead = failures.find((f) => f.error instanceof InputError) ?? failures[0];
  if (lead === undefined) return undefined;
  const message = failures.map((f) => `${f.module}: ${messageOf(f.error)}`).join('; ');
  const { reason, needsUser } = problemOf(lead.error, Reason.ModuleDeployFailed);
  return needsUser
    ? new InputError(reason, message, { cause: lead.error })
    : new DependencyError(reason, message, { cause: lead.error });
}

async function settleAll(jobs: readonly { module: string; run: () => Promise<void> }[]): Promise<void> {
  const results = await Promise.allSettled(jobs.map((job) => job.run()));
  const failures = results.flatMap((r, i) => (r.status === 'rejected' ? [{ module: jobs[i]?.module ?? '?', error: r.reason as unknown }] : []));
  const error = combineFailures(failures);
  if (error !== undefined) throw error;
}

/**
 * The Deployments' rollout is the controller-manager's: when helm ran, verify judges what it did;
 * when nothing needed helm, ensure judges the Deployments it just read (no second read).
 */
async function ensure(scope: TenantScope, deps: ModuleStepDeps): Promise<Verdict | undefined> {
  const natsRevision = await readNatsRevision(deps.kube, scope);
  if (natsRevision === undefined) throw new DependencyError(Reason.NatsCredentialsMissing, `Secret ${NATS_CREDENTIALS_SECRET} does not exist yet (step account comes first)`);
  const secrets = { credentials: await ensureCredentials(deps.kube, scope), natsRevision, valuesFrom: await readValuesFrom(scope, deps) };
  const releases = await readReleases(deps.kube, scope.namespace);
  const byName = new Map(releases.map((r) => [r.name, r]));
  const deployments = await listModuleDeployments(deps.kube, scope.namespace);
  const deployed = new Set(deployments.map(instanceOf));
  const desired = new Map<ModuleName, DesiredRelease>();
  const jobs: { module: string; run: () => Promise<void> }[] = [];
  for (const module of scope.modules) {
    try {
      desired.set(module, desiredRelease(module, scope, deps, secrets));
    } catch (err) {
      jobs.push({ module, run: () => Promise.reject(err instanceof Error ? err : new Error(String(err))) });
    }
  }
  for (const release of desired.values()) {
    const state = releaseState(release.hash, byName.get(release.module), deployed.has(release.module));
    if (actionFor(state) === 'none') continue;
    jobs.push({ module: release.module, run: () => ensureRelease(scope, deps, release, byName.get(release.module), state) });
  }
  for (const release of undesiredReleases(new Set<string>(scope.modules), releases)) {
    jobs.push({ module: release.name, run: () => uninstallRelease(scope, deps, release) });
  }
  if (jobs.length === 0) return judgeDeployments(scope, deps.kube, deployments);
  await settleAll(jobs);
  return undefined;
}

// ---- verify / remove ------------------------------------------------------------------------------

const listModuleDeployments = (kube: Kube, namespace: string): Promise<V1Deployment[]> => kube.reads.list('Deployment', namespace);

/** The release a module Deployment belongs to. */
function instanceOf(deployment: V1Deployment): string | undefined {
  return deployment.metadata?.labels?.['app.kubernetes.io/instance'];
}

/** The kubelet's waiting reasons that mean "this image cannot be had" (not "still pulling"). */
const IMAGE_PULL_FAILURES = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull']);

/**
 * A pod of the module whose container (init containers included) waits on an image it cannot pull:
 * the Deployment only says "unavailable"; this says why, naming the image.
 */
export function imagePullProblem(name: string, pods: readonly V1Pod[]): Problem | undefined {
  for (const pod of pods) {
    const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
    const stuck = statuses.find((c) => IMAGE_PULL_FAILURES.has(c.state?.waiting?.reason ?? ''));
    if (stuck === undefined) continue;
    const waiting = stuck.state?.waiting;
    return { reason: Reason.ImagePullFailed, message: `${name}: image ${stuck.image} cannot be pulled (${waiting?.reason ?? ''}${waiting?.message ? `: ${waiting.message}` : ''})` };
  }
  return undefined;
}

/** Why the modules' Deployments are not serving yet (a missing one is the release's state: Drifted). */
function deploymentProblems(deployments: readonly V1Deployment[], modules: readonly ModuleName[], pods: readonly V1Pod[]): Problem[] {
  const problems: Problem[] = [];
  for (const module of modules) {
    for (const deployment of deployments.filter((d) => instanceOf(d) === module)) {
      const problem = deploymentProblem(deployment);
      if (problem === undefined) continue;
      const ownPods = pods.filter((p) => p.metadata?.labels?.['app.kubernetes.io/instance'] === module);
      problems.push(problem.reason === Reason.QuotaExceeded ? problem : (imagePullProblem(problem.message.split(':')[0] ?? module, ownPods) ?? problem));
    }
  }
  // Quota first: it will not fix itself, and it is the message the tenant's owner needs.
  return problems.sort((a, b) => Number(b.reason === Reason.QuotaExceeded) - Number(a.reason === Reason.QuotaExceeded));
}

/** Read-only: release Secrets' labels, the credentials Secret and Deployments; never starts helm. */
async function verify(scope: TenantScope, deps: ModuleStepDeps): Promise<Verdict> {
  const credentials = await readCredentials(deps.kube, scope);
  if (credentials === undefined) return notReady(Reason.CredentialsMissing, `Secret ${credentialsSecretName(scope.code)} does not exist`);
  const natsRevision = await readNatsRevision(deps.kube, scope);
  if (natsRevision === undefined) return notReady(Reason.NatsCredentialsMissing, `Secret ${NATS_CREDENTIALS_SECRET} does not exist`);
  const valuesFrom = await readValuesFrom(scope, deps);
  const desired = new Map<ModuleName, string>();
  for (const module of scope.modules) {
    try {
      desired.set(module, desiredRelease(module, scope, deps, { credentials, natsRevision, valuesFrom }).hash);
    } catch (err) {
      // A spec ensure would refuse (unknown version pin, helmValues outside the contract) is a verdict, not a crash.
      if (err instanceof InputError) return notReady(err.reason, `${module}: ${err.message}`);
      throw err;
    }
  }
  const deployments = await listModuleDeployments(deps.kube, scope.namespace);
  const withDeployment = new Set(deployments.map(instanceOf).filter((name) => name !== undefined));
  const problems = releaseProblems(desired, await readReleases(deps.kube, scope.namespace), withDeployment);
  if (problems.length > 0) return verdictOf(problems);
  return judgeDeployments(scope, deps.kube, deployments);
}

/** The releases are as wanted: whether their Deployments serve (the pods say why not, e.g. an image pull). */
async function judgeDeployments(scope: TenantScope, kube: Kube, deployments: readonly V1Deployment[]): Promise<Verdict> {
  const pods = deployments.some((d) => deploymentProblem(d) !== undefined)
    ? (await kube.core.listNamespacedPod({ namespace: scope.namespace, labelSelector: MODULE_LABEL })).items
    : [];
  return verdictOf(deploymentProblems(deployments, scope.modules, pods));
}

async function remove(scope: TenantScope, deps: ModuleStepDeps): Promise<void> {
  const ours = (await readReleases(deps.kube, scope.namespace)).filter(isOurs);
  await settleAll(ours.map((release) => ({ module: release.name, run: () => uninstallRelease(scope, deps, release) })));
  try {
    await deps.kube.core.deleteNamespacedSecret({ name: credentialsSecretName(scope.code), namespace: scope.namespace });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

async function verifyRemoved(scope: TenantScope, deps: ModuleStepDeps): Promise<Verdict> {
  const problems: Problem[] = [];
  const ours = (await readReleases(deps.kube, scope.namespace)).filter(isOurs);
  if (ours.length > 0) problems.push({ reason: Reason.ReleasesRemain, message: `releases remain: ${ours.map((r) => r.name).join(', ')}` });
  const deployments = await listModuleDeployments(deps.kube, scope.namespace);
  if (deployments.length > 0) {
    problems.push({ reason: Reason.ModuleResourcesRemain, message: `Deployments remain: ${deployments.map((d) => d.metadata?.name ?? '?').join(', ')}` });
  }
  if ((await readCredentials(deps.kube, scope)) !== undefined) {
    problems.push({ reason: Reason.CredentialsRemain, message: `Secret ${credentialsSecretName(scope.code)} still exists` });
  }
  return verdictOf(problems);
}

/** A module Deployment becoming available (or failing, e.g. on quota), or being deleted. */
const deploymentState = wakeOn('Deployment', (deployment) => JSON.stringify([deployment.metadata?.generation, deploymentProblem(deployment)?.reason ?? 'Available']));

export const modulesStep: Step<ModuleStepDeps> = { name: 'modules', ensure, verify, remove, verifyRemoved, wakeOn: deploymentState };
