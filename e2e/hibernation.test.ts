/**
 * Hibernation and data retention with the real operator process, API server, helm and NATS:
 * spec.lifecycle Suspended scales every module to zero (Deployments at 0, kwok's pods gone), withdraws
 * the Ingress and makes NATS refuse the modules' credentials, and stays so through drift checks, an
 * operator restart and a NATS restart; Active again serves the same stream contents on a changed spec.
 * spec.dataRetention Retain keeps streams and bucket (account disabled) past a delete, a reused capsule
 * code alone is refused, the restore annotation takes the data over, and a Delete then purges it all.
 *
 * Isolation: its own NATS (restarted here) and operator version 9.5.0 with MAX_WAVE 0; tenants
 * pinned to it, capsule codes HIBERN and RETAIN, deleted at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NatsError } from 'nats';
import { join } from 'node:path';
import { MODULES_BY_TIER } from '../src/api/modules.ts';
import { API_VERSION, KIND, RESTORE_FROM_ANNOTATION } from '../src/api/constants.ts';
import { eventually, kubectl, kubectlOk } from '../test/support/kubectl.ts';
import { operatorNatsEnv, startNatsServer, type TestNatsServer } from '../test/support/nats-server.ts';
import { repoRoot } from '../test/support/tools.ts';
import { helmReleases } from './support/helm.ts';
import { metricSum, scrape } from './support/metrics.ts';
import { connectAsModule, inTenant, moduleCredentials, type NatsTarget, streamNames, tenantAccount } from './support/nats.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from './support/operator.ts';
import { isActive, patchTenantSpec, pinnedVersion, readTenant, type TenantView, waitForGone, waitForTenant } from './support/tenants.ts';

const VERSION = '9.5.0';
const DRIFT_INTERVAL_SECONDS = 3;
const HIBERNATE = 'HIBERN';
const RETAIN = 'RETAIN';
const KEPT = 'RETKEP';
const MODULES = MODULES_BY_TIER.Starter;
const ACTIVE_MS = 240_000;
const CASE_MS = 900_000;

const nameOf = (code: string): string => code.toLowerCase();
const nsOf = (code: string): string => `eva-tenant-${code.toLowerCase()}`;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const figures: string[] = [];
const note = (line: string): void => {
  figures.push(line);
  console.log(`[hibernation] ${line}`);
};

function tenant(code: string, spec: Record<string, unknown> = {}, annotations: Record<string, string> = {}): void {
  const manifest = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: nameOf(code), annotations },
    spec: { capsuleCode: code, tier: 'Starter', wave: 1, seedsVersion: '1.0.0', operatorVersion: VERSION, ...spec },
  };
  kubectlOk(['apply', '-f', '-'], JSON.stringify(manifest));
}

function getJson(args: readonly string[]): unknown {
  const result = kubectl(['get', ...args, '-o', 'json']);
  return result.status === 0 ? (JSON.parse(result.stdout) as unknown) : undefined;
}

interface TenantJson {
  metadata: { uid: string };
  status?: { url?: string; modules?: Record<string, { readyReplicas: number; replicas: number; chartVersion?: string; valuesDigest?: string; message: string }> };
}
const tenantJson = (code: string): TenantJson | undefined => getJson(['evt', nameOf(code)]) as TenantJson | undefined;

interface DeploymentJson {
  metadata: { name: string };
  spec: { replicas: number; template: { metadata: { annotations?: Record<string, string> } } };
}
const deployments = (code: string): DeploymentJson[] => (getJson(['deployments', '-n', nsOf(code)]) as { items: DeploymentJson[] } | undefined)?.items ?? [];
const replicasOf = (code: string): Record<string, number> => Object.fromEntries(deployments(code).map((d) => [d.metadata.name, d.spec.replicas]));
const podCount = (code: string): number => (getJson(['pods', '-n', nsOf(code)]) as { items: unknown[] } | undefined)?.items.length ?? -1;
const hasIngress = (code: string): boolean => kubectl(['get', 'ingress', 'eva-tenant', '-n', nsOf(code)]).status === 0;
const revisions = (code: string): Record<string, string> => Object.fromEntries(helmReleases(nsOf(code)).map((r) => [r.name, `${r.revision}/${r.status}`]));

type Credentials = ReturnType<typeof moduleCredentials>;

/** Whether NATS refuses these module credentials (an authorization error); any other failure throws. */
async function refused(code: string, credentials: Credentials): Promise<boolean> {
  try {
    const session = await connectAsModule(code, credentials);
    await session.nc.close();
    return false;
  } catch (err) {
    if (err instanceof NatsError && err.isAuthError()) return true;
    throw err;
  }
}

/** Publishes as the tenant's modules do; the events stream keeps what they publish. */
async function publishAsModule(code: string, texts: readonly string[]): Promise<void> {
  const session = await connectAsModule(code);
  try {
    for (const [i, text] of texts.entries()) await session.js.publish(`capsule.${code}.events.e2e.${String(i)}`, new TextEncoder().encode(text));
  } finally {
    await session.nc.close();
  }
}

/** The events stream's messages, read with the modules' own credentials. */
async function readAsModule(code: string, count: number): Promise<string[]> {
  const session = await connectAsModule(code);
  try {
    const texts: string[] = [];
    for (let seq = 1; seq <= count; seq += 1) texts.push(new TextDecoder().decode((await session.jsm.streams.getMessage(`eva-${code}-events`, { seq })).data));
    return texts;
  } finally {
    await session.nc.close();
  }
}

async function waitActive(code: string, since = Date.now()): Promise<number> {
  return (await waitForTenant(nameOf(code), 'Active on the current generation', isActive, ACTIVE_MS, since)).ms;
}

async function waitSuspended(code: string, since = Date.now()): Promise<number> {
  const suspended = (t: TenantView): boolean => t.phase === 'Suspended' && t.observedGeneration === t.generation;
  return (await waitForTenant(nameOf(code), 'Suspended on the current generation', suspended, ACTIVE_MS, since)).ms;
}

/** Active and serving: pods, Ingress, the address and every module in status (and the URL column). */
function expectServing(code: string): void {
  const url = `http://${code.toLowerCase()}.tenants.eva.local`;
  const status = tenantJson(code)?.status;
  expect(status?.url).toBe(url);
  expect(kubectlOk(['get', 'evt', nameOf(code)])).toContain(url);
  for (const module of MODULES) {
    expect(status?.modules?.[module]).toMatchObject({ replicas: 1, readyReplicas: 1, message: 'available' });
    expect(status?.modules?.[module]?.chartVersion).toMatch(/^\d+\.\d+\.\d+/);
  }
  expect(podCount(code)).toBe(MODULES.length);
  expect(hasIngress(code)).toBe(true);
}

/** What kubectl shows of a hibernated tenant: Ready False/Suspended, modules at zero, no address. */
function expectHibernatedStatus(code: string): void {
  const asleep = readTenant(nameOf(code));
  expect(asleep?.conditions['Ready']).toMatchObject({ status: 'False', reason: 'Suspended' });
  expect(asleep?.conditions['ModulesDeployed']).toMatchObject({ status: 'True', reason: 'ScaledToZero' });
  const status = tenantJson(code)?.status;
  expect(status?.url).toBeUndefined();
  for (const module of MODULES) expect(status?.modules?.[module]).toMatchObject({ replicas: 0, readyReplicas: 0, message: 'scaled to zero (spec.lifecycle: Suspended)' });
  expect(kubectlOk(['describe', 'evt', nameOf(code)])).toMatch(/Reason:\s+Suspended/);
}

async function expectStillHibernated(code: string, credentials: Credentials, helmBefore: Record<string, string>): Promise<void> {
  expect(readTenant(nameOf(code))?.phase).toBe('Suspended');
  expect(Object.values(replicasOf(code))).toEqual(MODULES.map(() => 0));
  expect(podCount(code)).toBe(0);
  expect(hasIngress(code)).toBe(false);
  expect(await refused(code, credentials)).toBe(true);
  // The same helm revisions: nothing "repaired" the replicas back, and helm was not run again.
  expect(revisions(code)).toEqual(helmBefore);
}

describe('hibernation and data retention', () => {
  let nats: TestNatsServer;
  let target: NatsTarget;
  let operator: OperatorProcess;
  const env = (): Record<string, string> => ({ OPERATOR_VERSION: VERSION, MAX_WAVE: '0', DRIFT_INTERVAL_SECONDS: String(DRIFT_INTERVAL_SECONDS), ...operatorNatsEnv(nats) });

  async function restartOperator(): Promise<void> {
    await operator.stop();
    removeSecretsDir(operator);
    operator = startOperator(env());
    await operator.ready();
  }

  beforeAll(async () => {
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    nats = await startNatsServer();
    target = { url: nats.url };
    operator = startOperator(env());
    await operator.ready();
    for (const code of [HIBERNATE, RETAIN, KEPT]) {
      if (pinnedVersion(nameOf(code)) !== VERSION) continue;
      kubectl(['delete', 'evt', nameOf(code), '--wait=false']);
      expect(await waitForGone(nameOf(code), 240_000), `leftover ${code}`).toBe(true);
    }
    tenant(HIBERNATE);
    tenant(RETAIN, { dataRetention: 'Retain' });
    tenant(KEPT, { dataRetention: 'Retain' });
  }, 600_000);

  afterAll(async () => {
    for (const code of [HIBERNATE, RETAIN, KEPT]) {
      if (pinnedVersion(nameOf(code)) === VERSION) kubectl(['delete', 'evt', nameOf(code), '--wait=false']);
    }
    for (const code of [HIBERNATE, RETAIN, KEPT]) await waitForGone(nameOf(code), 300_000);
    console.log(`hibernation figures:\n  ${figures.join('\n  ')}`);
    await operator.stop();
    removeSecretsDir(operator);
    await nats.stop();
  }, 600_000);

  it('hibernates to zero pods with credentials refused and the Ingress withdrawn, survives restarts, and resumes on a changed spec with the same data', async () => {
    await waitActive(HIBERNATE);
    expectServing(HIBERNATE);
    const credentials = moduleCredentials(HIBERNATE);
    expect(await refused(HIBERNATE, credentials)).toBe(false);
    const sent = ['before-1', 'before-2', 'before-3'];
    await publishAsModule(HIBERNATE, sent);

    const suspendedAt = Date.now();
    patchTenantSpec(nameOf(HIBERNATE), { lifecycle: 'Suspended' });
    expect(await eventually(() => podCount(HIBERNATE) === 0, ACTIVE_MS, 250), 'pods still there').toBe(true);
    note(`hibernate -> zero pods: ${String(Date.now() - suspendedAt)} ms`);
    note(`hibernate -> phase Suspended: ${String(await waitSuspended(HIBERNATE, suspendedAt))} ms`);
    expectHibernatedStatus(HIBERNATE);
    expect(metricSum(await scrape(operator), 'eva_tenants', 'phase="Suspended"')).toBeGreaterThanOrEqual(1);
    // The data is all there, seen as an administrator of the account (the operator's keys).
    expect(await streamNames(HIBERNATE, target)).toEqual([`KV_eva-${HIBERNATE}-data`, `eva-${HIBERNATE}-commands`, `eva-${HIBERNATE}-events`]);
    const helmAsleep = revisions(HIBERNATE);
    await expectStillHibernated(HIBERNATE, credentials, helmAsleep);
    // Drift checks (every 3 s) keep it hibernated: nothing fights helm over replicas.
    await sleep(4 * DRIFT_INTERVAL_SECONDS * 1000);
    await expectStillHibernated(HIBERNATE, credentials, helmAsleep);
    await restartOperator();
    await sleep(3 * DRIFT_INTERVAL_SECONDS * 1000);
    await expectStillHibernated(HIBERNATE, credentials, helmAsleep);
    await nats.restart();
    await sleep(3 * DRIFT_INTERVAL_SECONDS * 1000);
    await expectStillHibernated(HIBERNATE, credentials, helmAsleep);

    // Resume on a changed spec: Active on it, serving again with the same credentials and data.
    const resumedAt = Date.now();
    patchTenantSpec(nameOf(HIBERNATE), { lifecycle: 'Active', helmValues: { 'orbit-crm': { config: { currency: 'CHF' } } } });
    expect(await eventually(async () => !(await refused(HIBERNATE, credentials)), ACTIVE_MS, 100), 'credentials still refused').toBe(true);
    note(`resume -> credentials accepted: ${String(Date.now() - resumedAt)} ms`);
    note(`resume -> Active (changed spec): ${String(await waitActive(HIBERNATE, resumedAt))} ms`);
    expectServing(HIBERNATE);
    expect(kubectlOk(['get', 'configmap', 'orbit-crm-config', '-n', nsOf(HIBERNATE), '-o', 'jsonpath={.data.config\\.yaml}'])).toContain('currency: CHF');
    expect(await readAsModule(HIBERNATE, sent.length)).toEqual(sent);
  }, CASE_MS);

  it('retains streams and bucket past a delete, refuses a reused code without the restore annotation, restores with it, and purges with Delete', async () => {
    await waitActive(RETAIN);
    const uid = tenantJson(RETAIN)?.metadata.uid ?? '';
    const credentials = moduleCredentials(RETAIN);
    const sent = ['kept-1', 'kept-2'];
    await publishAsModule(RETAIN, sent);
    const account = tenantAccount(RETAIN);
    kubectlOk(['delete', 'evt', nameOf(RETAIN), '--wait=false']);
    expect(await waitForGone(nameOf(RETAIN), ACTIVE_MS), 'the retained tenant was not deleted').toBe(true);
    expect(await eventually(() => kubectl(['get', 'namespace', nsOf(RETAIN)]).status !== 0, ACTIVE_MS, 500), 'namespace left').toBe(true);
    const retained = [`KV_eva-${RETAIN}-data`, `eva-${RETAIN}-commands`, `eva-${RETAIN}-events`];
    const expectRetained = async (): Promise<void> => {
      expect(tenantAccount(RETAIN)).toBe(account);
      expect(await streamNames(RETAIN, target)).toEqual(retained);
      expect(await inTenant(RETAIN, async ({ jsm }) => (await jsm.streams.info(`eva-${RETAIN}-events`)).state.messages, target)).toBe(sent.length);
      expect(await refused(RETAIN, credentials)).toBe(true);
    };
    await expectRetained();
    await restartOperator();
    await nats.restart();
    await sleep(2 * DRIFT_INTERVAL_SECONDS * 1000);
    await expectRetained();

    // The same code without naming the retained uid: refused, nothing taken over (negative control).
    tenant(RETAIN);
    await waitForTenant(nameOf(RETAIN), 'CapsuleCodeInUse', (t) => t.conditions['Provisioned']?.reason === 'CapsuleCodeInUse', ACTIVE_MS);
    await expectRetained();
    // Deleting that tenant (Delete, the default) must not purge what it never owned.
    kubectlOk(['delete', 'evt', nameOf(RETAIN)]);
    await expectRetained();
    const restoredAt = Date.now();
    tenant(RETAIN, {}, { [RESTORE_FROM_ANNOTATION]: uid });
    note(`restore (retained data, new EvaTenant) -> Active: ${String(await waitActive(RETAIN, restoredAt))} ms`);
    expect(tenantAccount(RETAIN)).toBe(account);
    expect(await readAsModule(RETAIN, sent.length)).toEqual(sent);
    // Taken over for good: without the annotation it stays Active through drift checks.
    kubectlOk(['annotate', 'evt', nameOf(RETAIN), `${RESTORE_FROM_ANNOTATION}-`]);
    await sleep(3 * DRIFT_INTERVAL_SECONDS * 1000);
    expect(isActive(readTenant(nameOf(RETAIN)) ?? { conditions: {}, elapsedSeconds: {} })).toBe(true);

    // Purge: Delete (the default) leaves nothing.
    kubectlOk(['delete', 'evt', nameOf(RETAIN), '--wait=false']);
    expect(await waitForGone(nameOf(RETAIN), ACTIVE_MS)).toBe(true);
    expect(tenantAccount(RETAIN)).toBeUndefined();
    expect(await refused(RETAIN, credentials)).toBe(true);
  }, CASE_MS);

  it('keeps a Decommissioned tenant’s data with Retain and gives it back when set Active again', async () => {
    await waitActive(KEPT);
    const credentials = moduleCredentials(KEPT);
    const sent = ['kept-object-1'];
    await publishAsModule(KEPT, sent);
    patchTenantSpec(nameOf(KEPT), { lifecycle: 'Decommissioned' });
    await waitForTenant(nameOf(KEPT), 'Decommissioned', (t) => t.phase === 'Decommissioned', ACTIVE_MS);
    const states = (getJson(['evt', nameOf(KEPT)]) as { status?: { decommission?: Record<string, string> } } | undefined)?.status?.decommission;
    expect(states).toMatchObject({ seed: 'Retained', streams: 'Retained', account: 'Retained', record: 'Removed', modules: 'Removed', namespace: 'Removed' });
    expect(await refused(KEPT, credentials)).toBe(true);
    expect(await streamNames(KEPT, target)).toEqual([`KV_eva-${KEPT}-data`, `eva-${KEPT}-commands`, `eva-${KEPT}-events`]);
    const backAt = Date.now();
    patchTenantSpec(nameOf(KEPT), { lifecycle: 'Active' });
    note(`Decommissioned (Retain) -> Active again: ${String(await waitActive(KEPT, backAt))} ms`);
    expect(await readAsModule(KEPT, sent.length)).toEqual(sent);
  }, CASE_MS);
});
