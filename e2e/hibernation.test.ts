/**
 * Hibernation, suspended reconciliation and data retention with the real operator process, API
 * server, helm and NATS. spec.lifecycle Suspended scales every module to zero (Deployments at 0,
 * kwok's pods gone), withdraws the Ingress and makes NATS refuse the modules' credentials and drop
 * a live connection made with them (judged Current by kstatus and Suspended by the Argo CD health
 * check). spec.suspend stops every write while drift made by hand is observed. spec.dataRetention
 * Retain keeps streams and bucket (account disabled) past a delete. All three stay unchanged
 * through drift checks, an operator restart, a NATS restart and an upgrade of the operator (a new
 * version beside the old one, tenants pinned to it, the old one stopped); a protected tenant's
 * DELETE is refused while no operator runs. Then: Active again on a changed spec serves the same
 * stream contents; suspend false repairs the drift; a reused capsule code alone is refused, the
 * restore annotation takes the data (streams and bucket) over, and a Delete then purges it all.
 * While NATS is down an Active tenant is Degraded (kstatus InProgress, Argo CD Degraded).
 *
 * Isolation: its own NATS (restarted here) and operator versions 9.4.0, then 9.4.1, with MAX_WAVE 0;
 * tenants pinned to them, capsule codes HIBERN, SUSPND, RETAIN and RETKEP, deleted at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { MODULES_BY_TIER } from '../src/api/modules.ts';
import { API_VERSION, KIND, OWNER_ANNOTATION, RESTORE_FROM_ANNOTATION } from '../src/api/constants.ts';
import { auditOffset, auditWritesSince } from '../test/support/audit.ts';
import { eventually, kubectl, kubectlOk } from '../test/support/kubectl.ts';
import { operatorNatsEnv, startNatsServer, type TestNatsServer } from '../test/support/nats-server.ts';
import { repoRoot } from '../test/support/tools.ts';
import { operatorNamespace } from '../test/support/operator-identity.ts';
import { captureTenant, fluxAndArgo, labelled } from '../test/support/health-verdicts.ts';
import { helmReleases } from '../test/support/helm.ts';
import { metricSum, scrape } from '../test/support/metrics.ts';
import { type AccountSession, connectAsModule, type Credentials, inTenant, moduleCredentials, type NatsTarget, publishAsModule, readAsModule, refused, streamNames, tenantAccount } from '../test/support/nats.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../test/support/operator.ts';
import { isActive, patchTenantSpec, pinnedVersion, readTenant, type TenantView, waitForGone, waitForTenant } from '../test/support/tenants.ts';

/** The operator before and after the upgrade. */
const OLD = '9.4.0';
const NEW = '9.4.1';
const DRIFT_INTERVAL_SECONDS = 3;
const HIBERNATE = 'HIBERN';
/** spec.suspend, and deletionProtection. */
const SUSPEND = 'SUSPND';
const RETAIN = 'RETAIN';
const KEPT = 'RETKEP';
const CODES = [HIBERNATE, SUSPEND, RETAIN, KEPT] as const;
/** The version tenants are pinned to: OLD until the upgrade, NEW after it. */
let version = OLD;
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
    spec: { capsuleCode: code, tier: 'Starter', wave: 1, seedsVersion: '1.0.0', operatorVersion: version, ...spec },
  };
  kubectlOk(['apply', '-f', '-'], JSON.stringify(manifest));
}

function getJson(args: readonly string[]): unknown {
  const result = kubectl(['get', ...args, '-o', 'json']);
  return result.status === 0 ? (JSON.parse(result.stdout) as unknown) : undefined;
}

interface TenantJson {
  metadata: { uid: string; annotations?: Record<string, string> };
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
const ownerOf = (code: string): string | undefined => tenantJson(code)?.metadata.annotations?.[OWNER_ANNOTATION];
const quotas = (code: string): string => kubectlOk(['get', 'resourcequota', '-n', nsOf(code), '-o', 'name']);

/** When a live connection is closed, and with what error (the server tells a revoked user so). */
const whenClosed = (session: AccountSession): Promise<{ at: number; error: string }> =>
  session.nc.closed().then((err) => ({ at: Date.now(), error: err instanceof Error ? err.message : '' }));

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

/** What kubectl shows of a hibernated tenant: Ready True (as asked)/Suspended, nothing served, modules at zero, no address. */
function expectHibernatedStatus(code: string): void {
  const asleep = readTenant(nameOf(code));
  expect(asleep?.conditions['Ready']).toMatchObject({ status: 'True', reason: 'Suspended' });
  expect(asleep?.conditions['Ready']?.message).toContain('nothing is served');
  expect(asleep?.conditions['ModulesDeployed']).toMatchObject({ status: 'True', reason: 'ScaledToZero' });
  const status = tenantJson(code)?.status;
  expect(status?.url).toBeUndefined();
  for (const module of MODULES) expect(status?.modules?.[module]).toMatchObject({ replicas: 0, readyReplicas: 0, message: 'scaled to zero (spec.lifecycle: Suspended)' });
  expect(kubectlOk(['describe', 'evt', nameOf(code)])).toMatch(/Reason:\s+Suspended/);
}

async function expectStillHibernated(code: string, credentials: Credentials, helmBefore: Record<string, string>): Promise<void> {
  expect(readTenant(nameOf(code))?.phase).toBe('Suspended');
  expect(readTenant(nameOf(code))?.conditions['Ready']).toMatchObject({ status: 'True', reason: 'Suspended' });
  expect(Object.values(replicasOf(code))).toEqual(MODULES.map(() => 0));
  expect(podCount(code)).toBe(0);
  expect(hasIngress(code)).toBe(false);
  expect(await refused(code, credentials)).toBe(true);
  // The same helm revisions: nothing "repaired" the replicas back, and helm was not run again.
  expect(revisions(code)).toEqual(helmBefore);
}

/** A tenant of ours, whoever owns it now, made deletable (suspend and protection lifted) and deleted without residue. */
function deleteOurs(code: string): void {
  if (pinnedVersion(nameOf(code)) === undefined) return;
  kubectl(['patch', 'evt', nameOf(code), '--type=merge', '-p', JSON.stringify({ spec: { operatorVersion: version, suspend: false, deletionProtection: false, dataRetention: 'Delete' } })]);
  kubectl(['delete', 'evt', nameOf(code), '--wait=false']);
}

/** Operator writes to what the tenant owns: its namespace's objects, and the EvaTenant but its status. */
const ownedWrites = (offset: number, code: string): string[] =>
  auditWritesSince(offset)
    .filter((e) => !(e.userAgent ?? '').startsWith('kubectl'))
    .filter((e) => e.objectRef?.namespace === nsOf(code) || (e.objectRef?.resource === 'evatenants' && e.objectRef.name === nameOf(code) && e.objectRef.subresource !== 'status'))
    .map((e) => `${e.verb} ${e.objectRef?.resource ?? ''}/${e.objectRef?.name ?? ''} ${e.userAgent ?? ''}`);

const SUSPENDED_WITH_DRIFT = (t: TenantView): boolean => t.conditions['Suspended']?.status === 'True' && t.conditions['Suspended'].message.includes('drift observed, not repaired: quotas: QuotaMissing');

describe('hibernation, suspend and data retention', () => {
  let nats: TestNatsServer;
  let target: NatsTarget;
  let operator: OperatorProcess;
  /** The old version during the upgrade, until every tenant is handed over. */
  let previous: OperatorProcess | undefined;
  const env = (): Record<string, string> => ({ OPERATOR_VERSION: version, MAX_WAVE: '0', DRIFT_INTERVAL_SECONDS: String(DRIFT_INTERVAL_SECONDS), ...operatorNatsEnv(nats) });
  // Shared by the cases, in order: what each hibernated, suspended or retained.
  const hibernated = { credentials: undefined as Credentials | undefined, helm: {} as Record<string, string>, sent: ['before-1', 'before-2', 'before-3'] };
  const retained = { uid: '', account: undefined as string | undefined, credentials: undefined as Credentials | undefined, sent: ['kept-1', 'kept-2'], kv: 'kept in the bucket' };
  let suspendedAt = 0;

  beforeAll(async () => {
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    nats = await startNatsServer();
    target = { url: nats.url };
    operator = startOperator(env());
    await operator.ready();
    for (const code of CODES) {
      if (![OLD, NEW].includes(pinnedVersion(nameOf(code)) ?? '')) continue;
      // A leftover of an earlier run may be owned by a version not running now: let this one take it.
      kubectl(['annotate', 'evt', nameOf(code), `${OWNER_ANNOTATION}-`]);
      deleteOurs(code);
      expect(await waitForGone(nameOf(code), 240_000), `leftover ${code}`).toBe(true);
    }
    // Keys an earlier run retained (their NATS went with that run): this run starts without them.
    kubectl(['delete', 'secret', '-n', operatorNamespace(), '--ignore-not-found', ...CODES.map((code) => `eva-nats-account-${nameOf(code)}`)]);
    tenant(HIBERNATE);
    tenant(SUSPEND, { deletionProtection: true });
    tenant(RETAIN, { dataRetention: 'Retain' });
    tenant(KEPT, { dataRetention: 'Retain' });
  }, 600_000);

  afterAll(async () => {
    for (const code of CODES) deleteOurs(code);
    for (const code of CODES) await waitForGone(nameOf(code), 300_000);
    console.log(`hibernation figures:\n  ${figures.join('\n  ')}`);
    await previous?.stop();
    await operator.stop();
    removeSecretsDir(operator);
    await nats.stop();
  }, 600_000);

  it('hibernates to zero pods with credentials refused, live connections dropped and the Ingress withdrawn; kstatus Current, Argo CD Suspended', async () => {
    await waitActive(HIBERNATE);
    expectServing(HIBERNATE);
    const credentials = moduleCredentials(HIBERNATE);
    hibernated.credentials = credentials;
    expect(await refused(HIBERNATE, credentials)).toBe(false);
    // A module's live connection, open across the hibernation: while Active it publishes (JetStream
    // acknowledges every message: the positive control).
    const live = await connectAsModule(HIBERNATE, credentials);
    const closed = whenClosed(live);
    await publishAsModule(HIBERNATE, hibernated.sent, live);

    const asleepAt = Date.now();
    patchTenantSpec(nameOf(HIBERNATE), { lifecycle: 'Suspended' });
    expect(await eventually(() => podCount(HIBERNATE) === 0, ACTIVE_MS, 250), 'pods still there').toBe(true);
    note(`hibernate -> zero pods: ${String(Date.now() - asleepAt)} ms`);
    note(`hibernate -> phase Suspended: ${String(await waitSuspended(HIBERNATE, asleepAt))} ms`);
    // NATS dropped that connection when the account JWT revoking the modules' user was pushed.
    const drop = await Promise.race([closed, sleep(10_000).then(() => undefined)]);
    if (drop === undefined) await live.nc.close();
    expect(drop, 'the modules\' live connection is still open while hibernated').toBeDefined();
    note(`hibernate -> live module connection dropped: ${String((drop?.at ?? Date.now()) - asleepAt)} ms (${drop?.error ?? ''})`);
    expect(drop?.error).toMatch(/revoked/i);
    expectHibernatedStatus(HIBERNATE);
    expect(metricSum(await scrape(operator), 'eva_tenants', 'phase="Suspended"')).toBeGreaterThanOrEqual(1);
    // The data is all there, seen as an administrator of the account (the operator's keys).
    expect(await streamNames(HIBERNATE, target)).toEqual([`KV_eva-${HIBERNATE}-data`, `eva-${HIBERNATE}-commands`, `eva-${HIBERNATE}-events`]);
    hibernated.helm = revisions(HIBERNATE);
    await expectStillHibernated(HIBERNATE, credentials, hibernated.helm);
    // Drift checks (every 3 s) keep it hibernated: nothing fights helm over replicas.
    await sleep(4 * DRIFT_INTERVAL_SECONDS * 1000);
    await expectStillHibernated(HIBERNATE, credentials, hibernated.helm);
    // At rest as asked: Flux's wait passes, Argo CD shows it paused.
    const asleep = captureTenant(nameOf(HIBERNATE));
    const { verdicts, flux, argo } = fluxAndArgo([labelled('hibernated', asleep)]);
    expect(verdicts, `kstatus: ${JSON.stringify(flux)}; ${JSON.stringify(asleep)}`).toEqual({ hibernated: 'Current/Suspended' });
    expect(argo['hibernated']?.message).toContain('hibernated');
  }, CASE_MS);

  it('spec.suspend: drift made by hand is observed and shown, nothing the tenant owns is written', async () => {
    await waitActive(SUSPEND);
    patchTenantSpec(nameOf(SUSPEND), { suspend: true });
    await waitForTenant(nameOf(SUSPEND), 'Suspended', (t) => t.conditions['Suspended']?.status === 'True' && t.observedGeneration === t.generation, 60_000);
    suspendedAt = auditOffset();
    kubectlOk(['delete', 'resourcequota', '--all', '-n', nsOf(SUSPEND)]);
    await waitForTenant(nameOf(SUSPEND), 'drift shown', SUSPENDED_WITH_DRIFT, 60_000);
    await sleep(3 * DRIFT_INTERVAL_SECONDS * 1000);
    expect(ownedWrites(suspendedAt, SUSPEND)).toEqual([]);
    expect(quotas(SUSPEND)).toBe('');
  }, CASE_MS);

  it('retains streams and bucket past a delete, the account disabled', async () => {
    await waitActive(RETAIN);
    retained.uid = tenantJson(RETAIN)?.metadata.uid ?? '';
    retained.credentials = moduleCredentials(RETAIN);
    await publishAsModule(RETAIN, retained.sent);
    await inTenant(RETAIN, async (session) => {
      const kv = await session.existingKv(`eva-${RETAIN}-data`);
      if (kv === undefined) throw new Error('no seed bucket');
      await kv.put('e2e.kept', new TextEncoder().encode(retained.kv));
    }, target);
    retained.account = tenantAccount(RETAIN);
    kubectlOk(['delete', 'evt', nameOf(RETAIN), '--wait=false']);
    expect(await waitForGone(nameOf(RETAIN), ACTIVE_MS), 'the retained tenant was not deleted').toBe(true);
    expect(await eventually(() => kubectl(['get', 'namespace', nsOf(RETAIN)]).status !== 0, ACTIVE_MS, 500), 'namespace left').toBe(true);
    await expectRetained();
  }, CASE_MS);

  /** Streams, bucket (with what was put in it) and account kept, the modules' credentials refused. */
  async function expectRetained(): Promise<void> {
    expect(tenantAccount(RETAIN)).toBe(retained.account);
    expect(await streamNames(RETAIN, target)).toEqual([`KV_eva-${RETAIN}-data`, `eva-${RETAIN}-commands`, `eva-${RETAIN}-events`]);
    expect(await inTenant(RETAIN, async ({ jsm }) => (await jsm.streams.info(`eva-${RETAIN}-events`)).state.messages, target)).toBe(retained.sent.length);
    expect(await keptInBucket()).toBe(retained.kv);
    expect(await refused(RETAIN, retained.credentials as Credentials)).toBe(true);
  }

  async function keptInBucket(): Promise<string | undefined> {
    return inTenant(RETAIN, async (session) => (await (await session.existingKv(`eva-${RETAIN}-data`))?.get('e2e.kept'))?.string(), target);
  }

  /** Hibernated, suspended (drift not repaired, nothing written) and retained, each as it was. */
  async function expectAllUnchanged(when: string): Promise<void> {
    await sleep(3 * DRIFT_INTERVAL_SECONDS * 1000);
    await expectStillHibernated(HIBERNATE, hibernated.credentials as Credentials, hibernated.helm);
    expect(readTenant(nameOf(SUSPEND)), when).toSatisfy((t: TenantView | undefined) => t !== undefined && SUSPENDED_WITH_DRIFT(t) && t.phase === 'Active');
    expect(ownedWrites(suspendedAt, SUSPEND), when).toEqual([]);
    expect(quotas(SUSPEND), when).toBe('');
    await expectRetained();
  }

  it('all three survive an operator restart (a protected DELETE refused while none runs), a NATS restart and an upgrade unchanged', async () => {
    await operator.stop();
    removeSecretsDir(operator);
    // No operator runs: the API server itself refuses the protected tenant's deletion.
    const refusedDelete = kubectl(['delete', 'evt', nameOf(SUSPEND), '--wait=false']);
    expect(refusedDelete.status).not.toBe(0);
    expect(refusedDelete.stderr).toContain('spec.deletionProtection: true');
    expect(kubectl(['get', 'evt', nameOf(SUSPEND)]).status).toBe(0);
    operator = startOperator(env());
    await operator.ready();
    await expectAllUnchanged('after an operator restart');
    // While NATS is down an Active tenant's drift check cannot run: phase Degraded, as both tools say.
    await waitActive(KEPT);
    await nats.halt();
    await waitForTenant(nameOf(KEPT), 'Degraded while NATS is down', (t) => t.phase === 'Degraded', 90_000);
    const { verdicts, argo } = fluxAndArgo([labelled('degraded', captureTenant(nameOf(KEPT)))]);
    expect(verdicts).toEqual({ degraded: 'InProgress/Degraded' });
    expect(argo['degraded']?.message).toContain('phase Degraded');
    await nats.restart();
    await expectAllUnchanged('after a NATS restart');

    // Upgrade: the new version beside the old one, every tenant pinned to it.
    version = NEW;
    previous = operator;
    operator = startOperator(env());
    await operator.ready();
    const upgradedAt = Date.now();
    for (const code of [HIBERNATE, SUSPEND, KEPT]) patchTenantSpec(nameOf(code), { operatorVersion: NEW });
    for (const code of [HIBERNATE, KEPT]) expect(await eventually(() => ownerOf(code) === NEW, 120_000, 500), `${code} handed over`).toBe(true);
    note(`upgrade: hibernated tenant handed over to ${NEW} in ${String(Date.now() - upgradedAt)} ms`);
    await expectAllUnchanged('after the upgrade');
    // Suspended: not even the hand-over is written; it stays with the old version until resumed.
    expect(ownerOf(SUSPEND)).toBe(OLD);
  }, CASE_MS);

  it('resumes from hibernation on a changed spec: Active on it, serving the same data', async () => {
    const credentials = hibernated.credentials as Credentials;
    const resumedAt = Date.now();
    patchTenantSpec(nameOf(HIBERNATE), { lifecycle: 'Active', helmValues: { 'orbit-crm': { config: { currency: 'CHF' } } } });
    expect(await eventually(async () => !(await refused(HIBERNATE, credentials)), ACTIVE_MS, 100), 'credentials still refused').toBe(true);
    note(`resume -> credentials accepted: ${String(Date.now() - resumedAt)} ms`);
    note(`resume -> Active (changed spec): ${String(await waitActive(HIBERNATE, resumedAt))} ms`);
    expectServing(HIBERNATE);
    expect(kubectlOk(['get', 'configmap', 'orbit-crm-config', '-n', nsOf(HIBERNATE), '-o', 'jsonpath={.data.config\\.yaml}'])).toContain('currency: CHF');
    expect(await readAsModule(HIBERNATE, hibernated.sent.length)).toEqual(hibernated.sent);
    expect(ownerOf(HIBERNATE)).toBe(NEW);
  }, CASE_MS);

  it('resumes from suspend: handed over to the new version, which repairs the drift; then the upgrade completes and the protection lifted, the DELETE goes through', async () => {
    const resumedAt = Date.now();
    patchTenantSpec(nameOf(SUSPEND), { suspend: false });
    expect(await eventually(() => quotas(SUSPEND) !== '', 120_000, 500), 'quota not restored').toBe(true);
    note(`suspend false -> drift repaired: ${String(Date.now() - resumedAt)} ms`);
    const active = await waitForTenant(nameOf(SUSPEND), 'Active, not suspended', (t) => isActive(t) && t.conditions['Suspended'] === undefined, ACTIVE_MS);
    expect(active.tenant.conditions['Ready']?.status).toBe('True');
    expect(ownerOf(SUSPEND)).toBe(NEW);
    // Every tenant is with the new version: the old one goes.
    await previous?.stop();
    if (previous) removeSecretsDir(previous);
    previous = undefined;
    // Positive control of the refused DELETE: lifted, the same DELETE goes through.
    patchTenantSpec(nameOf(SUSPEND), { deletionProtection: false });
    expect(kubectl(['delete', 'evt', nameOf(SUSPEND), '--wait=false']).status).toBe(0);
    expect(await waitForGone(nameOf(SUSPEND), ACTIVE_MS)).toBe(true);
  }, CASE_MS);

  it('restores retained data only with the restore annotation (streams and bucket readable), and purges with Delete', async () => {
    // The same code without naming the retained uid: refused, nothing taken over (negative control).
    tenant(RETAIN);
    await waitForTenant(nameOf(RETAIN), 'CapsuleCodeInUse', (t) => t.conditions['Provisioned']?.reason === 'CapsuleCodeInUse', ACTIVE_MS);
    await expectRetained();
    // Deleting that tenant (Delete, the default) must not purge what it never owned.
    kubectlOk(['delete', 'evt', nameOf(RETAIN)]);
    await expectRetained();
    const restoredAt = Date.now();
    tenant(RETAIN, {}, { [RESTORE_FROM_ANNOTATION]: retained.uid });
    note(`restore (retained data, new EvaTenant, upgraded operator) -> Active: ${String(await waitActive(RETAIN, restoredAt))} ms`);
    expect(tenantAccount(RETAIN)).toBe(retained.account);
    expect(await readAsModule(RETAIN, retained.sent.length)).toEqual(retained.sent);
    expect(await keptInBucket()).toBe(retained.kv);
    // Taken over for good: without the annotation it stays Active through drift checks.
    kubectlOk(['annotate', 'evt', nameOf(RETAIN), `${RESTORE_FROM_ANNOTATION}-`]);
    await sleep(3 * DRIFT_INTERVAL_SECONDS * 1000);
    expect(isActive(readTenant(nameOf(RETAIN)) ?? { conditions: {}, elapsedSeconds: {} })).toBe(true);

    // Purge: Delete (the default) leaves nothing.
    kubectlOk(['delete', 'evt', nameOf(RETAIN), '--wait=false']);
    expect(await waitForGone(nameOf(RETAIN), ACTIVE_MS)).toBe(true);
    expect(tenantAccount(RETAIN)).toBeUndefined();
    expect(await refused(RETAIN, retained.credentials as Credentials)).toBe(true);
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
