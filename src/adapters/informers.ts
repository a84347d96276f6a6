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
