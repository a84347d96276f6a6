/**
 * Where a leader-election Lease lives: the coordination.k8s.io/v1 API, every call abortable and every
 * write guarded by the resourceVersion it carries (client-go's resourcelock). A lost race is not an
 * error here, it is `undefined`: the elector keeps waiting.
 */
import {
  Observable,
  type ConfigurationOptions,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
  type V1Lease,
  type V1ObjectMeta,
} from '@kubernetes/client-node';
import { FIELD_MANAGER, isConflict, type Kube, readOptional } from './kube.ts';


export interface LeaseStore {
  /** The Lease, or undefined when it does not exist. */
  get(signal: AbortSignal): Promise<V1Lease | undefined>;
  /** Creates the Lease; undefined when it already exists (someone else created it first). */
  create(lease: V1Lease, signal: AbortSignal): Promise<V1Lease | undefined>;
  /** Replaces the Lease; undefined when metadata.resourceVersion is stale (someone else wrote first). */
  replace(lease: V1Lease, signal: AbortSignal): Promise<V1Lease | undefined>;
}

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

/**
 * `store`, with `annotations` set on every Lease it creates or replaces (claims, renewals, the
 * release): how an operator publishes on its Lease what the other operators need to know of it.
 */
export function annotatingLeaseStore(store: LeaseStore, annotations: Readonly<Record<string, string>>): LeaseStore {
  const annotated = (lease: V1Lease): V1Lease => {
    // Copied, not spread: the client's objects are class instances.
    const metadata: V1ObjectMeta = Object.assign({}, lease.metadata);
    metadata.annotations = { ...lease.metadata?.annotations, ...annotations };
    return { apiVersion: lease.apiVersion, kind: lease.kind, metadata, spec: lease.spec };
  };
  return {
    get: (signal) => store.get(signal),
    create: (lease, signal) => store.create(annotated(lease), signal),
    replace: (lease, signal) => store.replace(annotated(lease), signal),
  };
}
