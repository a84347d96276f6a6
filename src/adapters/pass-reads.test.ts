import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PassReads } from './pass-reads.ts';
import type { KubeReads } from './tenant-objects.ts';

const NS = 'eva-tenant-passa';
const secret = (name: string, namespace = NS): KubernetesObject => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace, resourceVersion: '7' } });
const policy: KubernetesObject = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'eva-tenant-isolation', namespace: NS } };

/** The API server: holds `eva-nats` in every namespace and counts what it is asked. */
function countingApi(): { api: KubeReads; asked: string[] } {
  const asked: string[] = [];
  const api: KubeReads = {
    get: (kind, namespace, name) => {
      asked.push(`get ${kind} ${namespace}/${name}`);
      return Promise.resolve(kind === 'Secret' ? secret(name, namespace) : undefined);
    },
    list: (kind, namespace) => {
      asked.push(`list ${kind} ${namespace}`);
      return Promise.resolve([]);
    },
  };
  return { api, asked };
}

describe('PassReads', () => {
  it('asks the API server for everything while the pass created no namespace (the positive control)', async () => {
    const { api, asked } = countingApi();
    const reads = new PassReads(api);
    reads.remember(secret('eva-nats'));
    expect(await reads.get('Secret', NS, 'eva-nats')).toEqual(secret('eva-nats'));
    expect(await reads.list('Deployment', NS)).toEqual([]);
    expect(asked).toEqual([`get Secret ${NS}/eva-nats`, `list Deployment ${NS}`]);
  });

  it('answers a namespace it created from what it wrote there, asking nothing, until helm is let in', async () => {
    const { api, asked } = countingApi();
    const reads = new PassReads(api);
    reads.namespaceCreated(NS);
    expect(await reads.get('Secret', NS, 'eva-nats'), 'not written yet: absent').toBeUndefined();
    reads.remember(secret('eva-nats'));
    reads.remember(policy);
    reads.remember(secret('eva-nats', 'eva-system'));
    const read = await reads.get('Secret', NS, 'eva-nats');
    expect(read).toEqual(secret('eva-nats'));
    expect(await reads.list('NetworkPolicy', NS)).toEqual([policy]);
    expect(await reads.list('HelmRelease', NS), 'a release record is never the operator’s write').toEqual([]);
    expect(await reads.list('Deployment', NS)).toEqual([]);
    expect(asked, 'nothing asked of the API server').toEqual([]);

    if (read?.metadata) read.metadata.name = 'changed by a reader';
    expect(await reads.get('Secret', NS, 'eva-nats'), 'a reader gets a copy').toEqual(secret('eva-nats'));
    expect(await reads.get('Secret', 'eva-system', 'eva-nats'), 'another namespace: the API server').toEqual(secret('eva-nats', 'eva-system'));

    expect(reads.handOver(NS), 'created by this pass').toBe(true);
    expect(reads.handOver(NS), 'handed over already').toBe(false);
    expect(reads.handOver('eva-system'), 'not created by this pass').toBe(false);
    await reads.get('Secret', NS, 'eva-nats');
    await reads.list('Deployment', NS);
    expect(asked).toEqual(['get Secret eva-system/eva-nats', `get Secret ${NS}/eva-nats`, `list Deployment ${NS}`]);
  });
});
