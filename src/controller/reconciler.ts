/**
 * Reconciles one EvaTenant: decide ownership, keep the tenant's metadata (finalizer, owner, wave
 * label) in one patch, then either run the provisioning saga or the decommission saga. Returns what
 * the work queue should do next; errors are mapped by the error policy in one place.
 */
import { MODULES_BY_TIER } from '../api/modules.ts';
import type { EvaTenant, EvaTenantStatus } from '../api/evatenant.ts';
import { FORCE_DECOMMISSION_ANNOTATION, RESTORE_FROM_ANNOTATION } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import type { OperatorConfig } from '../config.ts';
import { type Logger, tenantLogger } from '../log.ts';
import type { OperatorMetricsSink } from './metrics-sink.ts';
import { runSaga } from '../saga/provisioning-driver.ts';
import type { SagaEvent } from '../saga/provisioning-machine.ts';
import { retainsData, type TenantScope } from '../tenancy/scope.ts';
import { tenantNamespace } from '../tenancy/names.ts';
import { type DecommissionResult, FORCED_REMOVE_RAN, forcedSteps } from '../saga/decommission.ts';
import { decideOwnership, type OperatorSelf, ownerValue, removeFinalizer, syncMetadata } from './metadata.ts';
import { StatusWriter } from '../status/status-writer.ts';
import { heldStatus, persistedSnapshotOf, provisionedSpecChanged } from '../status/tenant-status.ts';
import type { TenantSteps } from '../saga/tenant-steps.ts';
import type { TenantStore } from '../adapters/tenant-store.ts';
import { type Action, DONE, actionFor, driftDelayMs } from './actions.ts';

export interface ReconcilerContext {
  tenants: TenantStore;
  steps: TenantSteps;
  config: Pick<OperatorConfig, 'operatorVersion' | 'shard' | 'maxWave' | 'driftIntervalSeconds'>;
  log: Logger;
  metrics: Pick<OperatorMetricsSink, 'observeTimeToActive' | 'forgetTenant'>;
  /** Told about each metadata write this reconciler made, so its watch event is not a new reason to reconcile. */
  onOwnWrite?: (name: string, resourceVersion: string | undefined) => void;
  /** How often, at most, progress between two rests is written (status-writer.ts; tests shorten it). */
  statusProgressIntervalMs?: number;
}

export class TenantReconciler {
  private readonly ctx: ReconcilerContext;

  private readonly self: OperatorSelf;

  constructor(ctx: ReconcilerContext) {
    this.ctx = ctx;
    this.self = { version: ctx.config.operatorVersion, shard: ctx.config.shard };
  }

  async reconcile(name: string, signal: AbortSignal): Promise<Action> {
    const found = await this.ctx.tenants.get(name);
    if (!found) return DONE;
    const ownership = decideOwnership(found, this.self, this.ctx.config.maxWave);
    if (ownership.kind === 'notMine') return DONE;
    // Suspended: not even the tenant's own metadata is written (no claim, no finalizer, no hand-over).
    if (found.spec.suspend === true) return this.suspended(found, this.scopeFor(found, signal));
    const deleting = found.metadata.deletionTimestamp !== undefined;
    if (ownership.kind === 'release') {
      await syncMetadata(this.ctx.tenants, found, { finalizer: !deleting, owner: null });
      this.ctx.log.info({ tenant: found.spec.capsuleCode, to: ownership.to }, 'tenant handed over');
      return DONE;
    }
    // Finalizer first, before any side effect; claiming is the same guarded write.
    const tenant = await syncMetadata(this.ctx.tenants, found, { finalizer: !deleting, owner: ownerValue(this.self) });
    if (tenant !== found) this.ctx.onOwnWrite?.(name, tenant.metadata.resourceVersion);
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
    const { steps, metrics } = this.ctx;
    const writer = new StatusWriter(this.ctx.tenants, tenant, scope.log, {
      observe: (fresh) => steps.observe(scope, fresh),
      ...(this.ctx.statusProgressIntervalMs === undefined ? {} : { progressIntervalMs: this.ctx.statusProgressIntervalMs }),
    });
    const event: SagaEvent = { type: provisionedSpecChanged(tenant) ? 'SPEC_CHANGED' : 'RECONCILE' };
    let result: Awaited<ReturnType<typeof runSaga>>;
    try {
      result = await runSaga(persistedSnapshotOf(tenant), event, {
        runStep: (step) => {
          writer.assertWritable();
          return steps.runStep(step, scope);
        },
        checkDrift: () => steps.checkDrift(scope),
        onProgress: (view, persisted) => writer.progress(view, persisted),
        onEmitted: (emitted) => {
          writer.announce(emitted);
        },
      });
    } finally {
      await writer.settle();
    }
    await writer.flushEvents();
    if (result.view.stage === 'active') {
      if (writer.becameActiveAfterSeconds !== undefined) metrics.observeTimeToActive(tenant.spec.tier, writer.becameActiveAfterSeconds);
      await steps.afterActive(scope);
    }
    const drift = { intervalSeconds: this.ctx.config.driftIntervalSeconds, key: tenant.metadata.uid ?? tenant.metadata.name };
    return actionFor(result.view, drift, (step) => steps.isWatched(step), writer.waitedMs(result.view));
  }

  /**
   * spec.suspend (Flux's suspend): nothing the tenant owns is written (objects, releases, NATS), and
   * a deletion waits. Drift is still observed (the drift check only reads) and shown in one status
   * write when it changes, so a user sees what a resume will repair.
   */
  private async suspended(tenant: EvaTenant, scope: TenantScope): Promise<Action> {
    const writer = new StatusWriter(this.ctx.tenants, tenant, scope.log);
    const drift = await this.ctx.steps.checkDrift(scope);
    const observed = drift.inSync ? 'no drift observed' : `drift observed, not repaired: ${drift.step}: ${drift.reason}: ${drift.message}`;
    const deleting = tenant.metadata.deletionTimestamp === undefined ? '' : '; the deletion waits until then';
    const message = `spec.suspend is true: the operator changes nothing for this tenant; set it to false to resume${deleting}; ${observed}`;
    await writer.writeIfChanged(heldStatus(tenant, { kind: 'suspended', message }, new Date()));
    return { kind: 'requeue', afterMs: driftDelayMs({ intervalSeconds: this.ctx.config.driftIntervalSeconds, key: tenant.metadata.uid ?? tenant.metadata.name }) };
  }

  private async decommission(tenant: EvaTenant, scope: TenantScope): Promise<Action> {
    const writer = new StatusWriter(this.ctx.tenants, tenant, scope.log);
    const phaseBefore = tenant.status?.phase;
    if (phaseBefore !== 'Decommissioning' && phaseBefore !== 'Decommissioned') {
      await writer.event('Normal', Reason.DeprovisionStarted, `decommissioning tenant ${scope.code}`);
    }
    const forced = forcedSteps(tenant.metadata.annotations?.[FORCE_DECOMMISSION_ANNOTATION]);
    const result = await this.ctx.steps.decommission(scope, forced.steps);
    await reportForced(writer, forced, result);
    if (!result.complete) {
      await writer.writeIfChanged(decommissionStatus(tenant, 'Decommissioning', result.states));
      return { kind: 'backoff' };
    }
    this.ctx.metrics.forgetTenant(scope.code);
    if (phaseBefore !== 'Decommissioned') await writer.event('Normal', Reason.DeprovisionComplete, completeMessage(scope, result));
    // Deleted: the finalizer comes off last. Kept (lifecycle Decommissioned): the CR stays, empty.
    if (tenant.metadata.deletionTimestamp !== undefined) await removeFinalizer(this.ctx.tenants, writer.current);
    else if (phaseBefore !== 'Decommissioned') await writer.write(decommissionStatus(tenant, 'Decommissioned', result.states));
    return DONE;
  }
}

/** What DeprovisionComplete says; with retained data, how to get it back (the uid is the key to it). */
function completeMessage(scope: TenantScope, result: DecommissionResult): string {
  const unverified = Object.keys(result.forced);
  // A tenant refused for a code in use held nothing: say so, never "every resource of <code> is gone".
  if (result.namespaceOfAnother) return `tenant ${scope.tenant.metadata.name} is decommissioned: capsule code ${scope.code}'s namespace belongs to another EvaTenant and was left untouched, as was every NATS object not in this tenant's custody; what this one made of its own is gone`;
  if (unverified.length > 0) return `tenant ${scope.code} is decommissioned; forced past the verification of ${unverified.join(', ')} (see the ${Reason.DecommissionForced} event): residue is possible there`;
  if (!retainsData(scope)) return `every resource of tenant ${scope.code} is gone`;
  const uid = scope.tenant.metadata.uid ?? '';
  return `tenant ${scope.code} is decommissioned; its NATS account (disabled), streams and seed bucket are retained: restore with an EvaTenant of capsule code ${scope.code} annotated ${RESTORE_FROM_ANNOTATION}=${uid} (docs/lifecycle.md)`;
}

/**
 * Forcing past a step is an exceptional human decision: it is always recorded in an Event, with what
 * each forced step's remove reported (its verification was skipped).
 */
async function reportForced(writer: StatusWriter, forced: ReturnType<typeof forcedSteps>, result: DecommissionResult): Promise<void> {
  if (forced.steps.size === 0 && forced.unknown.length === 0) return;
  const reports = Object.entries(result.forced).map(([step, report]) => `${step} (${report === FORCED_REMOVE_RAN ? report : `remove failed: ${report}`})`);
  const unknown = forced.unknown.length > 0 ? `; unknown steps ignored: ${forced.unknown.join(', ')}` : '';
  await writer.event('Warning', Reason.DecommissionForced, `forced past the verification of: ${reports.join(', ') || 'nothing'}${unknown}`);
}

/**
 * The status of a tenant being (or done being) decommissioned; the saga starts over afterwards.
 * Ready says whether the decommission the spec (or the deletion) asks for is done.
 */
function decommissionStatus(tenant: EvaTenant, phase: 'Decommissioning' | 'Decommissioned', states: Record<string, string>): EvaTenantStatus {
  const pending = Object.entries(states).filter(([, state]) => state !== 'Removed' && state !== 'Retained').map(([step, state]) => `${step}: ${state}`);
  const standing = phase === 'Decommissioned' ? { kind: 'decommissioned' as const, dataRetained: tenant.spec.dataRetention === 'Retain' } : { kind: 'decommissioning' as const, pending };
  return heldStatus(tenant, standing, new Date(), { phase, decommission: states });
}
