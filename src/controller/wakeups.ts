/**
 * Wake-ups from the objects steps wait on (each step's `wakeOn`): a module Deployment turning
 * Available (the last of the tenant's: the step waits for them all) or failing, an Ingress getting its
 * address, either one deleted or changed by hand. The tenant whose
 * namespace holds the object is reconciled at once instead of at its next poll, which both shortens
 * provisioning and repairs drift in seconds rather than at the next drift check. The events come from
 * the watch caches the drift check reads (adapters/tenant-objects.ts): no watch of its own.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { TenantObjectCache } from '../adapters/tenant-objects.ts';
import type { WakeOn } from '../steps/step.ts';

export interface WakeupOptions {
  objects: Pick<TenantObjectCache, 'on'>;
  watches: readonly WakeOn[];
  /** The tenants (EvaTenant names) whose namespace this is: one, or two when a code is claimed twice. */
  tenantsOfNamespace: (namespace: string) => readonly string[];
  wake: (tenant: string) => void;
}

const nameOf = (obj: KubernetesObject): string => obj.metadata?.name ?? '';

/** An object as its step last judged it. */
interface Seen {
  state: string;
  ready: boolean;
}

/** Subscribes to the caches' events (before they start); the caches' owner starts and stops them. */
export function subscribeWakeups(options: WakeupOptions): void {
  /** What each watched object looked like to its step, and whether it was ready: by kind and namespace, then name. */
  const states = new Map<string, Map<string, Seen>>();
  const inNamespace = (kind: string, obj: KubernetesObject): Map<string, Seen> => {
    const key = `${kind}:${obj.metadata?.namespace ?? ''}`;
    const found = states.get(key) ?? new Map<string, Seen>();
    states.set(key, found);
    return found;
  };
  const wakeOwnerOf = (obj: KubernetesObject): void => {
    const namespace = obj.metadata?.namespace;
    if (namespace === undefined) return;
    for (const tenant of options.tenantsOfNamespace(namespace)) options.wake(tenant);
  };
  for (const watch of options.watches) {
    const seen = (obj: KubernetesObject): Seen => ({ state: watch.state(obj), ready: watch.ready?.(obj) ?? false });
    // Created objects are the step's own doing (it is running); their first state is only recorded.
    options.objects.on(watch.kind, 'add', (obj) => {
      inNamespace(watch.kind, obj).set(nameOf(obj), seen(obj));
    });
    options.objects.on(watch.kind, 'update', (obj) => {
      const siblings = inNamespace(watch.kind, obj);
      const now = seen(obj);
      if (siblings.get(nameOf(obj))?.state === now.state) return;
      siblings.set(nameOf(obj), now);
      // Ready while the step still waits for another of them: that one's turn wakes the tenant.
      if (now.ready && [...siblings.values()].some((sibling) => !sibling.ready)) return;
      wakeOwnerOf(obj);
    });
    options.objects.on(watch.kind, 'delete', (obj) => {
      const siblings = inNamespace(watch.kind, obj);
      siblings.delete(nameOf(obj));
      if (siblings.size === 0) states.delete(`${watch.kind}:${obj.metadata?.namespace ?? ''}`);
      wakeOwnerOf(obj);
    });
  }
}
