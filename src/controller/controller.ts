/**
 * The controller loop: the tenant informer (tenant-informer.ts) feeds tenant names into the work
 * queue; N workers reconcile distinct tenants in parallel; each outcome becomes forget /
 * requeue-after / backoff.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { tenantNamespace } from '../tenancy/names.ts';
import type { WakeOn } from '../steps/step.ts';
import type { Reason } from '../api/reasons.ts';
import { type Action, classifyError, errorPolicy } from './actions.ts';
import type { TenantObjectCache } from '../adapters/tenant-objects.ts';
import type { TenantInformer } from './tenant-informer.ts';
import type { TenantReconciler } from './reconciler.ts';
import type { ValuesFromWatch } from './values-from-watch.ts';
import { subscribeWakeups } from './wakeups.ts';
import { WorkQueue } from '../runtime/workqueue.ts';

export interface ControllerMetrics {
  /** `reason` (from the catalogue) only for an error: a failed step, or an error that escaped the reconcile. */
  observeReconcile(result: 'success' | 'requeue' | 'error', seconds: number, reason?: Reason): void;
  setWorkqueueDepth(depth: number): void;
}

export interface ControllerOptions {
  /** The EvaTenant watch cache: started and stopped with the controller; its events enqueue tenants. */
  tenants: Pick<TenantInformer, 'on' | 'isOwnWrite' | 'start' | 'stop'>;
  /** This operator's version: a tenant pinned elsewhere while we work on it is handed over. */
  operatorVersion: string;
  reconciler: Pick<TenantReconciler, 'reconcile'>;
  concurrency: number;
  log: Logger;
  metrics: ControllerMetrics;
  /** Watch caches of tenant objects: started and stopped with the controller (the drift check reads them). */
  objects: Pick<TenantObjectCache, 'on' | 'start' | 'stop'>;
  /** Objects steps wait on; an event on one reconciles its tenant at once (see wakeups.ts). */
  wakeOn?: readonly WakeOn[];
  /** Secrets and ConfigMaps that spec.valuesFrom reads: a change reconciles the tenants using it. */
  valuesFrom?: ValuesFromWatch;
}

/** What, besides the spec (generation), makes a tenant worth reconciling again. */
function fingerprint(obj: KubernetesObject): string {
  const m = obj.metadata;
  return JSON.stringify([m?.generation, m?.annotations, m?.labels, m?.finalizers, m?.deletionTimestamp]);
}

function isSuspended(obj: KubernetesObject): boolean {
  return (obj as { spec?: { suspend?: unknown } }).spec?.suspend === true;
}

export class Controller {
  readonly queue: WorkQueue;
  private readonly options: ControllerOptions;
  private readonly seen = new Map<string, string>();
  /** Tenant namespace -> EvaTenant names (two when a code is claimed twice), for wake-ups. */
  private readonly tenantsByNamespace = new Map<string, Set<string>>();
  /** Per tenant being reconciled: aborting it stops the saga at the next step boundary. */
  private readonly inFlight = new Map<string, AbortController>();
  /** Changes to a tenant seen while its reconcile ran, judged when that reconcile returns. */
  private readonly changedInFlight = new Map<string, KubernetesObject[]>();
  private synced = false;

  constructor(options: ControllerOptions) {
    this.options = options;
    this.queue = new WorkQueue({
      onDepthChange: (depth) => {
        options.metrics.setWorkqueueDepth(depth);
      },
      onHandlerError: (key, err) => {
        options.log.error({ err, evatenant: key }, 'reconcile handler crashed');
      },
    });
    this.subscribeTenants(options.tenants);
    subscribeWakeups({
      objects: options.objects,
      watches: options.wakeOn ?? [],
      tenantsOfNamespace: (namespace) => [...(this.tenantsByNamespace.get(namespace) ?? [])],
      wake: (name) => {
        this.queue.add(name);
      },
    });
    options.valuesFrom?.subscribe((name) => {
      this.queue.add(name);
    });
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  async start(): Promise<void> {
    await this.options.tenants.start();
    await this.options.objects.start();
    await this.options.valuesFrom?.start();
    this.synced = true;
    void this.queue.run(this.options.concurrency, (key, signal) => this.handle(key, signal));
  }

  /** Stops watching, lets running reconciles finish their current step, and waits for them. */
  async stop(): Promise<void> {
    await Promise.all([this.options.tenants.stop(), this.options.objects.stop(), this.options.valuesFrom?.stop()]);
    await this.queue.shutDown();
  }

  private subscribeTenants(tenants: ControllerOptions['tenants']): void {
    tenants.on('add', (obj) => {
      this.enqueue(obj, true);
    });
    tenants.on('update', (obj) => {
      this.enqueue(obj, false);
    });
    tenants.on('delete', (obj) => {
      const name = obj.metadata?.name;
      if (!name) return;
      this.seen.delete(name);
      for (const names of this.tenantsByNamespace.values()) names.delete(name);
      this.options.valuesFrom?.forgetTenant(name);
    });
  }

  private enqueue(obj: KubernetesObject, always: boolean): void {
    const name = obj.metadata?.name;
    if (!name) return;
    this.rememberNamespace(name, obj);
    const news = this.isNews(name, obj);
    if (!always && !news) return;
    // Pinned to another version while we work on it: finish the running step, persist, hand over.
    // Suspended (spec.suspend) while we work on it: the same, stop at the next step boundary.
    if (this.pinnedElsewhere(obj) || isSuspended(obj)) this.inFlight.get(name)?.abort();
    // The reconcile's own metadata write, its response not back yet (the watch is often first):
    // known for what it is only once the reconcile returns, else a second pass for nothing.
    if (!always && this.inFlight.has(name)) {
      this.changedInFlight.set(name, [...(this.changedInFlight.get(name) ?? []), obj]);
      return;
    }
    this.queue.add(name);
  }

  /**
   * Whether the event changes what a reconcile looks at and is not one of our own writes known as
   * such: our status writes change only status, our metadata writes are noted by resourceVersion.
   */
  private isNews(name: string, obj: KubernetesObject): boolean {
    const print = fingerprint(obj);
    if (this.seen.get(name) === print) return false;
    this.seen.set(name, print);
    return !this.options.tenants.isOwnWrite(obj);
  }

  /** A change seen during the reconcile that was not its own write: the tenant is reconciled again. */
  private requeueIfChangedMeanwhile(key: string): void {
    const changed = this.changedInFlight.get(key) ?? [];
    this.changedInFlight.delete(key);
    if (changed.some((obj) => !this.options.tenants.isOwnWrite(obj))) this.queue.add(key);
  }

  /** Where the tenant's objects are: its namespace, and the objects its spec.valuesFrom reads. */
  private rememberNamespace(name: string, obj: KubernetesObject): void {
    this.options.valuesFrom?.noteTenant(obj);
    const code = (obj as { spec?: { capsuleCode?: unknown } }).spec?.capsuleCode;
    if (typeof code !== 'string') return;
    const namespace = tenantNamespace(code);
    const names = this.tenantsByNamespace.get(namespace) ?? new Set<string>();
    this.tenantsByNamespace.set(namespace, names.add(name));
  }

  private pinnedElsewhere(obj: KubernetesObject): boolean {
    const pin = (obj as { spec?: { operatorVersion?: unknown } }).spec?.operatorVersion;
    return typeof pin === 'string' && pin !== this.options.operatorVersion;
  }

  private async handle(key: string, signal: AbortSignal): Promise<void> {
    const started = performance.now();
    let action: Action;
    const local = new AbortController();
    this.inFlight.set(key, local);
    try {
      action = await this.options.reconciler.reconcile(key, AbortSignal.any([signal, local.signal]));
    } catch (err) {
      action = errorPolicy(err);
      this.options.log[classifyError(err) === 'conflict' ? 'debug' : 'warn']({ err, evatenant: key }, 'reconcile failed; will retry');
    } finally {
      this.inFlight.delete(key);
    }
    const failed = action.kind === 'done' ? undefined : action.failed;
    const result = failed !== undefined ? 'error' : action.kind === 'backoff' ? 'requeue' : 'success';
    this.options.metrics.observeReconcile(result, (performance.now() - started) / 1000, failed);
    this.apply(key, action);
    this.requeueIfChangedMeanwhile(key);
  }

  private apply(key: string, action: Action): void {
    if (action.kind === 'backoff') {
      this.queue.addRateLimited(key);
      return;
    }
    this.queue.forget(key);
    if (action.kind === 'requeue') this.queue.addAfter(key, action.afterMs);
  }
}
