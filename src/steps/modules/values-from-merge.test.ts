import { join } from 'node:path';
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { EvaTenant } from '../../api/evatenant.ts';
import type { ValuesReference, ValuesSourceKind } from '../../api/values-from.ts';
import { ImageCatalog } from '../../bundle/images.ts';
import { SeedCatalog } from '../../bundle/seeds.ts';
import { optsIn, type ValuesSourceBindings, type ValuesSourceObject, type ValuesSourceReads } from '../../adapters/values-sources.ts';
import { InputError } from '../../errors.ts';
import { createLogger } from '../../log.ts';
import type { TenantScope } from '../../tenancy/scope.ts';
import { testScope } from '../../../test/support/fixtures.ts';
import { moduleValues, secretStrings, type ValuesDeps, valuesFileContent, valuesHash } from './module-values.ts';
import { atPath, loadValuesFrom, type ValuesFromByModule } from './values-from-sources.ts';
import { repoRoot } from '../../../test/support/tools.ts';

const OPERATOR_NS = 'eva-system';
const TENANT_NS = 'eva-tenant-acmeco';
const LABELLED = { 'eva.aidonow.com/values-source': 'true' };

const deps: ValuesDeps = {
  images: ImageCatalog.parse('ghcr.io/aidonow/orbit-crm:1.0.0@sha256:PLACEHOLDER\nghcr.io/aidonow/orbit-itsm:1.0.0@sha256:PLACEHOLDER\n'),
  seeds: SeedCatalog.load(join(repoRoot, 'seeds')),
  config: { moduleOtelEndpoint: '' },
};
const secrets = { credentials: { 'api-key': 'generated-api-key' }, natsRevision: 'rev' };

function scopeFor(spec: Partial<EvaTenant['spec']> = {}): TenantScope {
  return testScope({ code: 'ACMECO', seedsVersion: '1.0.0', spec, log: createLogger('silent') });
}

const source = (kind: ValuesSourceKind, namespace: string, name: string, data: Record<string, string>, labels: Record<string, string> = LABELLED): ValuesSourceObject =>
  ({ kind, namespace, name, labels, data, resourceVersion: '1' });

/** In memory, for the logic only (e2e/values-from.test.ts reads real objects through the real caches). */
function readsOf(...objects: ValuesSourceObject[]): ValuesSourceReads {
  return {
    get: (kind, namespace, name) => Promise.resolve(objects.find((o) => o.kind === kind && o.namespace === namespace && o.name === name && optsIn(o.labels))),
  };
}

async function load(refs: ValuesReference[], reads: ValuesSourceReads, spec: Partial<EvaTenant['spec']> = {}): Promise<{ scope: TenantScope; valuesFrom: ValuesFromByModule }> {
  const scope = scopeFor({ ...spec, valuesFrom: { 'orbit-crm': refs } });
  return { scope, valuesFrom: await loadValuesFrom(scope, reads, OPERATOR_NS) };
}

const crm = (scope: TenantScope, valuesFrom: ValuesFromByModule) => moduleValues({ module: 'orbit-crm', scope, deps, ...secrets, valuesFrom });

describe('spec.valuesFrom', () => {
  const sso = source('Secret', TENANT_NS, 'sso', { 'client-secret': 's3cr3t-canary', 'values.yaml': 'secretConfig:\n  sso:\n    issuer: https://id.example\n' });
  const settings = source('ConfigMap', TENANT_NS, 'settings', { 'values.yaml': 'config:\n  currency: USD\n  sso:\n    issuer: https://old.example\nreplicaCount: 2\n' });

  it('merges each reference over helmValues in order; a target path holds the key\'s whole text as one string', async () => {
    const { scope, valuesFrom } = await load(
      [{ kind: 'ConfigMap', name: 'settings' }, { kind: 'Secret', name: 'sso' }, { kind: 'Secret', name: 'sso', valuesKey: 'client-secret', targetPath: 'secretConfig.sso.clientSecret' }],
      readsOf(sso, settings),
      { helmValues: { 'orbit-crm': { config: { currency: 'EUR', locale: 'de' }, replicaCount: 1 } } },
    );
    const values = crm(scope, valuesFrom);
    expect(valuesFileContent(values)).toMatchObject({
      config: { currency: 'USD', locale: 'de', sso: { issuer: 'https://old.example' } },
      secretConfig: { sso: { issuer: 'https://id.example', clientSecret: 's3cr3t-canary' } },
      replicaCount: 2,
      credentials: { 'api-key': 'generated-api-key' },
    });
    // What came from a Secret is never among the values that may be logged or shown.
    expect(JSON.stringify(values.plain)).not.toContain('s3cr3t-canary');
    expect(JSON.stringify(values.plain)).not.toContain('id.example');
    expect(values.plain).toMatchObject({ config: { currency: 'USD', locale: 'de' } });
    expect(values.plain).not.toHaveProperty('secretConfig');
    expect(secretStrings(values)).toEqual(expect.arrayContaining(['s3cr3t-canary', 'https://id.example']));
  });

  it('a changed Secret changes the values digest; an unchanged one keeps it', async () => {
    const refs: ValuesReference[] = [{ kind: 'Secret', name: 'sso', valuesKey: 'client-secret', targetPath: 'secretConfig.sso.clientSecret' }];
    const before = await load(refs, readsOf(sso));
    const same = await load(refs, readsOf(sso));
    const after = await load(refs, readsOf({ ...sso, data: { 'client-secret': 'rotated' } }));
    const hash = (r: typeof before) => valuesHash('chart', crm(r.scope, r.valuesFrom));
    expect(hash(same)).toBe(hash(before));
    expect(hash(after)).not.toBe(hash(before));
    expect(hash(before)).not.toContain('s3cr3t');
  });

  it('a missing reference waits, naming it; optional ones are skipped; a present one that is not labelled counts as missing', async () => {
    const missing = await load([{ kind: 'Secret', name: 'absent' }], readsOf());
    expect(() => crm(missing.scope, missing.valuesFrom)).toThrow(InputError);
    expect(() => crm(missing.scope, missing.valuesFrom)).toThrow(/spec\.valuesFrom\.orbit-crm\[0\] \(Secret eva-tenant-acmeco\/absent \(key values\.yaml\)\): not found/);
    const unlabelled = await load([{ kind: 'Secret', name: 'sso' }], readsOf({ ...sso, labels: {} }));
    expect((unlabelled.valuesFrom.get('orbit-crm') as InputError).reason).toBe('ValuesFromNotFound');
    const optional = await load([{ kind: 'Secret', name: 'absent', optional: true }, { kind: 'ConfigMap', name: 'settings' }], readsOf(settings));
    expect(valuesFileContent(crm(optional.scope, optional.valuesFrom))).toMatchObject({ config: { currency: 'USD' } });
  });

  it('never reads the operator\'s own objects, even labelled; in the operator namespace only a source named for this tenant or bound to its uid (positive controls)', async () => {
    const own = { ...LABELLED, 'app.kubernetes.io/managed-by': 'eva-operator' };
    const forTenant = (labels: Record<string, string>) => ({ ...LABELLED, ...labels });
    const reads = readsOf(
      source('Secret', OPERATOR_NS, 'nats-signing-key', { 'values.yaml': 'config: {seed: x}' }, own),
      source('Secret', OPERATOR_NS, 'shared', { 'values.yaml': 'config: {k: v}' }),
      source('Secret', OPERATOR_NS, 'code-only', { 'values.yaml': 'config: {k: v}' }, forTenant({ 'eva.aidonow.com/capsule-code': 'ACMECO' })),
      source('Secret', OPERATOR_NS, 'others', { 'values.yaml': 'config: {k: v}' }, forTenant({ 'eva.aidonow.com/tenant': 'other' })),
      source('Secret', OPERATOR_NS, 'other-code', { 'values.yaml': 'config: {k: v}' }, forTenant({ 'eva.aidonow.com/tenant': 'acmeco', 'eva.aidonow.com/capsule-code': 'OTHERS' })),
      source('Secret', OPERATOR_NS, 'bound-elsewhere', { 'values.yaml': 'config: {k: v}' }, forTenant({ 'eva.aidonow.com/tenant': 'acmeco', 'eva.aidonow.com/tenant-uid': 'uid-of-an-earlier-acmeco' })),
      source('Secret', OPERATOR_NS, 'name-only', { 'values.yaml': 'config: {k: v}' }, forTenant({ 'eva.aidonow.com/tenant': 'acmeco' })),
      source('Secret', OPERATOR_NS, 'named', { 'values.yaml': 'secretConfig: {named: yes}' }, forTenant({ 'eva.aidonow.com/tenant': 'acmeco', 'eva.aidonow.com/capsule-code': 'ACMECO' })),
      source('ConfigMap', OPERATOR_NS, 'bound', { 'values.yaml': 'config: {bound: yes}' }, forTenant({ 'eva.aidonow.com/tenant': 'acmeco', 'eva.aidonow.com/tenant-uid': 'uid-ACMECO' })),
    );
    const refused = await load([{ kind: 'Secret', name: 'nats-signing-key', namespace: 'Operator' }], reads);
    expect((refused.valuesFrom.get('orbit-crm') as InputError).reason).toBe('ValuesFromNotFound');
    for (const [name, why] of [['shared', 'has no label eva.aidonow.com/tenant naming one'], ['code-only', 'has no label'], ['others', 'is labelled eva.aidonow.com/tenant for another EvaTenant'], ['other-code', 'is labelled eva.aidonow.com/capsule-code for another capsule code'], ['name-only', 'has no label eva.aidonow.com/capsule-code naming its capsule code'], ['bound-elsewhere', 'is bound to another EvaTenant']] as const) {
      const unbound = (await load([{ kind: 'Secret', name, namespace: 'Operator' }], reads)).valuesFrom.get('orbit-crm') as InputError;
      expect(unbound.reason, name).toBe('ValuesFromUnbound');
      expect(unbound.message, name).toContain(`(Secret ${OPERATOR_NS}/${name} (key values.yaml)): in the operator's namespace a values source serves only the EvaTenant it is bound to, and this one ${why}`);
      expect(unbound.message, name).toContain('labelled eva.aidonow.com/tenant=acmeco and eva.aidonow.com/capsule-code=ACMECO (the operator binds it to this EvaTenant\'s uid on first use), or put it in the tenant\'s namespace');
      expect(unbound.message, name).not.toContain('uid-of-an-earlier-acmeco');
    }
    // Optional or not: a source that exists but is not this tenant's is refused, never silently skipped.
    const optional = (await load([{ kind: 'Secret', name: 'others', namespace: 'Operator', optional: true }], reads)).valuesFrom.get('orbit-crm') as InputError;
    expect(optional.reason).toBe('ValuesFromUnbound');
    const allowed = await load([{ kind: 'Secret', name: 'named', namespace: 'Operator' }, { kind: 'ConfigMap', name: 'bound', namespace: 'Operator' }], reads);
    expect(valuesFileContent(crm(allowed.scope, allowed.valuesFrom))).toMatchObject({ config: { bound: 'yes' }, secretConfig: { named: 'yes' } });
  });

  it('binds a source named for the tenant to its uid in ensure only (bindings given), once; a concurrent change is retried', async () => {
    const named = source('Secret', OPERATOR_NS, 'named', { 'values.yaml': 'secretConfig: {named: yes}' }, { ...LABELLED, 'eva.aidonow.com/tenant': 'acmeco', 'eva.aidonow.com/capsule-code': 'ACMECO' });
    const bound = source('ConfigMap', OPERATOR_NS, 'bound', { 'values.yaml': 'config: {bound: yes}' }, { ...LABELLED, 'eva.aidonow.com/tenant': 'acmeco', 'eva.aidonow.com/tenant-uid': 'uid-ACMECO' });
    const own = source('ConfigMap', TENANT_NS, 'own', { 'values.yaml': 'config: {own: yes}' });
    const calls: string[] = [];
    const bindings = (conflict: boolean): ValuesSourceBindings => ({
      bind: (s, uid) => {
        calls.push(`${s.name}@${s.resourceVersion}=${uid}`);
        return conflict ? Promise.reject(new ApiException(409, 'Conflict', {}, {})) : Promise.resolve();
      },
      retire: () => Promise.reject(new Error('not in ensure')),
      list: () => Promise.reject(new Error('not in ensure')),
    });
    const scope = scopeFor({ valuesFrom: { 'orbit-crm': [{ kind: 'Secret', name: 'named', namespace: 'Operator' }, { kind: 'ConfigMap', name: 'bound', namespace: 'Operator' }, { kind: 'ConfigMap', name: 'own' }] } });
    await loadValuesFrom(scope, readsOf(named, bound, own), OPERATOR_NS);
    expect(calls, 'verify (no bindings) writes nothing').toEqual([]);
    await loadValuesFrom(scope, readsOf(named, bound, own), OPERATOR_NS, bindings(false));
    expect(calls, 'only the unbound one, guarded by the resourceVersion read').toEqual(['named@1=uid-ACMECO']);
    await expect(loadValuesFrom(scope, readsOf(named, bound, own), OPERATOR_NS, bindings(true))).rejects.toMatchObject({ name: 'DependencyError', reason: 'ValuesFromUnbound' });
  });

  it('refuses a key above 64 KiB, as YAML or as one value (targetPath), naming the object and the key; at the limit it is read (positive control)', async () => {
    const atLimit = `config: {a: "${'x'.repeat(65536 - 'config: {a: ""}'.length)}"}`;
    const big = source('ConfigMap', TENANT_NS, 'big', { over: `${atLimit} `, at: atLimit });
    for (const ref of [{ kind: 'ConfigMap', name: 'big', valuesKey: 'over' }, { kind: 'ConfigMap', name: 'big', valuesKey: 'over', targetPath: 'config.text' }] as const) {
      const refused = (await load([ref], readsOf(big))).valuesFrom.get('orbit-crm') as InputError;
      expect(refused.reason).toBe('ValuesFromInvalid');
      expect(refused.message).toBe(`spec.valuesFrom.orbit-crm[0] (ConfigMap ${TENANT_NS}/big (key over)): holds 65537 bytes, above the limit of 65536 a values key may hold`);
    }
    const read = await load([{ kind: 'ConfigMap', name: 'big', valuesKey: 'at' }], readsOf(big));
    expect(read.valuesFrom.get('orbit-crm')).toEqual([expect.objectContaining({ values: { config: { a: expect.any(String) as unknown } } })]);
  });

  it('refuses a cyclic alias, an alias bomb and deep nesting as tenant input naming the object and key, never with a JS exception\'s text', async () => {
    const hostile = {
      cyclic: 'config: &a {x: *a}',
      bomb: ['a: &a [x,x,x,x,x,x,x,x,x,x]', ...['b', 'c', 'd', 'e', 'f'].map((k, i) => `${k}: &${k} [${Array(10).fill(`*${'abcde'[i] ?? ''}`).join(',')}]`)].join('\n'),
      deep: `config: ${'['.repeat(5000)}${']'.repeat(5000)}`,
      fine: 'config: &a {x: 1}\nreplicaCount: 1\n',
    };
    const reads = readsOf(source('ConfigMap', TENANT_NS, 'hostile', hostile), source('Secret', TENANT_NS, 'hostile', hostile));
    for (const kind of ['ConfigMap', 'Secret'] as const) {
      for (const [key, why] of [['cyclic', 'an alias refers to its own anchor'], ['bomb', 'aliases resolved (the limit against alias-expansion bombs)'], ['deep', 'nested more than 64 levels deep']] as const) {
        const refused = (await load([{ kind, name: 'hostile', valuesKey: key }], reads)).valuesFrom.get('orbit-crm') as InputError;
        expect(refused.reason, key).toBe('ValuesFromInvalid');
        expect(refused.message, key).toContain(`(${kind} ${TENANT_NS}/hostile (key ${key})): refused as tenant input: `);
        expect(refused.message, key).toContain(why);
        expect(refused.message, key).not.toMatch(/call stack|circular|Excessive/i);
      }
      // Positive control: an alias that is not cyclic is still read.
      const fine = await load([{ kind, name: 'hostile', valuesKey: 'fine' }], reads);
      expect(fine.valuesFrom.get('orbit-crm')).toEqual([expect.objectContaining({ values: { config: { x: 1 }, replicaCount: 1 } })]);
    }
  });

  it('judges each reference by the values contract, naming it and the key; a Secret\'s value is never quoted', async () => {
    const bad = source('Secret', TENANT_NS, 'bad', { owned: 'image: {repository: evil.example/x}', replicas: 'replicaCount: 9', text: 's3cr3t-canary' });
    const cases: [ValuesReference, RegExp][] = [
      [{ kind: 'Secret', name: 'bad', valuesKey: 'owned' }, /\(Secret eva-tenant-acmeco\/bad \(key owned\)\): image: set by the operator/],
      [{ kind: 'Secret', name: 'bad', valuesKey: 'replicas' }, /key replicas\)\): replicaCount: not within the values contract/],
      [{ kind: 'Secret', name: 'bad', valuesKey: 'text', targetPath: 'replicaCount' }, /key text\)\): replicaCount: not within the values contract/],
      [{ kind: 'Secret', name: 'bad', valuesKey: 'text', targetPath: 'nats.password' }, /nats: set by the operator/],
    ];
    for (const [ref, named] of cases) {
      const { scope, valuesFrom } = await load([ref], readsOf(bad));
      const message = (() => {
        try {
          crm(scope, valuesFrom);
          return 'accepted';
        } catch (err) {
          return (err as InputError).message;
        }
      })();
      expect(message).toMatch(named);
      expect(message).not.toMatch(/s3cr3t-canary|9 is above/);
    }
    // From a ConfigMap (not secret), the value is named as for helmValues.
    const cm = await load([{ kind: 'ConfigMap', name: 'c' }], readsOf(source('ConfigMap', TENANT_NS, 'c', { 'values.yaml': 'replicaCount: 9' })));
    expect(() => crm(cm.scope, cm.valuesFrom)).toThrow('replicaCount: 9 is above the Starter maximum of 2');
  });

  it('refuses a key that is absent, not a mapping or not YAML, and quotes no Secret text', async () => {
    const odd = { list: '- a\n- b', broken: 'config: {a: [s3cr3t-canary', empty: '' };
    const reads = readsOf(source('Secret', TENANT_NS, 'odd', odd), source('ConfigMap', TENANT_NS, 'odd', odd));
    const messageOf = async (ref: ValuesReference): Promise<string> => ((await load([ref], reads)).valuesFrom.get('orbit-crm') as InputError).message;
    expect(await messageOf({ kind: 'Secret', name: 'odd', valuesKey: 'nope' })).toContain('no such key (keys: broken, empty, list)');
    expect(await messageOf({ kind: 'Secret', name: 'odd', valuesKey: 'list' })).toContain('must hold a YAML mapping');
    const secretYaml = await messageOf({ kind: 'Secret', name: 'odd', valuesKey: 'broken' });
    expect(secretYaml).toContain('not YAML (its content is not shown)');
    expect(secretYaml).not.toContain('s3cr3t');
    expect(await messageOf({ kind: 'ConfigMap', name: 'odd', valuesKey: 'broken' })).toMatch(/not YAML \(\w/);
    const empty = await load([{ kind: 'Secret', name: 'odd', valuesKey: 'empty' }], reads);
    expect(empty.valuesFrom.get('orbit-crm')).toEqual([expect.objectContaining({ values: {} })]);
  });

  it('keeps __proto__ a key (refused by the contract), never a prototype', async () => {
    const { scope, valuesFrom } = await load([{ kind: 'ConfigMap', name: 'p' }], readsOf(source('ConfigMap', TENANT_NS, 'p', { 'values.yaml': '__proto__: {replicaCount: 9}' })));
    expect(() => crm(scope, valuesFrom)).toThrow('__proto__: not a value a tenant may set');
    expect(Object.getPrototypeOf(atPath('__proto__.x', 'v'))).toBe(Object.prototype);
    expect(Object.keys(atPath('__proto__.x', 'v'))).toEqual(['__proto__']);
  });

  it('a value from a Secret goes under secretConfig, never config; secretConfig never from a ConfigMap nor inline (each refusal names where, never the value)', async () => {
    const secretText = source('Secret', TENANT_NS, 's', { key: 's3cr3t-canary', 'values.yaml': 'config:\n  token: s3cr3t-canary\n' });
    const configMap = source('ConfigMap', TENANT_NS, 'c', { key: 'plain', 'values.yaml': 'secretConfig:\n  token: plain\n' });
    const reads = readsOf(secretText, configMap);
    const refused: [ValuesReference[], Partial<EvaTenant['spec']>, string][] = [
      [[{ kind: 'Secret', name: 's', valuesKey: 'key', targetPath: 'config.sso.clientSecret' }], {}, 'spec.valuesFrom.orbit-crm[0] (Secret eva-tenant-acmeco/s (key key)): config: a value from a Secret may not go under config'],
      [[{ kind: 'Secret', name: 's' }], {}, 'spec.valuesFrom.orbit-crm[0] (Secret eva-tenant-acmeco/s (key values.yaml)): config: a value from a Secret may not go under config (rendered in plain text into the ConfigMap orbit-crm-config): put it under secretConfig'],
      [[{ kind: 'ConfigMap', name: 'c', valuesKey: 'key', targetPath: 'secretConfig.token' }], {}, 'spec.valuesFrom.orbit-crm[0] (ConfigMap eva-tenant-acmeco/c (key key)): secretConfig: may be set only from a Secret, not from a ConfigMap'],
      [[{ kind: 'ConfigMap', name: 'c' }], {}, '(ConfigMap eva-tenant-acmeco/c (key values.yaml)): secretConfig: may be set only from a Secret'],
      [[], { helmValues: { 'orbit-crm': { secretConfig: { token: 'inline' } } } }, 'spec.helmValues.orbit-crm: secretConfig: may be set only from a Secret: use spec.valuesFrom.orbit-crm with kind: Secret'],
    ];
    for (const [refs, spec, named] of refused) {
      const { scope, valuesFrom } = await load(refs, reads, spec);
      const error = (() => {
        try {
          crm(scope, valuesFrom);
          return undefined;
        } catch (err) {
          return err as InputError;
        }
      })();
      expect(error?.reason).toBe('InvalidHelmValues');
      expect(error?.message).toContain(named);
      expect(error?.message).not.toContain('s3cr3t-canary');
    }
    // Positive controls: the same Secret under secretConfig and the same ConfigMap under config pass.
    const { scope, valuesFrom } = await load(
      [{ kind: 'Secret', name: 's', valuesKey: 'key', targetPath: 'secretConfig.sso.clientSecret' }, { kind: 'ConfigMap', name: 'c', valuesKey: 'key', targetPath: 'config.mode' }],
      reads,
    );
    const values = crm(scope, valuesFrom);
    expect(values.secret).toMatchObject({ secretConfig: { sso: { clientSecret: 's3cr3t-canary' } } });
    expect(values.plain).toMatchObject({ config: { mode: 'plain' } });
    expect(JSON.stringify(values.plain)).not.toContain('s3cr3t-canary');
    expect(secretStrings(values)).toContain('s3cr3t-canary');
  });

  it('hibernation wins over a replicaCount from a Secret', async () => {
    const { scope, valuesFrom } = await load([{ kind: 'Secret', name: 'r' }], readsOf(source('Secret', TENANT_NS, 'r', { 'values.yaml': 'replicaCount: 2' })), { lifecycle: 'Suspended' });
    expect(valuesFileContent(crm(scope, valuesFrom))['replicaCount']).toBe(0);
  });

  it('refuses a valuesFrom key that is not a module; ignores modules outside the tier', async () => {
    const scope = scopeFor({ valuesFrom: { 'not-a-module': [] } });
    await expect(loadValuesFrom(scope, readsOf(), OPERATOR_NS)).rejects.toThrow('spec.valuesFrom: not-a-module is not a module name');
    const outside = scopeFor({ valuesFrom: { 'eva-forge': [{ kind: 'Secret', name: 'absent' }] } });
    expect((await loadValuesFrom(outside, readsOf(), OPERATOR_NS)).size).toBe(0);
  });
});
