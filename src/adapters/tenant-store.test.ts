import { describe, expect, it } from 'vitest';
import type { EvaTenant } from '../api/evatenant.ts';
import { MemoryTenantStore } from '../../test/support/tenant-store.ts';
import { testTenant } from '../../test/support/fixtures.ts';
import { cacheFirstTenantStore, type TenantStore } from './tenant-store.ts';

/** The API server: a memory store that counts reads. */
class CountingStore extends MemoryTenantStore {
  reads = 0;
  override get(name: string): Promise<EvaTenant | undefined> {
    this.reads += 1;
    return super.get(name);
  }
}

/** The API, a watch cache the test moves by hand, and the store under test over both. */
function setup(): { api: CountingStore; reads: () => number; cache: Map<string, EvaTenant>; store: TenantStore } {
  const api = new CountingStore();
  const cache = new Map<string, EvaTenant>();
  return { api, reads: () => api.reads, cache, store: cacheFirstTenantStore(api, (name) => cache.get(name)) };
}

describe('cacheFirstTenantStore', () => {
  it('reads the API until the cache holds exactly what was last read, then the cache', async () => {
    const { api, reads, cache, store } = setup();
    const stored = api.put(testTenant({ code: 'CACHEA' }));
    expect(await store.get('cachea')).toEqual(stored);
    expect(reads()).toBe(1);
    expect(await store.get('cachea'), 'not in the cache yet').toEqual(stored);
    expect(reads()).toBe(2);
    cache.set('cachea', stored);
    expect(await store.get('cachea')).toEqual(stored);
    expect(reads(), 'the cache answered').toBe(2);
  });

  it('reads the API when the cache holds another version: newer (changed by someone) or older (our write not seen yet)', async () => {
    const { api, reads, cache, store } = setup();
    const first = api.put(testTenant({ code: 'CACHEB' }));
    cache.set('cacheb', first);
    await store.get('cacheb');
    await store.get('cacheb');
    expect(reads()).toBe(1);
    const written = await store.writeStatus(first, { phase: 'Provisioning' });
    expect(await store.get('cacheb'), 'the cache still shows the object before our write').toEqual(written);
    expect(reads()).toBe(2);
    cache.set('cacheb', written);
    await store.get('cacheb');
    expect(reads(), 'the cache caught up with our write').toBe(2);
    const changed = api.put({ ...written, spec: { ...written.spec, tier: 'Customer' } });
    cache.set('cacheb', changed);
    expect((await store.get('cacheb'))?.spec.tier).toBe('Customer');
    expect(reads(), 'a version not seen from the API is read fresh').toBe(3);
  });

  it('a tenant gone from the API is gone, whatever the cache still holds', async () => {
    const { api, cache, store } = setup();
    const stored = api.put(testTenant({ code: 'CACHEC' }));
    cache.set('cachec', stored);
    await store.get('cachec');
    api.delete('cachec');
    // The cache holds the same version: still served (its delete event will enqueue the tenant).
    expect(await store.get('cachec')).toEqual(stored);
    cache.delete('cachec');
    expect(await store.get('cachec')).toBeUndefined();
  });
});
