/**
 * Wake-ups from the objects steps wait on (each step's `wakeOn`): a module Deployment turning
 * Available, an Ingress getting its address, either one deleted or changed by hand. The tenant whose
 * namespace holds the object is reconciled at once instead of at its next poll, which both shortens
 * provisioning and repairs drift in seconds rather than at the next drift check. The events come from
 * the watch caches the drift check reads (adapters/tenant-objects.ts): no watch of its own.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { TenantObjectCache } from '../adapters/tenant-objects.ts';
import type { WakeOn } from '../steps/step.ts';

export interface WakeupOptions {
  objects: TenantObjectCache;
  watches: readonly WakeOn[];
  /** The tenants (EvaTenant names) whose namespace this is: one, or two when a code is claimed twice. */
  tenantsOfNamespace: (namespace: string) => readonly string[];
  wake: (tenant: string) => void;
}

const keyOf = (obj: KubernetesObject): string => `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;

/** Subscribes to the caches' events (before they start); the caches' owner starts and stops them. */
export function subscribeWakeups(options: WakeupOptions): void {
  /** What each watched object looked like to its step, by kind and namespace/name. */
  const states = new Map<string, string>();
  const wakeOwnerOf = (obj: KubernetesObject): void => {
    const namespace = obj.metadata?.namespace;
    if (namespace === undefined) return;
    for (const tenant of options.tenantsOfNamespace(namespace)) options.wake(tenant);
  };
  for (const watch of options.watches) {
    // Created objects are the step's own doing (it is running); their first state is only recorded.
    options.objects.on(watch.kind, 'add', (obj) => {
      states.set(`${watch.kind}:${keyOf(obj)}`, watch.state(obj));
    });
    options.objects.on(watch.kind, 'update', (obj) => {
      const key = `${watch.kind}:${keyOf(obj)}`;
      const state = watch.state(obj);
      if (states.get(key) === state) return;
      states.set(key, state);
      wakeOwnerOf(obj);
    });
    options.objects.on(watch.kind, 'delete', (obj) => {
      states.delete(`${watch.kind}:${keyOf(obj)}`);
      wakeOwnerOf(obj);
    });
  }
}
