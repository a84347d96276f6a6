/**
 * Wake-ups against the real API server and kwok: the steps' own watch declarations (module
 * Deployments, the tenant Ingress) wake the tenant whose namespace holds the object when what the
 * step judges changes (Available, an address) or the object is deleted, and nobody else.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import { TenantObjectCache } from '../../../src/adapters/tenant-objects.ts';
import { subscribeWakeups } from '../../../src/controller/wakeups.ts';
import { createLogger } from '../../../src/log.ts';
import { WAKE_ON } from '../../../src/steps/registry.ts';
import { eventually, kubectl, kubectlOk } from '../../support/kubectl.ts';

const run = Date.now().toString(36);
const tenantNs = `wake-${run}-a`;
const strangerNs = `wake-${run}-b`;
const woken: string[] = [];
let objects: TenantObjectCache;

function deployment(namespace: string, name: string): string {
  return JSON.stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels: { 'eva.aidonow.com/module': name } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'registry.invalid/app:1' }] } },
    },
  });
}

function ingress(namespace: string, ingressClassName: string): string {
  return JSON.stringify({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: 'eva-tenant', namespace, labels: { 'app.kubernetes.io/managed-by': 'eva-operator' } },
    spec: { ingressClassName, rules: [{ host: `${run}.example.test`, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'x', port: { number: 80 } } } }] } }] },
  });
}

const wakesOf = (tenant: string): number => woken.filter((name) => name === tenant).length;

beforeAll(async () => {
  kubectlOk(['create', 'namespace', tenantNs]);
  kubectlOk(['create', 'namespace', strangerNs]);
  objects = new TenantObjectCache({ kube: new Kube(loadKubeConfig()), log: createLogger('silent') });
  subscribeWakeups({
    objects,
    watches: WAKE_ON,
    tenantsOfNamespace: (namespace) => (namespace === tenantNs ? ['tenant-a'] : []),
    wake: (name) => woken.push(name),
  });
  await objects.start();
});

afterAll(async () => {
  await objects.stop();
  kubectl(['delete', 'namespace', tenantNs, strangerNs, '--wait=false']);
});

describe('wake-ups', () => {
  it('watches module Deployments and tenant Ingresses', () => {
    expect(WAKE_ON.map((w) => w.kind).sort()).toEqual(['Deployment', 'Ingress']);
  });

  it('wakes the tenant when its module Deployment turns Available, and again when it is deleted', async () => {
    kubectlOk(['apply', '-f', '-'], deployment(tenantNs, 'orbit-crm'));
    expect(await eventually(() => wakesOf('tenant-a') >= 1, 30_000), 'no wake-up after the Deployment became Available').toBe(true);
    const available = kubectlOk(['get', 'deployment', 'orbit-crm', '-n', tenantNs, '-o', 'jsonpath={.status.conditions[?(@.type=="Available")].status}']);
    expect(available).toBe('True');
    const before = wakesOf('tenant-a');
    kubectlOk(['delete', 'deployment', 'orbit-crm', '-n', tenantNs]);
    expect(await eventually(() => wakesOf('tenant-a') > before, 30_000), 'no wake-up after the Deployment was deleted').toBe(true);
  });

  it('wakes the tenant when its Ingress gets an address, not when it has none', async () => {
    const before = wakesOf('tenant-a');
    // Class eva-plain never gets an address on the local control plane: labels change, nothing to wake for.
    kubectlOk(['apply', '-f', '-'], ingress(tenantNs, 'eva-plain'));
    kubectlOk(['label', 'ingress', 'eva-tenant', '-n', tenantNs, 'unrelated=1']);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(wakesOf('tenant-a')).toBe(before);
    // eva-lb gets one from a kwok Stage: the spec change and the address both wake the tenant.
    kubectlOk(['apply', '-f', '-'], ingress(tenantNs, 'eva-lb'));
    expect(await eventually(() => kubectlOk(['get', 'ingress', 'eva-tenant', '-n', tenantNs, '-o', 'jsonpath={.status.loadBalancer.ingress}']) !== '', 30_000)).toBe(true);
    expect(await eventually(() => wakesOf('tenant-a') >= before + 2, 10_000), `wake-ups: ${String(wakesOf('tenant-a') - before)}`).toBe(true);
  });

  it('never wakes anyone for objects outside tenant namespaces', async () => {
    kubectlOk(['apply', '-f', '-'], deployment(strangerNs, 'orbit-itsm'));
    expect(await eventually(() => kubectlOk(['get', 'deployment', 'orbit-itsm', '-n', strangerNs, '-o', 'jsonpath={.status.availableReplicas}']) === '1', 30_000)).toBe(true);
    kubectlOk(['delete', 'deployment', 'orbit-itsm', '-n', strangerNs]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(woken.filter((name) => name !== 'tenant-a')).toEqual([]);
  });
});
