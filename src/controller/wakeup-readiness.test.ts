import type { KubernetesObject, V1Deployment } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { CacheEvent } from '../adapters/tenant-objects.ts';
import { modulesStep } from '../steps/modules/modules.ts';
import { wakeOn, type WakeOn } from '../steps/step.ts';
import { subscribeWakeups } from './wakeups.ts';

type Handler = (obj: KubernetesObject) => void;

/** The caches' events, sent by hand; every namespace belongs to the tenant of the same name. */
function world(watch: WakeOn): { send: (event: CacheEvent, obj: KubernetesObject) => void; woken: string[] } {
  const handlers: { event: CacheEvent; handler: Handler }[] = [];
  const woken: string[] = [];
  subscribeWakeups({
    objects: { on: (_kind, event, handler) => handlers.push({ event, handler }) },
    watches: [watch],
    tenantsOfNamespace: (namespace) => [namespace],
    wake: (tenant) => woken.push(tenant),
  });
  const send = (event: CacheEvent, obj: KubernetesObject): void => {
    for (const h of handlers.filter((h) => h.event === event)) h.handler(obj);
  };
  return { send, woken };
}

function deployment(name: string, namespace: string, available: boolean): V1Deployment {
  return {
    metadata: { name, namespace, generation: 1 },
    spec: { replicas: 1, selector: {}, template: {} },
    status: { observedGeneration: 1, updatedReplicas: 1, conditions: [{ type: 'Available', status: available ? 'True' : 'False' }] },
  };
}

const deployments = modulesStep.wakeOn;

describe('wake-ups', () => {
  it('a Deployment turning Available wakes its tenant once the other Deployments there are Available too; one failing wakes at once', () => {
    if (deployments === undefined) throw new Error('the modules step watches its Deployments');
    const { send, woken } = world(deployments);
    for (const name of ['orbit-crm', 'orbit-itsm']) send('add', deployment(name, 'a', false));
    send('add', deployment('orbit-crm', 'b', false));
    send('update', deployment('orbit-crm', 'a', true));
    expect(woken, 'orbit-itsm still rolls out: the step would only wait on').toEqual([]);
    send('update', deployment('orbit-crm', 'b', true));
    expect(woken, 'alone in its namespace').toEqual(['b']);
    send('update', deployment('orbit-itsm', 'a', true));
    expect(woken, 'the last of the tenant’s').toEqual(['b', 'a']);
    send('update', deployment('orbit-crm', 'a', false));
    expect(woken, 'no longer Available: at once').toEqual(['b', 'a', 'a']);
    send('delete', deployment('orbit-itsm', 'a', true));
    expect(woken, 'deleted').toEqual(['b', 'a', 'a', 'a']);
  });

  it('without a readiness, every change of state wakes (the same objects, the same events)', () => {
    if (deployments === undefined) throw new Error('the modules step watches its Deployments');
    const { send, woken } = world(wakeOn('Deployment', (d) => deployments.state(d)));
    for (const name of ['orbit-crm', 'orbit-itsm']) send('add', deployment(name, 'a', false));
    send('update', deployment('orbit-crm', 'a', true));
    send('update', deployment('orbit-crm', 'a', true));
    expect(woken, 'a change wakes; the same state again does not').toEqual(['a']);
  });
});
