/**
 * The values sources spec.valuesFrom reads, against the real API server: the label-selected caches
 * and the API reads give the same answers (a labelled object, decoded; nothing for an unlabelled,
 * operator-owned or absent one); the caches hold only labelled objects and answer without a request;
 * a label removed is a delete, a label added an add, a data change an update with the new data.
 * The operator's two writes: a binding and a retirement touch only metadata, and one made from a
 * stale read is refused (409) rather than overwriting what changed; the listing selects by label.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import { isConflict } from '../../../src/adapters/kube.ts';
import { apiValuesSourceBindings, apiValuesSources, type ValuesSourceEvent, ValuesSourceCache } from '../../../src/adapters/values-sources.ts';
import { createLogger } from '../../../src/log.ts';
import { eventually, kubectl, kubectlOk } from '../../support/kubectl.ts';
import { runLetters } from '../../support/random.ts';

const namespace = `vfsrc-${runLetters().toLowerCase()}`;
const LABEL = 'eva.aidonow.com/values-source';
let requests = 0;
const kube = new Kube(loadKubeConfig({ onRequest: () => { requests += 1; } }));
const cache = new ValuesSourceCache({ kube, log: createLogger('silent') });
const events: { event: ValuesSourceEvent; name: string; data: Record<string, string> }[] = [];

function apply(kind: 'Secret' | 'ConfigMap', name: string, data: Record<string, string>, labels: Record<string, string>): void {
  const body = kind === 'Secret' ? { stringData: data } : { data };
  kubectlOk(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind, metadata: { name, namespace, labels }, ...body }));
}

beforeAll(async () => {
  kubectlOk(['create', 'namespace', namespace]);
  apply('Secret', 'labelled', { 'values.yaml': 'config: {a: 1}' }, { [LABEL]: 'true' });
  apply('Secret', 'unlabelled', { 'values.yaml': 'config: {a: 1}' }, {});
  apply('Secret', 'owned', { seed: 'x' }, { [LABEL]: 'true', 'app.kubernetes.io/managed-by': 'eva-operator' });
  apply('Secret', 'false', { seed: 'x' }, { [LABEL]: 'false' });
  apply('ConfigMap', 'settings', { currency: 'USD' }, { [LABEL]: 'true' });
  cache.on((event, source) => {
    if (source.namespace === namespace) events.push({ event, name: source.name, data: { ...source.data } });
  });
  await cache.start();
});

afterAll(async () => {
  await cache.stop();
  kubectl(['delete', 'namespace', namespace, '--wait=false']);
});

describe('values sources', () => {
  it('the caches and the API give the same answers; only labelled objects that are not the operator\'s', async () => {
    const api = apiValuesSources(kube);
    for (const reads of [api, cache]) {
      expect(await reads.get('Secret', namespace, 'labelled')).toMatchObject({ kind: 'Secret', namespace, name: 'labelled', data: { 'values.yaml': 'config: {a: 1}' } });
      expect(await reads.get('ConfigMap', namespace, 'settings')).toMatchObject({ data: { currency: 'USD' } });
      for (const name of ['unlabelled', 'owned', 'false', 'absent']) expect(await reads.get('Secret', namespace, name), name).toBeUndefined();
      // The same name as another kind is another object.
      expect(await reads.get('ConfigMap', namespace, 'labelled')).toBeUndefined();
    }
  });

  it('reads from the synced caches cost no request', async () => {
    const before = requests;
    await cache.get('Secret', namespace, 'labelled');
    await cache.get('Secret', namespace, 'unlabelled');
    expect(requests).toBe(before);
  });

  it('only labelled objects enter the caches; a label removed is a delete, added an add, a data change an update', async () => {
    const names = new Set(events.map((e) => e.name));
    expect([...names].sort()).toEqual(['labelled', 'settings']);
    apply('Secret', 'labelled', { 'values.yaml': 'config: {a: 2}' }, { [LABEL]: 'true' });
    expect(await eventually(() => events.some((e) => e.event === 'update' && e.data['values.yaml'] === 'config: {a: 2}'), 30_000)).toBe(true);
    expect(await cache.get('Secret', namespace, 'labelled')).toMatchObject({ data: { 'values.yaml': 'config: {a: 2}' } });
    kubectlOk(['label', 'secret', 'labelled', '-n', namespace, `${LABEL}-`]);
    expect(await eventually(() => events.some((e) => e.event === 'delete' && e.name === 'labelled'), 30_000)).toBe(true);
    expect(await cache.get('Secret', namespace, 'labelled')).toBeUndefined();
    kubectlOk(['label', 'secret', 'unlabelled', '-n', namespace, `${LABEL}=true`]);
    expect(await eventually(() => events.some((e) => e.event === 'add' && e.name === 'unlabelled'), 30_000)).toBe(true);
    expect(await cache.get('Secret', namespace, 'unlabelled')).toMatchObject({ name: 'unlabelled' });
  });

  it('binds and retires through metadata only, guarded by the resourceVersion read; lists by label', async () => {
    const bindings = apiValuesSourceBindings(kube);
    const api = apiValuesSources(kube);
    apply('ConfigMap', 'staged', { 'values.yaml': 'config: {a: 1}' }, { [LABEL]: 'true', 'eva.aidonow.com/tenant': 'acme' });
    const read = await api.get('ConfigMap', namespace, 'staged');
    if (read === undefined) throw new Error('the staged ConfigMap is not readable');
    expect(await bindings.list(namespace, 'eva.aidonow.com/tenant=acme,!eva.aidonow.com/tenant-uid')).toEqual([read]);
    await bindings.bind(read, 'uid-1');
    const bound = await api.get('ConfigMap', namespace, 'staged');
    expect(bound?.labels).toMatchObject({ 'eva.aidonow.com/tenant-uid': 'uid-1', 'eva.aidonow.com/tenant': 'acme', [LABEL]: 'true' });
    expect(bound?.data).toEqual(read.data);
    // From the stale read: the same binding again is done already; another uid is refused, the binding stays.
    await bindings.bind(read, 'uid-1');
    const stale = await bindings.bind(read, 'uid-2').then(() => undefined, (err: unknown) => err);
    expect(isConflict(stale), String(stale)).toBe(true);
    expect(await bindings.list(namespace, 'eva.aidonow.com/tenant-uid=uid-1')).toEqual([bound]);
    expect(await bindings.list(namespace, 'eva.aidonow.com/tenant=acme,!eva.aidonow.com/tenant-uid')).toEqual([]);
    if (bound === undefined) throw new Error('unreachable');
    await bindings.retire(bound, 'uid-1');
    const retired = JSON.parse(kubectlOk(['get', 'configmap', 'staged', '-n', namespace, '-o', 'json'])) as { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; data: Record<string, string> };
    expect(retired.metadata.labels[LABEL]).toBeUndefined();
    expect(retired.metadata.annotations['eva.aidonow.com/retired-from']).toBe('uid-1');
    expect(retired.data).toEqual(read.data);
    expect(await api.get('ConfigMap', namespace, 'staged')).toBeUndefined();
    expect(await bindings.list(namespace, 'eva.aidonow.com/tenant-uid=uid-1')).toEqual([]);
  });
});
