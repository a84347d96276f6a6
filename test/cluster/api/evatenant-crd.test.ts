import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../support/tools.ts';
import { INVALID_SPECS } from '../../support/invalid-specs.ts';
import { kubectl, kubectlOk, tenantManifest } from '../../support/kubectl.ts';

const samples = readdirSync(join(repoRoot, 'samples')).filter((f) => f.endsWith('.yaml'));

function applyTenant(name: string, spec: Record<string, unknown>): { status: number; stderr: string } {
  return kubectl(['apply', '-f', '-'], tenantManifest(name, spec));
}

describe('EvaTenant CRD on the API server', () => {
  beforeAll(() => {
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', 'crd/evatenants.eva.aidonow.com']);
  });

  afterAll(() => {
    // Only what this file created: other tests may share the cluster.
    kubectl(['delete', 'evt', 'acmeco', 'betain', 'globex', 'platfm', 'defaults', 'immutable', 'verbatim', '--ignore-not-found', '--wait=false']);
  });

  it('applies every sample with kubectl', () => {
    expect(samples.length).toBe(4);
    for (const sample of samples) kubectlOk(['apply', '-f', join(repoRoot, 'samples', sample)]);
    const codes = kubectlOk(['get', 'evt', '-o', 'jsonpath={.items[*].spec.capsuleCode}']).split(' ');
    expect(codes.sort()).toEqual(['ACMECO', 'BETAIN', 'GLOBEX', 'PLATFM']);
  });

  it('shows code, tier, phase, wave, owner, ready, url and age columns', () => {
    const header = kubectlOk(['get', 'evt']).split('\n')[0] ?? '';
    expect(header.split(/\s+/).filter(Boolean)).toEqual(['NAME', 'CODE', 'TIER', 'PHASE', 'WAVE', 'OWNER', 'READY', 'URL', 'AGE']);
    const shortName = kubectlOk(['get', 'eva', '-o', 'name']);
    expect(shortName).toContain('evatenant.eva.aidonow.com/acmeco');
  });

  it('applies defaults (lifecycle Active, wave 1, dataRetention Delete)', () => {
    expect(applyTenant('defaults', { capsuleCode: 'DEFAUL', tier: 'Starter' }).status).toBe(0);
    const out = kubectlOk(['get', 'evt', 'defaults', '-o', 'jsonpath={.spec.lifecycle}/{.spec.wave}/{.spec.dataRetention}']);
    expect(out).toBe('Active/1/Delete');
  });

  it.each([
    ...INVALID_SPECS.map(([label, spec, field]) => [label, spec, `spec.${field}`] as const),
    ['an unknown module in versions', { capsuleCode: 'ABCDEF', tier: 'Starter', versions: { 'no-such': '1.0.0' } }, 'spec.versions'] as const,
  ])('rejects %s with a message naming the field', (_label, spec, field) => {
    const result = applyTenant('invalid', spec);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(field);
    expect(result.stderr).toMatch(/invalid|Invalid|Unsupported value/);
    expect(kubectl(['get', 'evt', 'invalid']).status).not.toBe(0);
  });

  it('rejects a change of capsuleCode on an existing tenant', () => {
    expect(applyTenant('immutable', { capsuleCode: 'IMMUTA', tier: 'Starter' }).status).toBe(0);
    const result = applyTenant('immutable', { capsuleCode: 'CHANGE', tier: 'Starter' });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('spec.capsuleCode');
    expect(result.stderr).toContain('capsuleCode is immutable once set');
    expect(kubectlOk(['get', 'evt', 'immutable', '-o', 'jsonpath={.spec.capsuleCode}'])).toBe('IMMUTA');
  });

  it('keeps helmValues config verbatim', () => {
    const values = { replicaCount: 3, config: { deep: { list: [1, 'two', { three: true }], empty: {} } } };
    expect(applyTenant('verbatim', { capsuleCode: 'VERBAT', tier: 'Enterprise', helmValues: { 'eva-gateway': values } }).status).toBe(0);
    const stored = JSON.parse(kubectlOk(['get', 'evt', 'verbatim', '-o', 'jsonpath={.spec.helmValues}'])) as unknown;
    expect(stored).toEqual({ 'eva-gateway': values });
  });

  it('refuses an unknown key at apply, naming it: never pruned in silence (the stored-spec case, with the policy lifted, is e2e/confinement/values.test.ts)', () => {
    const values = { foo: 1, resources: { limits: { 'nvidia.com/gpu': '1' } } };
    const result = kubectl(['apply', '--dry-run=server', '--validate=false', '-o', 'jsonpath={.spec.helmValues}', '-f', '-'], tenantManifest('unknown', { capsuleCode: 'UNKNOW', tier: 'Enterprise', helmValues: { 'eva-gateway': values } }));
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('spec.helmValues.eva-gateway.foo: not a value a tenant may set');
    const known = kubectl(['apply', '--dry-run=server', '--validate=false', '-o', 'jsonpath={.spec.helmValues}', '-f', '-'], tenantManifest('unknown', { capsuleCode: 'UNKNOW', tier: 'Enterprise', helmValues: { 'eva-gateway': { replicaCount: 2 } } }));
    expect(known.status, `positive control: ${known.stderr}`).toBe(0);
    expect(JSON.parse(known.stdout)).toEqual({ 'eva-gateway': { replicaCount: 2 } });
  });

  it.each([
    ['an operator-owned key', { image: { repository: 'evil.example/x' } }, 'image is set by the operator'],
    ['another tenant’s code', { tenant: { code: 'OTHERS' } }, 'tenant is set by the operator'],
    ['an injected probe path', { probes: { livenessPath: '/livez\n---\nkind: ConfigMap' } }, 'spec.helmValues.eva-gateway.probes.livenessPath'],
    ['replicas above the tier maximum', { replicaCount: 11 }, 'replicaCount is above the tier'],
    ['a CPU limit above the tier maximum', { resources: { limits: { cpu: '5' } } }, 'resources are above the tier'],
  ])('refuses helmValues with %s, naming it (--validate=false: no client-side help)', (_label, values, named) => {
    const result = kubectl(['apply', '--validate=false', '-f', '-'], tenantManifest('invalid', { capsuleCode: 'INVALD', tier: 'Enterprise', helmValues: { 'eva-gateway': values } }));
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(named);
    expect(kubectl(['get', 'evt', 'invalid']).status).not.toBe(0);
  });
});
