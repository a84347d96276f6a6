/**
 * What each step is, in one descriptor per step (the step itself, the condition it reports, its
 * start and completion Events, its place in the decommission), from which the saga, the status writer and the
 * decommission derive their tables; and the two operations the saga needs from the steps: run one
 * step (ensure, then verify) and check them all for drift (verify only: no write, no helm process).
 * The saga runs the steps in the order of STEP_NAMES (step.ts).
 */
import type { OperatorConfig } from '../config.ts';
import type { Helm } from '../adapters/helm.ts';
import type { Bundle } from '../bundle/bundle.ts';
import type { Kube } from '../adapters/kube.ts';
import type { KubeReads } from '../adapters/tenant-objects.ts';
import type { ValuesSourceReads } from '../adapters/values-sources.ts';
import { accountStep } from './account.ts';
import { alertsStep } from './alerts.ts';
import { credentialsStep } from './credentials.ts';
import { InputError, problemOf, ShutdownError } from '../errors.ts';
import type { ProvisioningCondition } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import { ingressStep } from './ingress/ingress.ts';
import { modulesStep } from './modules/modules.ts';
import { namespaceStep } from './namespace.ts';
import type { NatsAccounts } from '../nats/accounts.ts';
import { networkStep } from './network.ts';
import { quotasStep } from './quotas.ts';
import { recordStep } from './record.ts';
import type { RenderGuard } from './render-guard/render-guard-server.ts';
import { revokeStep } from './revoke.ts';
import { seedStep } from './seed/seed.ts';
import { type DriftReport, type Step, STEP_NAMES, type StepName, type StepOutcome, type Verdict, type WakeOn, withdrawnWhileHibernated } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';
import { streamsStep } from './streams.ts';

/** Everything any step may use; each step declares (and receives) only the part it needs. */
export interface OperatorDeps extends Bundle {
  kube: Kube;
  /** How steps read tenant objects: the API reader (provisioning and decommission must see their own writes). */
  reads: KubeReads;
  /** What the drift check reads instead: the watch caches (adapters/tenant-objects.ts); absent, it reads the API. */
  cachedReads?: KubeReads;
  /** Where spec.valuesFrom is read: the label-selected watch caches (adapters/values-sources.ts). */
  valuesSources?: ValuesSourceReads;
  nats: NatsAccounts;
  helm: Helm;
  renderGuard: RenderGuard;
  config: OperatorConfig;
}

/** The Normal Events a step may announce as the saga enters it (widen this as a step starts announcing). */
export type StepStartedEvent = typeof Reason.ModuleDeployStarted;

/** One step, with everything the layers above need to know about it. */
export interface StepDescriptor {
  /** ensure / verify / remove / verifyRemoved; its `name` is the descriptor's key. */
  readonly step: Step<OperatorDeps>;
  /** The provisioning condition it reports (several steps share one). */
  readonly condition: ProvisioningCondition;
  /** The Normal Event recorded as the saga enters it; null: its start is no news of its own. */
  readonly startedEvent: StepStartedEvent | null;
  /** The Normal Event recorded when it completes; null: its completion is no news of its own. */
  readonly completedEvent: Reason | null;
  /** Its part in the decommission saga; null: it has nothing of its own to remove. */
  readonly decommission: {
    /** Removed in ascending order (spaced by 10, so a new step fits between two). */
    readonly order: number;
    /**
     * Its objects live in the tenant namespace under fixed names: nothing on them says which EvaTenant
     * made them, the namespace does, so they are left alone in a namespace that is not this tenant's.
     */
    readonly inTenantNamespace: boolean;
  } | null;
}

/** Every step has a descriptor, and every descriptor every field: a step that forgets one does not compile. */
export type StepDescriptors = { readonly [Name in StepName]: StepDescriptor };

export const STEP_DESCRIPTORS: StepDescriptors = {
  namespace: { step: namespaceStep, condition: 'NamespaceReady', startedEvent: null, completedEvent: Reason.NamespaceCreated, decommission: { order: 100, inTenantNamespace: false } },
  quotas: { step: quotasStep, condition: 'NamespaceReady', startedEvent: null, completedEvent: null, decommission: { order: 90, inTenantNamespace: true } },
  network: { step: networkStep, condition: 'NamespaceReady', startedEvent: null, completedEvent: null, decommission: { order: 80, inTenantNamespace: true } },
  account: { step: accountStep, condition: 'Provisioned', startedEvent: null, completedEvent: null, decommission: { order: 70, inTenantNamespace: false } },
  streams: { step: streamsStep, condition: 'Provisioned', startedEvent: null, completedEvent: null, decommission: { order: 40, inTenantNamespace: false } },
  alerts: { step: alertsStep, condition: 'Provisioned', startedEvent: null, completedEvent: null, decommission: { order: 60, inTenantNamespace: true } },
  record: { step: recordStep, condition: 'Provisioned', startedEvent: null, completedEvent: null, decommission: { order: 50, inTenantNamespace: false } },
  seed: { step: seedStep, condition: 'SeedLoaded', startedEvent: null, completedEvent: Reason.SeedLoaded, decommission: { order: 30, inTenantNamespace: false } },
  credentials: { step: credentialsStep, condition: 'ModulesDeployed', startedEvent: null, completedEvent: null, decommission: { order: 25, inTenantNamespace: true } },
  modules: { step: modulesStep, condition: 'ModulesDeployed', startedEvent: Reason.ModuleDeployStarted, completedEvent: Reason.ModuleDeployComplete, decommission: { order: 20, inTenantNamespace: true } },
  // Nothing of its own to remove: step 'account' deletes the whole account.
  revoke: { step: revokeStep, condition: 'ModulesDeployed', startedEvent: null, completedEvent: null, decommission: null },
  ingress: { step: withdrawnWhileHibernated(ingressStep), condition: 'IngressReady', startedEvent: null, completedEvent: Reason.IngressProvisioned, decommission: { order: 10, inTenantNamespace: true } },
};

/** The condition a step reports, from its descriptor. */
export const conditionOf = (step: StepName): ProvisioningCondition => STEP_DESCRIPTORS[step].condition;

export const stepOf = (name: StepName): Step<OperatorDeps> => STEP_DESCRIPTORS[name].step;

/** What the controller watches to wake tenants up (see controller/wakeups.ts). */
export const WAKE_ON: readonly WakeOn[] = STEP_NAMES.flatMap((name) => stepOf(name).wakeOn ?? []);

/** Whether a step waiting on the world is woken by a watch (and can be polled slowly). */
export const isWatchedStep = (step: StepName): boolean => stepOf(step).wakeOn !== undefined;

export interface StepTimer {
  observe(step: StepName, seconds: number): void;
}

export async function runStep(step: StepName, scope: TenantScope, deps: OperatorDeps, timer?: StepTimer): Promise<StepOutcome> {
  // Aborted on shutdown, or when the tenant is being handed to another operator version.
  if (scope.signal.aborted) throw new ShutdownError(`stopping at a step boundary; step ${step} not started`);
  const started = performance.now();
  try {
    // An ensure that knows from its own writes needs no second read of the same objects.
    const verdict = (await stepOf(step).ensure(scope, deps)) ?? (await stepOf(step).verify(scope, deps));
    return verdict.ready ? { kind: 'done' } : { kind: 'pending', reason: verdict.reason, message: verdict.message };
  } finally {
    timer?.observe(step, (performance.now() - started) / 1000);
  }
}

async function verifySafely(step: StepName, scope: TenantScope, deps: OperatorDeps): Promise<Verdict | DriftReport> {
  try {
    return await stepOf(step).verify(scope, deps);
  } catch (err) {
    // A refused spec is drift ensure will report; anything else means the check itself could not run.
    const { reason, message } = problemOf(err, Reason.CheckFailed);
    return { inSync: false, step, reason, message, unavailable: !(err instanceof InputError) };
  }
}

/** Read-only: the first step whose world is not right, or in sync. */
export async function checkDrift(scope: TenantScope, deps: OperatorDeps): Promise<DriftReport> {
  // A stale cache can only report drift that is not there: ensure then reads the API and writes nothing.
  const reading = deps.cachedReads === undefined ? deps : { ...deps, reads: deps.cachedReads };
  for (const step of STEP_NAMES) {
    const result = await verifySafely(step, scope, reading);
    if ('inSync' in result) return result;
    if (!result.ready) return { inSync: false, step, reason: result.reason, message: result.message, unavailable: false };
  }
  return { inSync: true };
}
