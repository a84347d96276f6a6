/**
 * spec.valuesFrom against the real API server, the real operator (its label-selected watches), helm
 * and NATS: a missing reference is Stalled naming it and recovers by itself when the object appears
 * (woken by the watch, well before the 60 s recheck); a ConfigMap target path reaches the module's
 * ConfigMap, a Secret's under secretConfig reaches the module's Secret and not its ConfigMap; a Secret
 * targeting config is refused naming it, and secretConfig inline is refused at apply (each beside a
 * positive control); a Secret change upgrades exactly the release that uses it; a referenced object that
 * breaks the values contract is refused naming the reference and the key (then fixed: positive
 * control); a spec cannot read an unlabelled object, the operator's own Secrets or another tenant's
 * (each beside a positive control); in the operator's namespace only a source named for the tenant is
 * read, and it is bound to the tenant's uid (one staged for the code under another tenant's name, or
 * for no tenant, is refused naming it); a cyclic alias is refused as input naming the object; the
 * tenant's deletion retires its sources and a new EvaTenant of the same name and code reads none of
 * them (nor one bound to another uid); and no value from a Secret shows in the operator's log, the
 * tenants' events or status, while helm got it. status.modules.<module>.valuesDigest follows exactly
 * the release whose values changed. helm is a recording wrapper (HELM_BINARY): a value from a Secret
 * is in no helm argument, only in 0600 values files on the tmpfs HELM_SECRETS_DIR, none left behind.
 *
 * Shared cluster: its own operator version, tenants pinned to it, capsule codes starting with VF.
 * The operator's namespace is the suite operators' release namespace (test/support/operator-identity.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { eventually, kubectl, kubectlOk, tenantManifest } from '../test/support/kubectl.ts';
import { repoRoot, tool } from '../test/support/tools.ts';
import { VALUES_HASH_LABEL } from '../src/steps/modules/release-state.ts';
import { operatorNamespace } from '../test/support/operator-identity.ts';
import { helmReleases, recordingHelm } from '../test/support/helm.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../test/support/operator.ts';
import { applyTenant, isActive, patchTenantSpec, pinnedVersion, readTenant, type TenantView, waitForGone, waitForTenant } from '../test/support/tenants.ts';

const VERSION = '9.8.20';
const CASE_MS = 420_000;
const OPERATOR_NS = operatorNamespace();
const LABEL = 'eva.aidonow.com/values-source';
const run = Date.now().toString(36);
/** Strings that must reach helm and nothing a person reads. */
const CANARY = { sso: `sso-canary-${run}`, rotated: `rotated-canary-${run}`, contract: `contract-canary-${run}`, signing: `signing-canary-${run}` };

const MAIN = { name: 'vfmain', code: 'VFMAIN', namespace: 'eva-tenant-vfmain' };
const ATTACK = { name: 'vfatck', code: 'VFATCK', namespace: 'eva-tenant-vfatck' };
const operatorSecrets = [`vf-signing-${run}`, `vf-owned-${run}`, `vf-others-${run}`, `vf-shared-${run}`, `vf-mine-${run}`, `vf-unused-${run}`, `vf-forged-${run}`];
const TENANT_LABEL = 'eva.aidonow.com/tenant';
const UID_LABEL = 'eva.aidonow.com/tenant-uid';

const spec = (code: string, valuesFrom: Record<string, unknown[]>): Record<string, unknown> => ({
  capsuleCode: code, tier: 'Starter', wave: 1, seedsVersion: '1.0.0', operatorVersion: VERSION, valuesFrom,
});

/** A Secret or ConfigMap, labelled as a values source unless `labels` says otherwise, applied. */
function applySource(kind: 'Secret' | 'ConfigMap', namespace: string, name: string, data: Record<string, string>, labels: Record<string, string> = { [LABEL]: 'true' }): void {
  const body = kind === 'Secret' ? { type: 'Opaque', stringData: data } : { data };
  kubectlOk(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind, metadata: { name, namespace, labels }, ...body }));
}

const revisionOf = (namespace: string, release: string): number => Number(helmReleases(namespace).find((r) => r.name === release)?.revision ?? 0);

/** status.modules.<module>.valuesDigest of each module, as the API server has the tenant. */
function valuesDigests(name: string): Record<string, string | undefined> {
  const status = JSON.parse(kubectlOk(['get', 'evt', name, '-o', 'jsonpath={.status.modules}']) || '{}') as Record<string, { valuesDigest?: string }>;
  return Object.fromEntries(Object.entries(status).map(([module, s]) => [module, s.valuesDigest]));
}

/** The values-hash label on the release's deployed revision (helm's storage Secret): what was applied. */
const appliedDigest = (namespace: string, release: string): string =>
  kubectlOk(['get', 'secret', '-n', namespace, '-l', `owner=helm,name=${release},status=deployed`, '-o', `jsonpath={.items[0].metadata.labels.${VALUES_HASH_LABEL.replace(/\./g, '\\.')}}`]);

function helmValues(namespace: string, release: string): Record<string, unknown> {
  const out = spawnSync(tool('helm'), ['get', 'values', release, '-n', namespace, '-o', 'json'], { encoding: 'utf8', env: process.env });
  if (out.status !== 0) throw new Error(`helm get values ${release} failed: ${out.stderr}`);
  return JSON.parse(out.stdout) as Record<string, unknown>;
}

/** The module's config as its pods read it (ConfigMap <module>-config, key config.yaml). */
function moduleConfig(namespace: string, module: string): Record<string, unknown> {
  const text = kubectlOk(['get', 'configmap', `${module}-config`, '-n', namespace, '-o', 'jsonpath={.data.config\\.yaml}']);
  return (parse(text) as { config?: Record<string, unknown> }).config ?? {};
}

/** The module's secretConfig as its pods read it (Secret <module>-credentials, key secret-config.yaml). */
function moduleSecretConfig(namespace: string, module: string): Record<string, unknown> {
  const encoded = kubectlOk(['get', 'secret', `${module}-credentials`, '-n', namespace, '-o', 'jsonpath={.data.secret-config\\.yaml}']);
  return (parse(Buffer.from(encoded, 'base64').toString()) as Record<string, unknown> | null) ?? {};
}

/** Every ConfigMap of a namespace, as one text to search. */
const configMapsOf = (namespace: string): string => kubectlOk(['get', 'configmaps', '-n', namespace, '-o', 'json']);

const stalled = (reason: string, ...named: string[]) => (t: TenantView): boolean =>
  t.conditions['Stalled']?.status === 'True' && t.conditions['Stalled'].reason === reason && named.every((n) => t.conditions['Stalled']?.message.includes(n));

describe('values from Secrets and ConfigMaps (real API server, operator, helm)', () => {
  let operator: OperatorProcess;
  /**
   * The operator's helm: the CLI (no helm server), so every call is a process the wrapper records
   * (argv, values files) before it runs the pinned helm. The helm server gets the same values files
   * (test/cluster/steps/modules-helm-releases.test.ts checks its requests the same way).
   */
  const helm = recordingHelm(Object.values(CANARY));

  beforeAll(async () => {
    kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    // No drift check within the test: every upgrade seen comes from the watch.
    operator = startOperator({ OPERATOR_VERSION: VERSION, MAX_WAVE: '0', DRIFT_INTERVAL_SECONDS: '3600', HELM_BINARY: helm.binary, HELM_SERVER_BINARY: '' });
    await operator.ready();
  }, 120_000);

  afterAll(async () => {
    const ours = [MAIN.name, ATTACK.name].filter((name) => pinnedVersion(name) === VERSION);
    for (const name of ours) kubectl(['delete', 'evt', name, '--wait=false']);
    const gone = await Promise.all(ours.map((name) => waitForGone(name, 240_000)));
    await operator.stop();
    removeSecretsDir(operator);
    helm.remove();
    kubectl(['delete', 'secret', '-n', OPERATOR_NS, '--ignore-not-found', ...operatorSecrets]);
    expect(gone.every(Boolean)).toBe(true);
  }, 300_000);

  it('a missing reference is Stalled naming it, and recovers by itself (watch) when the object appears', async () => {
    const at = Date.now();
    applyTenant(MAIN.name, spec(MAIN.code, {
      'orbit-crm': [
        { kind: 'ConfigMap', name: 'crm-settings', valuesKey: 'currency', targetPath: 'config.currency' },
        { kind: 'Secret', name: 'crm-sso', valuesKey: 'client-secret', targetPath: 'secretConfig.sso.clientSecret' },
        { kind: 'Secret', name: 'crm-extra', optional: true },
      ],
    }));
    await waitForTenant(MAIN.name, 'Stalled on the missing ConfigMap', stalled('ValuesFromNotFound', `ConfigMap ${MAIN.namespace}/crm-settings`), CASE_MS, at);
    // The other module is not held back by this one's reference.
    expect(await eventually(() => helmReleases(MAIN.namespace).some((r) => r.name === 'orbit-itsm'), 120_000, 1_000)).toBe(true);
    expect(helmReleases(MAIN.namespace).some((r) => r.name === 'orbit-crm')).toBe(false);

    applySource('ConfigMap', MAIN.namespace, 'crm-settings', { currency: 'USD' });
    await waitForTenant(MAIN.name, 'Stalled on the missing Secret', stalled('ValuesFromNotFound', `Secret ${MAIN.namespace}/crm-sso`), 60_000);
    const appeared = Date.now();
    applySource('Secret', MAIN.namespace, 'crm-sso', { 'client-secret': CANARY.sso });
    // Woken by the watch: helm starts well before the 60 s recheck of a tenant waiting for its user.
    const started = await eventually(() => helmReleases(MAIN.namespace).some((r) => r.name === 'orbit-crm'), 40_000, 500);
    expect(started, `orbit-crm not started ${Date.now() - appeared} ms after the Secret appeared`).toBe(true);
    await waitForTenant(MAIN.name, 'Active', isActive, CASE_MS);
    expect(readTenant(MAIN.name)?.conditions['Stalled']).toBeUndefined();
  }, CASE_MS * 2);

  it('a Secret under secretConfig reaches the module\'s Secret and not its ConfigMap; a ConfigMap under config reaches the ConfigMap (positive control)', () => {
    expect(moduleConfig(MAIN.namespace, 'orbit-crm')['currency']).toBe('USD');
    expect(moduleSecretConfig(MAIN.namespace, 'orbit-crm')).toEqual({ sso: { clientSecret: CANARY.sso } });
    expect(configMapsOf(MAIN.namespace)).not.toContain(CANARY.sso);
    // The pod gets it as a file from that Secret (EVA_SECRET_CONFIG_FILE), never as a ConfigMap.
    const deployment = JSON.parse(kubectlOk(['get', 'deployment', 'orbit-crm', '-n', MAIN.namespace, '-o', 'json'])) as { spec: { template: { spec: { volumes: { name: string; secret?: { secretName: string } }[] } } } };
    expect(deployment.spec.template.spec.volumes.find((v) => v.name === 'secret-config')?.secret?.secretName).toBe('orbit-crm-credentials');
    expect(helmValues(MAIN.namespace, 'orbit-crm')).toMatchObject({ config: { currency: 'USD' }, secretConfig: { sso: { clientSecret: CANARY.sso } } });
    expect(JSON.stringify(helmValues(MAIN.namespace, 'orbit-itsm'))).not.toContain(CANARY.sso);
  });

  it('a Secret change upgrades exactly the release that uses it (helm history), and changes exactly its status.modules valuesDigest', async () => {
    const before = { crm: revisionOf(MAIN.namespace, 'orbit-crm'), itsm: revisionOf(MAIN.namespace, 'orbit-itsm') };
    // Every module shows the digest of what was applied: the values-hash label of its deployed release.
    const digests = valuesDigests(MAIN.name);
    expect(Object.keys(digests).sort()).toEqual(['orbit-crm', 'orbit-itsm']);
    for (const [module, digest] of Object.entries(digests)) {
      expect(digest, module).toMatch(/^[a-f0-9]{48}$/);
      expect(digest, module).toBe(appliedDigest(MAIN.namespace, module));
    }
    expect(digests['orbit-crm']).not.toBe(digests['orbit-itsm']);
    applySource('Secret', MAIN.namespace, 'crm-sso', { 'client-secret': CANARY.rotated });
    const upgraded = await eventually(() => revisionOf(MAIN.namespace, 'orbit-crm') > before.crm, 120_000, 1_000);
    expect(upgraded, 'orbit-crm was not upgraded after its Secret changed').toBe(true);
    await waitForTenant(MAIN.name, 'Active', isActive, CASE_MS);
    const changed = await eventually(() => valuesDigests(MAIN.name)['orbit-crm'] !== digests['orbit-crm'], 30_000, 1_000);
    expect(changed, `status.modules.orbit-crm.valuesDigest did not change: ${JSON.stringify(valuesDigests(MAIN.name))}`).toBe(true);
    const after = valuesDigests(MAIN.name);
    expect(after['orbit-crm']).toBe(appliedDigest(MAIN.namespace, 'orbit-crm'));
    expect(after['orbit-itsm'], 'the digest of the module whose values did not change').toBe(digests['orbit-itsm']);
    expect(helmValues(MAIN.namespace, 'orbit-crm')).toMatchObject({ secretConfig: { sso: { clientSecret: CANARY.rotated } } });
    expect(moduleSecretConfig(MAIN.namespace, 'orbit-crm')).toEqual({ sso: { clientSecret: CANARY.rotated } });
    // A change to a labelled object nobody references, and a no-op re-apply, upgrade nothing.
    applySource('Secret', MAIN.namespace, 'crm-unused', { 'client-secret': 'x' });
    applySource('Secret', MAIN.namespace, 'crm-sso', { 'client-secret': CANARY.rotated });
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    expect({ crm: revisionOf(MAIN.namespace, 'orbit-crm'), itsm: revisionOf(MAIN.namespace, 'orbit-itsm') }).toEqual({ crm: before.crm + 1, itsm: before.itsm });
    expect(valuesDigests(MAIN.name)).toEqual(after);
  }, CASE_MS);

  it('kubectl describe shows each module (chart version, message, replicas, values digest) and the URL', () => {
    const described = kubectlOk(['describe', 'evt', MAIN.name]);
    type Shown = { chartVersion: string; message: string; readyReplicas: number; replicas: number; valuesDigest: string };
    const status = JSON.parse(kubectlOk(['get', 'evt', MAIN.name, '-o', 'jsonpath={.status}'])) as { url?: string; modules: Record<string, Shown> };
    expect(status.url).toBe(`http://${MAIN.code.toLowerCase()}.tenants.eva.local`);
    expect(described).toMatch(new RegExp(`^\\s+URL:\\s+${status.url ?? ''}$`, 'm'));
    expect(Object.keys(status.modules).sort()).toEqual(['orbit-crm', 'orbit-itsm']);
    // kubectl describe prints a map key as words (`orbit-crm` as `Orbit - Crm`) and the fields sorted.
    const heading = (module: string): string => module.split('-').map((word) => `${word.charAt(0).toUpperCase()}${word.slice(1)}`).join(' - ');
    for (const [module, s] of Object.entries(status.modules)) {
      const fields = [`Chart Version: ${s.chartVersion}`, `Message: ${s.message}`, `Ready Replicas: ${String(s.readyReplicas)}`, `Replicas: ${String(s.replicas)}`, `Values Digest: ${s.valuesDigest}`];
      const block = [`${heading(module)}:`, ...fields].map((line) => line.replace(': ', ':\\s+')).join('\\s+');
      expect(described, module).toMatch(new RegExp(`Modules:[\\s\\S]*${block}`));
    }
  });

  it('a referenced object that breaks the values contract is refused naming the reference and the key; fixed, it converges', async () => {
    const revision = revisionOf(MAIN.namespace, 'orbit-crm');
    applySource('Secret', MAIN.namespace, 'crm-extra', { 'values.yaml': `image:\n  repository: evil.example/miner\nsecretConfig:\n  token: ${CANARY.contract}\n` });
    await waitForTenant(MAIN.name, 'refused', stalled('InvalidHelmValues', `Secret ${MAIN.namespace}/crm-extra (key values.yaml)`, 'image: set by the operator'), CASE_MS);
    applySource('Secret', MAIN.namespace, 'crm-extra', { 'values.yaml': `replicaCount: ${CANARY.contract}\n` });
    await waitForTenant(MAIN.name, 'refused', stalled('InvalidHelmValues', 'crm-extra', 'replicaCount: not within the values contract'), CASE_MS);
    expect(revisionOf(MAIN.namespace, 'orbit-crm')).toBe(revision);
    // Positive control: within the contract, it takes effect.
    applySource('Secret', MAIN.namespace, 'crm-extra', { 'values.yaml': 'replicaCount: 2\n' });
    await waitForTenant(MAIN.name, 'Active', isActive, CASE_MS);
    expect(kubectlOk(['get', 'deployment', 'orbit-crm', '-n', MAIN.namespace, '-o', 'jsonpath={.spec.replicas}'])).toBe('2');
  }, CASE_MS * 2);

  it('a Secret reference targeting config is refused naming it and pointing to secretConfig; back under secretConfig, it converges (positive control)', async () => {
    const revision = revisionOf(MAIN.namespace, 'orbit-crm');
    const refs = (target: string) => [
      { kind: 'ConfigMap', name: 'crm-settings', valuesKey: 'currency', targetPath: 'config.currency' },
      { kind: 'Secret', name: 'crm-sso', valuesKey: 'client-secret', targetPath: target },
      { kind: 'Secret', name: 'crm-extra', optional: true },
    ];
    patchTenantSpec(MAIN.name, { valuesFrom: { 'orbit-crm': refs('config.sso.clientSecret') } });
    await waitForTenant(MAIN.name, 'refused', stalled('InvalidHelmValues', `spec.valuesFrom.orbit-crm[1] (Secret ${MAIN.namespace}/crm-sso (key client-secret))`, 'config: a value from a Secret may not go under config', 'put it under secretConfig'), CASE_MS);
    expect(revisionOf(MAIN.namespace, 'orbit-crm')).toBe(revision);
    expect(configMapsOf(MAIN.namespace)).not.toContain(CANARY.rotated);
    patchTenantSpec(MAIN.name, { valuesFrom: { 'orbit-crm': refs('secretConfig.sso.clientSecret') } });
    await waitForTenant(MAIN.name, 'Active', isActive, CASE_MS);
    expect(readTenant(MAIN.name)?.conditions['Stalled']).toBeUndefined();
    expect(moduleSecretConfig(MAIN.namespace, 'orbit-crm')).toEqual({ sso: { clientSecret: CANARY.rotated } });
  }, CASE_MS * 2);

  it('secretConfig written inline is refused at apply naming the key and saying to use valuesFrom a Secret; under valuesFrom it passes (positive control)', () => {
    const dryRun = (body: Record<string, unknown>) => kubectl(['apply', '--dry-run=server', '--validate=false', '-f', '-'], tenantManifest('vfinln', { ...spec('VFINLN', {}), ...body }));
    const refused = dryRun({ helmValues: { 'orbit-crm': { config: { a: 1 }, secretConfig: { token: 'inline' } } } });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('spec.helmValues.orbit-crm.secretConfig: may be set only from a Secret: use spec.valuesFrom.orbit-crm with kind: Secret');
    const control = dryRun({ helmValues: { 'orbit-crm': { config: { a: 1 } } }, valuesFrom: { 'orbit-crm': [{ kind: 'Secret', name: 'sso', valuesKey: 'token', targetPath: 'secretConfig.token' }] } });
    expect(control.stderr).toBe('');
    expect(control.status).toBe(0);
  });

  it('a spec cannot read an unlabelled object, the operator\'s own Secrets or another tenant\'s; one named for it is read and bound to its uid (positive control)', async () => {
    const [signing, owned, others, shared, mine, unused] = operatorSecrets as [string, string, string, string, string, string];
    applySource('Secret', OPERATOR_NS, signing, { seed: CANARY.signing }, {});
    applySource('Secret', OPERATOR_NS, owned, { seed: CANARY.signing }, { [LABEL]: 'true', 'app.kubernetes.io/managed-by': 'eva-operator' });
    // Pre-staged for a capsule code under another tenant's name; and one for no tenant at all.
    applySource('Secret', OPERATOR_NS, others, { seed: CANARY.signing }, { [LABEL]: 'true', 'eva.aidonow.com/capsule-code': ATTACK.code, [TENANT_LABEL]: MAIN.name });
    applySource('Secret', OPERATOR_NS, shared, { seed: CANARY.signing });
    applySource('Secret', OPERATOR_NS, mine, { seed: 'mine-value' }, { [LABEL]: 'true', [TENANT_LABEL]: ATTACK.name, 'eva.aidonow.com/capsule-code': ATTACK.code });
    applySource('Secret', OPERATOR_NS, unused, { seed: 'unused-value' }, { [LABEL]: 'true', [TENANT_LABEL]: ATTACK.name, 'eva.aidonow.com/capsule-code': ATTACK.code });
    // Another tenant's namespace cannot even be named: the API server refuses it (positive control: Tenant).
    const named = (namespace: string) => kubectl(['apply', '--dry-run=server', '-f', '-'], tenantManifest(ATTACK.name, spec(ATTACK.code, { 'orbit-crm': [{ kind: 'Secret', name: 'crm-sso', namespace }] })));
    expect(named(MAIN.namespace).stderr).toContain('Unsupported value');
    expect(named('Tenant').status).toBe(0);

    const at = Date.now();
    const read = (name: string) => [{ kind: 'Secret', name, namespace: 'Operator', valuesKey: 'seed', targetPath: 'secretConfig.leak' }];
    applyTenant(ATTACK.name, spec(ATTACK.code, { 'orbit-crm': read(signing), 'orbit-itsm': read(owned) }));
    await waitForTenant(ATTACK.name, 'refused', stalled('ValuesFromNotFound', `Secret ${OPERATOR_NS}/${signing}`, `Secret ${OPERATOR_NS}/${owned}`), CASE_MS, at);
    applySource('Secret', ATTACK.namespace, 'own-unlabelled', { seed: CANARY.signing }, {});
    patchTenantSpec(ATTACK.name, { valuesFrom: { 'orbit-crm': [{ kind: 'Secret', name: 'own-unlabelled', valuesKey: 'seed', targetPath: 'secretConfig.leak' }], 'orbit-itsm': null } });
    await waitForTenant(ATTACK.name, 'refused', stalled('ValuesFromNotFound', `Secret ${ATTACK.namespace}/own-unlabelled`), CASE_MS);
    patchTenantSpec(ATTACK.name, { valuesFrom: { 'orbit-crm': read(others), 'orbit-itsm': read(shared) } });
    const refused = await waitForTenant(ATTACK.name, 'refused as not bound', stalled('ValuesFromUnbound', `Secret ${OPERATOR_NS}/${others}`, `Secret ${OPERATOR_NS}/${shared}`), CASE_MS);
    expect(refused.tenant.conditions['Stalled']?.message).toContain(`serves only the EvaTenant it is bound to, and this one is labelled ${TENANT_LABEL} for another EvaTenant`);
    expect(refused.tenant.conditions['Stalled']?.message).toContain(`labelled ${TENANT_LABEL}=${ATTACK.name} and eva.aidonow.com/capsule-code=${ATTACK.code} (the operator binds it`);

    patchTenantSpec(ATTACK.name, { valuesFrom: { 'orbit-crm': read(mine), 'orbit-itsm': null } });
    await waitForTenant(ATTACK.name, 'Active', isActive, CASE_MS);
    expect(moduleSecretConfig(ATTACK.namespace, 'orbit-crm')['leak']).toBe('mine-value');
    const uid = kubectlOk(['get', 'evt', ATTACK.name, '-o', 'jsonpath={.metadata.uid}']);
    expect(kubectlOk(['get', 'secret', mine, '-n', OPERATOR_NS, '-o', `jsonpath={.metadata.labels.${UID_LABEL.replace(/\./g, '\\.')}}`])).toBe(uid);
    for (const module of ['orbit-crm', 'orbit-itsm']) expect(JSON.stringify(helmValues(ATTACK.namespace, module))).not.toContain(CANARY.signing);
  }, CASE_MS * 4);

  it('a cyclic alias in a labelled ConfigMap is refused as tenant input naming the object and key; without it the tenant is Active again (positive control)', async () => {
    applySource('ConfigMap', ATTACK.namespace, 'cyclic', { 'values.yaml': 'config: &a {x: *a}\n' });
    const mine = [{ kind: 'Secret', name: operatorSecrets[4], namespace: 'Operator', valuesKey: 'seed', targetPath: 'secretConfig.leak' }];
    patchTenantSpec(ATTACK.name, { valuesFrom: { 'orbit-crm': [...mine, { kind: 'ConfigMap', name: 'cyclic' }] } });
    const { tenant } = await waitForTenant(ATTACK.name, 'refused', stalled('ValuesFromInvalid', `ConfigMap ${ATTACK.namespace}/cyclic (key values.yaml)`, 'refused as tenant input: an alias refers to its own anchor'), CASE_MS);
    expect(tenant.conditions['Stalled']?.message).not.toMatch(/call stack/i);
    patchTenantSpec(ATTACK.name, { valuesFrom: { 'orbit-crm': mine } });
    await waitForTenant(ATTACK.name, 'Active', isActive, CASE_MS);
  }, CASE_MS * 2);

  it('no value from a Secret shows in the operator\'s log, the tenants\' events or status, or any ConfigMap of theirs', () => {
    const events = kubectlOk(['get', 'events', '-A', '-o', 'json']);
    const configMaps = configMapsOf(MAIN.namespace) + configMapsOf(ATTACK.namespace);
    const status = kubectlOk(['get', 'evt', MAIN.name, ATTACK.name, '-o', 'json']);
    const described = kubectlOk(['describe', 'evt', MAIN.name, ATTACK.name]);
    // Positive control: the events and status do speak of the references (so the search is not vacuous).
    expect(events).toContain('crm-extra');
    expect(operator.logs()).toContain('crm-settings');
    for (const canary of Object.values(CANARY)) {
      expect(operator.logs()).not.toContain(canary);
      expect(events).not.toContain(canary);
      expect(status).not.toContain(canary);
      expect(described).not.toContain(canary);
      expect(configMaps).not.toContain(canary);
    }
  });

  it('a value from a Secret reaches helm only in a 0600 values file on the tmpfs HELM_SECRETS_DIR, never in its argv, and no file is left', () => {
    const calls = helm.calls();
    const files = calls.flatMap((call) => call.valuesFiles);
    // Positive control: the wrapper saw both values of the SSO Secret in the values files of orbit-crm's
    // releases while helm ran (so it would have seen them in an argument too), and in no other module's.
    const carrying = (canary: string): string[] => calls.filter((call) => call.valuesFiles.some((f) => f.needles.includes(canary))).map((call) => call.argv[1] ?? '');
    expect(carrying(CANARY.sso)).toContain('orbit-crm');
    expect(carrying(CANARY.rotated)).toContain('orbit-crm');
    expect([...carrying(CANARY.sso), ...carrying(CANARY.rotated)].filter((release) => release !== 'orbit-crm')).toEqual([]);
    // Refused or never referenced: in no values file at all.
    expect([...carrying(CANARY.contract), ...carrying(CANARY.signing)]).toEqual([]);
    for (const canary of Object.values(CANARY)) expect(calls.filter((call) => call.argv.some((arg) => arg.includes(canary))).map((call) => call.argv.join(' '))).toEqual([]);
    expect(files.length, 'no helm call had a values file').toBeGreaterThan(0);
    for (const file of files) {
      expect(file.path.startsWith(`${operator.secretsDir}/`), file.path).toBe(true);
      expect({ path: file.path, mode: file.mode, filesystem: file.filesystem }).toEqual({ path: file.path, mode: '600', filesystem: 'tmpfs' });
      expect(existsSync(file.path), `${file.path} left after helm`).toBe(false);
    }
    expect(operator.secretFilesLeft()).toEqual([]);
  });

  it('the deletion retires the tenant\'s sources (bound and never used); a new EvaTenant of the same name and code reads neither, nor one bound to another uid', async () => {
    const [, , , , mine, unused, forged] = operatorSecrets as [string, string, string, string, string, string, string];
    const uid = kubectlOk(['get', 'evt', ATTACK.name, '-o', 'jsonpath={.metadata.uid}']);
    kubectlOk(['delete', 'evt', ATTACK.name, '--wait=false']);
    expect(await waitForGone(ATTACK.name, 240_000), `${ATTACK.name} not decommissioned`).toBe(true);
    for (const name of [mine, unused]) {
      const meta = JSON.parse(kubectlOk(['get', 'secret', name, '-n', OPERATOR_NS, '-o', 'jsonpath={.metadata}'])) as { labels: Record<string, string>; annotations?: Record<string, string> };
      expect(meta.labels[LABEL], `${name} still a values source`).toBeUndefined();
      expect(meta.annotations?.['eva.aidonow.com/retired-from'], name).toBe(uid);
    }
    // As someone might stage it by hand, or as an earlier tenant's binding would look: bound to another uid.
    applySource('Secret', OPERATOR_NS, forged, { seed: 'forged-value' }, { [LABEL]: 'true', [TENANT_LABEL]: ATTACK.name, 'eva.aidonow.com/capsule-code': ATTACK.code, [UID_LABEL]: uid });
    const at = Date.now();
    const read = (name: string) => [{ kind: 'Secret', name, namespace: 'Operator', valuesKey: 'seed', targetPath: 'secretConfig.leak' }];
    applyTenant(ATTACK.name, spec(ATTACK.code, { 'orbit-crm': read(mine), 'orbit-itsm': read(unused) }));
    await waitForTenant(ATTACK.name, 'the retired sources not found', stalled('ValuesFromNotFound', `Secret ${OPERATOR_NS}/${mine}`, `Secret ${OPERATOR_NS}/${unused}`), CASE_MS, at);
    expect(kubectlOk(['get', 'evt', ATTACK.name, '-o', 'jsonpath={.metadata.uid}'])).not.toBe(uid);
    patchTenantSpec(ATTACK.name, { valuesFrom: { 'orbit-crm': read(forged), 'orbit-itsm': null } });
    await waitForTenant(ATTACK.name, 'refused as bound to another', stalled('ValuesFromUnbound', `Secret ${OPERATOR_NS}/${forged}`, 'is bound to another EvaTenant'), CASE_MS);
    expect(helmReleases(ATTACK.namespace).some((r) => r.name === 'orbit-crm')).toBe(false);
  }, CASE_MS * 2);
});
