/**
 * Leases on the coordination.k8s.io/v1 API: one Lease as the elector's store (src/runtime/lease-store.ts),
 * every call abortable and every write guarded by the resourceVersion it carries (client-go's
 * resourcelock), and the listing of a namespace's Leases the unserved-tenant reporter reads.
 */
import {
  Observable,
  type ConfigurationOptions,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
  type V1Lease,
} from '@kubernetes/client-node';
import type { LeaseStore } from '../runtime/lease-store.ts';
import { FIELD_MANAGER, isConflict, type Kube, readOptional } from './kube.ts';

/** Per-call options that abort the request with `signal`. */
function abortable(signal: AbortSignal): ConfigurationOptions {
  const middleware: ObservableMiddleware = {
    pre: (request: RequestContext) => {
      request.setSignal(signal);
      return new Observable(Promise.resolve(request));
    },
    post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
  };
  // Appended: the configured middleware must still run.
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

async function unlessConflict(write: () => Promise<V1Lease>): Promise<V1Lease | undefined> {
  try {
    return await write();
  } catch (err) {
    if (isConflict(err)) return undefined;
    throw err;
  }
}

export function kubeLeaseStore(kube: Pick<Kube, 'coordination'>, namespace: string, name: string): LeaseStore {
  const api = kube.coordination;
  return {
    get: (signal) => readOptional(() => api.readNamespacedLease({ name, namespace }, abortable(signal))),
    create: (body, signal) =>
      unlessConflict(() => api.createNamespacedLease({ namespace, body, fieldManager: FIELD_MANAGER }, abortable(signal))),
    replace: (body, signal) =>
      unlessConflict(() => api.replaceNamespacedLease({ name, namespace, body, fieldManager: FIELD_MANAGER }, abortable(signal))),
  };
}

/** Every Lease of `namespace` (one page: a namespace holds a handful of operator Leases). */
export async function listLeases(kube: Pick<Kube, 'coordination'>, namespace: string): Promise<V1Lease[]> {
  return (await kube.coordination.listNamespacedLease({ namespace })).items;
}
