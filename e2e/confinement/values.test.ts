/**
 * The module values contract against the real API server, the real operator and helm: what a tenant
 * may not set is refused at apply (each refusal beside a positive control that the same apply with a
 * benign value goes through), hostile strings through every probe path and resources quantity among
 * them, naming the key; benign config, replicaCount and resources take effect; a spec stored
 * before the contract (written while the cluster had no values policy) is reported by the operator
 * (ModulesDeployed False and a Warning event naming the key), and its release stays installed, untouched.
 *
 * Shared cluster: its own operator version, tenants pinned to it, capsule codes starting with V.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { parse } from 'yaml';
import { eventually, kubectl, kubectlOk, tenantManifest } from '../../test/support/kubectl.ts';
import { HOSTILE } from '../../test/support/hostile-charts.ts';
import { repoRoot } from '../../test/support/tools.ts';
import { helmReleases } from '../../test/support/helm.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../../test/support/operator.ts';
import { describeShowsWarning, isActive, patchTenantSpec, pinnedVersion, waitForGone, waitForTenant } from '../../test/support/tenants.ts';

const VERSION = '9.6.1';
const CASE_MS = 600_000;
/** The ValidatingAdmissionPolicy (and binding) of the values contract (charts/eva-operator/templates/tenant-values-policy.yaml). */
const VALUES_POLICY = 'eva-tenant-values';
const CRD_NAME = 'crd/evatenants.eva.aidonow.com';

const spec = (code: string, helmValues?: Record<string, unknown>): Record<string, unknown> => ({
  capsuleCode: code, tier: 'Starter', wave: 1, seedsVersion: '1.0.0', operatorVersion: VERSION, ...(helmValues ? { helmValues } : {}),
});

/** Server-side dry run with client-side validation off: only the API server judges. */
function dryRun(name: string, helmValues: Record<string, unknown>): { status: number; stderr: string } {
  return kubectl(['apply', '--dry-run=server', '--validate=false', '-f', '-'], tenantManifest(name, spec('VREFUS', helmValues)));
}

function installCrd(file: string): void {
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', file]);
  kubectlOk(['wait', '--for=condition=Established', CRD_NAME]);
}

describe('module values contract (real API server, operator, helm)', () => {
  let operator: OperatorProcess;
  const made: string[] = [];

  beforeAll(async () => {
    installCrd(join(repoRoot, 'crds'));
    operator = startOperator({ OPERATOR_VERSION: VERSION, MAX_WAVE: '0' });
    await operator.ready();
  }, 120_000);

  afterAll(async () => {
    installCrd(join(repoRoot, 'crds'));
    const ours = made.filter((name) => pinnedVersion(name) === VERSION);
    for (const name of ours) kubectl(['delete', 'evt', name, '--wait=false']);
    const gone = await Promise.all(ours.map((name) => waitForGone(name, 240_000)));
    await operator.stop();
    removeSecretsDir(operator);
    expect(gone.every(Boolean)).toBe(true);
  }, 300_000);

  it.each([
    ['a foreign image', { image: { repository: 'evil.example/miner' } }, 'image is set by the operator'],
    ['another tenant’s code', { tenant: { code: 'OTHERS' } }, 'tenant is set by the operator'],
    ['an operator-owned key of the wrong type', { service: 'x' }, 'spec.helmValues.orbit-crm.service'],
    ['an unknown key', { foo: 'bar' }, 'spec.helmValues.orbit-crm.foo: not a value a tenant may set (a tenant may set only config, replicaCount, resources, probes)'],
    ['an unknown key beside benign ones', { config: { a: 1 }, replicaCount: 1, imagePullSecrets: [{ name: 'x' }] }, 'spec.helmValues.orbit-crm.imagePullSecrets: not a value'],
    ['an unknown key under resources', { resources: { claims: [{ name: 'gpu' }] } }, 'spec.helmValues.orbit-crm.resources.claims: not a value a tenant may set (resources holds only requests, limits)'],
    ['a resource the contract does not bound', { resources: { limits: { cpu: '1', 'nvidia.com/gpu': '1' } } }, 'spec.helmValues.orbit-crm.resources.limits.nvidia.com/gpu: not a value a tenant may set (resources.limits holds only cpu, memory)'],
    ['an unknown probe', { probes: { startupPath: '/startz' } }, 'spec.helmValues.orbit-crm.probes.startupPath: not a value a tenant may set (probes holds only readinessPath, livenessPath)'],
    ['replicas above the Starter maximum', { replicaCount: 3 }, 'replicaCount is above the tier'],
    ['resources above the Starter maximum', { resources: { limits: { memory: '2Gi' } } }, 'resources are above the tier'],
  ])('refuses %s at apply, naming where; the benign value is accepted (positive control)', (_label, values, named) => {
    const refused = dryRun('vrefus', { 'orbit-crm': values });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain(named);
    const control = dryRun('vrefus', { 'orbit-crm': { replicaCount: 2, resources: { limits: { memory: '1Gi' } }, probes: { livenessPath: '/livez' }, config: { foo: 'bar' } } });
    expect(control.stderr).toBe('');
    expect(control.status).toBe(0);
  });

  // Every string besides config that a tenant may set and a chart renders (the probe paths into the
  // Deployment's httpGet, the quantities into its resources), with the benign value of each.
  it.each([
    ['probes.livenessPath', '/livez'],
    ['probes.readinessPath', '/readyz'],
    ['resources.requests.cpu', '1'],
    ['resources.requests.memory', '1Gi'],
    ['resources.limits.cpu', '500m'],
    ['resources.limits.memory', '64Mi'],
  ])('refuses every hostile string through %s at apply, naming the key; %s is accepted (positive control)', (path, benign) => {
    // Beside the hostile strings, short ones that pass the length limit (a quantity has 8 bytes), so
    // the pattern itself is what refuses them: the benign value with a document marker after it, too.
    const strings = [...HOSTILE, `${benign}\n---`, '{{.}}', '*a', '- 1', '&a 1'];
    const at = (value: string): Record<string, unknown> => path.split('.').reduceRight<unknown>((inner, key) => ({ [key]: inner }), value) as Record<string, unknown>;
    const accepted = strings.filter((text) => {
      const refused = dryRun('vrefus', { 'orbit-crm': at(text) });
      return refused.status === 0 || !refused.stderr.includes(`spec.helmValues.orbit-crm.${path}`);
    });
    expect(accepted, `not refused naming spec.helmValues.orbit-crm.${path}`).toEqual([]);
    const control = dryRun('vrefus', { 'orbit-crm': at(benign) });
    expect(control.stderr).toBe('');
    expect(control.status).toBe(0);
  });

  it('names every module and key outside the contract at once (positive control: the same modules with benign values pass)', () => {
    const refused = dryRun('vrefus', { 'orbit-crm': { foo: 1 }, 'orbit-itsm': { config: { a: 1 }, bar: 2, probes: { readinessPath: '/ready' } } });
    expect(refused.status).not.toBe(0);
    // One message for every module (in the API server's map order).
    expect(refused.stderr).toMatch(/(spec\.helmValues\.orbit-crm\.foo|spec\.helmValues\.orbit-itsm\.bar), (spec\.helmValues\.orbit-itsm\.bar|spec\.helmValues\.orbit-crm\.foo): not a value a tenant may set/);
    expect(refused.stderr).toContain('spec.helmValues.orbit-crm.foo');
    expect(refused.stderr).toContain('spec.helmValues.orbit-itsm.bar');
    const control = dryRun('vrefus', { 'orbit-crm': { replicaCount: 1 }, 'orbit-itsm': { config: { a: 1, bar: 2 }, probes: { readinessPath: '/ready' } } });
    expect(control.stderr).toBe('');
    expect(control.status).toBe(0);
  });

  it('benign config, replicaCount and resources are accepted and take effect', async () => {
    const name = 'vbenin';
    const namespace = 'eva-tenant-vbenin';
    const resources = { requests: { cpu: '100m', memory: '96Mi' }, limits: { cpu: '300m', memory: '320Mi' } };
    made.push(name);
    const at = Date.now();
    kubectlOk(['apply', '-f', '-'], tenantManifest(name, spec('VBENIN', { 'orbit-crm': { config: { currency: 'USD' }, replicaCount: 2, resources } })));
    await waitForTenant(name, 'Active', isActive, CASE_MS, at);
    const config = kubectlOk(['get', 'configmap', 'orbit-crm-config', '-n', namespace, '-o', 'jsonpath={.data.config\\.yaml}']);
    expect((parse(config) as { config: { currency: string } }).config.currency).toBe('USD');
    const deployment = JSON.parse(kubectlOk(['get', 'deployment', 'orbit-crm', '-n', namespace, '-o', 'json'])) as {
      spec: { replicas: number; template: { spec: { containers: { resources: unknown }[] } } };
    };
    expect(deployment.spec.replicas).toBe(2);
    expect(deployment.spec.template.spec.containers[0]?.resources).toEqual(resources);
  }, CASE_MS);

  it('hostile strings in every leaf and key of config stay data: the tenant is Active, its ConfigMap holds them verbatim, nothing lands elsewhere', async () => {
    const name = 'vhosti';
    const namespace = 'eva-tenant-vhosti';
    made.push(name);
    // Every hostile string as a value, as a key, and inside a list: config is free-form, so the API lets them all through.
    const config = { ...Object.fromEntries(HOSTILE.map((text, i) => [`leaf${String(i)}`, text])), ...Object.fromEntries(HOSTILE.map((text) => [text, 'as a key'])), list: HOSTILE };
    const at = Date.now();
    kubectlOk(['apply', '-f', '-'], tenantManifest(name, spec('VHOSTI', { 'orbit-crm': { config } })));
    await waitForTenant(name, 'Active', isActive, CASE_MS, at);
    // Positive control: the strings did reach the chart (verbatim in the ConfigMap's data), so had any become structure it would show.
    const stored = kubectlOk(['get', 'configmap', 'orbit-crm-config', '-n', namespace, '-o', 'jsonpath={.data.config\\.yaml}']);
    expect((parse(stored) as { config: Record<string, unknown> }).config).toMatchObject(config); // beside the chart's default config keys
    expect(kubectl(['get', 'configmap', 'pwned', '-n', 'kube-system']).status).not.toBe(0);
    expect(kubectl(['get', 'clusterrolebinding', 'pwned']).status).not.toBe(0);
    // The release holds exactly the chart's own objects, all in the tenant's namespace.
    const owned = kubectlOk(['get', 'deployments,services,configmaps,secrets', '-A', '-l', 'app.kubernetes.io/instance=orbit-crm', '-o', 'jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}{"\\n"}{end}']);
    expect(owned.split('\n').filter((line) => line.includes(namespace) || !line.includes('/eva-tenant-')).filter(Boolean).sort()).toEqual([
      `ConfigMap/${namespace}/orbit-crm-config`, `Deployment/${namespace}/orbit-crm`, `Secret/${namespace}/orbit-crm-credentials`, `Service/${namespace}/orbit-crm`,
    ]);
  }, CASE_MS);

  it('a spec stored before the contract is reported by the operator, naming the key; its release stays installed', async () => {
    const name = 'vstore';
    const namespace = 'eva-tenant-vstore';
    made.push(name);
    const at = Date.now();
    kubectlOk(['apply', '-f', '-'], tenantManifest(name, spec('VSTORE')));
    await waitForTenant(name, 'Active', isActive, CASE_MS, at);
    const before = helmReleases(namespace).find((r) => r.name === 'orbit-crm');
    expect(before?.status).toBe('deployed');

    // Before this upgrade the cluster had no values policy: without its binding, the API server stores
    // what the policy refuses (an honest pre-upgrade object); then the binding is back.
    const binding = JSON.parse(kubectlOk(['get', 'validatingadmissionpolicybinding', VALUES_POLICY, '-o', 'json'])) as { metadata: Record<string, unknown> };
    binding.metadata = { name: VALUES_POLICY, labels: binding.metadata['labels'] };
    kubectlOk(['delete', 'validatingadmissionpolicybinding', VALUES_POLICY]);
    try {
      // The API server drops the binding from its admission a moment after the delete.
      const stored = await eventually(() => kubectl(['patch', 'evt', name, '--type=merge', '-p', JSON.stringify({ spec: { helmValues: { 'orbit-crm': { image: { repository: 'evil.example/miner' }, foo: 'bar' } } } })]).status === 0, 30_000, 500);
      expect(stored, 'the spec was not stored without the policy binding').toBe(true);
    } finally {
      kubectlOk(['create', '-f', '-'], JSON.stringify(binding));
    }
    expect(kubectlOk(['get', 'evt', name, '-o', 'jsonpath={.spec.helmValues.orbit-crm.image.repository}'])).toBe('evil.example/miner');

    // The policy judges only writes that change the spec: the operator can still write status and
    // finalizer, and reports the stored spec (condition and Warning event), naming the key.
    const reported = await eventually(() => describeShowsWarning(name, 'InvalidHelmValues'), CASE_MS, 2_000);
    expect(reported, kubectl(['describe', 'evt', name]).stdout).toBe(true);
    expect(kubectl(['describe', 'evt', name]).stdout).toContain('image: set by the operator');
    expect(kubectl(['describe', 'evt', name]).stdout).toContain('foo: not a value a tenant may set');
    // Not frozen: a write that leaves the spec alone (a label) still goes through.
    kubectlOk(['label', 'evt', name, 'example.com/checked=yes']);
    // Never uninstalled, never upgraded with the foreign image.
    const after = helmReleases(namespace).find((r) => r.name === 'orbit-crm');
    expect(after).toMatchObject({ status: 'deployed', revision: before?.revision });
    const image = kubectlOk(['get', 'deployment', 'orbit-crm', '-n', namespace, '-o', 'jsonpath={.spec.template.spec.containers[0].image}']);
    expect(image).not.toContain('evil.example');

    const modulesDeployed = kubectlOk(['get', 'evt', name, '-o', 'jsonpath={.status.conditions[?(@.type=="ModulesDeployed")].reason}']);
    expect(modulesDeployed).toBe('InvalidHelmValues');
    // The same spec written now is refused at apply (the policy is back).
    const again = (): string => kubectl(['apply', '--dry-run=server', '-f', '-'], tenantManifest('vstorb', spec('VSTORB', { 'orbit-crm': { image: { repository: 'evil.example/miner' } } }))).stderr;
    expect(await eventually(() => again().includes('image is set by the operator'), 30_000, 500), again()).toBe(true);
    // Positive control: removing the key (a valid update) converges the tenant again.
    const fixed = Date.now();
    patchTenantSpec(name, { helmValues: null });
    await waitForTenant(name, 'Active', isActive, CASE_MS, fixed);
  }, CASE_MS * 2);
});
