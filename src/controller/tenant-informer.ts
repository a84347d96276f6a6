/**
 * The EvaTenant watch cache (client-go's shared informer for the operator's own kind): built before
 * the reconciler and the controller, which both use it, so operator.ts wires them in dependency order.
 * It answers reads of tenants from the cache, remembers the resourceVersions the reconciler's own
 * metadata writes produced (their watch events are no reason to reconcile), and keeps the count of
 * tenants by phase and by owning operator version as events arrive (eva_tenants{phase},
 * eva_tenants_by_operator_version{version}). A watch that fails is restarted, which re-lists.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { GROUP, OWNER_ANNOTATION, PLURAL, VERSION } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { parseEvaTenant } from '../api/parse.ts';
import { type CachingInformer, restartingInformer } from '../runtime/informers.ts';
import type { CacheEvent } from '../adapters/tenant-objects.ts';
import type { Kube } from '../adapters/kube.ts';
import type { Logger } from '../log.ts';

export type TenantHandler = (obj: KubernetesObject) => void;

export interface TenantInformerOptions {
  kube: Pick<Kube, 'config' | 'custom'>;
  log: Logger;
  /** Told the count of tenants by status.phase whenever it changes. */
  onPhaseCounts?: (counts: Readonly<Record<string, number>>) => void;
  /** Told the count of owned tenants by the version of their owner whenever it changes. */
  onVersionCounts?: (counts: Readonly<Record<string, number>>) => void;
}

/** An object the API server accepted but we cannot read is reported by its reconcile, not here. */
function parsedOrNothing(obj: KubernetesObject): EvaTenant | undefined {
  try {
    return parseEvaTenant(obj);
  } catch {
    return undefined;
  }
}

/** A tenant without a phase has not been reconciled yet: Requested. */
function storedPhase(obj: KubernetesObject): string {
  const status = (obj as { status?: { phase?: unknown } }).status;
  return typeof status?.phase === 'string' ? status.phase : 'Requested';
}

/** The operator version its owner annotation names (`version` or `version/shard`); none while no operator owns it. */
export function ownerVersion(obj: KubernetesObject): string | undefined {
  const owner = obj.metadata?.annotations?.[OWNER_ANNOTATION];
  return owner === undefined || owner === '' ? undefined : owner.split('/')[0];
}

/**
 * Each tenant's value of one key (its phase, its owner's version) and how many tenants have each
 * value, kept as events arrive (no pass over the cache per event). A tenant without a value is not counted.
 */
export class TenantCounts {
  private readonly values = new Map<string, string>();
  private readonly counts: Record<string, number> = {};

  /** Returns whether the counts changed. */
  set(name: string, value: string | undefined): boolean {
    const before = this.values.get(name);
    if (before === value) return false;
    if (before !== undefined) this.counts[before] = (this.counts[before] ?? 1) - 1;
    if (value === undefined) this.values.delete(name);
    else {
      this.values.set(name, value);
      this.counts[value] = (this.counts[value] ?? 0) + 1;
    }
    return true;
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries(Object.entries(this.counts).filter(([, count]) => count > 0));
  }
}

export class TenantInformer {
  private readonly options: TenantInformerOptions;
  private informer: CachingInformer<KubernetesObject> | undefined;
  private readonly handlers: { event: CacheEvent; handler: TenantHandler }[] = [];
  /** resourceVersions our own metadata writes produced, by tenant name. */
  private readonly ownWrites = new Map<string, string>();
  private readonly phases = new TenantCounts();
  private readonly versions = new TenantCounts();
  private stopped = false;

  constructor(options: TenantInformerOptions) {
    this.options = options;
  }

  /** Subscribes before start: the initial list arrives as 'add' events. */
  on(event: CacheEvent, handler: TenantHandler): void {
    this.handlers.push({ event, handler });
  }

  async start(): Promise<void> {
    const { kube, log } = this.options;
    this.stopped = false;
    const informer = restartingInformer<KubernetesObject>({
      config: kube.config,
      path: `/apis/${GROUP}/${VERSION}/${PLURAL}`,
      list: () => kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL }),
      log,
      stopping: () => this.stopped,
    });
    // The bookkeeping first, so handlers see it up to date.
    informer.on('add', (obj) => {
      this.count(obj, true);
    });
    informer.on('update', (obj) => {
      this.count(obj, true);
    });
    informer.on('delete', (obj) => {
      this.count(obj, false);
      const name = obj.metadata?.name;
      if (name !== undefined) this.ownWrites.delete(name);
    });
    for (const { event, handler } of this.handlers) informer.on(event, handler);
    this.informer = informer;
    await informer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer?.stop();
  }

  /** The tenant as the cache holds it, if it is there and parses (no API call). */
  cachedTenant(name: string): EvaTenant | undefined {
    const obj = this.informer?.get(name);
    return obj === undefined ? undefined : parsedOrNothing(obj);
  }

  /** Every tenant in the cache that parses (no API call). */
  cachedTenants(): EvaTenant[] {
    return (this.informer?.list() ?? []).map(parsedOrNothing).filter((t) => t !== undefined);
  }

  /** The reconciler wrote this tenant's metadata (finalizer, owner, wave label) itself. */
  noteOwnWrite(name: string, resourceVersion: string | undefined): void {
    if (resourceVersion) this.ownWrites.set(name, resourceVersion);
  }

  /** Whether this object is the result of one of our own metadata writes. */
  isOwnWrite(obj: KubernetesObject): boolean {
    const name = obj.metadata?.name;
    const version = obj.metadata?.resourceVersion;
    return name !== undefined && version !== undefined && this.ownWrites.get(name) === version;
  }

  private count(obj: KubernetesObject, present: boolean): void {
    const name = obj.metadata?.name;
    if (name === undefined) return;
    if (this.phases.set(name, present ? storedPhase(obj) : undefined)) this.options.onPhaseCounts?.(this.phases.snapshot());
    if (this.versions.set(name, present ? ownerVersion(obj) : undefined)) this.options.onVersionCounts?.(this.versions.snapshot());
  }
}
