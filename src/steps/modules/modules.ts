/**
 * ModulesDeployed: one Helm release per module of the tenant's tier (release name = module name, in
 * the tenant namespace), from the charts bundled with the operator (bundle/charts.ts).
 *
 * Values: see module-values.ts (the tenant's, checked against the contract, and the operator's). The
 * NATS connection is not a value: the charts mount the Secret eva-nats that step 'account' writes; the
 * values only name it and carry a revision of its credentials, so a rotation rolls every module once.
 * The credentials every module gets are step 'credentials''s Secret, read here and rendered through
 * the tmpfs values file. A hash of chart + values is stored as a release label, so a repeat ensure
 * compares labels and starts no helm process, and verify (the drift check) reads release Secrets'
 * labels and Deployments only. Whether a Deployment serves is module-readiness.ts's to judge; what a
 * release's state calls for is release-state.ts's.
 */
import { Reason } from '../../api/reasons.ts';
import { createHash } from 'node:crypto';
import type { V1Deployment } from '@kubernetes/client-node';
import { LABELS, MANAGED_BY, MODULE_LABEL } from '../../api/constants.ts';
import { RELEASE_HISTORY_MAX } from '../../api/tiers.ts';
import type { ModuleName } from '../../api/modules.ts';
import type { OperatorConfig } from '../../config.ts';
import { type Helm, readReleases, type ReleaseRecord } from '../../adapters/helm.ts';
import { actionFor, isOurs, releaseProblems, releaseState, undesiredReleases, VALUES_HASH_LABEL } from './release-state.ts';
import { checkedRecords, unlockRelease } from './release-records.ts';
import type { Bundle } from '../../bundle/bundle.ts';
import type { Kube } from '../../adapters/kube.ts';
import type { KubeReads } from '../../adapters/tenant-objects.ts';
import { NATS_CREDENTIALS_SECRET, NATS_CREDS_KEY } from '../account.ts';
import { credentialsSecretName, readCredentials } from '../credentials.ts';
import { writeSecretValuesFile } from '../../adapters/secret-values-file.ts';
import { DependencyError, InputError, messageOf, problemOf, type StepError } from '../../errors.ts';
import { type ModuleValues, moduleValues, secretStrings, valuesFileContent, valuesHash } from './module-values.ts';
import { deploymentProblem, deploymentProblems, instanceOf, type Problem, wakingState } from './module-readiness.ts';
import { notReady, READY, type Step, type Verdict, wakeOn } from '../step.ts';
import type { TenantScope } from '../../tenancy/scope.ts';
import { imageReference, withRenderGuard } from '../render-guard/render-guard-run.ts';
import type { RenderGuard } from '../render-guard/render-guard-server.ts';
import { apiValuesSourceBindings, apiValuesSources, type ValuesSourceReads } from '../../adapters/values-sources.ts';
import { loadValuesFrom, retireValuesSources, type ValuesFromByModule, verifyValuesSourcesRetired } from './values-from-sources.ts';

export interface ModuleStepDeps extends Bundle {
  kube: Kube;
  reads: KubeReads;
  helm: Helm;
  config: Pick<OperatorConfig, 'helmSecretsDir' | 'allowNonTmpfsSecrets' | 'moduleOtelEndpoint' | 'leaseNamespace'>;
  /** The render guard the operator serves: every release's render goes through it. */
  renderGuard: RenderGuard;
  /** Where spec.valuesFrom is read: the controller's watch caches; the API server when absent. */
  valuesSources?: ValuesSourceReads;
}

const HELM_TIMEOUT_SECONDS = 120;

function verdictOf(problems: readonly Problem[]): Verdict {
  const first = problems[0];
  if (first === undefined) return READY;
  return notReady(first.reason, problems.map((p) => p.message).join('; '));
}

/** A digest of the modules' NATS credentials (Secret eva-nats), or undefined when there are none yet. */
async function readNatsRevision(reads: KubeReads, scope: TenantScope): Promise<string | undefined> {
  const secret = await reads.get('Secret', scope.namespace, NATS_CREDENTIALS_SECRET);
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

/**
 * spec.valuesFrom as read now (the operator's namespace is POD_NAMESPACE, where its Leases are).
 * `bind`: ensure binds the sources named for the tenant; verify only reads.
 */
const readValuesFrom = (scope: TenantScope, deps: ModuleStepDeps, bind = false): Promise<ValuesFromByModule> =>
  loadValuesFrom(scope, deps.valuesSources ?? apiValuesSources(deps.kube), deps.config.leaseNamespace, bind ? apiValuesSourceBindings(deps.kube) : undefined);

function desiredRelease(module: ModuleName, scope: TenantScope, deps: ModuleStepDeps, secrets: TenantSecrets): DesiredRelease {
  const chart = deps.charts.chart(module);
  const values = moduleValues({ module, scope, deps, ...secrets });
  return { module, chart: chart.path, values, hash: valuesHash(chart.fingerprint, values) };
}

function assertNotShuttingDown(scope: TenantScope): void {
  if (scope.signal.aborted) throw new DependencyError(Reason.ShuttingDown, 'the operator is shutting down; helm was not started');
}

/**
 * Runs helm for a release whose state calls for it (see release-state.ts), once its stored records
 * passed the check (release-records.ts): read from the API server, not the labels the state came
 * from, since helm acts on every record of the name, ours or not. A pending one is unlocked first.
 * In a namespace this pass created (`born`) there is no record to read: the pass's reads found none
 * and nobody else wrote there; helm's install still refuses a name taken meanwhile (retried).
 */
async function ensureRelease(scope: TenantScope, deps: ModuleStepDeps, desired: DesiredRelease, current: ReleaseRecord | undefined, born: boolean): Promise<void> {
  const log = scope.log.child({ module: desired.module });
  assertNotShuttingDown(scope);
  const records = born ? [] : await checkedRecords(deps.kube, { namespace: scope.namespace, release: desired.module });
  const unlocked = await unlockRelease(deps.kube, scope.namespace, records);
  if (unlocked !== undefined) log.warn({ status: unlocked.labels.status, revision: Number(unlocked.labels.version), action: 'unlocked' }, 'recovered a release left pending by an interrupted helm');
  assertNotShuttingDown(scope);
  using file = writeSecretValuesFile(valuesFileContent(desired.values), {
    dir: deps.config.helmSecretsDir,
    allowNonTmpfs: deps.config.allowNonTmpfsSecrets,
    log,
  });
  const started = Date.now();
  // The catalogue's image, not the merged values': helm applies nothing else (steps/render-guard/render-guard.ts).
  const image = imageReference(deps.images.resolveModule(desired.module, scope.tenant.spec.versions?.[desired.module]));
  const policy = { namespace: scope.namespace, release: desired.module, images: [image] };
  const guard = await withRenderGuard(deps.renderGuard, policy, (postRenderer) => deps.helm.upgradeInstall({
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
    historyMax: RELEASE_HISTORY_MAX,
    sensitive: secretStrings(desired.values),
    postRenderer,
    firstInstall: records.length === 0,
  }));
  log.info({ previousRevision: current?.version, ms: Date.now() - started, guardMs: guard?.ms, guardCpuMs: guard?.cpuMs }, current === undefined ? 'module installed' : 'module upgraded');
}

/** Uninstalls a release once its records passed the check: helm deletes what the newest one lists. */
async function uninstallRelease(scope: TenantScope, deps: ModuleStepDeps, release: ReleaseRecord): Promise<void> {
  assertNotShuttingDown(scope);
  await checkedRecords(deps.kube, { namespace: scope.namespace, release: release.name });
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
 * The Deployments' rollout is the controller-manager's: when helm ran, verify judges what it did
 * (in a namespace this pass made, the rollout has only begun: a wait, no reads); when nothing needed
 * helm, ensure judges the Deployments it just read (no second read).
 */
async function ensure(scope: TenantScope, deps: ModuleStepDeps): Promise<Verdict | undefined> {
  const natsRevision = await readNatsRevision(deps.reads, scope);
  if (natsRevision === undefined) throw new DependencyError(Reason.NatsCredentialsMissing, `Secret ${NATS_CREDENTIALS_SECRET} does not exist yet (step account comes first)`);
  const credentials = await readCredentials(deps.reads, scope);
  if (credentials === undefined) throw new DependencyError(Reason.CredentialsMissing, `Secret ${credentialsSecretName(scope.code)} does not exist yet (step credentials comes first)`);
  const secrets = { credentials, natsRevision, valuesFrom: await readValuesFrom(scope, deps, true) };
  const releases = await readReleases(deps.reads, scope.namespace);
  const byName = new Map(releases.map((r) => [r.name, r]));
  const deployments = await listModuleDeployments(deps.reads, scope.namespace);
  const deployed = new Set(deployments.map(instanceOf));
  const desired = new Map<ModuleName, DesiredRelease>();
  const refused: { module: string; run: () => Promise<void> }[] = [];
  for (const module of scope.modules) {
    try {
      desired.set(module, desiredRelease(module, scope, deps, secrets));
    } catch (err) {
      refused.push({ module, run: () => Promise.reject(err instanceof Error ? err : new Error(String(err))) });
    }
  }
  const toEnsure = [...desired.values()].filter((release) => actionFor(releaseState(release.hash, byName.get(release.module), deployed.has(release.module))) !== 'none');
  const toUninstall = undesiredReleases(new Set<string>(scope.modules), releases);
  if (refused.length + toEnsure.length + toUninstall.length === 0) return judgeDeployments(scope, deps.kube, deployments);
  const born = deps.reads.handOver?.(scope.namespace) === true;
  await settleAll([
    ...refused,
    ...toEnsure.map((release) => ({ module: release.module, run: () => ensureRelease(scope, deps, release, byName.get(release.module), born) })),
    ...toUninstall.map((release) => ({ module: release.name, run: () => uninstallRelease(scope, deps, release) })),
  ]);
  // Installed in a namespace this pass made: helm created the Deployments a moment ago and they are
  // not Available yet; verify's five reads would only say so. Their watch (wakeOn) or the poll
  // brings the tenant back, and verify judges then.
  return born ? notReady(Reason.DeploymentProgressing, `${[...desired.keys()].join(', ')}: installed just now, rolling out`) : undefined;
}

// ---- verify / remove ------------------------------------------------------------------------------

const listModuleDeployments = (reads: KubeReads, namespace: string): Promise<V1Deployment[]> => reads.list('Deployment', namespace);

/** Read-only: release Secrets' labels, the two Secrets the values carry, and Deployments; never starts helm. */
async function verify(scope: TenantScope, deps: ModuleStepDeps): Promise<Verdict> {
  const credentials = await readCredentials(deps.reads, scope);
  if (credentials === undefined) return notReady(Reason.CredentialsMissing, `Secret ${credentialsSecretName(scope.code)} does not exist`);
  const natsRevision = await readNatsRevision(deps.reads, scope);
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
  const deployments = await listModuleDeployments(deps.reads, scope.namespace);
  const withDeployment = new Set(deployments.map(instanceOf).filter((name) => name !== undefined));
  const problems = releaseProblems(desired, await readReleases(deps.reads, scope.namespace), withDeployment);
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

/** The releases, and the tenant's bindings to values sources in the operator's namespace (values-from-sources.ts). */
async function remove(scope: TenantScope, deps: ModuleStepDeps): Promise<void> {
  const ours = (await readReleases(deps.reads, scope.namespace)).filter(isOurs);
  const retire = { module: 'spec.valuesFrom', run: () => retireValuesSources(scope, apiValuesSourceBindings(deps.kube), deps.config.leaseNamespace) };
  await settleAll([...ours.map((release) => ({ module: release.name, run: () => uninstallRelease(scope, deps, release) })), retire]);
}

async function verifyRemoved(scope: TenantScope, deps: ModuleStepDeps): Promise<Verdict> {
  const retired = await verifyValuesSourcesRetired(scope, apiValuesSourceBindings(deps.kube), deps.config.leaseNamespace);
  const problems: Problem[] = retired.ready ? [] : [{ reason: retired.reason, message: retired.message }];
  const ours = (await readReleases(deps.reads, scope.namespace)).filter(isOurs);
  if (ours.length > 0) problems.push({ reason: Reason.ReleasesRemain, message: `releases remain: ${ours.map((r) => r.name).join(', ')}` });
  const deployments = await listModuleDeployments(deps.reads, scope.namespace);
  if (deployments.length > 0) {
    problems.push({ reason: Reason.ModuleResourcesRemain, message: `Deployments remain: ${deployments.map((d) => d.metadata?.name ?? '?').join(', ')}` });
  }
  return verdictOf(problems);
}

/** A module Deployment becoming available (the last of the tenant's), failing or changed (module-readiness.ts), or being deleted. */
const deploymentState = wakeOn('Deployment', wakingState, (deployment) => deploymentProblem(deployment) === undefined);

export const modulesStep: Step<ModuleStepDeps> = { name: 'modules', ensure, verify, remove, verifyRemoved, wakeOn: deploymentState };
