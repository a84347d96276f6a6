/**
 * What the reconciler has the steps do for a tenant: run one, check all for drift, decommission, and
 * refresh what only the steps' world can tell once a tenant is Active (its queue depth). An interface,
 * so the reconciler is tested with steps that succeed, wait or fail on cue.
 */
import type { Tier } from '../api/constants.ts';
import { type DecommissionResult, decommission } from './decommission.ts';
import { type QueueDepthSink, refreshQueueDepth } from '../steps/queue-depth.ts';
import { checkDrift, isWatchedStep, type OperatorDeps, runStep } from '../steps/registry.ts';
import type { DriftReport, StepName, StepOutcome } from '../steps/step.ts';
import type { TenantScope } from '../tenancy/scope.ts';
import { type ObservedTenant, observeTenant } from '../steps/observed.ts';
import { PassReads } from '../adapters/pass-reads.ts';

export interface TenantSteps {
  runStep(step: StepName, scope: TenantScope): Promise<StepOutcome>;
  checkDrift(scope: TenantScope): Promise<DriftReport>;
  decommission(scope: TenantScope, forced: ReadonlySet<StepName>): Promise<DecommissionResult>;
  afterActive(scope: TenantScope): Promise<void>;
  /** Whether a step waiting on the world is woken by a watch (and can be polled slowly). */
  isWatched(step: StepName): boolean;
  /** status.modules and status.url; `fresh` reads the API, else the watch caches. */
  observe(scope: TenantScope, fresh: boolean): Promise<ObservedTenant>;
}

/** What running the steps records (the operator's metrics, metrics/metrics.ts). */
export interface StepMetrics extends QueueDepthSink {
  observeStep(step: StepName, tier: Tier, seconds: number): void;
}

export function operatorSteps(deps: OperatorDeps, metrics: StepMetrics): TenantSteps {
  // One reconcile pass is one scope (the reconciler makes a scope per pass): its steps share its reads.
  const passes = new WeakMap<TenantScope, OperatorDeps>();
  const passDeps = (scope: TenantScope): OperatorDeps => {
    let pass = passes.get(scope);
    if (pass === undefined) {
      const reads = new PassReads(deps.reads);
      pass = { ...deps, reads, kube: deps.kube.observedBy(reads.remember) };
      passes.set(scope, pass);
    }
    return pass;
  };
  return {
    runStep: (step, scope) =>
      runStep(step, scope, passDeps(scope), {
        observe: (s, seconds) => {
          metrics.observeStep(s, scope.tenant.spec.tier, seconds);
        },
      }),
    checkDrift: (scope) => checkDrift(scope, deps),
    decommission: (scope, forced) => decommission(scope, deps, forced),
    afterActive: async (scope) => {
      await refreshQueueDepth(scope, deps.nats, metrics);
    },
    isWatched: isWatchedStep,
    observe: (scope, fresh) => observeTenant(scope, fresh ? deps.reads : (deps.cachedReads ?? deps.reads)),
  };
}
