/**
 * Serialises the status writes and events of one reconcile, always on the latest resourceVersion. An
 * unchanged status is not written; events are an audit trail, so a failed event write is logged only.
 */
import type { EvaTenant, EvaTenantStatus } from '../api/evatenant.ts';
import { Reason } from '../api/reasons.ts';
import type { ObservedTenant } from '../steps/observed.ts';
import type { Logger } from '../log.ts';
import type { SagaView } from '../saga/conditions.ts';
import type { SagaEmitted } from '../saga/machine.ts';
import { STEP_DESCRIPTORS } from '../steps/registry.ts';
import { buildStatus, sameStatus } from './tenant-status.ts';
import type { TenantStore } from './tenant-store.ts';

/** Reads what status.modules and status.url show; `fresh`: from the API, not the watch caches. */
export type Observe = (fresh: boolean) => Promise<ObservedTenant>;

/** status.modules and status.url as stored, so a write that observes nothing new keeps them. */
function observedPart(status: EvaTenantStatus | undefined): Partial<ObservedTenant> {
  const part: Partial<ObservedTenant> = {};
  if (status?.modules !== undefined) part.modules = status.modules;
  if (status?.url !== undefined) part.url = status.url;
  return part;
}

export class StatusWriter {
  current: EvaTenant;
  becameActiveAfterSeconds: number | undefined;
  private readonly store: TenantStore;
  private readonly log: Logger;
  private pendingEvents: Promise<void> = Promise.resolve();
  private lastProblem: string | undefined;
  private readonly observe: Observe | undefined;
  /** A step ran in this reconcile: the caches may lag behind its writes, so observe from the API. */
  private provisioned = false;

  constructor(store: TenantStore, tenant: EvaTenant, log: Logger, observe?: Observe) {
    this.store = store;
    this.current = tenant;
    this.log = log;
    this.observe = observe;
    const problem = tenant.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'False');
    this.lastProblem = problem?.reason;
  }

  async progress(view: SagaView, persisted: unknown): Promise<void> {
    // The drift check is transient: persisting it would turn every idle check into a write.
    if (view.stage === 'checking') return;
    this.warnOnNewProblem(view);
    const status = { ...buildStatus(this.current, view, persisted, new Date()), ...(await this.observation(view)) };
    if (sameStatus(this.current.status, status)) return;
    await this.write(status);
  }

  /**
   * Observed once the saga rests (not at every step), folded into the write the transition makes
   * anyway; an observation that cannot be read keeps the stored one rather than failing the write.
   */
  private async observation(view: SagaView): Promise<Partial<ObservedTenant>> {
    const kept = observedPart(this.current.status);
    if (view.stage === 'provisioning') this.provisioned = true;
    if (this.observe === undefined || view.stage === 'provisioning') return kept;
    try {
      return await this.observe(this.provisioned);
    } catch (err) {
      this.log.debug({ err }, 'could not observe modules and ingress; status keeps the last observation');
      return kept;
    }
  }

  /** Writes the status unless it is already stored as is (an idle re-check makes no API write). */
  async writeIfChanged(status: EvaTenantStatus): Promise<void> {
    if (!sameStatus(this.current.status, status)) await this.write(status);
  }

  async write(status: EvaTenant['status']): Promise<void> {
    this.current = await this.store.writeStatus(this.current, status ?? {});
  }

  announce(emitted: SagaEmitted): void {
    if (emitted.type === 'StepCompleted') {
      const reason = STEP_DESCRIPTORS[emitted.step].completedEvent;
      if (reason !== null) this.queueEvent('Normal', reason, `step ${emitted.step} complete`);
      return;
    }
    if (emitted.type === 'ProvisioningComplete') {
      const started = this.current.status?.provisioningStartedAt;
      if (started) this.becameActiveAfterSeconds = (Date.now() - Date.parse(started)) / 1000;
    }
    // The saga's own events are named as their reasons in the catalogue.
    this.queueEvent('Normal', Reason[emitted.type], messageOf(emitted.type));
  }

  async event(type: 'Normal' | 'Warning', reason: Reason, message: string): Promise<void> {
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
    // Not while provisioning: a drift report's reason is carried into the repair, and must still be
    // warned about when the repair comes to rest (waiting) on that same reason.
    if (view.stage !== 'provisioning') this.lastProblem = reason;
  }

  private queueEvent(type: 'Normal' | 'Warning', reason: Reason, message: string): void {
    // Events are an audit trail, not state: a failed event write is logged, never fatal.
    this.pendingEvents = this.pendingEvents.then(() =>
      this.store.recordEvent(this.current, type, reason, message).catch((err: unknown) => {
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
