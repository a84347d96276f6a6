/**
 * TenantStores for unit tests: one in memory that keeps the API server's rules that matter here
 * (resourceVersion preconditions answer 409; a JSON patch `test` that fails answers 422), and one that
 * wraps any store and fails chosen calls (Flux's storage/failing.go idea).
 */
import { ApiException } from '@kubernetes/client-node';
import type { EvaTenant, EvaTenantStatus } from '../../src/api/evatenant.ts';
import type { EventType, JsonPatchOperation } from '../../src/adapters/kube.ts';
import type { Reason } from '../../src/api/reasons.ts';
import type { TenantStore } from '../../src/adapters/tenant-store.ts';

export interface RecordedEvent {
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
}

type Call = keyof TenantStore;

const conflict = (name: string): ApiException<string> => new ApiException(409, 'Conflict', `the object ${name} has been modified`, {});

export class MemoryTenantStore implements TenantStore {
  readonly events: RecordedEvent[] = [];
  /** Every write, in order: "patchMetadata", "writeStatus:<phase>", "jsonPatch". */
  readonly writes: string[] = [];
  private readonly tenants = new Map<string, EvaTenant>();
  private version = 0;

  /** Puts a tenant in (as kubectl apply would), with a fresh resourceVersion; returns it. */
  put(tenant: EvaTenant): EvaTenant {
    const stored = structuredClone({ ...tenant, metadata: { ...tenant.metadata, resourceVersion: String(++this.version) } });
    this.tenants.set(tenant.metadata.name, stored);
    return structuredClone(stored);
  }

  /** Gone from the API server (as after the last finalizer came off). */
  delete(name: string): void {
    this.tenants.delete(name);
  }

  peek(name: string): EvaTenant | undefined {
    const tenant = this.tenants.get(name);
    return tenant && structuredClone(tenant);
  }

  get(name: string): Promise<EvaTenant | undefined> {
    return Promise.resolve(this.peek(name));
  }

  patchMetadata(tenant: EvaTenant, metadata: Record<string, unknown>): Promise<EvaTenant> {
    const current = this.current(tenant);
    const patch = metadata as { finalizers?: string[]; annotations?: Record<string, string | null>; labels?: Record<string, string> };
    // A merge patch: null removes the key.
    const merged = { ...current.metadata.annotations, ...patch.annotations };
    const annotations = Object.fromEntries(Object.entries(merged).filter((entry): entry is [string, string] => entry[1] !== null));
    this.writes.push('patchMetadata');
    return Promise.resolve(
      this.put({
        ...current,
        metadata: {
          ...current.metadata,
          ...(patch.finalizers ? { finalizers: patch.finalizers } : {}),
          annotations,
          labels: { ...current.metadata.labels, ...patch.labels },
        },
      }),
    );
  }

  jsonPatch(name: string, operations: JsonPatchOperation[]): Promise<void> {
    const current = this.tenants.get(name);
    if (!current) return Promise.reject(new ApiException(404, 'Not Found', name, {}));
    const finalizers = [...(current.metadata.finalizers ?? [])];
    for (const op of operations) {
      const index = Number(/^\/metadata\/finalizers\/(\d+)$/.exec(op.path)?.[1] ?? Number.NaN);
      if (op.op === 'test' && finalizers[index] !== op.value) return Promise.reject(new ApiException(422, 'Unprocessable', 'test failed', {}));
      if (op.op === 'remove') finalizers.splice(index, 1);
    }
    this.writes.push('jsonPatch');
    // The API server deletes an object being deleted once its last finalizer is gone.
    if (current.metadata.deletionTimestamp !== undefined && finalizers.length === 0) this.tenants.delete(name);
    else this.put({ ...current, metadata: { ...current.metadata, finalizers } });
    return Promise.resolve();
  }

  writeStatus(tenant: EvaTenant, status: EvaTenantStatus): Promise<EvaTenant> {
    const current = this.current(tenant);
    this.writes.push(`writeStatus:${status.phase ?? '?'}`);
    return Promise.resolve(this.put({ ...current, status }));
  }

  recordEvent(_tenant: EvaTenant, type: EventType, reason: Reason, message: string): Promise<void> {
    this.events.push({ type, reason, message });
    return Promise.resolve();
  }

  /** The stored tenant, if `seen` still has its resourceVersion: else 409, as the API server answers. */
  private current(seen: EvaTenant): EvaTenant {
    const current = this.tenants.get(seen.metadata.name);
    if (!current || current.metadata.resourceVersion !== seen.metadata.resourceVersion) throw conflict(seen.metadata.name);
    return current;
  }
}

/** A store that fails the n-th call of a method (1-based) with `error`, before it reaches the store. */
export class FailingTenantStore implements TenantStore {
  private readonly inner: TenantStore;
  private readonly failures: { call: Call; nth: number; error: unknown }[] = [];
  private readonly counts = new Map<Call, number>();

  constructor(inner: TenantStore) {
    this.inner = inner;
  }

  failOn(call: Call, nth: number, error: unknown = conflict('tenant')): this {
    this.failures.push({ call, nth, error });
    return this;
  }

  get(name: string): Promise<EvaTenant | undefined> {
    return this.guard('get', () => this.inner.get(name));
  }

  patchMetadata(tenant: EvaTenant, metadata: Record<string, unknown>): Promise<EvaTenant> {
    return this.guard('patchMetadata', () => this.inner.patchMetadata(tenant, metadata));
  }

  jsonPatch(name: string, operations: JsonPatchOperation[]): Promise<void> {
    return this.guard('jsonPatch', () => this.inner.jsonPatch(name, operations));
  }

  writeStatus(tenant: EvaTenant, status: EvaTenantStatus): Promise<EvaTenant> {
    return this.guard('writeStatus', () => this.inner.writeStatus(tenant, status));
  }

  recordEvent(tenant: EvaTenant, type: EventType, reason: Reason, message: string): Promise<void> {
    return this.guard('recordEvent', () => this.inner.recordEvent(tenant, type, reason, message));
  }

  private guard<T>(call: Call, run: () => Promise<T>): Promise<T> {
    const n = (this.counts.get(call) ?? 0) + 1;
    this.counts.set(call, n);
    const failure = this.failures.find((f) => f.call === call && f.nth === n);
    return failure ? Promise.reject(failure.error instanceof Error ? failure.error : new Error(String(failure.error))) : run();
  }
}
