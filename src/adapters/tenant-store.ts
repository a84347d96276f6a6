/**
 * The EvaTenant as the reconciler reads and writes it: five calls, so the reconciler and its status
 * writer can be tested against a store that fails on chosen calls (Flux's storage/failing.go idea).
 * The Kubernetes implementation is the API server through the Kube adapter.
 */
import type { EvaTenant, EvaTenantStatus } from '../api/evatenant.ts';
import type { EventType, JsonPatchOperation, Kube } from './kube.ts';
import type { Reason } from '../api/reasons.ts';

export interface TenantStore {
  /** The tenant, or undefined when it is gone. */
  get(name: string): Promise<EvaTenant | undefined>;
  /** Merge-patches metadata, guarded by the tenant's resourceVersion (a 409 propagates). */
  patchMetadata(tenant: EvaTenant, metadata: Record<string, unknown>): Promise<EvaTenant>;
  /** A JSON patch; `test` operations make it fail if the object moved on. */
  jsonPatch(name: string, operations: JsonPatchOperation[]): Promise<void>;
  /** Replaces the status, guarded by the tenant's resourceVersion (a 409 propagates). */
  writeStatus(tenant: EvaTenant, status: EvaTenantStatus): Promise<EvaTenant>;
  recordEvent(tenant: EvaTenant, type: EventType, reason: Reason, message: string): Promise<void>;
}

export function kubeTenantStore(kube: Kube): TenantStore {
  return {
    get: (name) => kube.getTenant(name),
    patchMetadata: (tenant, metadata) => kube.patchTenantMetadata(tenant, metadata),
    jsonPatch: (name, operations) => kube.jsonPatchTenant(name, operations),
    writeStatus: (tenant, status) => kube.writeTenantStatus(tenant, status),
    recordEvent: (tenant, type, reason, message) => kube.recordEvent(tenant, type, reason, message),
  };
}

/**
 * Reads a tenant from the controller's watch cache when the cache holds exactly the object this
 * process last had from the API server (the same resourceVersion), else from the API. An Active
 * tenant's drift check then costs no GET, and nothing is served stale that the API would not: an
 * object changed since is a newer resourceVersion (read fresh), and its watch event enqueues the
 * tenant anyway. Our own writes' results count as seen, so the cache takes over once it has them.
 */
export function cacheFirstTenantStore(store: TenantStore, cached: (name: string) => EvaTenant | undefined): TenantStore {
  const lastSeen = new Map<string, string>();
  const seen = (tenant: EvaTenant): EvaTenant => {
    if (tenant.metadata.resourceVersion !== undefined) lastSeen.set(tenant.metadata.name, tenant.metadata.resourceVersion);
    return tenant;
  };
  return {
    get: async (name) => {
      const hit = cached(name);
      if (hit !== undefined && hit.metadata.resourceVersion === lastSeen.get(name)) return hit;
      const fresh = await store.get(name);
      if (fresh === undefined) lastSeen.delete(name);
      return fresh === undefined ? undefined : seen(fresh);
    },
    patchMetadata: async (tenant, metadata) => seen(await store.patchMetadata(tenant, metadata)),
    jsonPatch: (name, operations) => store.jsonPatch(name, operations),
    writeStatus: async (tenant, status) => seen(await store.writeStatus(tenant, status)),
    recordEvent: (tenant, type, reason, message) => store.recordEvent(tenant, type, reason, message),
  };
}
