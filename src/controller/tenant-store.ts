/**
 * The EvaTenant as the reconciler reads and writes it: five calls, so the reconciler and its status
 * writer can be tested against a store that fails on chosen calls (Flux's storage/failing.go idea).
 * The Kubernetes implementation is the API server through the Kube adapter.
 */
import type { EvaTenant, EvaTenantStatus } from '../api/evatenant.ts';
import type { EventType, JsonPatchOperation, Kube } from '../adapters/kube.ts';

export interface TenantStore {
  /** The tenant, or undefined when it is gone. */
  get(name: string): Promise<EvaTenant | undefined>;
  /** Merge-patches metadata, guarded by the tenant's resourceVersion (a 409 propagates). */
  patchMetadata(tenant: EvaTenant, metadata: Record<string, unknown>): Promise<EvaTenant>;
  /** A JSON patch; `test` operations make it fail if the object moved on. */
  jsonPatch(name: string, operations: JsonPatchOperation[]): Promise<void>;
  /** Replaces the status, guarded by the tenant's resourceVersion (a 409 propagates). */
  writeStatus(tenant: EvaTenant, status: EvaTenantStatus): Promise<EvaTenant>;
  recordEvent(tenant: EvaTenant, type: EventType, reason: string, message: string): Promise<void>;
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
