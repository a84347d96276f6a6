/**
 * Bad input, end to end on the local control plane: each mistake a tenant's owner (or the platform)
 * can make shows up as a False condition with a reason and a readable message on the EvaTenant and as
 * a Warning event in `kubectl describe evt`, the tenant recovers once the cause is fixed, and nothing
 * of another tenant is touched on the way.
 *
 * The cluster is shared: this file runs its own operator processes with versions no other test uses
 * and only ever creates (and deletes) tenants pinned to them, with capsule codes starting with Q.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFailed } from 'vitest';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectl, kubectlOk } from '../test/support/kubectl.ts';
import { operatorNatsEnv, startNatsServer, type TestNatsServer } from '../test/support/nats-server.ts';
import { parseCreds } from '../src/adapters/nats-jwt.ts';
import { inRegistry, inTenant, tenantAccount } from '../test/support/nats.ts';
import { repoRoot } from '../test/support/tools.ts';
import { helmReleases } from '../test/support/helm.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../test/support/operator.ts';
import {
  applyTenant,
  conditionFalse,
  describeShowsWarning,
  isActive,
  patchTenantSpec,
  pinnedVersion,
  readTenant,
  waitForGone,
  waitForTenant,
} from '../test/support/tenants.ts';

/** The operator on the shared NATS, and the one on this file's own NATS (case 4). */
const VERSION = '9.1.0';
const NATS_DOWN_VERSION = '9.1.4';

const DETECT_MS = 240_000;
const RECOVER_MS = 300_000;
const CASE_MS = 900_000;

interface Made {
  name: string;
  version: string;
}
/** Every tenant this file created (deleted in afterAll, only if still pinned to our versions). */
const made: Made[] = [];
const timings: string[] = [];
/** The condition messages users saw, printed at the end for review. */
const shown: string[] = [];

function show(name: string, type: string, tenant: { conditions: Record<string, { reason: string; message: string }> }): void {
  const c = tenant.conditions[type];
  shown.push(`${name} ${type} ${c?.reason ?? '?'}: ${c?.message ?? ''}`);
}

/** Applies a tenant pinned to `version`; returns when it was applied (Date.now() before kubectl). */
function create(name: string, version: string, spec: Record<string, unknown>): number {
  const at = Date.now();
  made.push({ name, version });
  applyTenant(name, { tier: 'Starter', wave: 1, seedsVersion: '1.0.0', ...spec, operatorVersion: version });
  return at;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

function record(name: string, detectMs: number, recoverMs: number): void {
  timings.push(`${name}: detected after ${seconds(detectMs)}, Active ${seconds(recoverMs)} after the fix`);
}

async function expectWarning(name: string, reason: string): Promise<void> {
  const started = Date.now();
  while (!describeShowsWarning(name, reason) && Date.now() - started < 30_000) await new Promise((r) => setTimeout(r, 1_000));
  expect(describeShowsWarning(name, reason), `kubectl describe evt ${name} shows no Warning ${reason}:\n${kubectl(['describe', 'evt', name]).stdout}`).toBe(true);
}

function bundledSeedsVersions(): string[] {
  const dir = join(repoRoot, 'seeds');
  return readdirSync(dir).filter((n) => statSync(join(dir, n)).isDirectory());
}



interface KubeItem {
  kind: string;
  metadata: { name: string; uid: string; resourceVersion: string; generation?: number; labels?: Record<string, string> };
  spec?: { hard?: Record<string, string> };
}

/**
 * What the operator made for a tenant in Kubernetes, as identity + version per object. A quota's
 * status and a Deployment's status move on their own, so those two compare by spec instead.
 */
function kubeObjects(namespace: string): Record<string, string> {
  const ns = JSON.parse(kubectlOk(['get', 'namespace', namespace, '-o', 'json'])) as KubeItem;
  const out: Record<string, string> = { [`Namespace/${namespace}`]: `${ns.metadata.uid} ${ns.metadata.resourceVersion} ${JSON.stringify(ns.metadata.labels)}` };
  const kinds = 'resourcequotas,limitranges,ingresses,secrets,configmaps,deployments,services';
  const list = JSON.parse(kubectlOk(['get', kinds, '-n', namespace, '-o', 'json'])) as { items: KubeItem[] };
  for (const item of list.items) {
    const { uid, resourceVersion, generation } = item.metadata;
    const version =
      item.kind === 'ResourceQuota' ? JSON.stringify(item.spec?.hard) : item.kind === 'Deployment' ? `gen ${String(generation)}` : resourceVersion;
    out[`${item.kind}/${item.metadata.name}`] = `${uid} ${version}`;
  }
  return out;
}

/** What NATS holds of a tenant: its account, its streams (as configured and filled) and its record. */
async function natsObjects(code: string): Promise<Record<string, string>> {
  const out: Record<string, string> = { account: tenantAccount(code) ?? 'none' };
  await inTenant(code, async ({ jsm }) => {
    for (const stream of [`eva-${code}-events`, `eva-${code}-commands`, `KV_eva-${code}-data`]) {
      const info = await jsm.streams.info(stream);
      out[stream] = JSON.stringify({ created: info.created, config: info.config, messages: info.state.messages, last: info.state.last_seq });
    }
  });
  const entry = await inRegistry(async ({ js }) => (await js.views.kv('eva-tenants', { bindOnly: true })).get(code));
  out['eva-tenants'] = `${entry?.operation ?? 'none'} revision ${String(entry?.revision)} ${entry?.string() ?? ''}`;
  return out;
}

async function bucketExists(code: string): Promise<boolean> {
  return (await inTenant(code, async (s) => (await s.existingKv(`eva-${code}-data`)) !== undefined)) ?? false;
}

describe('bad input: a clear condition, recovery once fixed, nothing of another tenant touched', () => {
  let operator: OperatorProcess;
  let natsDownOperator: OperatorProcess | undefined;
  let privateNats: TestNatsServer | undefined;

  beforeAll(async () => {
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    operator = startOperator({ OPERATOR_VERSION: VERSION, MAX_WAVE: '0' });
    await operator.ready();
    // Left over by an interrupted earlier run (only ours: the name and the pin both match).
    const leftovers = ['qbadsv', 'qbadhv', 'qbadqt', 'qbaddp', 'qbaddp-second'].filter((name) => pinnedVersion(name) === VERSION);
    for (const name of leftovers) kubectl(['delete', 'evt', name, '--wait=false']);
    for (const name of leftovers) expect(await waitForGone(name, 240_000), `leftover ${name} not deleted`).toBe(true);
  });

  let failed = false;
  beforeEach(() => {
    onTestFailed(() => {
      failed = true;
    });
  });

  afterAll(async () => {
    // Ours only: a name we created that is still pinned to one of our versions.
    const ours = made.filter(({ name, version }) => pinnedVersion(name) === version);
    // A failed NATS-down case may have left its NATS halted: decommissioning needs it up.
    await privateNats?.restart().catch((err: unknown) => {
      console.log(`could not restart the test NATS: ${String(err)}`);
    });
    for (const { name } of ours) kubectl(['delete', 'evt', name, '--wait=false']);
    const gone = await Promise.all(ours.map(async ({ name }) => [name, await waitForGone(name, 240_000)] as const));
    console.log(`bad-input timings:\n  ${timings.join('\n  ')}\nmessages:\n  ${shown.join('\n  ')}`);
    if (failed) {
      const logs = join(tmpdir(), `eva-bad-input-operator-${String(process.pid)}.log`);
      writeFileSync(logs, `${operator.logs()}\n----- ${NATS_DOWN_VERSION} -----\n${natsDownOperator?.logs() ?? ''}`);
      console.log(`operator logs: ${logs}`);
    }
    await operator.stop();
    removeSecretsDir(operator);
    if (natsDownOperator) {
      await natsDownOperator.stop();
      removeSecretsDir(natsDownOperator);
    }
    await privateNats?.stop();
    expect(gone.filter(([, isGone]) => !isGone).map(([name]) => name), 'tenants not deleted').toEqual([]);
  }, 600_000);

  it('unknown seedsVersion: SeedLoaded False/UnknownSeedsVersion listing the bundled versions, no seed bucket; 1.0.0 makes it Active', async () => {
    const name = 'qbadsv';
    const code = 'QBADSV';
    const created = create(name, VERSION, { capsuleCode: code, seedsVersion: '9.9.9' });
    const detected = await waitForTenant(name, 'SeedLoaded False/UnknownSeedsVersion', conditionFalse('SeedLoaded', 'UnknownSeedsVersion', 'Failed'), DETECT_MS, created);
    show(name, 'SeedLoaded', detected.tenant);
    const seed = detected.tenant.conditions['SeedLoaded'];
    expect(seed?.message).toContain('"9.9.9"');
    for (const version of bundledSeedsVersions()) expect(seed?.message).toContain(version);
    expect(detected.tenant.conditions['Ready']).toMatchObject({ status: 'False', reason: 'UnknownSeedsVersion' });
    // Earlier conditions are done; the later ones never started.
    expect(detected.tenant.conditions['Provisioned']?.status).toBe('True');
    expect(detected.tenant.conditions['ModulesDeployed']?.status).toBe('Unknown');
    expect(detected.tenant.phase).toBe('Failed');
    await expectWarning(name, 'UnknownSeedsVersion');
    expect(await bucketExists(code), 'the seed wrote to NATS').toBe(false);
    expect(helmReleases(`eva-tenant-${code.toLowerCase()}`)).toEqual([]);

    const fixed = Date.now();
    patchTenantSpec(name, { seedsVersion: '1.0.0' });
    const recovered = await waitForTenant(name, 'Active', isActive, RECOVER_MS, fixed);
    record('unknown seedsVersion', detected.ms, recovered.ms);
    expect(await bucketExists(code)).toBe(true);
    const entry = await inRegistry(async ({ js }) => (await js.views.kv('eva-tenants', { bindOnly: true })).get(code));
    expect(entry?.json<{ seed?: { version: string } }>().seed?.version).toBe('1.0.0');
  }, CASE_MS);

  it('helmValues the API server refuses (requests above limits): ModulesDeployed False/InvalidHelmValues with a readable message; fixed spec makes it Active', async () => {
    const name = 'qbadhv';
    const code = 'QBADHV';
    // Within the values contract (src/api/module-values.ts), refused by the API server when helm applies it.
    const created = create(name, VERSION, { capsuleCode: code, helmValues: { 'orbit-crm': { resources: { requests: { cpu: '1' }, limits: { cpu: '500m' } } } } });
    const rejected = await waitForTenant(name, 'ModulesDeployed False/InvalidHelmValues', conditionFalse('ModulesDeployed', 'InvalidHelmValues', 'Failed'), DETECT_MS, created);
    show(name, 'ModulesDeployed', rejected.tenant);
    const rejectedMessage = rejected.tenant.conditions['ModulesDeployed']?.message ?? '';
    expect(rejectedMessage).toContain('orbit-crm');
    expect(rejectedMessage).toMatch(/is invalid/);
    expect(rejectedMessage).toMatch(/cpu/i);
    expect(rejectedMessage).not.toMatch(/level=|UPGRADE FAILED|INSTALLATION FAILED/);
    expect(rejectedMessage.length).toBeLessThan(2_100);
    expect(rejected.tenant.phase).toBe('Failed');
    await expectWarning(name, 'InvalidHelmValues');

    const fixed = Date.now();
    patchTenantSpec(name, { helmValues: null });
    const recovered = await waitForTenant(name, 'Active', isActive, RECOVER_MS, fixed);
    record('values refused by the API server', rejected.ms, recovered.ms);
    expect(helmReleases(`eva-tenant-${code.toLowerCase()}`).map((r) => [r.name, r.status])).toEqual([
      ['orbit-crm', 'deployed'],
      ['orbit-itsm', 'deployed'],
    ]);
  }, CASE_MS);

  it('a quota that rejects module pods: ModulesDeployed False/QuotaExceeded with the quota message; replicaCount 1 makes it Active', async () => {
    const name = 'qbadqt';
    const code = 'QBADQT';
    // Within the Starter bounds (2 replicas, 1 CPU each), above its quota (2 CPU requested in all).
    const greedy = { replicaCount: 2, resources: { requests: { cpu: '1' }, limits: { cpu: '1' } } };
    const created = create(name, VERSION, { capsuleCode: code, helmValues: { 'orbit-crm': greedy } });
    const detected = await waitForTenant(name, 'ModulesDeployed False/QuotaExceeded', conditionFalse('ModulesDeployed', 'QuotaExceeded', 'Provisioning'), DETECT_MS, created);
    show(name, 'ModulesDeployed', detected.tenant);
    const message = detected.tenant.conditions['ModulesDeployed']?.message ?? '';
    // The quota admits pods in the order they come: orbit-crm's two may take it all and orbit-itsm's be
    // the one refused, or the other way round. Either way the message names the module whose pod was.
    expect(message).toMatch(/orbit-(crm|itsm): pods "orbit-(crm|itsm)-[^"]+" is forbidden/);
    expect(message).toContain('exceeded quota: eva-tier-quota');
    expect(message).toMatch(/limited: requests\.cpu=2/);
    expect(detected.tenant.phase).toBe('Provisioning');
    await expectWarning(name, 'QuotaExceeded');

    const fixed = Date.now();
    patchTenantSpec(name, { helmValues: { 'orbit-crm': { replicaCount: 1 } } });
    const recovered = await waitForTenant(name, 'Active', isActive, RECOVER_MS, fixed);
    record('quota exceeded', detected.ms, recovered.ms);
    const deployment = JSON.parse(kubectlOk(['get', 'deployment', 'orbit-crm', '-n', `eva-tenant-${code.toLowerCase()}`, '-o', 'json'])) as {
      spec: { replicas: number };
      status: { availableReplicas?: number };
    };
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.status.availableReplicas).toBe(1);
  }, CASE_MS);

  it('NATS down during provisioning: Provisioned False/NatsUnavailable without credentials, phase Provisioning; NATS back makes it Active', async () => {
    const name = 'qbadnt';
    privateNats = await startNatsServer();
    natsDownOperator = startOperator({
      OPERATOR_VERSION: NATS_DOWN_VERSION,
      MAX_WAVE: '0',
      ...operatorNatsEnv(privateNats),
    });
    const seeds = [readFileSync(privateNats.auth.operatorSigningKeyFile, 'utf8').trim(), parseCreds(readFileSync(privateNats.auth.systemCredsFile, 'utf8')).seed];
    await natsDownOperator.ready();
    await privateNats.halt();
    const created = create(name, NATS_DOWN_VERSION, { capsuleCode: 'QBADNT' });
    const detected = await waitForTenant(name, 'Provisioned False/NatsUnavailable', conditionFalse('Provisioned', 'NatsUnavailable', 'Provisioning'), DETECT_MS, created);
    show(name, 'Provisioned', detected.tenant);
    const message = detected.tenant.conditions['Provisioned']?.message ?? '';
    expect(message).toContain(`cannot reach NATS at ${privateNats.url}`);
    expect(detected.tenant.phase).toBe('Provisioning');
    expect(detected.tenant.conditions['NamespaceReady']?.status).toBe('True');
    await expectWarning(name, 'NatsUnavailable');
    const described = kubectlOk(['describe', 'evt', name]);
    for (const seed of seeds) {
      expect(message).not.toContain(seed);
      expect(described).not.toContain(seed);
      expect(natsDownOperator.logs()).not.toContain(seed);
    }

    const fixed = Date.now();
    await privateNats.restart();
    const recovered = await waitForTenant(name, 'Active', isActive, RECOVER_MS, fixed);
    record('NATS down', detected.ms, recovered.ms);
  }, CASE_MS);

  it('a capsuleCode already in use: the second tenant gets CapsuleCodeInUse naming the first; the first is untouched, also when the second is deleted', async () => {
    const first = 'qbaddp';
    const second = 'qbaddp-second';
    const code = 'QBADDP';
    const namespace = `eva-tenant-${code.toLowerCase()}`;
    create(first, VERSION, { capsuleCode: code });
    await waitForTenant(first, 'Active', isActive, RECOVER_MS);
    const kubeBefore = kubeObjects(namespace);
    const natsBefore = await natsObjects(code);
    const helmBefore = helmReleases(namespace);
    expect(helmBefore.map((r) => r.status)).toEqual(['deployed', 'deployed']);

    const created = create(second, VERSION, { capsuleCode: code });
    const detected = await waitForTenant(second, 'NamespaceReady False/CapsuleCodeInUse', conditionFalse('NamespaceReady', 'CapsuleCodeInUse', 'Failed'), DETECT_MS, created);
    show(second, 'NamespaceReady', detected.tenant);
    const message = detected.tenant.conditions['NamespaceReady']?.message ?? '';
    expect(message).toContain(`EvaTenant ${first}`);
    expect(message).toContain(code);
    expect(detected.tenant.phase).toBe('Failed');
    await expectWarning(second, 'CapsuleCodeInUse');
    timings.push(`capsuleCode in use: detected after ${seconds(detected.ms)}`);

    expect(readTenant(first)?.phase).toBe('Active');
    expect(kubeObjects(namespace)).toEqual(kubeBefore);
    expect(await natsObjects(code)).toEqual(natsBefore);
    expect(helmReleases(namespace)).toEqual(helmBefore);

    const deleting = Date.now();
    kubectlOk(['delete', 'evt', second, '--wait=false']);
    expect(await waitForGone(second, 180_000), `${second} was not deleted`).toBe(true);
    timings.push(`capsuleCode in use: second tenant deleted in ${seconds(Date.now() - deleting)}`);
    expect(kubeObjects(namespace)).toEqual(kubeBefore);
    expect(await natsObjects(code)).toEqual(natsBefore);
    expect(helmReleases(namespace)).toEqual(helmBefore);
    const firstNow = readTenant(first);
    expect(firstNow?.phase).toBe('Active');
    expect(firstNow?.conditions['Ready']?.status).toBe('True');
  }, CASE_MS);
});
