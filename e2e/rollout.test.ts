/**
 * Fleet rollouts with real operator processes on the local control plane (docs/rollouts.md): three
 * versions of the operator run side by side, all in one shard of their own so that no other file's
 * tenant is theirs and none of theirs is another file's:
 *   OLD   8.1.0, which owns the 30 tenants at the start (10 per wave, pinned to it);
 *   BAD   8.3.0, whose module charts schedule their pods nowhere (a nodeSelector no node has): its
 *         pods never turn Ready, so a tenant moved to it never is Ready on it;
 *   GOOD  8.2.0, the bundled charts as they are.
 * Each operator can run rollouts (whichever holds the Lease eva-rollouts). The bad rollout is halted
 * in wave 1 by its ready gate and rolled back (waves 2 and 3 never touched, every tenant Ready on OLD
 * again with its data); the good one moves every tenant wave by wave (the positive control), with
 * the operator running rollouts killed mid-way (SIGKILL) and another taking over from the status and
 * the tenants' move records. Figures printed: move and rollback times, API writes per moved tenant.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, OWNER_ANNOTATION, ownerVersion, SHARD_LABEL } from '../src/api/constants.ts';
import { ROLLOUT_ANNOTATIONS, ROLLOUT_KIND, type EvaRolloutSpec, type EvaRolloutStatus } from '../src/api/evarollout.ts';
import { ROLLOUTS_LEASE } from '../src/controller/lease-names.ts';
import { tenantNamespace } from '../src/tenancy/names.ts';
import { auditOffset, auditWritesSince } from '../test/support/audit.ts';
import { eventually, kubectl, kubectlOk, requiredEnv } from '../test/support/kubectl.ts';
import { type OperatorProcess, startOperator } from '../test/support/operator.ts';
import { runLetters } from '../test/support/random.ts';
import { applyTenant, waitForGone } from '../test/support/tenants.ts';
import { repoRoot } from '../test/support/tools.ts';

const OLD = '8.1.0';
const GOOD = '8.2.0';
const BAD = '8.3.0';
const SHARD = 'rollout-e2e';
const WAVES = [1, 2, 3] as const;
const PER_WAVE = 10;
const RUN = runLetters().slice(0, 3);
const STEP_MS = 600_000;

interface Planned {
  readonly name: string;
  readonly code: string;
  readonly wave: number;
}

const letter = (n: number): string => String.fromCharCode(65 + n);
const TENANTS: readonly Planned[] = WAVES.flatMap((wave) =>
  Array.from({ length: PER_WAVE }, (_, i) => {
    const code = `R${RUN}${letter(wave)}${letter(i)}`;
    return { name: `ro-${code.toLowerCase()}`, code, wave };
  }),
);
const ofWave = (wave: number): Planned[] => TENANTS.filter((t) => t.wave === wave);
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const figures: string[] = [];

// ---- the tenants and rollouts as the API server has them ------------------------------------------

interface TenantObject {
  metadata: { name: string; generation?: number; annotations?: Record<string, string> };
  spec: { operatorVersion?: string };
  status?: { phase?: string; observedGeneration?: number };
}

interface RolloutObject {
  status?: EvaRolloutStatus;
}

function ourTenants(): Map<string, TenantObject> {
  const list = JSON.parse(kubectlOk(['get', 'evt', '-l', `${SHARD_LABEL}=${SHARD}`, '-o', 'json'])) as { items: TenantObject[] };
  return new Map(list.items.map((t) => [t.metadata.name, t]));
}

/** Active on the current generation, pinned to and owned by `version`. */
const activeOn = (t: TenantObject | undefined, version: string): boolean =>
  t?.status?.phase === 'Active' && t.status.observedGeneration === t.metadata.generation && t.spec.operatorVersion === version && ownerVersion(t.metadata.annotations?.[OWNER_ANNOTATION]) === version;

async function allActiveOn(tenants: readonly Planned[], version: string, timeoutMs = STEP_MS): Promise<void> {
  let laggards: string[] = [];
  const done = await eventually(() => {
    const now = ourTenants();
    laggards = tenants.filter((t) => !activeOn(now.get(t.name), version)).map((t) => t.name);
    return laggards.length === 0;
  }, timeoutMs, 2_000);
  expect(done, `not Active on ${version}: ${laggards.join(', ')}`).toBe(true);
}

function readRollout(name: string): RolloutObject | undefined {
  const result = kubectl(['get', 'evr', name, '-o', 'json']);
  return result.status === 0 ? (JSON.parse(result.stdout) as RolloutObject) : undefined;
}

/** Polls the rollout's phase every second until `phase`, noting when each phase was first seen. */
async function untilPhase(name: string, phase: string, seen: Map<string, number>, timeoutMs = STEP_MS): Promise<EvaRolloutStatus> {
  let last: EvaRolloutStatus | undefined;
  const reached = await eventually(() => {
    last = readRollout(name)?.status;
    const now = last?.phase;
    if (now !== undefined && !seen.has(now)) seen.set(now, Date.now());
    return now === phase;
  }, timeoutMs, 1_000);
  expect(reached, `rollout ${name} did not reach ${phase}; last status: ${JSON.stringify(last)}`).toBe(true);
  return last ?? {};
}

function applyRollout(name: string, spec: EvaRolloutSpec): void {
  kubectlOk(['apply', '-f', '-'], JSON.stringify({ apiVersion: API_VERSION, kind: ROLLOUT_KIND, metadata: { name }, spec }));
}

const conditionOf = (status: EvaRolloutStatus, type: string): string | undefined => status.conditions?.find((c) => c.type === type)?.status;

/** The one gate that did not pass, and the tenants it names. */
function expectFailedGate(status: EvaRolloutStatus, gate: string, tenants: readonly Planned[]): void {
  const failed = (status.gates ?? []).filter((g) => g.verdict !== 'Passed');
  expect(failed.map((g) => g.gate), JSON.stringify(status.gates)).toEqual([gate]);
  expect([...(failed[0]?.tenants ?? [])].sort()).toEqual(tenants.map((t) => t.name).sort());
}

/** The tenants each Event of a rollout moved or returned, by reason. */
function eventTenants(rollout: string, reason: string): string[] {
  const list = JSON.parse(kubectlOk(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${rollout},reason=${reason}`, '-o', 'json'])) as { items: { message: string }[] };
  // "wave 1 batch 2: moving a, b" / "returning batch 2: a, b"
  return list.items.flatMap((e) => e.message.replace(/^[^:]*: (moving )?/, '').split(', ').filter((n) => n !== ''));
}

/** What a rollback must keep: the tenant's namespace and its NATS credentials (the data's keys). */
function tenantData(t: Planned): string {
  const namespace = tenantNamespace(t.code);
  const uid = kubectlOk(['get', 'namespace', namespace, '-o', 'jsonpath={.metadata.uid}']);
  const creds = kubectlOk(['get', 'secret', 'eva-nats', '-n', namespace, '-o', 'jsonpath={.data.nats\\.creds}']);
  return `${uid}/${creds}`;
}

// ---- the operators -----------------------------------------------------------------------------------

const operators = new Map<string, OperatorProcess>();
const secretsDirs = new Map<string, string>();
let badCharts = '';

function launch(podName: string, version: string, env: Record<string, string> = {}): OperatorProcess {
  const op = startOperator({ OPERATOR_VERSION: version, POD_NAME: podName, SHARD, ...env }, secretsDirs.get(podName));
  secretsDirs.set(podName, op.secretsDir);
  operators.set(podName, op);
  return op;
}

/** The bundled charts with every module's pods asking for a node label no node has (they stay Pending). */
function unschedulableCharts(): string {
  const dir = mkdtempSync(join(tmpdir(), 'eva-rollout-bad-charts-'));
  cpSync(join(repoRoot, 'charts'), dir, { recursive: true });
  const modules = join(dir, 'modules');
  for (const module of readdirSync(modules)) {
    const template = join(modules, module, 'templates', 'deployment.yaml');
    if (!existsSync(template)) continue;
    writeFileSync(
      template,
      '{{- $d := include "eva-module-lib.deployment" . | fromYaml }}\n' +
        '{{- $_ := set $d.spec.template.spec "nodeSelector" (dict "eva-e2e.test/no-such-node" "true") }}\n' +
        '{{ toYaml $d }}\n',
    );
  }
  return dir;
}

/** The POD_NAME holding the Lease eva-rollouts. */
function rolloutHolder(): string {
  return kubectlOk(['get', 'lease', ROLLOUTS_LEASE, '-n', requiredEnv('EVA_OPERATOR_NAMESPACE'), '-o', 'jsonpath={.spec.holderIdentity}']);
}

/** Batches are numbered across a rollout: every batch of wave 1 below wave 2's, below wave 3's. */
function expectWaveOrder(tenants: Map<string, TenantObject>): void {
  const batchOf = (t: Planned): number => Number(tenants.get(t.name)?.metadata.annotations?.[ROLLOUT_ANNOTATIONS.batch]);
  for (const [earlier, later] of [[1, 2], [2, 3]] as const) {
    expect(Math.max(...ofWave(earlier).map(batchOf)), `wave ${String(earlier)} before ${String(later)}`).toBeLessThan(Math.min(...ofWave(later).map(batchOf)));
  }
}

/** SIGKILL to the operator running rollouts, then started again (as its Deployment would): another may take over meanwhile. */
async function killRolloutHolder(): Promise<void> {
  const holder = rolloutHolder();
  const killed = operators.get(holder);
  expect(killed, `the Lease ${ROLLOUTS_LEASE} is held by ${holder}, not one of ours`).toBeDefined();
  await killed?.kill();
  const version = { 'rollout-old': OLD, 'rollout-good': GOOD, 'rollout-bad': BAD }[holder] ?? OLD;
  launch(holder, version, holder === 'rollout-bad' ? { CHART_BASE_PATH: badCharts } : {});
}

beforeAll(async () => {
  kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
  badCharts = unschedulableCharts();
  const old = launch('rollout-old', OLD);
  await old.ready(60_000);
  for (const t of TENANTS) applyTenant(t.name, { capsuleCode: t.code, tier: 'Starter', seedsVersion: '1.0.0', wave: t.wave, operatorVersion: OLD }, { [SHARD_LABEL]: SHARD });
  await allActiveOn(TENANTS, OLD);
  await Promise.all([launch('rollout-good', GOOD).ready(60_000), launch('rollout-bad', BAD, { CHART_BASE_PATH: badCharts }).ready(60_000)]);
}, STEP_MS * 2);

afterAll(async () => {
  kubectl(['delete', 'evr', 'to-bad', 'to-good', '--ignore-not-found']);
  kubectl(['delete', 'evt', ...TENANTS.map((t) => t.name), '--ignore-not-found', '--wait=false']);
  for (const t of TENANTS) await waitForGone(t.name, 120_000);
  await Promise.all([...operators.values()].map((op) => op.stop()));
  if (badCharts !== '') rmSync(badCharts, { recursive: true, force: true });
  console.log(`\n[rollout figures]\n${figures.map((f) => `  ${f}`).join('\n')}\n`);
}, STEP_MS);

describe('a rollout to a version whose pods never turn Ready', () => {
  it('is halted in wave 1 by its ready gate and rolled back: waves 2 and 3 untouched, every tenant Ready on the old version with its data', async () => {
    const data = new Map(ofWave(1).map((t) => [t.name, tenantData(t)]));
    const seen = new Map<string, number>();
    applyRollout('to-bad', {
      targetVersion: BAD,
      fromVersion: OLD,
      waves: WAVES.map((wave) => ({ wave, batch: { count: PER_WAVE }, bakeSeconds: 0 })),
      gates: { readyTimeoutSeconds: 30 },
      onFailure: 'Rollback',
    });
    const status = await untilPhase('to-bad', 'RolledBack', seen);
    expectFailedGate(status, 'TenantsReady', ofWave(1));
    expect(conditionOf(status, 'Stalled')).toBe('True');
    expect(eventTenants('to-bad', 'RolloutMoving').sort()).toEqual(ofWave(1).map((t) => t.name).sort());
    await allActiveOn(TENANTS, OLD, 300_000);
    const now = ourTenants();
    for (const t of [...ofWave(2), ...ofWave(3)]) expect(now.get(t.name)?.metadata.annotations?.[ROLLOUT_ANNOTATIONS.rollout], t.name).toBeUndefined();
    for (const t of ofWave(1)) expect(tenantData(t), `${t.name}: namespace or NATS credentials changed`).toBe(data.get(t.name));
    const rollingBack = seen.get('RollingBack');
    if (rollingBack !== undefined) figures.push(`rollback of a wave of ${String(PER_WAVE)}: ${seconds((seen.get('RolledBack') ?? 0) - rollingBack)} from the halt to RolledBack, then Ready on ${OLD}`);
  }, STEP_MS * 2);
});

describe('a rollout to a good version', () => {
  it('moves every tenant wave by wave, gates passing, and resumes after the operator running it is killed mid-way', async () => {
    const seen = new Map<string, number>();
    const offset = auditOffset();
    const started = Date.now();
    applyRollout('to-good', {
      targetVersion: GOOD,
      fromVersion: OLD,
      waves: WAVES.map((wave) => ({ wave, batch: { percent: 50 }, bakeSeconds: 0 })),
      gates: { readyTimeoutSeconds: 300 },
      onFailure: 'Rollback',
    });
    // Mid-way: once wave 2's first batch is moved, the operator running rollouts dies.
    expect(await eventually(() => (readRollout('to-good')?.status?.wave ?? 0) >= 2, STEP_MS, 1_000), 'wave 2 never reached').toBe(true);
    await killRolloutHolder();
    const status = await untilPhase('to-good', 'Succeeded', seen);
    const elapsed = Date.now() - started;
    expect(status.moved).toBe(TENANTS.length);
    expect(conditionOf(status, 'Ready')).toBe('True');
    await allActiveOn(TENANTS, GOOD, 300_000);
    // Each tenant moved once, in wave order: batch numbers of wave 1 below wave 2's, below wave 3's.
    const moved = eventTenants('to-good', 'RolloutMoving');
    expect(moved.sort()).toEqual(TENANTS.map((t) => t.name).sort());
    expectWaveOrder(ourTenants());
    const writes = auditWritesSince(offset);
    figures.push(`${String(TENANTS.length)} tenants through three waves (batches of 50 %, zero bake, the rollout's operator killed once): ${seconds(elapsed)}`);
    figures.push(`API writes per moved tenant (every client, hand-over and helm upgrades included): ${(writes.length / TENANTS.length).toFixed(1)}`);
  }, STEP_MS * 2);
});
