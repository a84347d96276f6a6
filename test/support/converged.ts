/**
 * What "converged" means for a tenant after crashes or faults: Active with every condition True, one
 * namespace, one NATS account with exactly its streams, one Helm release per module (deployed, none
 * pending), one tenant record, and no secret values file left behind.
 */
import type { EvaTenantStatus } from '../../src/api/evatenant.ts';
import { spawnSync } from 'node:child_process';
import { expect } from 'vitest';
import type { Tier } from '../../src/api/constants.ts';
import { MODULES_BY_TIER } from '../../src/api/modules.ts';
import { LABELS } from '../../src/api/constants.ts';
import { tenantNamespace } from '../../src/tenancy/names.ts';
import { kubectlOk } from './kubectl.ts';
import { tool } from './tools.ts';
import type { HelmRelease } from './helm.ts';
import { inRegistry, streamNames, tenantAccount } from './nats.ts';
import { readTenant } from './tenants.ts';

export function helm(args: readonly string[]): { status: number; stdout: string; stderr: string } {
  const out = spawnSync(tool('helm'), args, { encoding: 'utf8', env: process.env });
  return { status: out.status ?? -1, stdout: out.stdout, stderr: out.stderr };
}

/** Helm 4 has no `list --all`: every status filter at once lists every release whatever its state. */
export const EVERY_STATUS = ['--deployed', '--failed', '--pending', '--superseded', '--uninstalled', '--uninstalling'];

export function helmList(namespace: string, filters: readonly string[] = EVERY_STATUS): HelmRelease[] {
  const out = helm(['list', '-n', namespace, ...filters, '-o', 'json']);
  if (out.status !== 0) throw new Error(`helm list failed: ${out.stderr}`);
  return JSON.parse(out.stdout) as HelmRelease[];
}

export function tenantObject(name: string): { metadata: { uid: string }; status?: EvaTenantStatus } {
  return JSON.parse(kubectlOk(['get', 'evt', name, '-o', 'json'])) as { metadata: { uid: string }; status?: EvaTenantStatus };
}

export async function expectConverged(code: string, tier: Tier, secretFilesLeft: () => string[]): Promise<void> {
  const name = code.toLowerCase();
  const namespace = tenantNamespace(code);
  const tenant = readTenant(name);
  expect(tenant?.phase).toBe('Active');
  for (const type of ['NamespaceReady', 'Provisioned', 'SeedLoaded', 'ModulesDeployed', 'IngressReady', 'Ready']) {
    expect(tenant?.conditions[type]?.status, `${name} ${type}`).toBe('True');
  }
  const namespaces = kubectlOk(['get', 'namespace', '-l', `${LABELS.capsuleCode}=${code}`, '-o', 'name']).split('\n').filter((l) => l !== '');
  expect(namespaces, 'exactly one namespace for the code').toEqual([`namespace/${namespace}`]);
  // One account for the code (its keys in one Secret), holding exactly the tenant's streams and bucket.
  expect(tenantAccount(code), 'the tenant account').toMatch(/^A/);
  expect(await streamNames(code)).toEqual([`KV_eva-${code}-data`, `eva-${code}-commands`, `eva-${code}-events`]);
  const releases = helmList(namespace);
  expect(releases.map((r) => r.name).sort(), 'one release per module').toEqual([...MODULES_BY_TIER[tier]].sort());
  for (const release of releases) expect(release.status, `${release.name} revision ${release.revision}`).toBe('deployed');
  const { keys, record } = await inRegistry(async ({ js }) => {
    const kv = await js.views.kv('eva-tenants', { bindOnly: true });
    const found: string[] = [];
    for await (const key of await kv.keys(code)) found.push(key);
    return { keys: found, record: (await kv.get(code))?.json<{ code: string; uid: string; tier: string }>() };
  });
  expect(keys, 'one tenant record').toEqual([code]);
  expect(record).toMatchObject({ code, tier, uid: tenantObject(name).metadata.uid });
  expect(secretFilesLeft(), 'secret values files left in HELM_SECRETS_DIR').toEqual([]);
}
