/**
 * Blue/green between two operator versions, with real operator processes on the shared local control
 * plane: 9.5.0 ("blue", the old one) and 9.6.0 ("green", the new one) run side by side, each with its
 * own Lease, its own secrets folder and its own MAX_WAVE. What a rollout relies on:
 *   1. unpinned tenants stay with the version that owns them, whoever else runs (audit log: no write);
 *   2. a new version with MAX_WAVE 1 claims only wave-1 tenants (the canary), the rest wait,
 *      reported (Stalled, Warning event, gauge) while no running operator claims their wave;
 *   3. a pin change hands a tenant over without it ever leaving Active (IngressReady watched), and
 *      the old version writes nothing to it once the new one claimed it (audit log);
 *   4. a pin to a version nobody runs is reported (Warning event, gauge) and the tenant left alone;
 *   5. two replicas of one version: one leads, the standby is ready and takes over on SIGTERM;
 *   6. shards: two Deployments of one version, SHARD eu and us, each takes only its label's tenants;
 *      relabelling hands a tenant over as a pin change does (audit log: never two writers); a label
 *      naming a shard nobody runs is reported (Warning event, gauge).
 *
 * The cluster is shared. Unpinned tenants are claimed by whichever operator writes the owner
 * annotation first, so these operators WOULD claim another file's unpinned tenant: beforeAll waits
 * until no unpinned tenant but ours exists. Capsule codes start with G; everything created here is
 * deleted in afterAll, by the operators that own it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { FINALIZER, OWNER_ANNOTATION, SHARD_LABEL, WAVE_LABEL } from '../src/api/constants.ts';
import type { TenantMetadata } from '../src/api/evatenant.ts';
import { tenantNamespace } from '../src/tenancy/names.ts';
import { type AuditEvent, auditLogPath, auditOffset, auditWritesSince } from '../test/support/audit.ts';
import { eventually, kubectl, kubectlOk } from '../test/support/kubectl.ts';
import { repoRoot } from '../test/support/tools.ts';
import { type OperatorProcess, startOperator } from '../test/support/operator.ts';
import { applyTenant, isActive, patchTenantSpec, waitForGone, waitForTenant } from '../test/support/tenants.ts';

const BLUE = '9.5.0';
const GREEN = '9.6.0';
/** No operator of this version runs anywhere. */
const ABSENT = '9.9.9';

const ACTIVE_MS = 300_000;
const CASE_MS = 600_000;
/** How long beforeAll waits for another file's unpinned tenants to go. */
const FOREIGN_WAIT_MS = 240_000;

interface Planned {
  readonly code: string;
  readonly name: string;
  readonly wave: number;
  readonly pin?: string;
}

const plan = (code: string, wave: number, pin?: string): Planned => ({ code, name: code.toLowerCase(), wave, ...(pin !== undefined ? { pin } : {}) });

/** Case 1: unpinned, owned by blue. GWAVEC is also the tenant handed over in case 3. */
const WAVE_TENANTS = [plan('GWAVEA', 1), plan('GWAVEB', 2), plan('GWAVEC', 3)] as const;
/** Case 2: created while only green (MAX_WAVE 1) runs. */
const CANARY_W1 = plan('GCANAA', 1);
const CANARY_W2 = plan('GCANAB', 2);
/** Case 4: pinned to a version nobody runs. */
const PINNED_ABSENT = plan('GABSNT', 1, ABSENT);
const HANDED_OVER = WAVE_TENANTS[2];

const ALL: readonly Planned[] = [...WAVE_TENANTS, CANARY_W1, CANARY_W2, PINNED_ABSENT];
/** Case 6: labelled into shards (only shard operators take them; case 6 deletes them itself). */
const SHARDED = plan('GSHRDA', 1);
const IN_ABSENT_SHARD = plan('GSHRDB', 1);
/** Case 6: split between the two shards from the start (SHARDED joins eu's). */
const SPLIT: readonly { tenant: Planned; shard: 'eu' | 'us' }[] = [
  { tenant: plan('GSHRDC', 1), shard: 'eu' },
  { tenant: plan('GSHRDD', 1), shard: 'us' },
  { tenant: plan('GSHRDE', 1), shard: 'us' },
];
const SHARD_TENANTS = [SHARDED, IN_ABSENT_SHARD, ...SPLIT.map((s) => s.tenant)];
const OUR_NAMES = new Set([...ALL, ...SHARD_TENANTS].map((t) => t.name));

const timings: string[] = [];
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));


// ---- tenants as the API server has them -----------------------------------------------------------

interface TenantObject {
  metadata: TenantMetadata;
  spec: { capsuleCode: string; operatorVersion?: string; wave?: number };
  status?: { phase?: string; observedGeneration?: number; conditions?: { type: string; status: string; reason: string; message: string }[] };
}

function getTenant(name: string): TenantObject | undefined {
  const result = kubectl(['get', 'evt', name, '-o', 'json']);
  return result.status === 0 ? (JSON.parse(result.stdout) as TenantObject) : undefined;
}

function listTenants(): TenantObject[] {
  return (JSON.parse(kubectlOk(['get', 'evt', '-o', 'json'])) as { items: TenantObject[] }).items;
}

const ownerOf = (t: TenantObject | undefined): string | undefined => t?.metadata.annotations?.[OWNER_ANNOTATION];
const conditionOf = (t: TenantObject, type: string): string | undefined => t.status?.conditions?.find((c) => c.type === type)?.status;
/** Reported as served by no running operator: Stalled True with this reason (kstatus Failed, Argo CD Degraded). */
const stalledWith = (reason: string) => (t: TenantObject | undefined): boolean =>
  t?.status?.conditions?.some((c) => c.type === 'Stalled' && c.status === 'True' && c.reason === reason) === true;

function create(t: Planned, shard?: string): void {
  const spec = { capsuleCode: t.code, tier: 'Starter', seedsVersion: '1.0.0', wave: t.wave, ...(t.pin !== undefined ? { operatorVersion: t.pin } : {}) };
  applyTenant(t.name, spec, shard === undefined ? undefined : { [SHARD_LABEL]: shard });
}

async function waitActive(t: Planned): Promise<number> {
  return (await waitForTenant(t.name, 'Active', isActive, ACTIVE_MS)).ms;
}

/** Unpinned tenants that are not ours: our operators would claim them (and another file's test would break). */
function foreignUnpinned(): string[] {
  return listTenants().filter((t) => t.spec.operatorVersion === undefined && !OUR_NAMES.has(t.metadata.name)).map((t) => t.metadata.name);
}

// ---- operator processes ---------------------------------------------------------------------------

/** Running operators by POD_NAME (the Lease identity); a restart reuses the name and secrets folder. */
const operators = new Map<string, { version: string; op: OperatorProcess }>();
const secretsDirs = new Map<string, string>();

function launch(podName: string, version: string, maxWave: number, shard?: string): OperatorProcess {
  const env = { OPERATOR_VERSION: version, MAX_WAVE: String(maxWave), POD_NAME: podName, ...(shard !== undefined ? { SHARD: shard } : {}) };
  const op = startOperator(env, secretsDirs.get(podName));
  secretsDirs.set(podName, op.secretsDir);
  operators.set(podName, { version, op });
  return op;
}

async function stopOperator(podName: string): Promise<number | null> {
  const running = operators.get(podName);
  if (!running) return null;
  operators.delete(podName);
  return running.op.stop();
}

function logLine(op: OperatorProcess, msg: string): Record<string, unknown> | undefined {
  for (const line of op.logs().split('\n')) {
    if (!line.includes(`"msg":"${msg}"`)) continue;
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      // a line cut in the middle: not complete yet
    }
  }
  return undefined;
}

const leads = (op: OperatorProcess): boolean => logLine(op, 'eva-operator started') !== undefined;

/** The metrics port: from "eva-operator started" (leader), else from "metrics server listening" (standby). */
function metricsPortOf(op: OperatorProcess): number {
  const port = logLine(op, 'eva-operator started')?.['metricsPort'] ?? logLine(op, 'metrics server listening')?.['port'];
  if (typeof port !== 'number') throw new Error(`no metrics port in the operator log:\n${op.logs().slice(-2000)}`);
  return port;
}

async function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.text() };
}

/** The sum of every sample of a metric (all label sets) in Prometheus text format. */
function metricSum(text: string, name: string): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`).exec(line);
    if (match?.[1] !== undefined) sum = (sum ?? 0) + Number(match[1]);
  }
  return sum;
}

// ---- the API server's audit log (every write, with the client's User-Agent) ------------------------

/** The write concerns the tenant: its EvaTenant (any subresource), its Namespace or anything in it. */
function concerns(event: AuditEvent, t: Planned): boolean {
  const ref = event.objectRef ?? {};
  const namespace = tenantNamespace(t.code);
  return (ref.resource === 'evatenants' && ref.name === t.name) || ref.namespace === namespace || (ref.resource === 'namespaces' && ref.name === namespace);
}

const byOperator = (version: string, shard?: string) => (event: AuditEvent): boolean =>
  event.userAgent === `eva-operator/${version}${shard === undefined ? '' : ` (shard ${shard})`}`;

/** Microseconds since the epoch of an audit MicroTime (Date.parse would drop the microseconds). */
function micros(timestamp: string): number {
  const match = /^(.*T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/.exec(timestamp);
  if (!match) throw new Error(`not a timestamp: ${timestamp}`);
  return Date.parse(`${match[1] ?? ''}${match[3] ?? ''}`) * 1000 + Number((match[2] ?? '').padEnd(6, '0').slice(0, 6));
}

const describeWrite = (e: AuditEvent): string =>
  `${e.requestReceivedTimestamp} ${e.userAgent ?? '?'} ${e.verb} ${e.objectRef?.resource ?? ''}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''} ${e.objectRef?.namespace ?? ''}/${e.objectRef?.name ?? ''} -> ${e.responseStatus?.code ?? '?'}`;

// ---- watching tenants (kubectl get -w -o json: every change, not a poll) ----------------------------

interface Observed {
  readonly at: number;
  readonly tenant: TenantObject;
}

interface TenantWatch {
  readonly seen: Observed[];
  /** kubectl ended (it should not while the watch is wanted). */
  ended(): boolean;
  stop(): void;
}

/** Splits a stream of concatenated (pretty-printed) JSON objects. */
function jsonObjectSplitter(onObject: (text: string) => void): (chunk: string) => void {
  let current = '';
  let depth = 0;
  let inString = false;
  let escaped = false;
  return (chunk) => {
    for (const ch of chunk) {
      if (depth === 0 && ch !== '{') continue;
      current += ch;
      if (inString) {
        if (escaped) escaped = false;
        else if (ch === '\\') escaped = true;
        else if (ch === '"') inString = false;
      } else if (ch === '"') {
        inString = true;
      } else if (ch === '{') {
        depth += 1;
      } else if (ch === '}') {
        depth -= 1;
        if (depth === 0) {
          onObject(current);
          current = '';
        }
      }
    }
  };
}

/** Watches one tenant (`name`) or every tenant; records each version seen with when it arrived. */
function watchTenants(name?: string): TenantWatch {
  const args = ['get', 'evt', ...(name !== undefined ? [name] : []), '--watch', '-o', 'json'];
  const child: ChildProcess = spawn(join(process.env['EVA_TOOLS_DIR'] ?? '', 'kubectl'), args, { env: { ...process.env }, stdio: ['ignore', 'pipe', 'ignore'] });
  const seen: Observed[] = [];
  let done = false;
  child.stdout?.setEncoding('utf8');
  child.stdout?.on('data', jsonObjectSplitter((text) => {
    seen.push({ at: Date.now(), tenant: JSON.parse(text) as TenantObject });
  }));
  child.once('exit', () => {
    done = true;
  });
  return {
    seen,
    ended: () => done,
    stop: () => {
      if (!done) child.kill('SIGKILL');
    },
  };
}

async function firstSeen(watch: TenantWatch, accept: (o: Observed) => boolean, timeoutMs: number): Promise<Observed | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const hit = watch.seen.find(accept);
    if (hit !== undefined || Date.now() > deadline || watch.ended()) return hit;
    await sleep(50);
  }
}

// ---- events ---------------------------------------------------------------------------------------

function warningEvents(t: TenantObject, reason: string): { message: string; source?: { component?: string } }[] {
  const out = kubectlOk(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.uid=${t.metadata.uid ?? ''},reason=${reason},type=Warning`, '-o', 'json']);
  return (JSON.parse(out) as { items: { message: string; source?: { component?: string } }[] }).items;
}

// ---------------------------------------------------------------------------------------------------

describe('blue/green: two operator versions side by side', () => {
  beforeAll(async () => {
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    if (!existsSync(auditLogPath())) throw new Error(`no API server audit log at ${auditLogPath()}`);
    // Another file's unpinned tenants would be claimed by our operators: wait until they are gone.
    let foreign: string[] = [];
    const clear = await eventually(() => (foreign = foreignUnpinned()).length === 0, FOREIGN_WAIT_MS, 2_000);
    if (!clear) {
      throw new Error(
        `unpinned EvaTenants of someone else still exist after ${seconds(FOREIGN_WAIT_MS)}: ${foreign.join(', ')}. ` +
          'This file runs operators that claim unpinned tenants (MAX_WAVE > 0); it must not run while another test has unpinned tenants.',
      );
    }
    await removeLeftovers();
  }, FOREIGN_WAIT_MS + 300_000);

  afterAll(async () => {
    try {
      await deleteOurTenants();
    } finally {
      for (const podName of [...operators.keys()]) await stopOperator(podName);
      for (const dir of secretsDirs.values()) rmSync(dir, { recursive: true, force: true });
      console.log(`[blue-green] timings:\n  ${timings.join('\n  ')}`);
    }
    // Our operators claim unpinned tenants: say so loudly if one of someone else's got claimed meanwhile.
    const claimed = listTenants().filter((t) => !OUR_NAMES.has(t.metadata.name) && [BLUE, GREEN].includes(ownerOf(t) ?? ''));
    expect(claimed.map((t) => `${t.metadata.name} (owned by ${ownerOf(t) ?? ''})`), 'tenants of another test were claimed by this file\'s operators').toEqual([]);
  }, 400_000);

  it('1. unpinned tenants stay with their owner when a second version starts (no write by it)', async () => {
    const blue = launch('g-blue-0', BLUE, 3);
    await blue.ready();
    const created = Date.now();
    for (const t of WAVE_TENANTS) create(t);
    for (const t of WAVE_TENANTS) await waitActive(t);
    timings.push(`case 1: three Starter tenants Active (blue) after ${seconds(Date.now() - created)}`);
    for (const t of WAVE_TENANTS) expect(ownerOf(getTenant(t.name)), t.name).toBe(BLUE);

    const offset = auditOffset();
    const green = launch('g-green-0', GREEN, 1);
    await green.ready();
    // Both reconcile meanwhile: green lists every tenant at start and decides on each.
    await sleep(8_000);
    const reconciles = metricSum((await httpGet(metricsPortOf(green), '/metrics')).body, 'eva_reconcile_total') ?? 0;
    expect(reconciles, 'green reconciled nothing').toBeGreaterThanOrEqual(WAVE_TENANTS.length);
    for (const t of WAVE_TENANTS) {
      const now = getTenant(t.name);
      expect(ownerOf(now), t.name).toBe(BLUE);
      expect(now?.status?.phase, t.name).toBe('Active');
    }
    const greenWrites = auditWritesSince(offset).filter((e) => byOperator(GREEN)(e) && WAVE_TENANTS.some((t) => concerns(e, t)));
    expect(greenWrites.map(describeWrite), 'green wrote to tenants blue owns').toEqual([]);

    const labelled = kubectlOk(['get', 'evt', '-l', `${WAVE_LABEL}=1`, '-o', 'jsonpath={.items[*].metadata.name}']).split(' ').filter((n) => n !== '');
    expect(labelled.filter((n) => OUR_NAMES.has(n)).sort()).toEqual(WAVE_TENANTS.filter((t) => t.wave === 1).map((t) => t.name));
  }, CASE_MS);

  it('2. wave canary: green (MAX_WAVE 1) claims the wave-1 tenant only; the wave-2 one waits for blue', async () => {
    expect(await stopOperator('g-blue-0'), 'blue did not stop cleanly').toBe(0);
    const offset = auditOffset();
    const created = Date.now();
    create(CANARY_W1);
    create(CANARY_W2);
    const activeAfter = await waitActive(CANARY_W1);
    timings.push(`case 2: wave-1 canary Active (green) after ${seconds(activeAfter)}`);
    expect(ownerOf(getTenant(CANARY_W1.name))).toBe(GREEN);
    // Green does not claim the wave-2 one, but reports it: no running operator claims wave 2 (the
    // Leases publish MAX_WAVE), so green, the only leader, writes Stalled as the tenant appears.
    let waiting: TenantObject | undefined;
    const stalled = stalledWith('OperatorWaveAbsent');
    expect(await eventually(() => stalled((waiting = getTenant(CANARY_W2.name))), 45_000, 1_000), `the wave-2 tenant is not reported: ${JSON.stringify(waiting?.status)}`).toBe(true);
    expect(ownerOf(waiting), 'the wave-2 tenant was claimed while only green (MAX_WAVE 1) ran').toBeUndefined();
    expect(waiting?.metadata.finalizers ?? []).toEqual([]);
    expect(warningEvents(waiting as TenantObject, 'OperatorWaveAbsent')[0]?.message).toContain('spec.wave 2 is above the MAX_WAVE of every running operator of the default shard (at most 1');
    const green = operators.get('g-green-0')?.op;
    if (green === undefined) throw new Error('green is not running');
    expect(metricSum((await httpGet(metricsPortOf(green), '/metrics')).body, 'eva_tenants_above_max_wave') ?? 0).toBeGreaterThanOrEqual(1);

    const blue = launch('g-blue-0', BLUE, 3);
    await blue.ready();
    const blueBack = Date.now();
    await waitActive(CANARY_W2);
    timings.push(`case 2: wave-2 tenant unowned for ${seconds(blueBack - created)} while only green ran; Active (blue) ${seconds(Date.now() - blueBack)} after blue started again`);
    expect(ownerOf(getTenant(CANARY_W2.name))).toBe(BLUE);
    expect(ownerOf(getTenant(CANARY_W1.name))).toBe(GREEN);
    expect(stalled(getTenant(CANARY_W2.name)), 'still Stalled once blue claimed it').toBe(false);
    // Green's only write to it: the status that reported it.
    const greenWrites = auditWritesSince(offset).filter((e) => byOperator(GREEN)(e) && concerns(e, CANARY_W2));
    expect(greenWrites.map((e) => `${e.verb} ${e.objectRef?.subresource ?? ''}`), greenWrites.map(describeWrite).join('\n')).toEqual(['update status']);
  }, CASE_MS);

  it('3. a pin change hands the tenant over: blue releases, green claims, it stays Active with IngressReady True throughout', async () => {
    const t = HANDED_OVER;
    const before = getTenant(t.name);
    expect(ownerOf(before)).toBe(BLUE);
    expect(before?.status?.phase).toBe('Active');
    const watch = watchTenants(t.name);
    try {
      expect(await firstSeen(watch, () => true, 15_000), 'the watch showed nothing').toBeDefined();
      const offset = auditOffset();
      const patchedAt = Date.now();
      patchTenantSpec(t.name, { operatorVersion: GREEN });
      const released = await firstSeen(watch, (o) => o.at >= patchedAt && ownerOf(o.tenant) === undefined, 60_000);
      const claimed = await firstSeen(watch, (o) => o.at >= patchedAt && ownerOf(o.tenant) === GREEN, 60_000);
      expect(claimed, `green never claimed ${t.name}; last seen: ${JSON.stringify(watch.seen.at(-1)?.tenant.metadata)}`).toBeDefined();
      if (claimed === undefined) return;
      // Keep watching for 10 s after green owns it.
      await sleep(Math.max(0, claimed.at + 10_000 - Date.now()));
      expect(watch.ended(), 'kubectl --watch ended early').toBe(false);
      watch.stop();
      timings.push(
        `case 3: hand-over ${t.name}: released by blue ${released ? seconds(released.at - patchedAt) : '(not seen)'} and claimed by green ${seconds(claimed.at - patchedAt)} after the pin patch; ${watch.seen.length} versions watched`,
      );

      const states = watch.seen.map((o) => `${new Date(o.at).toISOString()} rv ${o.tenant.metadata.resourceVersion ?? '?'} owner ${ownerOf(o.tenant) ?? '-'} phase ${o.tenant.status?.phase ?? '-'} IngressReady ${conditionOf(o.tenant, 'IngressReady') ?? '-'}`);
      console.log(`[blue-green] ${t.name} during the hand-over:\n  ${states.join('\n  ')}`);
      const notReady = watch.seen.filter((o) => conditionOf(o.tenant, 'IngressReady') !== 'True' || o.tenant.status?.phase !== 'Active');
      expect(notReady.map((o) => states[watch.seen.indexOf(o)]), 'IngressReady or Active lapsed during the hand-over').toEqual([]);
      const after = (await waitForTenant(t.name, 'Active on the new generation', isActive, 60_000)).tenant;
      expect(after.phase).toBe('Active');
      expect(ownerOf(getTenant(t.name))).toBe(GREEN);

      // The audit log: green's claim is its first patch of the tenant; blue wrote nothing after it.
      let writes: AuditEvent[] = [];
      const claimPatch = (e: AuditEvent): boolean => byOperator(GREEN)(e) && e.verb === 'patch' && e.objectRef?.resource === 'evatenants' && e.objectRef.name === t.name && e.objectRef.subresource === undefined;
      await eventually(() => (writes = auditWritesSince(offset).filter((e) => concerns(e, t))).some(claimPatch), 10_000, 250);
      console.log(`[blue-green] writes to ${t.name} and its namespace since the pin patch:\n  ${writes.map(describeWrite).join('\n  ')}`);
      const claim = writes.find(claimPatch);
      expect(claim, 'green\'s claim patch is not in the audit log').toBeDefined();
      if (claim === undefined) return;
      const claimedAtMicros = micros(claim.requestReceivedTimestamp);
      const release = writes.find((e) => byOperator(BLUE)(e) && e.verb === 'patch' && e.objectRef?.resource === 'evatenants' && e.objectRef.subresource === undefined);
      expect(release, 'blue\'s release patch is not in the audit log').toBeDefined();
      if (release) timings.push(`case 3: audit: blue's release patch ${((claimedAtMicros - micros(release.requestReceivedTimestamp)) / 1000).toFixed(0)} ms before green's claim patch`);
      const late = writes.filter((e) => byOperator(BLUE)(e) && micros(e.requestReceivedTimestamp) >= claimedAtMicros);
      expect(late.map(describeWrite), 'blue wrote to the tenant after green claimed it').toEqual([]);
    } finally {
      watch.stop();
    }
  }, CASE_MS);

  it('4. a pin to an absent version is reported (Warning event, gauge, Stalled status written once) and the tenant is otherwise left alone', async () => {
    const t = PINNED_ABSENT;
    const offset = auditOffset();
    const created = Date.now();
    create(t);
    const tenant = getTenant(t.name);
    expect(tenant).toBeDefined();
    if (tenant === undefined) return;
    let events: { message: string }[] = [];
    // The leaders judge a tenant as it appears (and every tenant every 30 s).
    const reported = await eventually(() => (events = warningEvents(tenant, 'OperatorVersionAbsent')).length > 0, 45_000, 1_000);
    expect(reported, `no Warning OperatorVersionAbsent on ${t.name} within 45 s`).toBe(true);
    timings.push(`case 4: Warning OperatorVersionAbsent after ${seconds(Date.now() - created)} (${events.length} event(s)): "${events[0]?.message ?? ''}"`);
    expect(events[0]?.message).toContain(ABSENT);
    let gauge: number | undefined;
    const ports = [...operators.values()].map((r) => metricsPortOf(r.op));
    const counted = await eventually(async () => {
      for (const port of ports) {
        gauge = metricSum((await httpGet(port, '/metrics')).body, 'eva_tenants_pinned_to_absent_version');
        if ((gauge ?? 0) >= 1) return true;
      }
      return false;
    }, 40_000, 1_000);
    expect(counted, `eva_tenants_pinned_to_absent_version stayed ${String(gauge)}`).toBe(true);
    const now = getTenant(t.name);
    expect(now?.metadata.finalizers ?? [], 'finalizer added').not.toContain(FINALIZER);
    expect(ownerOf(now), 'owner annotation added').toBeUndefined();
    // Its status says so (Stalled: kstatus Failed, Argo CD Degraded), written by one operator only.
    const stalled = stalledWith('OperatorVersionAbsent');
    expect(await eventually(() => stalled(getTenant(t.name)), 45_000, 1_000), 'no Stalled OperatorVersionAbsent status').toBe(true);
    expect(getTenant(t.name)?.status?.phase, 'a phase written').toBeUndefined();
    expect(kubectl(['get', 'namespace', tenantNamespace(t.code)]).status, 'namespace created').not.toBe(0);
    const operatorWrites = auditWritesSince(offset).filter((e) => (e.userAgent ?? '').startsWith('eva-operator') && concerns(e, t));
    expect(operatorWrites.filter((e) => e.objectRef?.subresource !== 'status').map(describeWrite), 'an operator wrote to the tenant pinned to an absent version').toEqual([]);
    expect(operatorWrites.filter((e) => e.responseStatus?.code === 200).map(describeWrite), 'the status of the unserved tenant written more than once').toHaveLength(1);
  }, CASE_MS);

  it('5. two replicas of one version: one leads, the standby is ready and takes over on SIGTERM; tenants stay Active', async () => {
    expect(await stopOperator('g-green-0'), 'green did not stop cleanly').toBe(0);
    const watch = watchTenants();
    try {
      const a = launch('g-green-a', GREEN, 1);
      const b = launch('g-green-b', GREEN, 1);
      expect(await eventually(() => leads(a) || leads(b), 30_000, 50), `neither replica leads:\n${a.logs()}\n${b.logs()}`).toBe(true);
      // Several retry periods (2 s): the standby must still be standing by.
      await sleep(7_000);
      expect([leads(a), leads(b)].filter(Boolean), 'exactly one replica leads').toHaveLength(1);
      const [leader, standby, standbyName] = leads(a) ? [a, b, 'g-green-b'] : [b, a, 'g-green-a'];
      expect(standby.logs()).toContain('"msg":"waiting to lead"');
      const ready = await httpGet(metricsPortOf(standby), '/readyz');
      expect(ready.status, `standby /readyz: ${ready.body}`).toBe(200);
      expect((await httpGet(metricsPortOf(leader), '/readyz')).status).toBe(200);

      const leaderName = standbyName === 'g-green-a' ? 'g-green-b' : 'g-green-a';
      const stopping = Date.now();
      const exitCode = await stopOperator(leaderName);
      const exitedAfter = Date.now() - stopping;
      expect(exitCode, leader.logs().slice(-3000)).toBe(0);
      await standby.ready(30_000);
      const takeover = Date.now() - stopping;
      timings.push(`case 5: leader exited ${seconds(exitedAfter)} after SIGTERM; standby led ${seconds(takeover)} after SIGTERM (${seconds(takeover - exitedAfter)} after the exit)`);
      expect(takeover, 'the standby took too long to lead').toBeLessThan(15_000);

      // The new leader reconciles (it lists every tenant), and ours stay as they were.
      const port = metricsPortOf(standby);
      const reconciled = await eventually(async () => (metricSum((await httpGet(port, '/metrics')).body, 'eva_reconcile_total') ?? 0) >= 1, 10_000, 250);
      expect(reconciled, 'the new leader reconciled nothing').toBe(true);
      await sleep(3_000);
      watch.stop();
      const active = ALL.filter((t) => t !== PINNED_ABSENT);
      const lapses = watch.seen.filter((o) => active.some((t) => t.name === o.tenant.metadata.name) && o.tenant.status?.phase !== 'Active');
      expect(lapses.map((o) => `${o.tenant.metadata.name} ${o.tenant.status?.phase ?? '-'}`), 'a tenant left Active during the takeover').toEqual([]);
      for (const t of active) {
        const now = getTenant(t.name);
        expect(now?.status?.phase, t.name).toBe('Active');
      }
      expect(ownerOf(getTenant(HANDED_OVER.name))).toBe(GREEN);
      expect(ownerOf(getTenant(CANARY_W1.name))).toBe(GREEN);
      expect(ownerOf(getTenant(CANARY_W2.name))).toBe(BLUE);
    } finally {
      watch.stop();
    }
  }, CASE_MS);

  it('6. shards: each takes only its label\'s tenants; relabelling hands one over with never two writers; an absent shard is reported', async () => {
    const eu = launch('g-eu-0', GREEN, 3, 'eu');
    const us = launch('g-us-0', GREEN, 3, 'us');
    let watch: TenantWatch | undefined;
    try {
      await Promise.all([eu.ready(), us.ready()]);
      await deleteTenants(SHARD_TENANTS);
      const splitOffset = auditOffset();
      const created = Date.now();
      const split = [{ tenant: SHARDED, shard: 'eu' }, ...SPLIT];
      for (const { tenant, shard } of split) create(tenant, shard);
      for (const { tenant } of split) await waitActive(tenant);
      timings.push(`case 6: ${split.length} tenants split between shards eu and us, all Active after ${seconds(Date.now() - created)}`);
      // Each tenant written by its own shard's operator and by no other operator (the audit log).
      await sleep(1_500); // audit lines are written when the request completes
      const splitWrites = auditWritesSince(splitOffset);
      for (const { tenant, shard } of split) {
        expect(ownerOf(getTenant(tenant.name)), `${tenant.name} claimed by its shard`).toBe(`${GREEN}/${shard}`);
        const writers = new Set(splitWrites.filter((e) => concerns(e, tenant) && (e.userAgent ?? '').startsWith('eva-operator')).map((e) => e.userAgent));
        expect([...writers], `operators that wrote to ${tenant.name}`).toEqual([`eva-operator/${GREEN} (shard ${shard})`]);
      }

      watch = watchTenants(SHARDED.name);
      expect(await firstSeen(watch, () => true, 15_000), 'the watch showed nothing').toBeDefined();
      const offset = auditOffset();
      const relabelled = Date.now();
      kubectlOk(['label', 'evt', SHARDED.name, `${SHARD_LABEL}=us`, '--overwrite']);
      const released = await firstSeen(watch, (o) => o.at >= relabelled && ownerOf(o.tenant) === undefined, 60_000);
      const claimed = await firstSeen(watch, (o) => o.at >= relabelled && ownerOf(o.tenant) === `${GREEN}/us`, 60_000);
      expect(released, 'the eu shard never let go').toBeDefined();
      expect(claimed, `the us shard never claimed ${SHARDED.name}`).toBeDefined();
      if (claimed === undefined) return;
      await sleep(Math.max(0, claimed.at + 5_000 - Date.now()));
      timings.push(`case 6: relabel eu -> us: released ${released ? seconds(released.at - relabelled) : '(not seen)'}, claimed ${seconds(claimed.at - relabelled)} after the label change`);
      const lapses = watch.seen.filter((o) => o.at >= relabelled && o.tenant.status?.phase !== 'Active');
      expect(lapses.map((o) => o.tenant.status?.phase ?? '-'), 'the tenant left Active during the hand-over').toEqual([]);
      const owners = [...new Set(watch.seen.filter((o) => o.at >= relabelled).map((o) => ownerOf(o.tenant) ?? '-'))];
      expect(owners, 'the owner annotation after the label change: eu, then nobody, then us').toEqual([`${GREEN}/eu`, '-', `${GREEN}/us`]);

      // The audit log: the us shard's claim is its first patch of the tenant; eu wrote nothing after it.
      let writes: AuditEvent[] = [];
      const claimPatch = (e: AuditEvent): boolean =>
        byOperator(GREEN, 'us')(e) && e.verb === 'patch' && e.objectRef?.resource === 'evatenants' && e.objectRef.name === SHARDED.name && e.objectRef.subresource === undefined;
      await eventually(() => (writes = auditWritesSince(offset).filter((e) => concerns(e, SHARDED))).some(claimPatch), 10_000, 250);
      const claim = writes.find(claimPatch);
      expect(claim, 'the us shard\'s claim patch is not in the audit log').toBeDefined();
      if (claim === undefined) return;
      const euWrites = writes.filter(byOperator(GREEN, 'eu'));
      expect(euWrites.length, 'the eu shard\'s release patch is not in the audit log').toBeGreaterThan(0);
      const late = euWrites.filter((e) => micros(e.requestReceivedTimestamp) >= micros(claim.requestReceivedTimestamp));
      expect(late.map(describeWrite), 'eu wrote to the tenant after us claimed it').toEqual([]);
      expect(writes.filter((e) => (e.userAgent ?? '').startsWith('eva-operator') && !byOperator(GREEN, 'eu')(e) && !byOperator(GREEN, 'us')(e)).map(describeWrite), 'an operator of another shard wrote').toEqual([]);

      await expectAbsentShardReported([eu, us]);
    } finally {
      watch?.stop();
      try {
        await deleteTenants(SHARD_TENANTS);
      } finally {
        await stopOperator('g-eu-0');
        await stopOperator('g-us-0');
      }
    }
  }, CASE_MS);
});

/**
 * A tenant labelled with a shard nobody runs: left alone, reported by the running shards' leaders
 * (each judges a tenant as it appears, and all of them every 30 s): a Warning event, the gauge of each, and its status.
 */
async function expectAbsentShardReported(shards: readonly OperatorProcess[]): Promise<void> {
  create(IN_ABSENT_SHARD, 'apac');
  let absent: TenantObject | undefined;
  const reported = await eventually(() => (absent = getTenant(IN_ABSENT_SHARD.name)) !== undefined && warningEvents(absent, 'OperatorShardAbsent').length > 0, 90_000, 2_000);
  expect(reported, 'no OperatorShardAbsent event').toBe(true);
  expect(warningEvents(absent as TenantObject, 'OperatorShardAbsent')[0]?.message).toContain('SHARD=apac');
  // Each running shard's leader judges on its own: the one that reported may not be the one asked first.
  const gauge = async (op: OperatorProcess): Promise<number> => metricSum((await httpGet(metricsPortOf(op), '/metrics')).body, 'eva_tenants_in_absent_shard') ?? 0;
  expect(await eventually(async () => Math.min(...(await Promise.all(shards.map(gauge)))) >= 1, 45_000, 1_000), 'eva_tenants_in_absent_shard on both shards').toBe(true);
  expect(ownerOf(getTenant(IN_ABSENT_SHARD.name)), 'nobody claimed the tenant of an absent shard').toBeUndefined();
  // Its status says so (Stalled, Ready False, with the reason and the shard), as for the other unserved tenants.
  let seen: TenantObject | undefined;
  expect(await eventually(() => stalledWith('OperatorShardAbsent')((seen = getTenant(IN_ABSENT_SHARD.name))), 45_000, 1_000), `no Stalled OperatorShardAbsent status: ${JSON.stringify(seen?.status)}`).toBe(true);
  expect(seen?.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'OperatorShardAbsent' });
  expect(seen?.status?.conditions?.find((c) => c.type === 'Stalled')?.message).toContain('shard apac (label eva.aidonow.com/shard) has no running operator');
  expect(seen?.status?.phase, 'a phase written').toBeUndefined();
}

// ---- cleanup --------------------------------------------------------------------------------------

/** Makes sure an operator of `version` runs (MAX_WAVE 0: it acts only on what it owns or is pinned to it). */
async function ensureRunning(version: string, podName: string): Promise<void> {
  if ([...operators.values()].some((r) => r.version === version)) return;
  await launch(podName, version, 0).ready();
}

/** Deletes every tenant of ours, with an operator of each version running to take the finalizers off. */
async function deleteOurTenants(): Promise<void> {
  if (!ALL.some((t) => getTenant(t.name) !== undefined)) return;
  await ensureRunning(BLUE, 'g-blue-0');
  await ensureRunning(GREEN, 'g-green-0');
  await deleteTenants(ALL);
}

/** Deletes these tenants (whoever owns them must be running) and waits until they are gone. */
async function deleteTenants(tenants: readonly Planned[]): Promise<void> {
  const existing = tenants.filter((t) => getTenant(t.name) !== undefined);
  if (existing.length === 0) return;
  kubectlOk(['delete', 'evt', ...existing.map((t) => t.name), '--ignore-not-found', '--wait=false']);
  const stuck: string[] = [];
  for (const t of existing) if (!(await waitForGone(t.name, 180_000))) stuck.push(`${t.name} (owner ${ownerOf(getTenant(t.name)) ?? '-'})`);
  if (stuck.length > 0) throw new Error(`tenants not gone after delete: ${stuck.join(', ')}`);
}

/** Leftovers of an interrupted run (same names): deleted first, by operators that claim only pinned or owned tenants. */
async function removeLeftovers(): Promise<void> {
  const leftovers = ALL.filter((t) => getTenant(t.name) !== undefined);
  if (leftovers.length === 0) return;
  console.log(`[blue-green] removing leftovers of an earlier run: ${leftovers.map((t) => t.name).join(', ')}`);
  try {
    await deleteOurTenants();
  } finally {
    for (const podName of [...operators.keys()]) await stopOperator(podName);
  }
}
