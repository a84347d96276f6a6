/**
 * The main job, end to end on the local control plane: the real operator process provisions each
 * sample tier to Active, isolates tenants, and decommissions them without residue.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { StringCodec } from 'nats';
import { MODULES_BY_TIER } from '../src/api/modules.ts';
import { kubectl, kubectlOk } from '../test/support/kubectl.ts';
import { repoRoot } from '../test/support/tools.ts';
import { helmReleases } from '../test/support/helm.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../test/support/operator.ts';
import { connectAsModule, inRegistry, inTenant, moduleCredentials, streamNames, tenantAccount } from '../test/support/nats.ts';
import { readTenant, waitForGone, waitForPhase } from '../test/support/tenants.ts';

const SAMPLES = [
  { name: 'acmeco', code: 'ACMECO', tier: 'Starter', file: 'evatenant-starter.yaml' },
  { name: 'betain', code: 'BETAIN', tier: 'Customer', file: 'evatenant-customer.yaml' },
  { name: 'globex', code: 'GLOBEX', tier: 'Enterprise', file: 'evatenant-enterprise.yaml' },
  { name: 'platfm', code: 'PLATFM', tier: 'Platform', file: 'evatenant-platform.yaml' },
] as const;
/** The replica's pod name (the Downward API sets POD_NAME in the chart): events name the replica that wrote them. */
const POD_NAME = 'eva-operator-e2e-0';

describe('provisioning the samples to Active', () => {
  let operator: OperatorProcess;

  beforeAll(() => {
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    operator = startOperator({ POD_NAME });
    for (const s of SAMPLES) kubectlOk(['apply', '-f', join(repoRoot, 'samples', s.file)]);
  });

  afterAll(async () => {
    await operator.stop();
    removeSecretsDir(operator);
  });

  it.each(SAMPLES)('$tier sample $name reaches Active with five True conditions', async ({ name }) => {
    const tenant = await waitForPhase(name, 'Active', 90_000);
    for (const type of ['NamespaceReady', 'Provisioned', 'SeedLoaded', 'ModulesDeployed', 'IngressReady', 'Ready']) {
      expect(tenant.conditions[type]?.status, `${type}: ${JSON.stringify(tenant.conditions[type])}`).toBe('True');
    }
    expect(Object.keys(tenant.elapsedSeconds).sort()).toEqual(['IngressReady', 'ModulesDeployed', 'NamespaceReady', 'Provisioned', 'Ready', 'SeedLoaded']);
    console.log(`${name}: seconds to each condition ${JSON.stringify(tenant.elapsedSeconds)}`);
  });

  it.each(SAMPLES)('$tier sample $name has exactly its tier modules installed', ({ code, tier }) => {
    const deployed = helmReleases(`eva-tenant-${code.toLowerCase()}`).filter((r) => r.status === 'deployed').map((r) => r.name);
    expect(deployed).toEqual([...MODULES_BY_TIER[tier]].sort());
  });

  it('shows the provisioning events in kubectl describe: started and complete (the steps are in the conditions)', () => {
    const described = kubectlOk(['describe', 'evt', 'acmeco']);
    expect(described).toContain('ProvisioningStarted');
    expect(described).toMatch(/ProvisioningComplete\s+[^\n]*the tenant is Active [\d.]+ s after provisioning started/);
    for (const reason of ['NamespaceCreated', 'ModuleDeployStarted', 'ModuleDeployComplete', 'IngressProvisioned']) {
      expect(described, 'a new tenant\'s steps are not Events').not.toContain(reason);
    }
    // By uid: events of an acmeco from an earlier run may still be kept (for an hour).
    const uid = kubectlOk(['get', 'evt', 'acmeco', '-o', 'jsonpath={.metadata.uid}']);
    const instances = kubectlOk(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.uid=${uid}`, '-o', 'jsonpath={.items[*].reportingInstance}']);
    expect(new Set(instances.split(' '))).toEqual(new Set([POD_NAME]));
  });

  it('gives each tenant its own account with its two streams and seed bucket, and nothing of another tenant', async () => {
    for (const { code } of SAMPLES) {
      const names = await streamNames(code);
      expect(names, `streams of ${code}; tenant: ${JSON.stringify(readTenant(code.toLowerCase()))}`).toEqual([`KV_eva-${code}-data`, `eva-${code}-commands`, `eva-${code}-events`]);
      const subjects = await inTenant(code, async ({ jsm }) => (await jsm.streams.info(`eva-${code}-events`)).config.subjects);
      expect(subjects).toEqual([`capsule.${code}.events.>`]);
    }
    const accounts = new Set(SAMPLES.map(({ code }) => tenantAccount(code)));
    expect(accounts.size).toBe(SAMPLES.length);
  });

  it('lets a module publish its tenant\'s events with the credentials of Secret eva-nats', async () => {
    const count = (code: string): Promise<number | undefined> => inTenant(code, async ({ jsm }) => (await jsm.streams.info(`eva-${code}-events`)).state.messages);
    const before = await Promise.all(SAMPLES.map(({ code }) => count(code)));
    const module = await connectAsModule('ACMECO');
    try {
      const ack = await module.js.publish('capsule.ACMECO.events.order.created', StringCodec().encode('{"id":1}'));
      expect(ack.stream).toBe('eva-ACMECO-events');
    } finally {
      await module.nc.close();
    }
    const after = await Promise.all(SAMPLES.map(({ code }) => count(code)));
    expect(after.map((n, i) => (n ?? 0) - (before[i] ?? 0))).toEqual([1, 0, 0, 0]);
  });

  it('records the tenant in the operator\'s eva-tenants bucket with its applied seed digest', async () => {
    const record = await inRegistry(async ({ js }) => (await (await js.views.kv('eva-tenants', { bindOnly: true })).get('GLOBEX'))?.json<{ code: string; tier: string; seed?: { version: string; digest: string } }>());
    expect(record).toMatchObject({ code: 'GLOBEX', tier: 'Enterprise', seed: { version: '1.0.0' } });
    expect(record?.seed?.digest).toMatch(/^[0-9a-f]{64}$/);
    const values = await inTenant('GLOBEX', async (s) => (await (await s.existingKv('eva-GLOBEX-data'))?.status())?.values);
    expect(values).toBeGreaterThan(0);
  });

  it('leaves no secret values file behind', () => {
    expect(operator.secretFilesLeft()).toEqual([]);
  });

  it('decommissions every sample without residue when deleted: no namespace, release, account, stream or record; credentials refused', async () => {
    const before = SAMPLES.map(({ code }) => ({ code, account: tenantAccount(code), credentials: moduleCredentials(code) }));
    const started = Date.now();
    for (const { name } of SAMPLES) kubectlOk(['delete', 'evt', name, '--wait=false']);
    for (const { name } of SAMPLES) expect(await waitForGone(name, 60_000)).toBe(true);
    console.log(`all samples gone after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    for (const { code, account, credentials } of before) {
      const ns = `eva-tenant-${code.toLowerCase()}`;
      expect(kubectl(['get', 'namespace', ns]).status, `${ns} still exists`).not.toBe(0);
      expect(account).toMatch(/^A/);
      expect(tenantAccount(code), `the account keys of ${code}`).toBeUndefined();
      await expect(connectAsModule(code, credentials), `the credentials of ${code}`).rejects.toThrow(/Authorization Violation/i);
      // A purged key reads back as a PURGE marker (or nothing once compacted): no value remains.
      const entry = await inRegistry(async ({ js }) => (await js.views.kv('eva-tenants', { bindOnly: true })).get(code));
      expect(entry === null || entry.operation !== 'PUT').toBe(true);
      expect(readTenant(code.toLowerCase())).toBeUndefined();
      expect(helmReleases(ns)).toEqual([]);
    }
  });
});
