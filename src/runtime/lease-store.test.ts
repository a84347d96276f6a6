import { describe, expect, it } from 'vitest';
import type { V1Lease } from '@kubernetes/client-node';
import { annotatingLeaseStore, type LeaseStore } from './lease-store.ts';

/** Records what reaches the store underneath (a pure unit: the elector against the real API is in test/cluster/runtime/leader-election-leases.test.ts). */
function recordingStore(): LeaseStore & { written: V1Lease[] } {
  const written: V1Lease[] = [];
  const keep = (lease: V1Lease): Promise<V1Lease> => {
    written.push(lease);
    return Promise.resolve(lease);
  };
  return { written, get: () => Promise.resolve(written.at(-1)), create: keep, replace: keep };
}

describe('annotatingLeaseStore', () => {
  it('sets its annotations on every create and replace, over a stale value, keeping the others', async () => {
    const inner = recordingStore();
    const store = annotatingLeaseStore(inner, { 'eva.aidonow.com/max-wave': '1' });
    const signal = new AbortController().signal;
    await store.create({ metadata: { name: 'eva-operator-1-0-0' }, spec: { holderIdentity: 'a' } }, signal);
    await store.replace({ metadata: { name: 'eva-operator-1-0-0', resourceVersion: '7', annotations: { 'eva.aidonow.com/max-wave': '3', other: 'kept' } }, spec: { holderIdentity: '' } }, signal);
    expect(inner.written.map((l) => l.metadata)).toEqual([
      { name: 'eva-operator-1-0-0', annotations: { 'eva.aidonow.com/max-wave': '1' } },
      { name: 'eva-operator-1-0-0', resourceVersion: '7', annotations: { 'eva.aidonow.com/max-wave': '1', other: 'kept' } },
    ]);
    expect(inner.written.map((l) => l.spec?.holderIdentity)).toEqual(['a', '']);
    expect(await store.get(signal)).toBe(inner.written[1]);
  });
});
