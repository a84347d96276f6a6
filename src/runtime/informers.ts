/**
 * Informers that stay up: client-node's informer stops on a watch error (e.g. 410 Gone once its
 * resourceVersion expired); restarting it re-lists, so nothing is missed.
 */
import { type Informer, type KubeConfig, type KubernetesListObject, type KubernetesObject, makeInformer, type ObjectCache } from '@kubernetes/client-node';
import type { Logger } from '../log.ts';

export type CachingInformer<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

export interface InformerOptions<T extends KubernetesObject> {
  config: KubeConfig;
  /** The collection, e.g. /apis/apps/v1/deployments. */
  path: string;
  list: () => Promise<KubernetesListObject<T>>;
  labelSelector?: string;
  log: Logger;
  /** True once the owner is stopping: the watch ending then is expected, not restarted. */
  stopping: () => boolean;
  /**
   * Shrinks each object as it enters the cache (client-node has no transform hook: the cache holds
   * the very object its first handler receives, so this runs before any other handler).
   */
  trim?: (obj: T) => void;
}

const WATCH_RESTART_MS = 2_000;

export function restartingInformer<T extends KubernetesObject>(options: InformerOptions<T>): CachingInformer<T> {
  const informer = makeInformer<T>(options.config, options.path, options.list, options.labelSelector);
  const { trim } = options;
  if (trim !== undefined) {
    informer.on('add', trim);
    informer.on('update', trim);
  }
  informer.on('error', (err: unknown) => {
    if (options.stopping()) return;
    options.log.warn({ err, path: options.path }, 'watch failed; re-listing');
    setTimeout(() => {
      if (options.stopping()) return;
      informer.start().catch((e: unknown) => {
        options.log.error({ err: e, path: options.path }, 'could not restart the watch');
      });
    }, WATCH_RESTART_MS).unref();
  });
  return informer;
}

/**
 * One restarting informer per kind, started together and stopped together; a kind's cache answers
 * only once its informer has synced (the owner falls back to the API before that). Both watch caches
 * (tenant-objects.ts, values-sources.ts) keep their informers here.
 */
export class InformerSet<Kind extends string> {
  private readonly informers = new Map<Kind, CachingInformer<KubernetesObject>>();
  private readonly syncedKinds = new Set<Kind>();
  private stopped = false;

  /** `build` makes (and subscribes) one kind's informer; it stops restarting once `stopping` says so. */
  private readonly kinds: readonly Kind[];
  private readonly build: (kind: Kind, stopping: () => boolean) => CachingInformer<KubernetesObject>;

  constructor(kinds: readonly Kind[], build: (kind: Kind, stopping: () => boolean) => CachingInformer<KubernetesObject>) {
    this.kinds = kinds;
    this.build = build;
  }

  async start(): Promise<void> {
    this.stopped = false;
    await Promise.all(
      this.kinds.map(async (kind) => {
        const informer = this.build(kind, () => this.stopped);
        this.informers.set(kind, informer);
        await informer.start();
        this.syncedKinds.add(kind);
      }),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.informers.values()].map((informer) => informer.stop()));
    this.informers.clear();
    this.syncedKinds.clear();
  }

  /** The kind's informer once it has synced; undefined before. */
  syncedInformer(kind: Kind): CachingInformer<KubernetesObject> | undefined {
    return this.syncedKinds.has(kind) ? this.informers.get(kind) : undefined;
  }
}
