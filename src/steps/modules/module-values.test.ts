import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EvaTenant } from '../../api/evatenant.ts';
import { ImageCatalog } from '../../bundle/images.ts';
import { SeedCatalog } from '../../bundle/seeds.ts';
import { createLogger } from '../../log.ts';
import { InputError } from '../../errors.ts';
import { deepMerge, moduleValues, secretStrings, type ValuesDeps, valuesFileContent, valuesHash } from './module-values.ts';
import type { TenantScope } from '../../tenancy/scope.ts';
import { testScope } from '../../../test/support/fixtures.ts';
import { repoRoot } from '../../../test/support/tools.ts';

const DIGEST = 'c'.repeat(64);

function scopeFor(spec: Partial<EvaTenant['spec']> = {}): TenantScope {
  return testScope({ code: 'ACMECO', seedsVersion: '1.0.0', spec, log: createLogger('silent') });
}

const deps: ValuesDeps = {
  images: ImageCatalog.parse(
    `ghcr.io/aidonow/orbit-crm:1.0.0@sha256:PLACEHOLDER\nghcr.io/aidonow/orbit-crm:1.1.0@sha256:${DIGEST}\nghcr.io/aidonow/orbit-itsm:1.0.0@sha256:PLACEHOLDER\n`,
  ),
  seeds: SeedCatalog.load(join(repoRoot, 'seeds')),
  config: { moduleOtelEndpoint: 'http://otel.eva-system:4318' },
};

const credentials = { 'db-password': 'db-secret-value', 'api-key': 'api-secret-value', 'jwt-secret': 'jwt-secret-value' };
const secrets = { credentials, natsRevision: 'nats-rev-1' };

describe('module values', () => {
  it('sets image, tenant, otel and seed, and keeps secrets apart', () => {
    const values = moduleValues({ module: 'orbit-crm', scope: scopeFor(), deps, ...secrets });
    expect(values.plain).toEqual({
      image: { repository: 'ghcr.io/aidonow/orbit-crm', tag: '1.1.0', digest: `sha256:${DIGEST}` },
      tenant: { code: 'ACMECO', tier: 'Starter' },
      otel: { endpoint: 'http://otel.eva-system:4318' },
      seed: { enabled: true, version: '1.0.0' },
      // The NATS connection is a mounted Secret, named here; its revision rolls the pods when it changes.
      nats: { secretName: 'eva-nats', credentialsRevision: 'nats-rev-1' },
    });
    expect(values.secret).toEqual({ credentials });
    expect(JSON.stringify(values.plain)).not.toMatch(/secret-value/);
  });

  it('honours spec.versions and rejects an unknown pin as input', () => {
    const pinned = moduleValues({ module: 'orbit-crm', scope: scopeFor({ versions: { 'orbit-crm': '1.0.0' } }), deps, ...secrets });
    expect(pinned.plain['image']).toEqual({ repository: 'ghcr.io/aidonow/orbit-crm', tag: '1.0.0', digest: '' });
    expect(() => moduleValues({ module: 'orbit-crm', scope: scopeFor({ versions: { 'orbit-crm': '9.9.9' } }), deps, ...secrets })).toThrow(
      'orbit-crm 9.9.9 is not in images.txt; available: 1.0.0, 1.1.0',
    );
  });

  it('passes the tenant’s config, replicaCount, resources and probes; the operator’s values win', () => {
    const tenant = { replicaCount: 2, resources: { limits: { cpu: '500m' } }, probes: { livenessPath: '/healthz' }, config: { currency: 'USD' } };
    const values = moduleValues({ module: 'orbit-crm', scope: scopeFor({ helmValues: { 'orbit-crm': tenant } }), deps, ...secrets });
    expect(values.plain).toMatchObject({ ...tenant, image: { tag: '1.1.0' }, tenant: { code: 'ACMECO' } });
  });

  it.each([
    ['an operator-owned key', { image: { repository: 'evil.example/x' } }, 'image: set by the operator'],
    ['another tenant’s code', { tenant: { code: 'OTHERS' } }, 'tenant: set by the operator'],
    ['secret values', { nats: { password: 'x' } }, 'nats: set by the operator'],
    ['an unknown key', { foo: 1 }, 'foo: not a value a tenant may set'],
    ['an unknown resource', { resources: { limits: { 'nvidia.com/gpu': '1' } } }, 'resources.limits.nvidia.com~1gpu: not a value a tenant may set'],
    ['an injected probe path', { probes: { livenessPath: '/livez\n---\nkind: ConfigMap' } }, 'probes.livenessPath'],
    ['replicas above the Starter maximum', { replicaCount: 3 }, 'replicaCount: 3 is above the Starter maximum of 2'],
    ['a CPU limit above the Starter maximum', { resources: { limits: { cpu: '1500m' } } }, 'resources.limits.cpu: 1500m is above the Starter maximum of 1'],
    ['memory above the Starter maximum', { resources: { requests: { memory: '2Gi' } } }, 'resources.requests.memory: 2Gi is above the Starter maximum of 1Gi'],
  ])('refuses %s as input, naming the key', (_label, tenant, named) => {
    const scope = scopeFor({ helmValues: { 'orbit-crm': tenant } });
    expect(() => moduleValues({ module: 'orbit-crm', scope, deps, ...secrets })).toThrow(InputError);
    expect(() => moduleValues({ module: 'orbit-crm', scope, deps, ...secrets })).toThrow(named);
  });

  it('allows up to the tier maximum (positive control of the bounds)', () => {
    const atMax = { replicaCount: 2, resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1000m', memory: '1024Mi' } } };
    expect(moduleValues({ module: 'orbit-crm', scope: scopeFor({ helmValues: { 'orbit-crm': atMax } }), deps, ...secrets }).plain).toMatchObject(atMax);
  });

  it('puts the operator’s secret values last in the file, and lists every secret string for scrubbing', () => {
    const values = moduleValues({ module: 'orbit-itsm', scope: scopeFor(), deps, ...secrets });
    expect(Object.keys(valuesFileContent(values)).slice(-1)).toEqual(['credentials']);
    expect(secretStrings(values).sort()).toEqual(['api-secret-value', 'db-secret-value', 'jwt-secret-value']);
  });

  it('deep-merges objects, replaces arrays and scalars', () => {
    expect(deepMerge({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, e: 2 })).toEqual({ a: { b: 1, c: [3] }, d: 1, e: 2 });
  });
});

describe('values hash', () => {
  const values = moduleValues({ module: 'orbit-crm', scope: scopeFor(), deps, ...secrets });

  it('is a label value that ignores key order', () => {
    const hash = valuesHash('1.0.0+abc', values);
    expect(hash).toMatch(/^[a-f0-9]{48}$/);
    const reordered = { plain: Object.fromEntries(Object.entries(values.plain).reverse()), secret: values.secret };
    expect(valuesHash('1.0.0+abc', reordered)).toBe(hash);
  });

  it('changes with a credential, the NATS credentials, a value or the chart', () => {
    const hash = valuesHash('1.0.0+abc', values);
    const rotated = moduleValues({ module: 'orbit-crm', scope: scopeFor(), deps, ...secrets, credentials: { ...credentials, 'db-password': 'new' } });
    expect(valuesHash('1.0.0+abc', rotated)).not.toBe(hash);
    expect(valuesHash('1.0.1+abc', values)).not.toBe(hash);
    const renewed = moduleValues({ module: 'orbit-crm', scope: scopeFor(), deps, ...secrets, natsRevision: 'nats-rev-2' });
    expect(valuesHash('1.0.0+abc', renewed)).not.toBe(hash);
    const scaled = moduleValues({ module: 'orbit-crm', scope: scopeFor({ helmValues: { 'orbit-crm': { replicaCount: 2 } } }), deps, ...secrets });
    expect(valuesHash('1.0.0+abc', scaled)).not.toBe(hash);
  });
});

