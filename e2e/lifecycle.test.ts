/**
 * A tenant's life after Active, with the real operator process: spec changes converge (tier up and
 * down, a module version pin, helmValues, seedsVersion), drift is repaired within the drift interval,
 * a NATS that lost its storage is refilled, changed credentials upgrade every module, an idle drift
 * check writes nothing and starts no helm, lifecycle Decommissioned empties the tenant (and Active
 * brings it back), and a tenant deleted while NATS is down keeps its finalizer until NATS is back.
 *
 * Isolation (the cluster is shared): operators 9.3.0 (shared NATS) and 9.3.1 (this file's own NATS)
 * with MAX_WAVE 0, tenants pinned to them only, capsule codes starting with LIFE, all deleted at the end.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFailed } from 'vitest';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StringCodec } from 'nats';
import { FINALIZER } from '../src/api/constants.ts';
import { ROLLOUTS_ELECTION } from '../src/controller/rollout-runner.ts';
import { kubectl, kubectlOk } from '../test/support/kubectl.ts';
import { operatorNatsEnv, startNatsServer, type TestNatsServer } from '../test/support/nats-server.ts';
import { inRegistry, inTenant, type NatsTarget, streamNames } from '../test/support/nats.ts';
import { repoRoot } from '../test/support/tools.ts';
import { helmProcesses, helmReleases } from '../test/support/helm.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../test/support/operator.ts';
import { metricSum, scrape } from '../test/support/metrics.ts';
import { applyTenant, isActive, patchTenantSpec, pinnedVersion, type TenantView, waitForGone, waitForTenant } from '../test/support/tenants.ts';

const VERSION = '9.3.0';
/** The operator on this file's own NATS (cases: NATS wiped, deleted while NATS is down). */
const PRIVATE_VERSION = '9.3.1';
const DRIFT_INTERVAL_SECONDS = 3;
/** Generous: a repair is due within one drift interval (3 s); a busy shared machine gets slack. */
const RESTORE_MS = 60_000;
const ACTIVE_MS = 240_000;
const CASE_MS = 600_000;

const TENANTS = { spec: 'LIFESP', drift: 'LIFEDR', idle: 'LIFEID', decommission: 'LIFEDC' } as const;
const PRIVATE_TENANTS = { wipe: 'LIFENW', natsDown: 'LIFEND' } as const;

const nameOf = (code: string): string => code.toLowerCase();
const nsOf = (code: string): string => `eva-tenant-${code.toLowerCase()}`;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const timings: string[] = [];
function note(line: string): void {
  timings.push(line);
  console.log(`[lifecycle] ${line}`);
}

// ---- helpers --------------------------------------------------------------------------------------

/** Polls `check` (errors count as false) until it holds; returns the ms it took, throws after the timeout. */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 500): Promise<number> {
  const started = Date.now();
  for (;;) {
    let ok = false;
    try {
      ok = await check();
    } catch {
      ok = false;
    }
    if (ok) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not seen within ${timeoutMs} ms`);
    await sleep(intervalMs);
  }
}

/** `kubectl get ... -o json`, parsed; undefined when it does not exist. */
function getJson(args: readonly string[]): unknown {
  const result = kubectl(['get', ...args, '-o', 'json']);
  return result.status === 0 ? (JSON.parse(result.stdout) as unknown) : undefined;
}



/** module -> revision of its deployed release. */
function revisions(namespace: string): Record<string, number> {
  return Object.fromEntries(helmReleases(namespace).filter((r) => r.status === 'deployed').map((r) => [r.name, Number(r.revision)]));
}

interface Quota {
  spec: { hard: Record<string, string> };
}
const quotaHard = (code: string): Record<string, string> | undefined => (getJson(['resourcequota', 'eva-tier-quota', '-n', nsOf(code)]) as Quota | undefined)?.spec.hard;

interface Ingress {
  spec: { rules: { http?: { paths: { path: string }[] } }[] };
  status?: { loadBalancer?: { ingress?: unknown[] } };
}
function ingressPaths(code: string): string[] | undefined {
  const ingress = getJson(['ingress', 'eva-tenant', '-n', nsOf(code)]) as Ingress | undefined;
  return ingress?.spec.rules.flatMap((r) => r.http?.paths.map((p) => p.path) ?? []).sort();
}

interface Deployment {
  spec: { replicas: number; template: { spec: { containers: { name: string; image: string }[] } } };
  status?: { readyReplicas?: number; availableReplicas?: number };
}
const deployment = (code: string, module: string): Deployment | undefined => getJson(['deployment', module, '-n', nsOf(code)]) as Deployment | undefined;

interface TenantObject {
  metadata: { resourceVersion: string; generation: number; finalizers?: string[]; uid: string };
  spec: Record<string, unknown>;
  status?: { phase?: string; observedGeneration?: number; decommission?: Record<string, string> };
}
const tenantObject = (code: string): TenantObject | undefined => getJson(['evt', nameOf(code)]) as TenantObject | undefined;

/** The value of a key in the tenant's data bucket (in its account), if it is there. */
async function kvValue(code: string, key: string, t?: NatsTarget): Promise<string | undefined> {
  return inTenant(code, async (s) => {
    const entry = await (await s.existingKv(`eva-${code}-data`))?.get(key);
    return entry && entry.operation === 'PUT' ? entry.string() : undefined;
  }, t);
}

interface TenantRecord {
  code: string;
  tier: string;
  seedsVersion: string;
  seed?: { version: string; digest: string };
}
/** The tenant's record in the operator's registry account. */
async function tenantRecord(code: string, t?: NatsTarget): Promise<TenantRecord | undefined> {
  const entry = await inRegistry(async (s) => (await s.existingKv('eva-tenants'))?.get(code), t);
  return entry && entry.operation === 'PUT' ? entry.json<TenantRecord>() : undefined;
}

async function streamMaxMsgs(code: string, stream: string): Promise<number | undefined> {
  return inTenant(code, ({ jsm }) => jsm.streams.info(stream).then((info) => info.config.max_msgs, () => undefined));
}

/** When the server created each of the tenant's streams (ms), by name: a stream made again has a later time. */
async function streamsCreated(code: string, t: NatsTarget): Promise<Map<string, number>> {
  const created = await inTenant(code, async ({ jsm }) => {
    const times = new Map<string, number>();
    for await (const info of jsm.streams.list()) times.set(info.config.name, Date.parse(info.created));
    return times;
  }, t);
  return created ?? new Map();
}

/** Active on the current generation, waited for; returns the ms since `since`. */
async function waitActive(code: string, since = Date.now(), timeoutMs = ACTIVE_MS): Promise<{ tenant: TenantView; ms: number }> {
  return waitForTenant(nameOf(code), 'Active on the current generation', isActive, timeoutMs, since);
}

function create(code: string, version: string, spec: Record<string, unknown> = {}): void {
  applyTenant(nameOf(code), { capsuleCode: code, tier: 'Starter', wave: 1, seedsVersion: '1.0.0', ...spec, operatorVersion: version });
}


function auditLogPath(): string {
  return join(process.env['KUBECONFIG'] ?? '', '..', 'kwok', 'clusters', 'eva', 'logs', 'audit.log');
}

interface AuditLine {
  verb: string;
  userAgent?: string;
  requestURI?: string;
  objectRef?: { resource?: string; namespace?: string; name?: string; subresource?: string };
}

/** Audited writes after `offset` that concern the tenant (its namespace, Namespace, EvaTenant or its Events). */
function auditWritesFor(offset: number, code: string): AuditLine[] {
  const log = readFileSync(auditLogPath());
  const text = log.subarray(offset <= log.length ? offset : 0).toString('utf8');
  const ns = nsOf(code);
  const name = nameOf(code);
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as AuditLine)
    .filter(({ objectRef: ref = {} }) =>
      ref.namespace === ns ||
      (ref.resource === 'namespaces' && ref.name === ns) ||
      (ref.resource === 'evatenants' && ref.name === name) ||
      (ref.resource === 'events' && ref.name?.startsWith(`${name}.`) === true),
    );
}


/** The top-level JSON objects in a stream of concatenated ones (what `kubectl get -w -o json` prints). */
function jsonObjects(text: string): unknown[] {
  const objects: unknown[] = [];
  let depth = 0;
  let start = 0;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') {
      if (depth === 0) start = i;
      depth += 1;
    } else if (c === '}') {
      depth -= 1;
      if (depth === 0) objects.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  return objects;
}

interface StatusSeen {
  generation: number;
  observedGeneration?: number;
  phase?: string;
  ready?: string;
}

/** Every version of the EvaTenant the API server sends a watch, from now until stop(). */
function watchStatuses(name: string): { stop(): Promise<StatusSeen[]> } {
  const child = spawn(join(process.env['EVA_TOOLS_DIR'] ?? '', 'kubectl'), ['get', 'evt', name, '--watch', '--output-watch-events', '-o', 'json'], {
    env: process.env,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return {
    stop: async () => {
      await sleep(500);
      child.kill();
      type Event = { object: TenantObject & { status?: { conditions?: { type: string; status: string }[] } } };
      return (jsonObjects(text) as Event[]).map(({ object }) => {
        const seen: StatusSeen = { generation: object.metadata.generation };
        if (object.status?.observedGeneration !== undefined) seen.observedGeneration = object.status.observedGeneration;
        if (object.status?.phase !== undefined) seen.phase = object.status.phase;
        const ready = object.status?.conditions?.find((c) => c.type === 'Ready')?.status;
        if (ready !== undefined) seen.ready = ready;
        return seen;
      });
    },
  };
}

/**
 * Patches the spec and waits until the tenant is Active on the new generation; the first status
 * that claims the new generation must not already say Active: that would be Ready on a spec the
 * operator never acted on (what a `kubectl wait` on observedGeneration would trust).
 */
async function changeSpec(code: string, spec: Record<string, unknown>): Promise<number> {
  const watch = watchStatuses(nameOf(code));
  await sleep(300);
  const patched = Date.now();
  patchTenantSpec(nameOf(code), spec);
  const { tenant, ms } = await waitActive(code, patched);
  const seen = await watch.stop();
  const first = seen.find((s) => s.generation === tenant.generation && s.observedGeneration === tenant.generation);
  expect(first, `no status for generation ${String(tenant.generation)} seen: ${JSON.stringify(seen)}`).toBeDefined();
  expect(first?.phase, `first status on generation ${String(tenant.generation)}: ${JSON.stringify(seen)}`).not.toBe('Active');
  return ms;
}

/** Deleted but kept by its finalizer: the Kubernetes steps removed, the NATS steps waiting for NATS. */
function expectHeldByNats(code: string, natsSteps: readonly string[], kubeSteps: readonly string[]): void {
  const held = tenantObject(code);
  expect(held, 'the EvaTenant went away while NATS was down').toBeDefined();
  const states = held?.status?.decommission ?? {};
  expect(held?.metadata.finalizers).toContain(FINALIZER);
  expect(held?.status?.phase).toBe('Decommissioning');
  for (const step of natsSteps) expect(states[step], step).toMatch(/^NatsUnavailable: /);
  for (const step of kubeSteps) expect(states[step], step).toBe('Removed');
}

// ---- the suite ------------------------------------------------------------------------------------

describe('a tenant after Active: spec changes, drift, NATS loss, credentials, idle checks, decommission', () => {
  let operator: OperatorProcess;
  let privateOperator: OperatorProcess;
  let privateNats: TestNatsServer;
  /** This file's own NATS, as the e2e helpers reach it. */
  let PRIVATE: NatsTarget;
  let imagesDir: string;
  let failed = false;

  beforeAll(async () => {
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    // A second orbit-crm version for the pin change (the bundled catalogue has one version per module).
    imagesDir = mkdtempSync(join(tmpdir(), 'eva-lifecycle-images-'));
    const images = join(imagesDir, 'images.txt');
    copyFileSync(join(repoRoot, 'images.txt'), images);
    const catalogue = readFileSync(images, 'utf8');
    if (!/orbit-crm:1\.1\.0@/.test(catalogue)) appendFileSync(images, 'ghcr.io/aidonow/orbit-crm:1.1.0@sha256:PLACEHOLDER\n');
    privateNats = await startNatsServer();
    PRIVATE = { url: privateNats.url };
    operator = startOperator({ OPERATOR_VERSION: VERSION, MAX_WAVE: '0', DRIFT_INTERVAL_SECONDS: String(DRIFT_INTERVAL_SECONDS), IMAGES_FILE: images });
    privateOperator = startOperator({
      OPERATOR_VERSION: PRIVATE_VERSION,
      MAX_WAVE: '0',
      DRIFT_INTERVAL_SECONDS: String(DRIFT_INTERVAL_SECONDS),
      ...operatorNatsEnv(privateNats),
    });
    await Promise.all([operator.ready(), privateOperator.ready()]);
    // Leftovers of an interrupted run (ours: the name and the pin both match) go first.
    const ours: [string, string][] = [
      ...Object.values(TENANTS).map((code): [string, string] => [nameOf(code), VERSION]),
      ...Object.values(PRIVATE_TENANTS).map((code): [string, string] => [nameOf(code), PRIVATE_VERSION]),
    ];
    const leftovers = ours.filter(([name, version]) => pinnedVersion(name) === version).map(([name]) => name);
    for (const name of leftovers) kubectl(['delete', 'evt', name, '--wait=false']);
    for (const name of leftovers) expect(await waitForGone(name, 240_000), `leftover ${name} not deleted`).toBe(true);
    // Everything is created at once: provisioning overlaps, each case waits for its own tenant.
    create(TENANTS.spec, VERSION, { versions: { 'orbit-crm': '1.0.0' } });
    create(TENANTS.drift, VERSION);
    create(TENANTS.idle, VERSION);
    create(TENANTS.decommission, VERSION);
    create(PRIVATE_TENANTS.wipe, PRIVATE_VERSION);
    create(PRIVATE_TENANTS.natsDown, PRIVATE_VERSION);
  }, 600_000);

  beforeEach(() => {
    onTestFailed(() => {
      failed = true;
    });
  });

  afterAll(async () => {
    // A failed NATS-down case may have left the private NATS halted: decommissioning needs it up.
    await privateNats.restart().catch((err: unknown) => {
      console.log(`could not restart the private NATS: ${String(err)}`);
    });
    const ours = [
      ...Object.values(TENANTS).filter((code) => pinnedVersion(nameOf(code)) === VERSION),
      ...Object.values(PRIVATE_TENANTS).filter((code) => pinnedVersion(nameOf(code)) === PRIVATE_VERSION),
    ].map(nameOf);
    for (const name of ours) kubectl(['delete', 'evt', name, '--wait=false']);
    const gone = await Promise.all(ours.map(async (name) => [name, await waitForGone(name, 300_000)] as const));
    console.log(`lifecycle timings:\n  ${timings.join('\n  ')}`);
    if (failed || gone.some(([, isGone]) => !isGone)) {
      const logs = join(tmpdir(), `eva-lifecycle-operator-${String(process.pid)}.log`);
      writeFileSync(logs, `${operator.logs()}\n----- ${PRIVATE_VERSION} -----\n${privateOperator.logs()}`);
      console.log(`operator logs: ${logs}`);
    }
    await operator.stop();
    await privateOperator.stop();
    removeSecretsDir(operator);
    removeSecretsDir(privateOperator);
    await privateNats.stop();
    rmSync(imagesDir, { recursive: true, force: true });
    expect(gone.filter(([, isGone]) => !isGone).map(([name]) => name), 'tenants not deleted').toEqual([]);
  }, 600_000);

  // ---- 1. spec changes while Active --------------------------------------------------------------

  describe('spec changes while Active', () => {
    const code = TENANTS.spec;
    const ns = nsOf(code);

    it('tier Starter -> Customer: bigger quota and streams, eva-gateway and eva-shell installed, ingress paths added', async () => {
      await waitActive(code);
      const ms = await changeSpec(code, { tier: 'Customer' });
      note(`tier Starter -> Customer: Active on the new generation after ${seconds(ms)}`);
      expect(quotaHard(code)).toEqual({ 'requests.cpu': '4', 'requests.memory': '8Gi', pods: '40', secrets: '56', configmaps: '16', services: '10', 'services.loadbalancers': '0', 'services.nodeports': '0', persistentvolumeclaims: '0' });
      expect(await streamMaxMsgs(code, `eva-${code}-events`)).toBe(1_000_000);
      expect(await streamMaxMsgs(code, `eva-${code}-commands`)).toBe(1_000_000);
      expect(helmReleases(ns).map((r) => [r.name, r.status])).toEqual([
        ['eva-gateway', 'deployed'],
        ['eva-shell', 'deployed'],
        ['orbit-crm', 'deployed'],
        ['orbit-itsm', 'deployed'],
      ]);
      expect(ingressPaths(code)).toEqual(['/eva-gateway', '/eva-shell', '/orbit-crm', '/orbit-itsm']);
      expect(await tenantRecord(code)).toMatchObject({ tier: 'Customer' });
    }, CASE_MS);

    it('tier Customer -> Starter: quota and streams back, the two releases uninstalled, their paths removed', async () => {
      const ms = await changeSpec(code, { tier: 'Starter' });
      note(`tier Customer -> Starter: Active on the new generation after ${seconds(ms)}`);
      expect(quotaHard(code)).toEqual({ 'requests.cpu': '2', 'requests.memory': '4Gi', pods: '20', secrets: '32', configmaps: '12', services: '5', 'services.loadbalancers': '0', 'services.nodeports': '0', persistentvolumeclaims: '0' });
      expect(await streamMaxMsgs(code, `eva-${code}-events`)).toBe(100_000);
      expect(helmReleases(ns).map((r) => [r.name, r.status])).toEqual([
        ['orbit-crm', 'deployed'],
        ['orbit-itsm', 'deployed'],
      ]);
      expect(ingressPaths(code)).toEqual(['/orbit-crm', '/orbit-itsm']);
      expect(kubectlOk(['get', 'deployments', '-n', ns, '-o', 'name']).trim().split('\n').sort()).toEqual([
        'deployment.apps/orbit-crm',
        'deployment.apps/orbit-itsm',
      ]);
      expect(await tenantRecord(code)).toMatchObject({ tier: 'Starter' });
    }, CASE_MS);

    it('a versions pin change upgrades only that module', async () => {
      const before = revisions(ns);
      expect(deployment(code, 'orbit-crm')?.spec.template.spec.containers[0]?.image).toMatch(/orbit-crm:1\.0\.0$/);
      const ms = await changeSpec(code, { versions: { 'orbit-crm': '1.1.0' } });
      note(`versions orbit-crm 1.0.0 -> 1.1.0: Active after ${seconds(ms)}`);
      const after = revisions(ns);
      expect(after).toEqual({ 'orbit-crm': (before['orbit-crm'] ?? 0) + 1, 'orbit-itsm': before['orbit-itsm'] });
      expect(deployment(code, 'orbit-crm')?.spec.template.spec.containers[0]?.image).toMatch(/orbit-crm:1\.1\.0$/);
    }, CASE_MS);

    it('a helmValues change upgrades that module: orbit-itsm gets 2 replicas', async () => {
      const before = revisions(ns);
      const ms = await changeSpec(code, { helmValues: { 'orbit-itsm': { replicaCount: 2 } } });
      note(`helmValues orbit-itsm replicaCount 2: Active after ${seconds(ms)}`);
      expect(revisions(ns)).toEqual({ 'orbit-crm': before['orbit-crm'], 'orbit-itsm': (before['orbit-itsm'] ?? 0) + 1 });
      const itsm = deployment(code, 'orbit-itsm');
      expect(itsm?.spec.replicas).toBe(2);
      expect(itsm?.status?.availableReplicas).toBe(2);
    }, CASE_MS);

    it('seedsVersion 1.0.0 -> 1.1.0 re-seeds by difference', async () => {
      const bucket = `eva-${code}-data`;
      // Removed in 1.1.0 (orbit-crm, orbit-itsm), and one key 1.1.0 adds.
      const removed = ['orbit-crm.legacy.import-format', 'orbit-itsm.categories'];
      const added = 'orbit-crm.accounts.tiers';
      const revisionOf = (key: string): Promise<number | undefined> => inTenant(code, async (s) => (await (await s.existingKv(bucket))?.get(key))?.revision);
      for (const key of removed) expect(await kvValue(code, key), key).toBeDefined();
      expect(await kvValue(code, added)).toBeUndefined();
      const untouched = await revisionOf('orbit-crm.accounts.default-currency');
      const ms = await changeSpec(code, { seedsVersion: '1.1.0' });
      note(`seedsVersion 1.0.0 -> 1.1.0: Active after ${seconds(ms)}`);
      const record = await tenantRecord(code);
      expect(record?.seedsVersion).toBe('1.1.0');
      expect(record?.seed?.version).toBe('1.1.0');
      for (const key of removed) expect(await kvValue(code, key), `${key} still in ${bucket}`).toBeUndefined();
      expect(await kvValue(code, added)).toBeDefined();
      // By difference: an unchanged key keeps its revision.
      expect(await revisionOf('orbit-crm.accounts.default-currency')).toBe(untouched);
    }, CASE_MS);
  });

  // ---- 2. drift ----------------------------------------------------------------------------------

  describe('drift is repaired within the drift interval', () => {
    const code = TENANTS.drift;
    const ns = nsOf(code);

    interface DriftCase {
      what: string;
      breakIt: () => void | Promise<void>;
      restored: () => boolean | Promise<boolean>;
    }

    const cases: DriftCase[] = [
      {
        what: 'deleted ResourceQuota',
        breakIt: () => void kubectlOk(['delete', 'resourcequota', 'eva-tier-quota', '-n', ns]),
        restored: () => quotaHard(code)?.['pods'] === '20',
      },
      {
        what: 'edited ResourceQuota (pods 20 -> 5)',
        breakIt: () => void kubectlOk(['patch', 'resourcequota', 'eva-tier-quota', '-n', ns, '--type', 'merge', '-p', '{"spec":{"hard":{"pods":"5"}}}']),
        restored: () => quotaHard(code)?.['pods'] === '20',
      },
      {
        what: 'deleted LimitRange',
        breakIt: () => void kubectlOk(['delete', 'limitrange', 'eva-container-defaults', '-n', ns]),
        restored: () => kubectl(['get', 'limitrange', 'eva-container-defaults', '-n', ns]).status === 0,
      },
      {
        what: `deleted stream eva-${code}-events`,
        breakIt: async () => {
          await inTenant(code, ({ jsm }) => jsm.streams.delete(`eva-${code}-events`));
        },
        restored: async () => (await streamMaxMsgs(code, `eva-${code}-events`)) === 100_000,
      },
      {
        what: 'deleted Ingress',
        breakIt: () => void kubectlOk(['delete', 'ingress', 'eva-tenant', '-n', ns]),
        restored: () => (ingressPaths(code) ?? []).length === 2,
      },
      {
        what: 'deleted module Deployment orbit-crm',
        breakIt: () => void kubectlOk(['delete', 'deployment', 'orbit-crm', '-n', ns]),
        restored: () => deployment(code, 'orbit-crm') !== undefined,
      },
      {
        what: 'edited NetworkPolicy (a rule removed)',
        breakIt: () => void kubectlOk(['patch', 'networkpolicy', 'eva-tenant-isolation', '-n', ns, '--type', 'json', '-p', '[{"op":"remove","path":"/spec/egress/0"}]']),
        restored: () => kubectlOk(['get', 'networkpolicy', 'eva-tenant-isolation', '-n', ns, '-o', 'jsonpath={range .spec.egress[*]}rule {end}']).trim() === 'rule rule rule',
      },
      {
        what: 'edited alert rules ConfigMap',
        breakIt: () => void kubectlOk(['patch', 'configmap', `eva-${code.toLowerCase()}-queue-depth`, '-n', ns, '--type', 'json', '-p', '[{"op":"remove","path":"/data"}]']),
        restored: () => kubectlOk(['get', 'configmap', `eva-${code.toLowerCase()}-queue-depth`, '-n', ns, '-o', 'jsonpath={.data}']).includes('capsule_queue_depth'),
      },
      {
        what: 'removed namespace label eva.aidonow.com/capsule-code',
        breakIt: () => void kubectlOk(['label', 'namespace', ns, 'eva.aidonow.com/capsule-code-']),
        restored: () => kubectlOk(['get', 'namespace', ns, '-o', 'jsonpath={.metadata.labels.eva\\.aidonow\\.com/capsule-code}']) === code,
      },
    ];

    it.each(cases)('$what', async ({ what, breakIt, restored }) => {
      await waitActive(code);
      const before = revisions(ns);
      expect(await restored(), 'in place before the drift').toBe(true);
      const broken = Date.now();
      await breakIt();
      const restoreMs = await until(`${what} restored`, restored, RESTORE_MS, 250);
      const { ms: activeMs } = await waitActive(code, broken, RESTORE_MS);
      const after = revisions(ns);
      const helmNote = JSON.stringify(after) === JSON.stringify(before) ? 'no helm upgrade' : `helm revisions ${JSON.stringify(before)} -> ${JSON.stringify(after)}`;
      note(`drift, ${what}: restored after ${seconds(restoreMs)}, Active again after ${seconds(activeMs)} (${helmNote})`);
      expect(restoreMs).toBeLessThan(RESTORE_MS);
      if (what.startsWith('deleted module Deployment')) {
        // Helm put it back (the release's own revision moved), not something else.
        expect(after['orbit-crm']).toBe((before['orbit-crm'] ?? 0) + 1);
        expect(after['orbit-itsm']).toBe(before['orbit-itsm']);
        expect(deployment(code, 'orbit-crm')?.status?.availableReplicas).toBe(1);
      } else {
        expect(after).toEqual(before);
      }
    }, CASE_MS);

    // ---- 4. changed generated credentials ----------------------------------------------------------

    it('a changed generated credential upgrades every module of the tenant', async () => {
      await waitActive(code);
      const before = revisions(ns);
      expect(Object.keys(before)).toEqual(['orbit-crm', 'orbit-itsm']);
      const rotated = `rotated-${Date.now().toString(36)}-by-lifecycle-test`;
      const changed = Date.now();
      kubectlOk(['patch', 'secret', `eva-${code.toLowerCase()}-credentials`, '-n', ns, '--type', 'merge', '-p', JSON.stringify({ stringData: { 'api-key': rotated } })]);
      const expected = Object.fromEntries(Object.entries(before).map(([module, revision]) => [module, revision + 1]));
      const upgradedMs = await until('every module upgraded', () => JSON.stringify(revisions(ns)) === JSON.stringify(expected), RESTORE_MS, 500);
      const { ms: activeMs } = await waitActive(code, changed, RESTORE_MS);
      note(`changed credential: every module upgraded after ${seconds(upgradedMs)}, Active after ${seconds(activeMs)}`);
      expect(revisions(ns)).toEqual(expected);
      for (const module of Object.keys(before)) {
        const secret = getJson(['secret', `${module}-credentials`, '-n', ns]) as { data: Record<string, string> } | undefined;
        expect(Buffer.from(secret?.data['api-key'] ?? '', 'base64').toString('utf8'), `${module}-credentials api-key`).toBe(rotated);
      }
    }, CASE_MS);
  });

  // ---- 3. NATS restarts with empty storage -------------------------------------------------------

  it('NATS restarted with empty storage: streams, the tenant record and the seed data come back', async () => {
    const code = PRIVATE_TENANTS.wipe;
    await waitActive(code);
    const expectedStreams = [`KV_eva-${code}-data`, `eva-${code}-commands`, `eva-${code}-events`];
    expect(await streamNames(code, PRIVATE)).toEqual(expectedStreams);
    const seedKey = 'orbit-crm.pipeline.stages';
    const seedValue = await kvValue(code, seedKey, PRIVATE);
    expect(seedValue).toBeDefined();

    const createdBefore = await streamsCreated(code, PRIVATE);
    const wiped = Date.now();
    await privateNats.restart({ wipe: true });
    const restartedMs = Date.now() - wiped;
    // Not "no streams right after the restart": the operator may already have made them again by the
    // first look (seen once: all three back within the restart). That they were gone and made anew
    // the creation times below show.
    // Each measured from the moment the wipe began.
    const sinceWipe = async (what: string, check: () => Promise<boolean>): Promise<number> => {
      await until(what, check, RESTORE_MS);
      return Date.now() - wiped;
    };
    const streamsMs = await sinceWipe('streams back', async () => {
      const names = await streamNames(code, PRIVATE).catch((): string[] => []);
      return names.includes(`eva-${code}-events`) && names.includes(`eva-${code}-commands`);
    });
    const recordMs = await sinceWipe('tenant record back with its seed', async () => (await tenantRecord(code, PRIVATE))?.seed?.version === '1.0.0');
    const seedMs = await sinceWipe('seed data back', async () => (await kvValue(code, seedKey, PRIVATE)) === seedValue);
    const { ms: activeMs } = await waitActive(code, wiped, RESTORE_MS);
    note(
      `NATS wiped (stop, wipe and restart took ${seconds(restartedMs)}); after the wipe: streams back ${seconds(streamsMs)}, ` +
        `record with seed ${seconds(recordMs)}, seed data ${seconds(seedMs)}, Active ${seconds(activeMs)}`,
    );
    expect(await streamNames(code, PRIVATE)).toEqual(expectedStreams);
    const createdAfter = await streamsCreated(code, PRIVATE);
    for (const stream of expectedStreams) expect(createdAfter.get(stream), `${stream} made again after the wipe`).toBeGreaterThan(createdBefore.get(stream) ?? Infinity);
    const record = await tenantRecord(code, PRIVATE);
    expect(record).toMatchObject({ code, tier: 'Starter', seedsVersion: '1.0.0', seed: { version: '1.0.0' } });
  }, CASE_MS);

  // ---- 5. an idle drift check writes nothing ------------------------------------------------------

  it('an idle drift check makes no API write and asks nothing of helm', async () => {
    const code = TENANTS.idle;
    const ns = nsOf(code);
    await waitActive(code);
    const revisionsBefore = revisions(ns);
    const resourceVersion = tenantObject(code)?.metadata.resourceVersion;
    const offset = existsSync(auditLogPath()) ? statSync(auditLogPath()).size : 0;
    const before = await scrape(operator);
    const reconcilesBefore = metricSum(before, 'eva_reconcile_total');
    const getsBefore = metricSum(before, 'eva_kube_api_requests_total', 'method="GET"');
    const helmBefore = metricSum(before, 'eva_helm_operations_total');
    // A message published now shows up in capsule_queue_depth only if a check of THIS tenant runs.
    await inTenant(code, ({ js }) => js.publish(`capsule.${code}.events.idle-probe`, StringCodec().encode('{}')));
    const helmSeen = new Set<string>();
    const watcher = setInterval(() => {
      for (const p of helmProcesses(ns)) helmSeen.add(`${p.pid} ${p.argv.slice(1, 3).join(' ')}`);
    }, 20);
    const windowMs = 15_000;
    await sleep(windowMs);
    clearInterval(watcher);
    await sleep(1_500); // audit lines are written when the request completes
    const metrics = await scrape(operator);
    const reconciles = metricSum(metrics, 'eva_reconcile_total') - reconcilesBefore;
    const gets = metricSum(metrics, 'eva_kube_api_requests_total', 'method="GET"') - getsBefore;
    const helmOperations = metricSum(metrics, 'eva_helm_operations_total') - helmBefore;
    const depth = metricSum(metrics, 'capsule_queue_depth', `capsule="${code}",stream="eva-${code}-events"`);
    const writes = auditWritesFor(offset, code);
    const ours = writes.filter((w) => w.userAgent?.startsWith(`eva-operator/${VERSION}`) === true);
    const helmWrites = writes.filter((w) => w.userAgent?.startsWith('Helm/') === true);
    note(
      `idle ${seconds(windowMs)}: ${reconciles} reconciles by ${VERSION} (all its tenants), ${gets} GETs, queue depth of ${code} events ${depth}, ` +
        `writes for ${code}: operator ${ours.length}, helm ${helmWrites.length}, any ${writes.length}; ` +
        `helm operations (all its tenants) ${helmOperations}, helm processes ${helmSeen.size}`,
    );
    const show = (w: AuditLine): string => `${w.verb} ${w.requestURI ?? ''} by ${w.userAgent ?? '?'}`;
    expect(ours.map(show), 'API writes by the operator during idle drift checks').toEqual([]);
    expect(helmWrites.map(show), 'API writes by helm during idle drift checks').toEqual([]);
    expect([...helmSeen], 'helm processes for the tenant').toEqual([]);
    expect(helmOperations, 'helm operations by the operator (any tenant) during idle drift checks').toBe(0);
    expect(revisions(ns)).toEqual(revisionsBefore);
    expect(tenantObject(code)?.metadata.resourceVersion, 'the EvaTenant was written').toBe(resourceVersion);
    // The operator did check during the window: several reconciles, one of them of this tenant.
    expect(reconciles).toBeGreaterThanOrEqual(3);
    expect(depth, 'no drift check of the tenant refreshed its queue depth').toBe(1);
    // The checks read watch caches (the tenant's objects, and the EvaTenant unchanged since it was last
    // read): no GET per reconcile, at most the leader's Lease list (every 30 s), the Prometheus Operator
    // lookup (every 60 s) and, while another operator runs rollouts, the poll of the Lease eva-rollouts
    // (every retry period, over the window and the scrapes around it). Before the caches: about 12 GETs
    // per reconcile.
    const standbyPolls = Math.floor((windowMs + 2_000) / (ROLLOUTS_ELECTION.retryPeriodSeconds * 1000)) + 1;
    expect(gets, `${gets} GETs for ${reconciles} reconciles`).toBeLessThanOrEqual(2 + standbyPolls);
  }, CASE_MS);

  // ---- 6. lifecycle Decommissioned and back -----------------------------------------------------

  it('lifecycle Decommissioned removes everything but keeps the EvaTenant; Active provisions it again', async () => {
    const code = TENANTS.decommission;
    const name = nameOf(code);
    const ns = nsOf(code);
    await waitActive(code);
    const patched = Date.now();
    patchTenantSpec(name, { lifecycle: 'Decommissioned' });
    const { ms } = await waitForTenant(name, 'phase Decommissioned', (t) => t.phase === 'Decommissioned' && t.observedGeneration === t.generation, ACTIVE_MS, patched);
    note(`lifecycle Decommissioned: phase Decommissioned after ${seconds(ms)}`);
    expect(kubectl(['get', 'namespace', ns]).status, `${ns} still exists`).not.toBe(0);
    expect(helmReleases(ns)).toEqual([]);
    expect(await streamNames(code)).toEqual([]);
    expect(await tenantRecord(code)).toBeUndefined();
    const tenant = tenantObject(code);
    expect(tenant, 'the EvaTenant stays').toBeDefined();
    expect(tenant?.status?.phase).toBe('Decommissioned');
    expect(Object.values(tenant?.status?.decommission ?? {}).every((s) => s.startsWith('Removed'))).toBe(true);

    const back = Date.now();
    patchTenantSpec(name, { lifecycle: 'Active' });
    const { tenant: active, ms: backMs } = await waitActive(code, back);
    note(`lifecycle back to Active: Active after ${seconds(backMs)}`);
    for (const type of ['NamespaceReady', 'Provisioned', 'SeedLoaded', 'ModulesDeployed', 'IngressReady', 'Ready']) {
      expect(active.conditions[type]?.status, type).toBe('True');
    }
    expect(helmReleases(ns).map((r) => [r.name, r.status])).toEqual([
      ['orbit-crm', 'deployed'],
      ['orbit-itsm', 'deployed'],
    ]);
    expect(await streamNames(code)).toEqual([`KV_eva-${code}-data`, `eva-${code}-commands`, `eva-${code}-events`]);
    expect(await tenantRecord(code)).toMatchObject({ code, seed: { version: '1.0.0' } });
  }, CASE_MS);

  // ---- 7. deleted while NATS is down ------------------------------------------------------------

  it('deleted while NATS is down: the finalizer stays with the NATS steps pending; NATS back removes the rest', async () => {
    const code = PRIVATE_TENANTS.natsDown;
    const name = nameOf(code);
    const ns = nsOf(code);
    await waitActive(code);
    await privateNats.halt();
    const deleted = Date.now();
    kubectlOk(['delete', 'evt', name, '--wait=false']);
    const natsSteps = ['seed', 'streams', 'record', 'account'];
    const kubeSteps = ['ingress', 'modules', 'alerts', 'network', 'quotas', 'namespace'];
    let last: TenantObject | undefined;
    const partialMs = await until(
      'helm and namespace parts removed, NATS parts not',
      () => {
        last = tenantObject(code);
        const states = last?.status?.decommission ?? {};
        return kubeSteps.every((s) => states[s] === 'Removed') && natsSteps.every((s) => states[s] !== undefined);
      },
      ACTIVE_MS,
      1_000,
    );
    note(`deleted while NATS is down: Kubernetes parts removed after ${seconds(partialMs)}: ${JSON.stringify(last?.status?.decommission)}`);
    // Still there, still protected, still saying what is left.
    await sleep(2 * DRIFT_INTERVAL_SECONDS * 1000);
    expectHeldByNats(code, natsSteps, kubeSteps);
    expect(kubectl(['get', 'namespace', ns]).status).not.toBe(0);
    expect(helmReleases(ns)).toEqual([]);

    const back = Date.now();
    await privateNats.restart();
    expect(await waitForGone(name, 240_000), `${name} not deleted after NATS came back`).toBe(true);
    note(`deleted while NATS is down: EvaTenant gone ${seconds(Date.now() - back)} after NATS came back (${seconds(Date.now() - deleted)} after the delete)`);
    expect(await streamNames(code, PRIVATE)).toEqual([]);
    expect(await tenantRecord(code, PRIVATE)).toBeUndefined();
  }, CASE_MS);
});
