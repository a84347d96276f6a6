/**
 * Reconciles one EvaTenant: decide ownership, keep the tenant's metadata (finalizer, owner, wave
 * label) in one patch, then either run the provisioning saga or the decommission saga. Returns what
 * the work queue should do next; errors are mapped by the error policy in one place.
 */
import { MODULES_BY_TIER } from '../api/modules.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { FORCE_DECOMMISSION_ANNOTATION, type Phase } from '../api/constants.ts';
import type { OperatorConfig } from '../config.ts';
import { type Logger, tenantLogger } from '../log.ts';
import type { OperatorMetricsSink } from './metrics-sink.ts';
import { runSaga } from '../saga/driver.ts';
import type { SagaEmitted, SagaEvent } from '../saga/machine.ts';
import type { SagaView } from '../saga/conditions.ts';
import { refreshQueueDepth } from './queue-depth.ts';
import { checkDrift, isWatchedStep, type OperatorDeps, runStep } from '../steps/registry.ts';
import type { TenantScope } from '../steps/step.ts';
import { tenantNamespace } from '../steps/names.ts';
import { decommission, forcedSteps } from './decommission.ts';
import { decideOwnership, removeFinalizer, syncMetadata } from './metadata.ts';
import { buildStatus, persistedSnapshotOf, provisionedSpecChanged, sameStatus } from './tenant-status.ts';
import { type Action, DONE, actionFor } from './actions.ts';

export interface ReconcilerContext {
  deps: OperatorDeps;
  config: OperatorConfig;
  log: Logger;
  metrics: OperatorMetricsSink;
}

const EVENT_OF_STEP: Partial<Record<string, string>> = {
  namespace: 'NamespaceCreated',
  seed: 'SeedLoaded',
  modules: 'ModuleDeployComplete',
  ingress: 'IngressProvisioned',
};

export class TenantReconciler {
  /** Told about each metadata write this reconciler made, so its watch event is not a new reason to reconcile. */
  onOwnWrite: (name: string, resourceVersion: string | undefined) => void = () => undefined;
  private readonly ctx: ReconcilerContext;

  constructor(ctx: ReconcilerContext) {
    this.ctx = ctx;
  }

  async reconcile(name: string, signal: AbortSignal): Promise<Action> {
    const found = await this.ctx.deps.kube.getTenant(name);
    if (!found) return DONE;
    const ownership = decideOwnership(found, this.ctx.config.operatorVersion, this.ctx.config.maxWave);
    if (ownership.kind === 'notMine') return DONE;
    const deleting = found.metadata.deletionTimestamp !== undefined;
    if (ownership.kind === 'release') {
      await syncMetadata(this.ctx.deps.kube, found, { finalizer: !deleting, owner: null });
      this.ctx.log.info({ tenant: found.spec.capsuleCode, to: ownership.to }, 'tenant handed over to the pinned operator version');
      return DONE;
    }
    // Finalizer first, before any side effect; claiming is the same guarded write.
    const tenant = await syncMetadata(this.ctx.deps.kube, found, { finalizer: !deleting, owner: this.ctx.config.operatorVersion });
    if (tenant !== found) this.onOwnWrite(name, tenant.metadata.resourceVersion);
    const scope = this.scopeFor(tenant, signal);
    if (deleting || tenant.spec.lifecycle === 'Decommissioned') return this.decommission(tenant, scope);
    return this.provision(tenant, scope);
  }

  private scopeFor(tenant: EvaTenant, signal: AbortSignal): TenantScope {
    const code = tenant.spec.capsuleCode;
    return {
      tenant,
      code,
      namespace: tenantNamespace(code),
      modules: MODULES_BY_TIER[tenant.spec.tier],
      log: tenantLogger(this.ctx.log, code, tenant.metadata.name),
      signal,
    };
  }

  private async provision(tenant: EvaTenant, scope: TenantScope): Promise<Action> {
    const { deps, metrics } = this.ctx;
    const writer = new StatusWriter(deps, tenant, scope.log);
    const event: SagaEvent = { type: provisionedSpecChanged(tenant) ? 'SPEC_CHANGED' : 'RECONCILE' };
    const result = await runSaga(persistedSnapshotOf(tenant), event, {
      runStep: (step) => runStep(step, scope, deps, { observe: (s, seconds) => { metrics.observeStep(s, tenant.spec.tier, seconds); } }),
      checkDrift: () => checkDrift(scope, deps),
      onProgress: (view, persisted) => writer.progress(view, persisted),
      onEmitted: (emitted) => {
        writer.announce(emitted);
      },
    });
    await writer.flushEvents();
    if (result.view.stage === 'active') {
      if (writer.becameActiveAfterSeconds !== undefined) metrics.observeTimeToActive(tenant.spec.tier, writer.becameActiveAfterSeconds);
      await refreshQueueDepth(scope, deps.nats, metrics);
    }
    return actionFor(result.view, this.ctx.config.driftIntervalSeconds, isWatchedStep);
  }

  private async decommission(tenant: EvaTenant, scope: TenantScope): Promise<Action> {
    const { deps } = this.ctx;
    const writer = new StatusWriter(deps, tenant, scope.log);
    const phaseBefore = tenant.status?.phase;
    if (phaseBefore !== 'Decommissioning' && phaseBefore !== 'Decommissioned') {
      await writer.event('Normal', 'DeprovisionStarted', `decommissioning tenant ${scope.code}`);
    }
    const forced = forcedSteps(tenant.metadata.annotations?.[FORCE_DECOMMISSION_ANNOTATION]);
    await reportForced(writer, forced);
    const result = await decommission(scope, deps, forced.skip);
    if (!result.complete) {
      await writer.write(decommissionStatus(tenant, 'Decommissioning', result.states));
      return { kind: 'backoff' };
    }
    this.ctx.metrics.forgetTenant(scope.code);
    if (phaseBefore !== 'Decommissioned') await writer.event('Normal', 'DeprovisionComplete', `every resource of tenant ${scope.code} is gone`);
    // Deleted: the finalizer comes off last. Kept (lifecycle Decommissioned): the CR stays, empty.
    if (tenant.metadata.deletionTimestamp !== undefined) await removeFinalizer(deps.kube, writer.current);
    else if (phaseBefore !== 'Decommissioned') await writer.write(decommissionStatus(tenant, 'Decommissioned', result.states));
    return DONE;
  }
}

/** Forcing past a step is an exceptional human decision: it is always recorded in an Event. */
async function reportForced(writer: StatusWriter, forced: ReturnType<typeof forcedSteps>): Promise<void> {
  if (forced.skip.size === 0 && forced.unknown.length === 0) return;
  const unknown = forced.unknown.length > 0 ? `; unknown steps ignored: ${forced.unknown.join(', ')}` : '';
  await writer.event('Warning', 'DecommissionForced', `forced past: ${[...forced.skip].join(', ') || 'nothing'}${unknown}`);
}

/** The status of a tenant being (or done being) decommissioned; the saga starts over afterwards. */
function decommissionStatus(tenant: EvaTenant, phase: Phase, states: Record<string, string>): EvaTenant['status'] {
  const status: EvaTenant['status'] = { phase, decommission: states };
  if (tenant.metadata.generation !== undefined) status.observedGeneration = tenant.metadata.generation;
  return status;
}

/** Serialises status writes and events for one reconcile, always on the latest resourceVersion. */
class StatusWriter {
  current: EvaTenant;
  becameActiveAfterSeconds: number | undefined;
  private readonly deps: OperatorDeps;
  private readonly log: Logger;
  private pendingEvents: Promise<void> = Promise.resolve();
  private lastProblem: string | undefined;

  constructor(deps: OperatorDeps, tenant: EvaTenant, log: Logger) {
    this.deps = deps;
    this.current = tenant;
    this.log = log;
    const problem = tenant.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'False');
    this.lastProblem = problem?.reason;
  }

  async progress(view: SagaView, persisted: unknown): Promise<void> {
    // The drift check is transient: persisting it would turn every idle check into a write.
    if (view.stage === 'checking') return;
    this.warnOnNewProblem(view);
    const status = buildStatus(this.current, view, persisted, new Date());
    if (sameStatus(this.current.status, status)) return;
    await this.write(status);
  }

  async write(status: EvaTenant['status']): Promise<void> {
    this.current = await this.deps.kube.writeTenantStatus(this.current, status ?? {});
  }

  announce(emitted: SagaEmitted): void {
    if (emitted.type === 'StepCompleted') {
      const reason = EVENT_OF_STEP[emitted.step];
      if (reason) this.queueEvent('Normal', reason, `step ${emitted.step} complete`);
      return;
    }
    if (emitted.type === 'ProvisioningComplete') {
      const started = this.current.status?.provisioningStartedAt;
      if (started) this.becameActiveAfterSeconds = (Date.now() - Date.parse(started)) / 1000;
    }
    this.queueEvent('Normal', emitted.type, messageOf(emitted.type));
  }

  async event(type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    this.queueEvent(type, reason, message);
    await this.flushEvents();
  }

  async flushEvents(): Promise<void> {
    await this.pendingEvents;
  }

  private warnOnNewProblem(view: SagaView): void {
    const reason = view.problem?.reason;
    if (reason && reason !== this.lastProblem && view.stage !== 'provisioning') {
      const { step = '', message = '', needsUser = false } = view.problem ?? {};
      this.log.warn({ step, reason, needsUser, problem: message }, 'tenant step not done');
      this.queueEvent('Warning', reason, `${step}: ${message}`);
    }
    this.lastProblem = reason;
  }

  private queueEvent(type: 'Normal' | 'Warning', reason: string, message: string): void {
    // Events are an audit trail, not state: a failed event write is logged, never fatal.
    this.pendingEvents = this.pendingEvents.then(() =>
      this.deps.kube.recordEvent(this.current, type, reason, message).catch((err: unknown) => {
        this.log.warn({ err, reason }, 'could not record event');
      }),
    );
  }
}

function messageOf(type: SagaEmitted['type']): string {
  switch (type) {
    case 'ProvisioningStarted':
      return 'provisioning started';
    case 'ModuleDeployStarted':
      return 'installing module releases';
    case 'ProvisioningComplete':
      return 'all five conditions are True; the tenant is Active';
    default:
      return type;
  }
}
