/**
 * Serialises the status writes and events of one reconcile, always on the latest resourceVersion. An
 * unchanged status is not written, nor a retry taking up the condition the stored status shows False;
 * events are an audit trail, so a failed event write is logged only.
 *
 * Cadence: a rest (waiting, failed, interrupted, active, degraded) is written at once, and so is the
 * first sign of work (a new phase or generation: kstatus reads Reconciling from it). While steps run
 * otherwise, progress is written when the saga has not moved on for an interval (a step that hangs
 * shows within it), and while it keeps moving, at least every three intervals; the latest view each
 * time, and a tenant that reaches its rest sooner writes the rest alone. Skipping a progress write is
 * safe: the snapshot stored before it resumes at an earlier step, and every step is idempotent.
 */
import type { EvaTenant, EvaTenantStatus } from '../api/evatenant.ts';
import { Reason, ROLLOUT_PROGRESS } from '../api/reasons.ts';
import { ShutdownError } from '../errors.ts';
import type { ObservedTenant } from '../steps/observed.ts';
import type { Logger } from '../log.ts';
import type { SagaView } from '../saga/view.ts';
import type { SagaEmitted } from '../saga/provisioning-machine.ts';
import { conditionOf, STEP_DESCRIPTORS } from '../steps/registry.ts';
import { buildStatus, sameStatus } from './tenant-status.ts';
import type { TenantStore } from '../adapters/tenant-store.ts';

/** Reads what status.modules and status.url show; `fresh`: from the API, not the watch caches. */
export type Observe = (fresh: boolean) => Promise<ObservedTenant>;

/** status.modules and status.url as stored, so a write that observes nothing new keeps them. */
function observedPart(status: EvaTenantStatus | undefined): Partial<ObservedTenant> {
  const part: Partial<ObservedTenant> = {};
  if (status?.modules !== undefined) part.modules = status.modules;
  if (status?.url !== undefined) part.url = status.url;
  return part;
}

/**
 * How long the saga may stay on one step before its progress is written (see the header). A new
 * tenant's first pass takes a few seconds, steps of a fraction of a second each: at 2 s, written once
 * per interval, progress was a write just before the rest, one in three; on one core, where the pass
 * takes 6-9 s, the 5 s interval still wrote it for nine new tenants in ten (bench:peers).
 */
export const PROGRESS_WRITE_INTERVAL_MS = 5_000;

/** Progress of a saga that keeps moving is written at least this many intervals apart. */
const STEADY_PROGRESS_INTERVALS = 3;

export interface StatusWriterOptions {
  /** Reads status.modules and status.url at a rest; absent, the stored ones are kept. */
  observe?: Observe;
  /** PROGRESS_WRITE_INTERVAL_MS unless a test says otherwise (0: every condition's progress is written). */
  progressIntervalMs?: number;
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
  private readonly progressIntervalMs: number;
  /** The reconcile's start counts as a write: progress in its first interval waits for the rest. */
  private lastWriteAt = performance.now();
  /** Progress held back by the cadence, written when its timer fires unless newer news comes first. */
  private deferred: NodeJS.Timeout | undefined;
  private writes: Promise<void> = Promise.resolve();
  private deferredFailure: Error | undefined;
  /**
   * The last status built for a write, written or held back: the next one starts from it, so a
   * condition's transition time and elapsed seconds say when the saga got there, not when it was written.
   */
  private latestBuilt: EvaTenantStatus | undefined;

  constructor(store: TenantStore, tenant: EvaTenant, log: Logger, options: StatusWriterOptions = {}) {
    this.store = store;
    this.current = tenant;
    this.log = log;
    this.observe = options.observe;
    this.progressIntervalMs = options.progressIntervalMs ?? PROGRESS_WRITE_INTERVAL_MS;
    const problem = tenant.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'False');
    this.lastProblem = problem?.reason;
  }

  async progress(view: SagaView, persisted: unknown): Promise<void> {
    // The drift check is transient: persisting it would turn every idle check into a write.
    if (view.stage === 'checking') return;
    this.cancelDeferred();
    this.throwDeferredFailure();
    this.warnOnNewProblem(view);
    const base = this.latestBuilt === undefined ? this.current : { ...this.current, status: this.latestBuilt };
    const status = { ...buildStatus(base, view, persisted, new Date()), ...(await this.observation(view)) };
    if (sameStatus(this.current.status, status) || takesUpStoredProblem(this.current.status, view, status)) return;
    this.latestBuilt = status;
    const holdFor = view.stage === 'provisioning' && !isNews(this.current.status, status) ? this.progressHoldMs() : 0;
    if (holdFor > 0) this.defer(status, holdFor);
    else await this.write(status);
  }

  /** Ends the reconcile's writing: progress still held back is dropped (a rest came after it), in-flight writes finish. */
  async settle(): Promise<void> {
    this.cancelDeferred();
    await this.writes;
    this.throwDeferredFailure();
  }

  /** Until the saga has stayed on this step for an interval, or steady progress is due (see the header). */
  private progressHoldMs(): number {
    const steadyDue = this.lastWriteAt + STEADY_PROGRESS_INTERVALS * this.progressIntervalMs - performance.now();
    return Math.min(this.progressIntervalMs, steadyDue);
  }

  private defer(status: EvaTenantStatus, delayMs: number): void {
    this.deferred = setTimeout(() => {
      this.deferred = undefined;
      this.write(status).catch((err: unknown) => {
        // Raised at the next step boundary: no further side effect starts on a status that could not be written.
        this.deferredFailure ??= err instanceof Error ? err : new Error('status write failed', { cause: err });
      });
    }, delayMs);
  }

  private cancelDeferred(): void {
    clearTimeout(this.deferred);
    this.deferred = undefined;
  }

  /**
   * Before each step: a held-back write that was refused stops the saga at once (it rests interrupted,
   * and the refusal itself is raised at that rest), as a refused write at a condition's start does.
   */
  assertWritable(): void {
    if (this.deferredFailure !== undefined) throw new ShutdownError('status could not be persisted');
  }

  private throwDeferredFailure(): void {
    const failure = this.deferredFailure;
    this.deferredFailure = undefined;
    if (failure !== undefined) throw failure;
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
      // A wait is on objects the caches watch: their next change wakes the tenant and is observed then,
      // so the caches, at most a watch event behind, serve it, once they hold what helm made. The
      // rest that ends a run in which a step ran is read from the API.
      if (view.stage === 'waiting') {
        const cached = await this.observe(false);
        if (showsEveryRelease(cached)) return cached;
      }
      return await this.observe(this.provisioned);
    } catch (err) {
      this.log.debug({ err }, 'could not observe modules and ingress; status keeps the last observation');
      return kept;
    }
  }

  /** How long the waiting step's condition has been False as stored (0 when the tenant is not waiting). */
  waitedMs(view: SagaView, now = Date.now()): number {
    if (view.stage !== 'waiting' || view.problem === undefined) return 0;
    const type = conditionOf(view.problem.step);
    const condition = this.current.status?.conditions?.find((c) => c.type === type && c.status === 'False');
    const since = condition === undefined ? Number.NaN : Date.parse(condition.lastTransitionTime);
    return Number.isNaN(since) ? 0 : Math.max(0, now - since);
  }

  /** Writes the status unless it is already stored as is (an idle re-check makes no API write). */
  async writeIfChanged(status: EvaTenantStatus): Promise<void> {
    if (!sameStatus(this.current.status, status)) await this.write(status);
  }

  async write(status: EvaTenant['status']): Promise<void> {
    const written = this.writes.then(async () => {
      this.current = await this.store.writeStatus(this.current, status ?? {});
      this.lastWriteAt = performance.now();
    });
    this.writes = written.catch(() => undefined);
    await written;
  }

  announce(emitted: SagaEmitted): void {
    // A new tenant's story is ProvisioningStarted and ProvisioningComplete (its conditions show each
    // step): an Event per step would be a write per step saying what the status says. On a tenant
    // that was Active, a step redone (a change applied, drift repaired) is news.
    if ('wasActive' in emitted && !emitted.wasActive) return;
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
    this.queueEvent('Normal', Reason[emitted.type], sagaEventMessage(emitted.type, this.becameActiveAfterSeconds));
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
      if (isRolloutProgress(view, reason)) {
        this.log.debug({ step, reason, problem: message }, 'tenant step waits on its rollout');
      } else {
        this.log.warn({ step, reason, needsUser, problem: message }, 'tenant step not done');
        this.queueEvent('Warning', reason, `${step}: ${message}`);
      }
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

/** A wait every rollout passes through, while the tenant is brought up or a change is applied (not drift). */
function isRolloutProgress(view: SagaView, reason: Reason): boolean {
  return ROLLOUT_PROGRESS.has(reason) && (!view.wasActive || view.updating === true);
}

/** A new phase or generation: the first sign of work (or of a spec change being applied) is written at once. */
function isNews(stored: EvaTenantStatus | undefined, status: EvaTenantStatus): boolean {
  return stored?.phase !== status.phase || stored?.observedGeneration !== status.observedGeneration;
}

/** Every module shows its release (values digest) and its Deployment (chart version): the caches have seen helm's work. */
function showsEveryRelease(observed: ObservedTenant): boolean {
  return Object.values(observed.modules).every((module) => module.valuesDigest !== undefined && module.chartVersion !== undefined);
}

/**
 * A step of the condition the stored status shows False (waiting or failed there), taken up again in
 * the same phase and generation: no news. Written, it would flip the condition to Progressing and,
 * when the step still waits or fails the same way, back again on every retry (two writes saying
 * nothing). The next rest or the next condition is written; a crash meanwhile resumes at the stored
 * rest's step, which idempotent steps make safe.
 */
function takesUpStoredProblem(stored: EvaTenantStatus | undefined, view: SagaView, status: EvaTenantStatus): boolean {
  if (view.stage !== 'provisioning' || view.currentStep === undefined || stored === undefined) return false;
  if (stored.phase !== status.phase || stored.observedGeneration !== status.observedGeneration) return false;
  const condition = conditionOf(view.currentStep);
  return stored.conditions?.some((c) => c.type === condition && c.status === 'False') === true;
}

function sagaEventMessage(type: SagaEmitted['type'], activeAfterSeconds: number | undefined): string {
  switch (type) {
    case 'ProvisioningStarted':
      return 'provisioning started';
    case 'ModuleDeployStarted':
      return 'installing module releases';
    case 'ProvisioningComplete':
      return `all five conditions are True; the tenant is Active${activeAfterSeconds === undefined ? '' : ` ${activeAfterSeconds.toFixed(1)} s after provisioning started`}`;
    default:
      return type;
  }
}
