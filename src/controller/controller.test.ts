/** The controller loop's event handling: which EvaTenant events reconcile a tenant again. */
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { DONE } from './actions.ts';
import { Controller } from './controller.ts';
import type { TenantHandler } from './tenant-informer.ts';

type TenantEvent = 'add' | 'update' | 'delete';

/** The EvaTenant watch cache as the controller uses it: events on cue, own writes noted by resourceVersion. */
class FakeTenants {
  private readonly handlers: { event: TenantEvent; handler: TenantHandler }[] = [];
  private readonly ownWrites = new Map<string, string>();
  on(event: TenantEvent, handler: TenantHandler): void {
    this.handlers.push({ event, handler });
  }
  emit(event: TenantEvent, obj: KubernetesObject): void {
    for (const h of this.handlers) if (h.event === event) h.handler(obj);
  }
  noteOwnWrite(name: string, resourceVersion: string): void {
    this.ownWrites.set(name, resourceVersion);
  }
  isOwnWrite(obj: KubernetesObject): boolean {
    return obj.metadata?.resourceVersion !== undefined && this.ownWrites.get(obj.metadata.name ?? '') === obj.metadata.resourceVersion;
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
}

const tenant = (resourceVersion: string, finalizers: string[] = []): KubernetesObject => ({
  apiVersion: 'eva.aidonow.com/v1alpha1',
  kind: 'EvaTenant',
  metadata: { name: 'acme', generation: 1, resourceVersion, finalizers },
});

/**
 * Reconciles one new tenant whose first pass writes its finalizer (resourceVersion 2) and, while
 * the pass runs, sees `during` from the watch before the write's response is back; returns how
 * many passes the tenant got.
 */
async function passesFor(during: KubernetesObject): Promise<number> {
  const tenants = new FakeTenants();
  let passes = 0;
  const reconciler = {
    reconcile: async (name: string): Promise<typeof DONE> => {
      passes += 1;
      if (passes === 1) {
        tenants.emit('update', during);
        await new Promise((resolve) => setImmediate(resolve));
        tenants.noteOwnWrite(name, '2');
      }
      return DONE;
    },
  };
  const noop = (): Promise<void> => Promise.resolve();
  const controller = new Controller({
    tenants,
    operatorVersion: '1.0.0',
    reconciler,
    concurrency: 1,
    log: createLogger('silent'),
    metrics: { observeReconcile: () => undefined, setWorkqueueDepth: () => undefined },
    objects: { on: () => undefined, start: noop, stop: noop },
  });
  await controller.start();
  tenants.emit('add', tenant('1'));
  await new Promise((resolve) => setTimeout(resolve, 50));
  await controller.stop();
  return passes;
}

describe('a change seen while the tenant is reconciled', () => {
  it('is not a reason for another pass when it is that pass own write, seen before its response', async () => {
    expect(await passesFor(tenant('2', ['eva.aidonow.com/tenant-protection']))).toBe(1);
  });

  it('reconciles the tenant again when someone else made it (the positive control)', async () => {
    expect(await passesFor(tenant('3', ['eva.aidonow.com/tenant-protection', 'someone/else']))).toBe(2);
  });
});
