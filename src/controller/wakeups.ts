/**
 * Wake-ups from the objects steps wait on (each step's `wakeOn`): a module Deployment turning
 * Available, an Ingress getting its address, either one deleted or changed by hand. The tenant whose
 * namespace holds the object is reconciled at once instead of at its next poll, which both shortens
 * provisioning and repairs drift in seconds rather than at the next drift check.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Kube } from '../adapters/kube.ts';
import type { Logger } from '../log.ts';
import type { WakeOn } from '../steps/step.ts';
import { type CachingInformer, restartingInformer } from '../adapters/informers.ts';

export interface WakeupOptions {
  kube: Kube;
  log: Logger;
  watches: readonly WakeOn[];
  /** The tenants (EvaTenant names) whose namespace this is: one, or two when a code is claimed twice. */
  tenantsOfNamespace: (namespace: string) => readonly string[];
  wake: (tenant: string) => void;
}

const keyOf = (obj: KubernetesObject): string => `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;

export class Wakeups {
  private readonly options: WakeupOptions;
  private readonly informers: CachingInformer<KubernetesObject>[] = [];
  /** What each watched object looked like to its step, by kind and namespace/name. */
  private readonly states = new Map<string, string>();
  private stopped = false;

  constructor(options: WakeupOptions) {
    this.options = options;
  }

  async start(): Promise<void> {
    for (const watch of this.options.watches) this.informers.push(this.informerFor(watch));
    await Promise.all(this.informers.map((informer) => informer.start()));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }

  private informerFor(watch: WakeOn): CachingInformer<KubernetesObject> {
    const { kube, log } = this.options;
    const informer = restartingInformer({
      config: kube.config,
      path: watch.path,
      list: () => watch.list(kube),
      labelSelector: watch.labelSelector,
      log,
      stopping: () => this.stopped,
    });
    // Created objects are the step's own doing (it is running); their first state is only recorded.
    informer.on('add', (obj) => {
      this.states.set(`${watch.kind}:${keyOf(obj)}`, watch.state(obj));
    });
    informer.on('update', (obj) => {
      const key = `${watch.kind}:${keyOf(obj)}`;
      const state = watch.state(obj);
      if (this.states.get(key) === state) return;
      this.states.set(key, state);
      this.wakeOwnerOf(obj);
    });
    informer.on('delete', (obj) => {
      this.states.delete(`${watch.kind}:${keyOf(obj)}`);
      this.wakeOwnerOf(obj);
    });
    return informer;
  }

  private wakeOwnerOf(obj: KubernetesObject): void {
    const namespace = obj.metadata?.namespace;
    if (namespace === undefined) return;
    for (const tenant of this.options.tenantsOfNamespace(namespace)) this.options.wake(tenant);
  }
}
