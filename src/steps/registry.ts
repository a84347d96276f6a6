/**
 * The steps in saga order, and the two operations the saga needs from them: run one step (ensure,
 * then verify) and check them all for drift (verify only: no write, no helm process).
 */
import type { OperatorConfig } from '../config.ts';
import type { Helm } from '../adapters/helm.ts';
import type { ImageCatalog } from '../adapters/images.ts';
import type { Kube } from '../adapters/kube.ts';
import type { KubeReads } from '../adapters/tenant-objects.ts';
import type { ValuesSourceReads } from '../adapters/values-sources.ts';
import { accountStep } from './account.ts';
import { alertsStep } from './alerts.ts';
import { InputError, problemOf, ShutdownError } from '../errors.ts';
import { Reason } from '../api/reasons.ts';
import { ingressStep } from './ingress.ts';
import { modulesStep } from './modules.ts';
import { namespaceStep } from './namespace.ts';
import type { NatsAccounts } from '../nats/accounts.ts';
import { networkStep } from './network.ts';
import { quotasStep } from './quotas.ts';
import { recordStep } from './record.ts';
import { revokeStep } from './revoke.ts';
import { seedStep } from './seed.ts';
import { type DriftReport, type Step, STEP_NAMES, type StepName, type StepOutcome, type Verdict, type WakeOn, withdrawnWhileHibernated } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';
import { streamsStep } from './streams.ts';

/** Everything any step may use; each step declares (and receives) only the part it needs. */
export interface OperatorDeps {
  kube: Kube;
  /** What the drift check reads instead of the API server: the watch caches (adapters/tenant-objects.ts). */
  driftReads?: KubeReads;
  /** Where spec.valuesFrom is read: the label-selected watch caches (adapters/values-sources.ts). */
  valuesSources?: ValuesSourceReads;
  nats: NatsAccounts;
  helm: Helm;
  images: ImageCatalog;
  config: OperatorConfig;
  seedsBasePath: string;
}

export const STEPS: Readonly<Record<StepName, Step<OperatorDeps>>> = {
  namespace: namespaceStep,
  quotas: quotasStep,
  network: networkStep,
  account: accountStep,
  streams: streamsStep,
  alerts: alertsStep,
  record: recordStep,
  seed: seedStep,
  modules: modulesStep,
  revoke: revokeStep,
  ingress: withdrawnWhileHibernated(ingressStep),
};

/** What the controller watches to wake tenants up (see controller/wakeups.ts). */
export const WAKE_ON: readonly WakeOn[] = STEP_NAMES.flatMap((name) => STEPS[name].wakeOn ?? []);

/** Whether a step waiting on the world is woken by a watch (and can be polled slowly). */
export const isWatchedStep = (step: StepName): boolean => STEPS[step].wakeOn !== undefined;

export interface StepTimer {
  observe(step: StepName, seconds: number): void;
}

export async function runStep(step: StepName, scope: TenantScope, deps: OperatorDeps, timer?: StepTimer): Promise<StepOutcome> {
  // Aborted on shutdown, or when the tenant is being handed to another operator version.
  if (scope.signal.aborted) throw new ShutdownError(`stopping at a step boundary; step ${step} not started`);
  const started = performance.now();
  try {
    // An ensure that knows from its own writes needs no second read of the same objects.
    const verdict = (await STEPS[step].ensure(scope, deps)) ?? (await STEPS[step].verify(scope, deps));
    return verdict.ready ? { kind: 'done' } : { kind: 'pending', reason: verdict.reason, message: verdict.message };
  } finally {
    timer?.observe(step, (performance.now() - started) / 1000);
  }
}

async function verifySafely(step: StepName, scope: TenantScope, deps: OperatorDeps): Promise<Verdict | DriftReport> {
  try {
    return await STEPS[step].verify(scope, deps);
  } catch (err) {
    // A refused spec is drift ensure will report; anything else means the check itself could not run.
    const { reason, message } = problemOf(err, Reason.CheckFailed);
    return { inSync: false, step, reason, message, unavailable: !(err instanceof InputError) };
  }
}

/** Read-only: the first step whose world is not right, or in sync. */
export async function checkDrift(scope: TenantScope, deps: OperatorDeps): Promise<DriftReport> {
  // A stale cache can only report drift that is not there: ensure then reads the API and writes nothing.
  const reading = deps.driftReads === undefined ? deps : { ...deps, kube: deps.kube.withReads(deps.driftReads) };
  for (const step of STEP_NAMES) {
    const result = await verifySafely(step, scope, reading);
    if ('inSync' in result) return result;
    if (!result.ready) return { inSync: false, step, reason: result.reason, message: result.message, unavailable: false };
  }
  return { inSync: true };
}
