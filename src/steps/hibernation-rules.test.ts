import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ImageCatalog } from '../bundle/images.ts';
import { SeedCatalog } from '../bundle/seeds.ts';
import { publicKeyOf } from '../adapters/nats-jwt.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { createLogger } from '../log.ts';
import { hibernatedPhase } from '../status/conditions.ts';
import { sagaConditions } from '../status/tenant-status.ts';
import { testScope } from '../../test/support/fixtures.ts';
import { newAccountKeys } from '../nats/account-keys.ts';
import { moduleValues } from './modules/module-values.ts';
import { REFUSED_UNTIL_RESUMED, tenantClaims } from '../nats/accounts.ts';
import { ingressUrl, moduleStatus } from './observed.ts';
import { VALUES_HASH_LABEL } from './modules/release-state.ts';
import { isHibernated, retainsData, type TenantScope } from '../tenancy/scope.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const scopeFor = (spec: Partial<EvaTenant['spec']> = {}): TenantScope => testScope({ code: 'ACMECO', seedsVersion: '1.0.0', spec, log: createLogger('silent') });
const deps = {
  images: ImageCatalog.parse('ghcr.io/aidonow/orbit-crm:1.0.0@sha256:PLACEHOLDER\n'),
  seeds: SeedCatalog.load(join(repoRoot, 'seeds')),
  config: {},
};
const secrets = { credentials: {}, natsRevision: 'rev' };

describe('hibernation (spec.lifecycle Suspended)', () => {
  it('is read from the spec, as is data retention (Delete unless Retain)', () => {
    expect(isHibernated(scopeFor({ lifecycle: 'Suspended' }))).toBe(true);
    expect(isHibernated(scopeFor())).toBe(false);
    expect(retainsData(scopeFor({ dataRetention: 'Retain' }))).toBe(true);
    expect(retainsData(scopeFor())).toBe(false);
  });

  it('scales modules to zero through helm values, over the tenant’s own replicaCount', () => {
    const helmValues = { 'orbit-crm': { replicaCount: 2 } }; // the Starter maximum
    const asleep = moduleValues({ module: 'orbit-crm', scope: scopeFor({ lifecycle: 'Suspended', helmValues }), deps, ...secrets });
    const awake = moduleValues({ module: 'orbit-crm', scope: scopeFor({ helmValues }), deps, ...secrets });
    expect(asleep.plain['replicaCount']).toBe(0);
    expect(awake.plain['replicaCount']).toBe(2);
  });

  it('revokes the modules’ user in the account JWT, and only while hibernated', () => {
    const keys = { ...newAccountKeys(true), revocations: { UOLD: 10 } };
    const user = publicKeyOf(keys.userSeed ?? '', 'user');
    expect(tenantClaims(scopeFor({ lifecycle: 'Suspended' }), keys).revocations).toEqual({ UOLD: 10, [user]: REFUSED_UNTIL_RESUMED });
    expect(tenantClaims(scopeFor(), keys).revocations).toEqual({ UOLD: 10 });
    expect(tenantClaims(scopeFor(), keys, true).revocations).toEqual({ UOLD: 10, [user]: REFUSED_UNTIL_RESUMED });
    expect(new Date(REFUSED_UNTIL_RESUMED * 1000).toISOString()).toBe('9999-12-31T23:59:59.000Z');
    // Mid-rotation, the user being retired is refused too.
    const rotating = { ...keys, retiringUser: 'URETIRING' };
    expect(tenantClaims(scopeFor({ lifecycle: 'Suspended' }), rotating).revocations).toEqual({ UOLD: 10, [user]: REFUSED_UNTIL_RESUMED, URETIRING: REFUSED_UNTIL_RESUMED });
  });

  it('shows Suspended once at rest, with Ready True (as asked: kstatus Current), and Provisioning while it gets there', () => {
    const resting = sagaConditions({ stage: 'active', wasActive: true }, true);
    expect(hibernatedPhase({ stage: 'active', wasActive: true })).toBe('Suspended');
    expect(resting['Ready']).toMatchObject({ status: 'True', reason: 'Suspended' });
    expect(resting['Ready']?.message).toContain('nothing is served');
    expect(resting['ModulesDeployed']).toMatchObject({ status: 'True', reason: 'ScaledToZero' });
    expect(resting['IngressReady']).toMatchObject({ status: 'True', reason: 'IngressWithdrawn' });
    expect(hibernatedPhase({ stage: 'provisioning', currentStep: 'modules', wasActive: true, updating: true })).toBe('Provisioning');
    expect(sagaConditions({ stage: 'provisioning', currentStep: 'modules', wasActive: true }, true)['Ready']?.status).not.toBe('False');
  });
});

describe('status.url and status.modules', () => {
  const rules = [{ host: 'acmeco.eva.example' }];
  it('derives the scheme from the Ingress’s tls section', () => {
    expect(ingressUrl({ spec: { rules } })).toBe('http://acmeco.eva.example');
    expect(ingressUrl({ spec: { rules, tls: [{ hosts: ['acmeco.eva.example'], secretName: 's' }] } })).toBe('https://acmeco.eva.example');
    expect(ingressUrl({ spec: { rules, tls: [{ hosts: ['other.example'] }] } })).toBe('http://acmeco.eva.example');
    expect(ingressUrl(undefined)).toBeUndefined();
  });

  it('tells per module the chart version, replicas, values digest and what is wrong', () => {
    const release = { name: 'orbit-crm', version: 2, status: 'deployed', labels: { [VALUES_HASH_LABEL]: 'abc' } };
    const deployment = {
      metadata: { name: 'orbit-crm', generation: 1, labels: { 'helm.sh/chart': 'orbit-crm-1.2.0' } },
      spec: { replicas: 1, selector: {}, template: {} },
      status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 1, conditions: [{ type: 'Available', status: 'True' }] },
    };
    expect(moduleStatus(scopeFor(), 'orbit-crm', release, deployment)).toEqual({ chartVersion: '1.2.0', readyReplicas: 1, replicas: 1, valuesDigest: 'abc', message: 'available' });
    const asleep = { ...deployment, spec: { ...deployment.spec, replicas: 0 }, status: { ...deployment.status, readyReplicas: 0 } };
    expect(moduleStatus(scopeFor({ lifecycle: 'Suspended' }), 'orbit-crm', release, asleep).message).toBe('scaled to zero (spec.lifecycle: Suspended)');
    const stuck = { ...deployment, status: { ...deployment.status, readyReplicas: 0, conditions: [{ type: 'Available', status: 'False', message: 'Deployment does not have minimum availability.' }] } };
    expect(moduleStatus(scopeFor(), 'orbit-crm', release, stuck).message).toBe('orbit-crm: Deployment does not have minimum availability.');
    expect(moduleStatus(scopeFor(), 'orbit-crm', undefined, undefined)).toEqual({ readyReplicas: 0, replicas: 0, message: 'no release installed' });
    expect(moduleStatus(scopeFor(), 'orbit-crm', { ...release, status: 'pending-upgrade' }, deployment).message).toBe('release revision 2 is pending-upgrade');
  });
});
