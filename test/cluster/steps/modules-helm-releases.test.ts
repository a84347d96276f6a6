/**
 * The modules step against the real local control plane and the real (pinned) helm 4: releases,
 * no-op repeats, upgrades on changed credentials and pins, input errors, quotas, releases left
 * pending by a killed helm, tier downgrades, removal, and secret hygiene (tmpfs files removed after
 * every call, no secret in any helm argument or log line).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Tier } from '../../../src/api/constants.ts';
import type { EvaTenantSpec } from '../../../src/api/evatenant.ts';
import { asRecord, readReleases, type ReleaseRecord } from '../../../src/adapters/helm.ts';
import { HelmServer } from '../../../src/adapters/helm-server.ts';
import { decodePayload, encodePayload } from '../../../src/adapters/helm-storage.ts';
import { type Bundle, loadBundle } from '../../../src/bundle/bundle.ts';
import { ChartCatalog } from '../../../src/bundle/charts.ts';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import { TMPFS_MAGIC } from '../../../src/adapters/secret-values-file.ts';
import { createLogger } from '../../../src/log.ts';
import { DependencyError, InputError, type StepError } from '../../../src/errors.ts';
import { formatCreds, newSeed, publicKeyOf, signUser } from '../../../src/adapters/nats-jwt.ts';
import { NATS_CREDENTIALS_SECRET } from '../../../src/steps/account.ts';
import { credentialsSecretName, credentialsStep } from '../../../src/steps/credentials.ts';
import { type ModuleStepDeps, modulesStep } from '../../../src/steps/modules/modules.ts';
import { VALUES_HASH_LABEL } from '../../../src/steps/modules/release-state.ts';
import type { TenantScope } from '../../../src/tenancy/scope.ts';
import type { Verdict } from '../../../src/steps/step.ts';
import { helmServerBinary, repoRoot, tool } from '../../support/tools.ts';
import { configMapIn, hostileCharts } from '../../support/hostile-charts.ts';
import { testScope, useNatsServer } from '../../support/fixtures.ts';
import { apiKube } from '../../support/api-reads.ts';
import { PassReads } from '../../../src/adapters/pass-reads.ts';
import { recordStep } from '../../../src/steps/record.ts';
import { seedStep } from '../../../src/steps/seed/seed.ts';
import { fileReadsDuring } from '../../support/fs-reads.ts';
import { renderGuardForFile } from '../../support/render-guard.ts';

/** What step 'account' writes into Secret eva-nats; the modules step only mounts it and follows its revision. */
const natsCreds = async (): Promise<string> => {
  const [account, user] = [newSeed('account'), newSeed('user')];
  return formatCreds(await signUser({ name: 'modules', account: publicKeyOf(account, 'account') }, user, account), user);
};
const runId = Date.now().toString(36).slice(-4);
/** For the steps that read the bundle beside modules (record, seed): a drift check runs all three. */
const natsServer = useNatsServer();

let kube: Kube;
let secretsDir: string;
let imagesFile: string;
/** images.txt (the test catalogue), charts and seeds, loaded once as the operator does. */
let bundle: Bundle;
/** Every operation the steps asked of helm, with its request. */
const helmCalls: { operation: string; request: Readonly<Record<string, unknown>> }[] = [];
const logLines: string[] = [];
const namespaces: string[] = [];

const renderGuard = renderGuardForFile();

function deps(): ModuleStepDeps {
  return {
    ...apiKube(kube),
    helm,
    ...bundle,
    renderGuard: renderGuard(),
    config: {
      helmSecretsDir: secretsDir,
      allowNonTmpfsSecrets: false,
      moduleOtelEndpoint: 'http://otel-collector.eva-system:4318',
      leaseNamespace: 'default',
    },
  };
}

/** Records each helm request and checks its values files as helm gets them: in the tmpfs folder, mode 0600. */
const valuesFileProblems: string[] = [];
function recordCall(operation: string, request: Readonly<Record<string, unknown>>): void {
  helmCalls.push({ operation, request });
  const files = Array.isArray(request['valuesFiles']) ? (request['valuesFiles'] as unknown[]).map(String) : [];
  for (const file of files) {
    if (!file.startsWith(`${secretsDir}/`)) valuesFileProblems.push(`${file} is outside ${secretsDir}`);
    else if ((statSync(file).mode & 0o777) !== 0o600) valuesFileProblems.push(`${file} is not 0600`);
  }
}

/** The helm SDK process, as the operator runs it (one for the file). */
const helm = new HelmServer({ binary: helmServerBinary(), runtimeDir: tmpdir(), kubeconfig: process.env['KUBECONFIG'], onCall: recordCall });

/** The step, checking after every call (success or failure) that no values file was left behind. */
const step: typeof modulesStep = {
  name: modulesStep.name,
  ensure: (scope, d) => leavesNoFile(() => modulesStep.ensure(scope, d)),
  verify: (scope, d) => leavesNoFile(() => modulesStep.verify(scope, d)),
  remove: (scope, d) => leavesNoFile(() => modulesStep.remove(scope, d)),
  verifyRemoved: (scope, d) => leavesNoFile(() => modulesStep.verifyRemoved(scope, d)),
};

async function leavesNoFile<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } finally {
    expect(readdirSync(secretsDir)).toEqual([]);
  }
}

let codeCounter = 0;
/** A fresh six-letter code per tenant, so runs and tests never share a namespace. */
function nextCode(): string {
  codeCounter += 1;
  const n = (Number.parseInt(runId, 36) * 100 + codeCounter) % 26 ** 6;
  return Array.from({ length: 6 }, (_, i) => String.fromCharCode(65 + (Math.floor(n / 26 ** i) % 26))).join('');
}

async function tenantScope(tier: Tier, spec: Partial<EvaTenantSpec> = {}): Promise<TenantScope> {
  const code = nextCode();
  const namespace = `eva-tenant-${code.toLowerCase()}`;
  await kube.core.createNamespace({
    body: { metadata: { name: namespace, labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'eva-test': 'modules' } } },
  });
  namespaces.push(namespace);
  await writeNatsSecret(namespace, await natsCreds());
  const scope = scopeWith({ code, namespace, tier, spec });
  // The other Secret the modules' values carry, step 'credentials''s, which runs before 'modules'.
  await credentialsStep.ensure(scope, apiKube(kube));
  return scope;
}

async function writeNatsSecret(namespace: string, creds: string): Promise<void> {
  const seed = /SU[A-Z2-7]{56}/.exec(creds)?.[0];
  if (seed) knownSecrets.add(seed);
  await kube.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: NATS_CREDENTIALS_SECRET, namespace }, stringData: { url: 'nats://nats.eva-system:4222', 'nats.creds': creds } });
}

function scopeWith(base: { code: string; namespace: string; tier: Tier; spec?: Partial<EvaTenantSpec> }): TenantScope {
  const log = createLogger('debug', { write: (line: string) => logLines.push(line) }).child({ tenant: base.code });
  return { ...testScope({ code: base.code, tier: base.tier, seedsVersion: '1.0.0', spec: base.spec ?? {}, log }), namespace: base.namespace };
}

/** The same tenant with a changed spec (and the modules its tier calls for). */
function respec(scope: TenantScope, spec: Partial<EvaTenantSpec>): TenantScope {
  const tier = spec.tier ?? scope.tenant.spec.tier;
  return scopeWith({ code: scope.code, namespace: scope.namespace, tier, spec: { ...scope.tenant.spec, ...spec } });
}

async function releasesOf(namespace: string): Promise<Map<string, ReleaseRecord>> {
  return new Map((await readReleases(apiKube(kube).reads, namespace)).map((r) => [r.name, r]));
}

async function untilVerdict(scope: TenantScope, check: (v: Verdict) => boolean, timeoutMs = 60_000): Promise<Verdict> {
  const deadline = Date.now() + timeoutMs;
  let verdict = await step.verify(scope, deps());
  while (!check(verdict) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    verdict = await step.verify(scope, deps());
  }
  return verdict;
}

/** Polls helm's release Secrets (no helm process) until the release has the status. */
async function untilStatus(namespace: string, release: string, status: string, timeoutMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await releasesOf(namespace)).get(release)?.status === status) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

const untilReady = (scope: TenantScope, timeoutMs?: number): Promise<Verdict> => untilVerdict(scope, (v) => v.ready, timeoutMs);

async function caught(run: () => Promise<unknown>): Promise<StepError> {
  try {
    await run();
  } catch (err) {
    return err as StepError;
  }
  throw new Error('expected a failure');
}

async function credentialValues(scope: TenantScope): Promise<string[]> {
  try {
    const secret = await kube.core.readNamespacedSecret({ name: credentialsSecretName(scope.code), namespace: scope.namespace });
    return Object.values(secret.data ?? {}).map((v) => Buffer.from(v, 'base64').toString('utf8'));
  } catch {
    return [];
  }
}

/** Every secret the step handled: none may appear in a helm argument or a log line. */
const knownSecrets = new Set<string>();
async function rememberSecrets(scope: TenantScope): Promise<void> {
  for (const value of await credentialValues(scope)) knownSecrets.add(value);
}

async function quota(namespace: string, pods: number): Promise<void> {
  await kube.core.createNamespacedResourceQuota({ namespace, body: { metadata: { name: 'pods' }, spec: { hard: { pods: String(pods) } } } });
}

/** Exactly the Starter releases, deployed at revision 1 with the operator's labels, and their Deployments Available. */
async function expectStarterDeployed(scope: TenantScope): Promise<void> {
  const releases = await releasesOf(scope.namespace);
  expect([...releases.keys()]).toEqual(['orbit-crm', 'orbit-itsm']);
  for (const release of releases.values()) {
    expect(release).toMatchObject({ status: 'deployed', version: 1 });
    expect(release.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'eva-operator', 'eva.aidonow.com/capsule-code': scope.code });
    expect(release.labels[VALUES_HASH_LABEL]).toMatch(/^[a-f0-9]{48}$/);
  }
  const deployments = (await kube.apps.listNamespacedDeployment({ namespace: scope.namespace })).items;
  for (const d of deployments) {
    expect(d.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
    expect(d.status?.observedGeneration).toBe(d.metadata?.generation);
  }
  // Unpinned modules get the newest version images.txt lists (orbit-crm has 1.0.0 and 1.1.0 here).
  const images = new Map(deployments.map((d) => [d.metadata?.name, d.spec?.template.spec?.containers[0]?.image]));
  expect(Object.fromEntries(images)).toEqual({ 'orbit-crm': 'ghcr.io/aidonow/orbit-crm:1.1.0', 'orbit-itsm': 'ghcr.io/aidonow/orbit-itsm:1.0.0' });
}

/** Secret values reached the chart through the values file: the module's Secret holds them. */
async function expectSecretsReachedTheChart(scope: TenantScope): Promise<void> {
  const decoded = async (name: string, key: string): Promise<string> => {
    const secret = await kube.core.readNamespacedSecret({ name, namespace: scope.namespace });
    return Buffer.from(secret.data?.[key] ?? '', 'base64').toString();
  };
  expect(await credentialValues(scope)).toHaveLength(3);
  expect(await decoded('orbit-itsm-credentials', 'db-password')).toBe(await decoded(credentialsSecretName(scope.code), 'db-password'));
}

/** Runs `helm upgrade orbit-crm` (with `extra` args and a values file) and SIGKILLs it once the release is `status`: a helm killed mid-flight. */
async function helmKilledWhile(scope: TenantScope, status: string, valuesText: string, extra: readonly string[]): Promise<void> {
  const values = join(tmpdir(), `eva-plain-values-${scope.code}.yaml`);
  writeFileSync(values, valuesText);
  const args = ['upgrade', 'orbit-crm', join(repoRoot, 'charts/modules/orbit-crm'), ...extra, '-n', scope.namespace, '--values', values, '--wait', '--timeout', '5m'];
  const helm = spawn(tool('helm'), args, { env: { ...process.env }, stdio: 'ignore' });
  try {
    expect(await untilStatus(scope.namespace, 'orbit-crm', status)).toBe(true);
  } finally {
    helm.kill('SIGKILL');
    rmSync(values, { force: true });
  }
  await new Promise((resolve) => helm.once('exit', resolve));
}

/** The pinned helm itself, as a human (or the operator before it checked records) would run it. */
function helmCli(args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  const out = spawnSync(tool('helm'), args, { encoding: 'utf8', env: process.env });
  return { status: out.status, stdout: out.stdout, stderr: out.stderr };
}

/** `helm history` as [revision, status, description]. */
async function historyOf(namespace: string, release: string): Promise<[number, string, string][]> {
  return (await deps().helm.history(release, namespace)).map((e) => [e.revision, e.status, e.description]);
}

/**
 * Another tenant's namespace with an object of its own in it: what a forged release record names.
 * With `release`, the object is that module's ConfigMap as the tenant's own release made it (helm's
 * ownership label and annotations): helm 4 uninstalls delete only objects their release owns.
 */
async function victimObject(release?: string): Promise<{ namespace: string; name: string; yaml: string }> {
  const victim = await tenantScope('Starter');
  const name = release === undefined ? 'victim-data' : `${release}-config`;
  const owned = release === undefined
    ? {}
    : { annotations: { 'meta.helm.sh/release-name': release, 'meta.helm.sh/release-namespace': victim.namespace }, labels: { 'app.kubernetes.io/managed-by': 'Helm' } };
  await kube.core.createNamespacedConfigMap({ namespace: victim.namespace, body: { metadata: { name, ...owned }, data: { orders: '42' } } });
  return { namespace: victim.namespace, name, yaml: `---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${victim.namespace}\n` };
}

const victimExists = async (victim: { namespace: string; name: string }): Promise<boolean> =>
  (await apiKube(kube).reads.get('ConfigMap', victim.namespace, victim.name)) !== undefined;

/**
 * Writes a release record the operator did not write: a real record of the namespace (revision 1 of
 * orbit-crm) decoded, made revision `version` of `release` with `status`, its manifest changed, and
 * stored as helm stores it (the operator's labels kept, so it looks like one of its releases).
 */
async function forgeRecord(
  namespace: string,
  forged: { release: string; version: number; status: string; manifest: (real: string) => string; payloadNamespace?: string },
): Promise<string> {
  const template = await kube.core.readNamespacedSecret({ name: 'sh.helm.release.v1.orbit-crm.v1', namespace });
  const payload = asRecord(decodePayload(template.data?.['release'] ?? ''));
  payload['name'] = forged.release;
  payload['namespace'] = forged.payloadNamespace ?? namespace;
  payload['version'] = forged.version;
  payload['info'] = { ...asRecord(payload['info']), status: forged.status };
  payload['manifest'] = forged.manifest(typeof payload['manifest'] === 'string' ? payload['manifest'] : '');
  const name = `sh.helm.release.v1.${forged.release}.v${String(forged.version)}`;
  const labels = { ...template.metadata?.labels, name: forged.release, version: String(forged.version), status: forged.status };
  await kube.core.createNamespacedSecret({ namespace, body: { metadata: { name, labels }, type: template.type, data: { release: encodePayload(payload) } } });
  return name;
}

/** Leaves orbit-crm pending-install: a helm killed mid-install, like an operator that was OOM-killed (a pod quota of 0 stays behind). */
async function killedMidInstall(scope: TenantScope): Promise<void> {
  // No pod may start, so `helm --wait` waits; kill it mid-install.
  await quota(scope.namespace, 0);
  await helmKilledWhile(scope, 'pending-install', `tenant: {code: ${scope.code}, tier: Starter}\n`, ['--install', '--labels', 'app.kubernetes.io/managed-by=eva-operator']);
  expect((await releasesOf(scope.namespace)).get('orbit-crm')?.status).toBe('pending-install');
  await kube.core.deleteNamespacedResourceQuota({ name: 'pods', namespace: scope.namespace });
}

beforeAll(() => {
  kube = new Kube(loadKubeConfig());
  // /dev/shm is a tmpfs on Linux: the same guarantee the operator's emptyDir (medium: Memory) gives.
  expect(statfsSync('/dev/shm').type).toBe(TMPFS_MAGIC);
  secretsDir = mkdtempSync('/dev/shm/eva-helm-secrets-');
  imagesFile = join(tmpdir(), `eva-images-${runId}-${process.pid}.txt`);
  const lines = ['eva-forge', 'eva-gateway', 'eva-shell', 'eva-whisper', 'orbit-crm', 'orbit-itsm'].map(
    (m) => `ghcr.io/aidonow/${m}:1.0.0@sha256:PLACEHOLDER`,
  );
  writeFileSync(imagesFile, `# test catalogue\n${lines.join('\n')}\nghcr.io/aidonow/orbit-crm:1.1.0@sha256:PLACEHOLDER\n`);
  bundle = loadBundle({ imagesFile, chartBasePath: join(repoRoot, 'charts'), seedsBasePath: join(repoRoot, 'seeds') });
});

afterEach(async () => {
  // After every call, success or failure: no values file is left in the secrets folder.
  expect(readdirSync(secretsDir)).toEqual([]);
  expect(valuesFileProblems).toEqual([]);
  for (const ns of namespaces) await rememberSecrets(scopeWith({ code: ns.slice(-6).toUpperCase(), namespace: ns, tier: 'Starter' }));
  const argv = JSON.stringify(helmCalls);
  const logs = logLines.join('\n');
  for (const secret of knownSecrets) {
    expect(argv).not.toContain(secret);
    expect(logs).not.toContain(secret);
  }
});

afterAll(async () => {
  await helm.close();
  for (const name of namespaces) {
    try {
      await kube.core.deleteNamespace({ name });
    } catch {
      // already gone
    }
  }
  rmSync(secretsDir, { recursive: true, force: true });
  rmSync(imagesFile, { force: true });
});

describe('modules step (real helm, real control plane)', () => {
  it('installs exactly orbit-crm and orbit-itsm for a Starter tenant, then a repeat starts no helm', async () => {
    const scope = await tenantScope('Starter');
    const started = performance.now();
    // helm ran: what it did is verify's to judge.
    expect(await step.ensure(scope, deps())).toBeUndefined();
    const installMs = performance.now() - started;
    const verdict = await untilReady(scope);
    const readyMs = performance.now() - started;
    expect(verdict).toEqual({ ready: true });

    await expectStarterDeployed(scope);
    await expectSecretsReachedTheChart(scope);
    const credentials = await credentialValues(scope);

    // The repeat: labels say everything is current, so no helm call and no new revision.
    const before = helmCalls.length;
    const repeatStarted = performance.now();
    // Nothing for helm: ensure judges the Deployments it read, as verify would.
    expect(await step.ensure(scope, deps())).toEqual({ ready: true });
    const repeatMs = performance.now() - repeatStarted;
    expect(helmCalls.length).toBe(before);
    expect([...(await releasesOf(scope.namespace)).values()].map((r) => r.version)).toEqual([1, 1]);
    expect(await credentialValues(scope)).toEqual(credentials);

    // verify (the drift check) never starts helm either.
    await step.verify(scope, deps());
    expect(helmCalls.length).toBe(before);
    console.log(`[measure] Starter install (2 modules): ensure ${installMs.toFixed(0)} ms, ready after ${readyMs.toFixed(0)} ms; no-op repeat ${repeatMs.toFixed(0)} ms`);
  });

  it('in a namespace the pass made: no record read before helm, and ensure waits on the rollout without reading it; elsewhere both are read', async () => {
    // A pass's reads, as the operator has them: the two Secrets the values carry are the pass's own writes.
    const passReads = async (scope: TenantScope, born: boolean): Promise<PassReads> => {
      const reads = new PassReads(apiKube(kube).reads);
      if (!born) return reads;
      reads.namespaceCreated(scope.namespace);
      for (const name of [NATS_CREDENTIALS_SECRET, credentialsSecretName(scope.code)]) {
        const secret = await kube.core.readNamespacedSecret({ name, namespace: scope.namespace });
        secret.kind = 'Secret';
        reads.remember(secret);
      }
      return reads;
    };
    const listsDuring = async (scope: TenantScope, born: boolean): Promise<{ verdict: Verdict | undefined; secrets: number; deployments: number }> => {
      const reads = await passReads(scope, born);
      const secrets = vi.spyOn(kube.core, 'listNamespacedSecret');
      const deployments = vi.spyOn(kube.apps, 'listNamespacedDeployment');
      try {
        const verdict = await step.ensure(scope, { ...deps(), reads });
        return { verdict, secrets: secrets.mock.calls.length, deployments: deployments.mock.calls.length };
      } finally {
        secrets.mockRestore();
        deployments.mockRestore();
      }
    };
    const born = await tenantScope('Starter');
    const made = await listsDuring(born, true);
    expect(made.verdict).toEqual({ ready: false, reason: 'DeploymentProgressing', message: 'orbit-crm, orbit-itsm: installed just now, rolling out' });
    expect(made, 'no release record or Deployment read').toMatchObject({ secrets: 0, deployments: 0 });
    expect(await untilReady(born)).toEqual({ ready: true });
    await expectStarterDeployed(born);

    // The positive control: the same first install in a namespace the pass did not make reads both, and leaves the judging to verify.
    const existing = await tenantScope('Starter');
    const found = await listsDuring(existing, false);
    expect(found.verdict).toBeUndefined();
    expect(found.secrets, 'the releases listed, then each release\'s records checked before helm').toBe(3);
    expect(await untilReady(existing)).toEqual({ ready: true });
  });

  it('measures the file reads of drift checks of the steps that read the bundle (record, seed, modules)', async () => {
    const scope = await tenantScope('Starter');
    await step.ensure(scope, deps());
    expect(await untilReady(scope)).toEqual({ ready: true });
    const [moduleDeps, seedDeps] = [deps(), natsServer.deps(bundle.seeds)];
    const checks = 10;
    const reads = await fileReadsDuring(async () => {
      for (let i = 0; i < checks; i += 1) {
        await recordStep.verify(scope, seedDeps);
        await seedStep.verify(scope, seedDeps);
        expect(await modulesStep.verify(scope, moduleDeps)).toEqual({ ready: true });
      }
    });
    const bundleReads = reads.filter((path) => ['charts', 'seeds'].some((dir) => path.startsWith(join(repoRoot, dir))));
    console.log(`[measure] drift check of record, seed and modules (Starter, ${String(checks)} checks): ${String(reads.length / checks)} file reads per check, ${String(bundleReads.length / checks)} of them bundle files`);
    // The bundle was read once, at start: the drift checks read none of it.
    expect(bundleReads).toEqual([]);
    const loading = await fileReadsDuring(() => Promise.resolve(loadBundle({ imagesFile, chartBasePath: join(repoRoot, 'charts'), seedsBasePath: join(repoRoot, 'seeds') })));
    expect(loading.filter((path) => path.startsWith(join(repoRoot, 'charts'))).length, 'positive control: loading the bundle reads the charts').toBeGreaterThan(0);
  });

  it('puts a deleted module Deployment back: verify sees it missing, ensure upgrades only that release', async () => {
    const scope = await tenantScope('Starter');
    await step.ensure(scope, deps());
    expect(await untilReady(scope)).toEqual({ ready: true });
    await kube.apps.deleteNamespacedDeployment({ name: 'orbit-crm', namespace: scope.namespace });
    expect(await untilVerdict(scope, (v) => !v.ready && v.reason === 'DeploymentMissing', 30_000)).toMatchObject({ reason: 'DeploymentMissing' });

    // The release itself is current (its labels match), yet only helm can recreate what it owns.
    await step.ensure(scope, deps());
    expect([...(await releasesOf(scope.namespace)).values()].map((r) => [r.name, r.version, r.status])).toEqual([
      ['orbit-crm', 2, 'deployed'],
      ['orbit-itsm', 1, 'deployed'],
    ]);
    expect(await untilReady(scope)).toEqual({ ready: true });
  });

  it('upgrades every module when a credential changes, and only the pinned module when a pin changes', async () => {
    const scope = await tenantScope('Starter');
    await step.ensure(scope, deps());
    expect(await untilReady(scope)).toEqual({ ready: true });

    // Rotate a credential by hand: verify notices, ensure upgrades both modules.
    await kube.core.patchNamespacedSecret({
      name: credentialsSecretName(scope.code),
      namespace: scope.namespace,
      body: [{ op: 'replace', path: '/data/db-password', value: Buffer.from('rotated-db-password-91ab').toString('base64') }],
    });
    knownSecrets.add('rotated-db-password-91ab');
    const stale = await step.verify(scope, deps());
    expect(stale).toMatchObject({ ready: false, reason: 'ReleaseOutdated' });
    await step.ensure(scope, deps());
    expect([...(await releasesOf(scope.namespace)).values()].map((r) => [r.name, r.version, r.status])).toEqual([
      ['orbit-crm', 2, 'deployed'],
      ['orbit-itsm', 2, 'deployed'],
    ]);
    expect(await untilReady(scope)).toEqual({ ready: true });

    // Pin orbit-crm to 1.0.0 (it runs the newest, 1.1.0): only orbit-crm gets a new revision and image.
    const pinned = respec(scope, { versions: { 'orbit-crm': '1.0.0' } });
    await step.ensure(pinned, deps());
    const releases = await releasesOf(scope.namespace);
    expect(releases.get('orbit-crm')?.version).toBe(3);
    expect(releases.get('orbit-itsm')?.version).toBe(2);
    expect(await untilReady(pinned)).toEqual({ ready: true });
    const crm = await kube.apps.readNamespacedDeployment({ name: 'orbit-crm', namespace: scope.namespace });
    expect(crm.spec?.template.spec?.containers[0]?.image).toBe('ghcr.io/aidonow/orbit-crm:1.0.0');

    // New NATS credentials (a rotation by step 'account'): every module is upgraded once, its pods replaced.
    const generations = async (): Promise<(number | undefined)[]> =>
      (await kube.apps.listNamespacedDeployment({ namespace: scope.namespace })).items.map((d) => d.metadata?.generation);
    const before = await generations();
    await writeNatsSecret(scope.namespace, await natsCreds());
    expect(await step.verify(pinned, deps())).toMatchObject({ ready: false, reason: 'ReleaseOutdated' });
    await step.ensure(pinned, deps());
    await step.ensure(pinned, deps());
    expect([...(await releasesOf(scope.namespace)).values()].map((r) => [r.name, r.version])).toEqual([['orbit-crm', 4], ['orbit-itsm', 3]]);
    expect(await generations()).toEqual(before.map((g) => (g ?? 0) + 1));
    expect(await untilReady(pinned)).toEqual({ ready: true });

    // A pin to a version images.txt does not have is the tenant's mistake, and names what exists.
    const unknown = respec(scope, { versions: { 'orbit-crm': '9.9.9' } });
    const err = await caught(() => step.ensure(unknown, deps()));
    expect(err).toBeInstanceOf(InputError);
    expect(err.reason).toBe('UnknownModuleVersion');
    expect(err.message).toContain('orbit-crm 9.9.9 is not in');
    expect(err.message).toContain('available: 1.0.0, 1.1.0');
  });

  it('reports helmValues outside the contract (stored before it) and values the API server rejects as InvalidHelmValues, and recovers once fixed', async () => {
    const scope = await tenantScope('Starter');
    await step.ensure(scope, deps());
    const before = (await releasesOf(scope.namespace)).get('orbit-crm');
    const stored = respec(scope, { helmValues: { 'orbit-crm': { image: { digest: 'not-a-digest' } } } });
    const err = await caught(() => step.ensure(stored, deps()));
    expect(err).toBeInstanceOf(InputError);
    expect(err.reason).toBe('InvalidHelmValues');
    expect(err.message).toContain('spec.helmValues.orbit-crm: image: set by the operator');
    // No helm ran for it: the installed release is untouched, never uninstalled.
    expect((await releasesOf(scope.namespace)).get('orbit-crm')).toMatchObject({ status: 'deployed', version: before?.version });
    expect(await step.verify(stored, deps())).toMatchObject({ ready: false, reason: 'InvalidHelmValues' });

    // Within the contract, refused by the API server: requests above limits.
    const rejected = respec(scope, { helmValues: { 'orbit-itsm': { resources: { requests: { cpu: '1' }, limits: { cpu: '500m' } } } } });
    const err2 = await caught(() => step.ensure(rejected, deps()));
    expect(err2).toBeInstanceOf(InputError);
    expect(err2.reason).toBe('InvalidHelmValues');
    expect(err2.message).toMatch(/orbit-itsm: .*is invalid/);

    const secretInSpec = respec(scope, { helmValues: { 'orbit-crm': { nats: { password: 'x' } } } });
    expect((await caught(() => step.ensure(secretInSpec, deps()))).reason).toBe('InvalidHelmValues');

    await rememberSecrets(scope);
    for (const secret of knownSecrets) expect(`${err.message} ${err2.message}`).not.toContain(secret);

    await step.ensure(scope, deps());
    expect(await untilReady(scope)).toEqual({ ready: true });
    const releases = await releasesOf(scope.namespace);
    expect(releases.get('orbit-crm')?.status).toBe('deployed');
    // orbit-itsm: 1 deployed, 2 failed (rejected by the API server), 3 deployed.
    expect(releases.get('orbit-itsm')).toMatchObject({ status: 'deployed', version: 3 });
  });

  it('reports a quota that keeps pods from being created as QuotaExceeded, with the quota message', async () => {
    const scope = await tenantScope('Starter', { helmValues: { 'orbit-crm': { replicaCount: 2 } } });
    await quota(scope.namespace, 1);
    await step.ensure(scope, deps());
    const verdict = await untilVerdict(scope, (v) => !v.ready && v.reason === 'QuotaExceeded', 30_000);
    expect(verdict).toMatchObject({ ready: false, reason: 'QuotaExceeded' });
    expect(verdict.ready ? '' : verdict.message).toMatch(/exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1/);
  });

  it('recovers a release left pending-install by a killed helm', async () => {
    const scope = await tenantScope('Starter');
    await killedMidInstall(scope);

    await step.ensure(scope, deps());
    expect(await untilReady(scope)).toEqual({ ready: true });
    // Unlocked (revision 1 marked failed, as Flux does), then upgraded through the render guard.
    expect((await releasesOf(scope.namespace)).get('orbit-crm')).toMatchObject({ status: 'deployed', version: 2 });
    // helm's upgrade supersedes the failed revision it upgraded from; the unlock's reason stays on it.
    expect(await historyOf(scope.namespace, 'orbit-crm')).toEqual([
      [1, 'superseded', 'Release unlocked by eva-operator from stale pending-install state (an interrupted helm)'],
      [2, 'deployed', 'Upgrade complete'],
    ]);
    expect(logLines.some((l) => l.includes('recovered a release left pending') && l.includes('"action":"unlocked"'))).toBe(true);
  });

  it('recovers a release left pending-upgrade by a killed helm: unlocked, then upgraded through the guard, never rolled back', async () => {
    const scope = await tenantScope('Starter');
    await step.ensure(scope, deps());
    expect(await untilReady(scope)).toEqual({ ready: true });
    const desiredHash = (await releasesOf(scope.namespace)).get('orbit-crm')?.labels[VALUES_HASH_LABEL];
    await quota(scope.namespace, 2);
    await helmKilledWhile(scope, 'pending-upgrade', `config: {restart: "1"}\n`, ['--reuse-values']);
    expect((await releasesOf(scope.namespace)).get('orbit-crm')).toMatchObject({ status: 'pending-upgrade', version: 2 });
    expect(await step.verify(scope, deps())).toMatchObject({ ready: false, reason: 'ReleaseNotDeployed' });
    await kube.core.deleteNamespacedResourceQuota({ name: 'pods', namespace: scope.namespace });

    const before = helmCalls.length;
    await step.ensure(scope, deps());
    expect(await untilReady(scope)).toEqual({ ready: true });
    // 2 is marked failed (no helm call), 3 the upgrade through the render guard.
    const crm = (await releasesOf(scope.namespace)).get('orbit-crm');
    expect(crm).toMatchObject({ status: 'deployed', version: 3 });
    expect(crm?.labels[VALUES_HASH_LABEL]).toBe(desiredHash);
    expect(helmCalls.slice(before).map((call) => [call.operation, call.request['release']])).toEqual([['upgrade', 'orbit-crm']]);
    expect(helmCalls.slice(before)[0]?.request['guard'], 'the upgrade went through the render guard').toBeDefined();
    expect(await historyOf(scope.namespace, 'orbit-crm')).toEqual([
      [1, 'superseded', 'Install complete'],
      [2, 'failed', 'Release unlocked by eva-operator from stale pending-upgrade state (an interrupted helm)'],
      [3, 'deployed', 'Upgrade complete'],
    ]);
    expect(helmCli(['list', '-n', scope.namespace, '--pending', '-o', 'json']).stdout.trim()).toBe('[]');
    expect(logLines.some((l) => l.includes('recovered a release left pending') && l.includes('"action":"unlocked"'))).toBe(true);
  });

  it('a crash between render check and apply converges without applying anything unchecked: unlocked, then checked anew, every time', async () => {
    const scope = await tenantScope('Starter');
    // The crash: a helm that died after its render passed, before it finished applying.
    await killedMidInstall(scope);
    const charts = hostileCharts();
    const probe = `eva-guard-${scope.code.toLowerCase()}`;
    charts.plant('orbit-crm', 'zz-probe.yaml', configMapIn('kube-system', probe, [scope.code]));
    const hostile = (): ModuleStepDeps => ({ ...deps(), charts: ChartCatalog.load(charts.path) });
    try {
      for (const attempt of [1, 2]) {
        const err = await caught(() => step.ensure(scope, hostile()));
        expect(err, `attempt ${String(attempt)}`).toBeInstanceOf(InputError);
        expect(err.reason).toBe('RenderRejected');
        expect(err.message).toContain(`ConfigMap/kube-system/${probe}`);
        // The pending release was unlocked (attempt 1) and the refused upgrade stored nothing.
        expect((await releasesOf(scope.namespace)).get('orbit-crm')).toMatchObject({ status: 'failed', version: 1 });
        expect(await apiKube(kube).reads.get('ConfigMap', 'kube-system', probe)).toBeUndefined();
      }
    } finally {
      charts.remove();
    }
    await step.ensure(scope, deps());
    expect(await untilReady(scope)).toEqual({ ready: true });
    expect((await releasesOf(scope.namespace)).get('orbit-crm')).toMatchObject({ status: 'deployed', version: 2 });
  });

  it('refuses a forged pending-upgrade record that names another tenant\'s object: no helm on it, the object kept; a plain helm rollback of it would delete the object', async () => {
    const scope = await tenantScope('Starter');
    const victim = await victimObject();
    await step.ensure(scope, deps());
    expect(await untilReady(scope)).toEqual({ ready: true });
    const secret = await forgeRecord(scope.namespace, { release: 'orbit-crm', version: 2, status: 'pending-upgrade', manifest: (real) => real + victim.yaml });
    expect(await step.verify(scope, deps())).toMatchObject({ ready: false, reason: 'ReleaseNotDeployed' });

    const before = helmCalls.length;
    const err = await caught(() => step.ensure(scope, deps()));
    expect(err).toBeInstanceOf(InputError);
    expect(err.reason).toBe('ReleaseRecordRefused');
    expect(err.message).toContain(`release orbit-crm has a record the operator did not write`);
    expect(err.message).toContain(`revision 2 (Secret ${secret}): ConfigMap/${victim.namespace}/${victim.name}: only namespace ${scope.namespace} is allowed`);
    // Left alone: no helm call for it, the record as forged, the other tenant's object in place.
    expect(helmCalls.slice(before)).toEqual([]);
    expect((await releasesOf(scope.namespace)).get('orbit-crm')).toMatchObject({ status: 'pending-upgrade', version: 2 });
    expect(await victimExists(victim)).toBe(true);
    expect((await caught(() => step.ensure(scope, deps()))).reason).toBe('ReleaseRecordRefused');
    expect(await victimExists(victim)).toBe(true);

    // Positive control: what the operator ran before it checked records (a rollback to the deployed
    // revision) deletes what the forged record lists, in the other tenant's namespace.
    const rollback = helmCli(['rollback', 'orbit-crm', '1', '-n', scope.namespace]);
    expect(rollback.status, rollback.stderr).toBe(0);
    expect(await victimExists(victim)).toBe(false);
  });

  it('refuses a forged record of a module the tier does not have, in ensure and in remove, the other tenant\'s object kept; a plain helm uninstall of it would delete the object', async () => {
    const scope = await tenantScope('Starter');
    // The other tenant's own eva-forge ConfigMap; the record claims to be that tenant's release.
    const victim = await victimObject('eva-forge');
    await step.ensure(scope, deps());
    expect(await untilReady(scope)).toEqual({ ready: true });
    const secret = await forgeRecord(scope.namespace, { release: 'eva-forge', version: 1, status: 'deployed', manifest: () => victim.yaml, payloadNamespace: victim.namespace });
    expect(await step.verify(scope, deps())).toMatchObject({ ready: false, reason: 'UndesiredRelease' });

    const refused =
      `revision 1 (Secret ${secret}): its payload is in namespace ${victim.namespace}; ` +
      `ConfigMap/${victim.namespace}/${victim.name}: only namespace ${scope.namespace} is allowed`;
    const err = await caught(() => step.ensure(scope, deps()));
    expect(err.reason).toBe('ReleaseRecordRefused');
    expect(err.message).toContain('release eva-forge has a record the operator did not write');
    expect(err.message).toContain(refused);
    expect(await victimExists(victim)).toBe(true);

    // The decommission refuses it too: the tier's own releases go, the forged one stays, reported.
    const removal = await caught(() => step.remove(scope, deps()));
    expect(removal.reason).toBe('ReleaseRecordRefused');
    expect(removal.message).toContain(refused);
    expect(await victimExists(victim)).toBe(true);
    expect([...(await releasesOf(scope.namespace)).keys()]).toEqual(['eva-forge']);
    expect(await step.verifyRemoved(scope, deps())).toMatchObject({ ready: false, reason: 'ReleasesRemain', message: 'releases remain: eva-forge' });

    // Positive control: a plain uninstall of that record (what remove ran before) deletes the object.
    const uninstall = helmCli(['uninstall', 'eva-forge', '-n', scope.namespace]);
    expect(uninstall.status, uninstall.stderr).toBe(0);
    expect(await victimExists(victim)).toBe(false);
  });

  it('removes the modules a downgraded tier no longer has, and remove leaves nothing behind', async () => {
    const scope = await tenantScope('Customer');
    await step.ensure(scope, deps());
    expect(await untilReady(scope)).toEqual({ ready: true });
    expect([...(await releasesOf(scope.namespace)).keys()]).toEqual(['eva-gateway', 'eva-shell', 'orbit-crm', 'orbit-itsm']);

    const starter = respec(scope, { tier: 'Starter' });
    expect(await step.verify(starter, deps())).toMatchObject({ ready: false });
    await step.ensure(starter, deps());
    expect(await untilReady(starter)).toEqual({ ready: true });
    expect([...(await releasesOf(scope.namespace)).keys()]).toEqual(['orbit-crm', 'orbit-itsm']);

    expect(await step.verifyRemoved(starter, deps())).toMatchObject({ ready: false, reason: 'ReleasesRemain' });
    await step.remove(starter, deps());
    expect(await step.verifyRemoved(starter, deps())).toEqual({ ready: true });
    expect(await readReleases(apiKube(kube).reads, scope.namespace)).toEqual([]);
    // Idempotent: removing again (nothing left) is fine.
    await step.remove(starter, deps());
  });

  it('starts no helm once the operator is shutting down', async () => {
    const scope = await tenantScope('Starter');
    const controller = new AbortController();
    controller.abort();
    const before = helmCalls.length;
    const err = await caught(() => step.ensure({ ...scope, signal: controller.signal }, deps()));
    expect(err).toBeInstanceOf(DependencyError);
    expect(err.reason).toBe('ShuttingDown');
    expect(helmCalls.length).toBe(before);
  });

  it('refuses to write secret values outside a tmpfs', async () => {
    const scope = await tenantScope('Starter');
    const diskDir = mkdtempSync(join(repoRoot, '.helm-secrets-test-'));
    try {
      const d = deps();
      const err = await caught(() => step.ensure(scope, { ...d, config: { ...d.config, helmSecretsDir: diskDir } }));
      expect(err).toBeInstanceOf(DependencyError);
      expect(err.message).toMatch(/is not a tmpfs/);
      expect(readdirSync(diskDir)).toEqual([]);
    } finally {
      rmSync(diskDir, { recursive: true, force: true });
    }
  });
});
