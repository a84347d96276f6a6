/**
 * Where a leader-election Lease is read and written: three calls, so the elector runs against the API
 * (src/adapters/kube-leases.ts) or a store a test controls. A lost race is not an error here, it is
 * `undefined`: the elector keeps waiting.
 */
import type { V1Lease, V1ObjectMeta } from '@kubernetes/client-node';

export interface LeaseStore {
  /** The Lease, or undefined when it does not exist. */
  get(signal: AbortSignal): Promise<V1Lease | undefined>;
  /** Creates the Lease; undefined when it already exists (someone else created it first). */
  create(lease: V1Lease, signal: AbortSignal): Promise<V1Lease | undefined>;
  /** Replaces the Lease; undefined when metadata.resourceVersion is stale (someone else wrote first). */
  replace(lease: V1Lease, signal: AbortSignal): Promise<V1Lease | undefined>;
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
