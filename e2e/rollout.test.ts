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
 * the tenants' move records, and its Prometheus gate asking a real Prometheus that scrapes the three
 * operators (no tenant left on the bad version). Figures printed: move and rollback times, API writes per moved tenant.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLLOUT_ANNOTATIONS } from '../src/api/evarollout.ts';
import { ROLLOUTS_LEASE } from '../src/controller/lease-names.ts';
import { auditOffset, auditWritesSince } from '../test/support/audit.ts';
import { eventually, kubectl, kubectlOk, requiredEnv } from '../test/support/kubectl.ts';
import { metricsPort } from '../test/support/metrics.ts';
import { type OperatorProcess, startOperator } from '../test/support/operator.ts';
import { prometheusBinary, type PrometheusProcess, startPrometheus } from '../test/support/prometheus.ts';
import { runLetters } from '../test/support/random.ts';
import { chartsWithDeployment, conditionOf, expectFailedGate, type Planned, plannedTenants, RolloutCluster, seconds, type TenantObject } from '../test/support/rollouts.ts';
import { repoRoot } from '../test/support/tools.ts';

const OLD = '8.1.0';
const GOOD = '8.2.0';
const BAD = '8.3.0';
const SHARD = 'rollout-e2e';
const WAVES = [1, 2, 3] as const;
const PER_WAVE = 10;
const STEP_MS = 600_000;
const TENANTS = plannedTenants(`R${runLetters().slice(0, 3)}`, WAVES.map(() => PER_WAVE));
const ofWave = (wave: number): Planned[] => TENANTS.filter((t) => t.wave === wave);
const cluster = new RolloutCluster(kubectl, SHARD, STEP_MS);
const figures: string[] = [];

// ---- the operators -----------------------------------------------------------------------------------

const operators = new Map<string, OperatorProcess>();
const secretsDirs = new Map<string, string>();
let badCharts = '';
let prometheus: PrometheusProcess | undefined;
const prometheusDir = mkdtempSync(join(tmpdir(), 'eva-rollout-prometheus-'));
/**
 * The good rollout's Prometheus gate: no tenant still owned by the version rolled back, as the
 * operators count them (every operator counts every tenant: max() makes one series; none owned means
 * no series, hence `or vector(0)`). Versions are this file's alone, so no other file's tenant counts.
 */
const NONE_ON_BAD = `max(eva_tenants_by_operator_version{version="${BAD}"}) or vector(0)`;

function launch(podName: string, version: string, env: Record<string, string> = {}): OperatorProcess {
  const op = startOperator({ OPERATOR_VERSION: version, POD_NAME: podName, SHARD, ...env }, secretsDirs.get(podName));
  secretsDirs.set(podName, op.secretsDir);
  operators.set(podName, op);
  return op;
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
  // A nodeSelector no node has: the bad version's module pods stay Pending.
  badCharts = chartsWithDeployment('bad', '{{- $_ := set $d.spec.template.spec "nodeSelector" (dict "eva-e2e.test/no-such-node" "true") }}');
  const old = launch('rollout-old', OLD);
  await old.ready(60_000);
  for (const t of TENANTS) cluster.applyTenant(t, OLD);
  await cluster.allActiveOn(TENANTS, OLD);
  await Promise.all([launch('rollout-good', GOOD).ready(60_000), launch('rollout-bad', BAD, { CHART_BASE_PATH: badCharts }).ready(60_000)]);
  prometheus = await startPrometheus(prometheusBinary(), prometheusDir, [...operators.values()].map((op) => `127.0.0.1:${String(metricsPort(op))}`));
}, STEP_MS * 2);

afterAll(async () => {
  kubectl(['delete', 'evr', 'to-bad', 'to-good', '--ignore-not-found']);
  await cluster.deleteTenants(TENANTS, 300_000);
  await Promise.all([...operators.values()].map((op) => op.stop()));
  await prometheus?.stop();
  rmSync(prometheusDir, { recursive: true, force: true });
  if (badCharts !== '') rmSync(badCharts, { recursive: true, force: true });
  console.log(`\n[rollout figures]\n${figures.map((f) => `  ${f}`).join('\n')}\n`);
}, STEP_MS);

describe('a rollout to a version whose pods never turn Ready', () => {
  it('is halted in wave 1 by its ready gate and rolled back: waves 2 and 3 untouched, every tenant Ready on the old version with its data', async () => {
    const data = new Map(ofWave(1).map((t) => [t.name, cluster.tenantData(t)]));
    const seen = new Map<string, number>();
    cluster.applyRollout('to-bad', {
      targetVersion: BAD,
      fromVersion: OLD,
      waves: WAVES.map((wave) => ({ wave, batch: { count: PER_WAVE }, bakeSeconds: 0 })),
      gates: { readyTimeoutSeconds: 30 },
      onFailure: 'Rollback',
    });
    const status = await cluster.untilPhase('to-bad', 'RolledBack', seen);
    expectFailedGate(status, 'TenantsReady', ofWave(1));
    expect(conditionOf(status, 'Stalled')).toBe('True');
    expect(cluster.eventTenants('to-bad', 'RolloutMoving').sort()).toEqual(ofWave(1).map((t) => t.name).sort());
    await cluster.allActiveOn(TENANTS, OLD, 300_000);
    const now = cluster.tenants();
    for (const t of [...ofWave(2), ...ofWave(3)]) expect(now.get(t.name)?.metadata.annotations?.[ROLLOUT_ANNOTATIONS.rollout], t.name).toBeUndefined();
    for (const t of ofWave(1)) expect(cluster.tenantData(t), `${t.name}: namespace or NATS credentials changed`).toBe(data.get(t.name));
    const rollingBack = seen.get('RollingBack');
    if (rollingBack !== undefined) figures.push(`rollback of a wave of ${String(PER_WAVE)}: ${seconds((seen.get('RolledBack') ?? 0) - rollingBack)} from the halt to RolledBack, then Ready on ${OLD}`);
  }, STEP_MS * 2);
});

describe('a rollout to a good version', () => {
  it('moves every tenant wave by wave, gates passing, and resumes after the operator running it is killed mid-way', async () => {
    const seen = new Map<string, number>();
    const offset = auditOffset();
    const started = Date.now();
    cluster.applyRollout('to-good', {
      targetVersion: GOOD,
      fromVersion: OLD,
      waves: WAVES.map((wave) => ({ wave, batch: { percent: 50 }, bakeSeconds: 0 })),
      gates: { readyTimeoutSeconds: 300, prometheus: { url: prometheus?.url ?? '', query: NONE_ON_BAD, max: 0 } },
      onFailure: 'Rollback',
    });
    // Mid-way: once wave 2's first batch is moved, the operator running rollouts dies.
    expect(await eventually(() => (cluster.readRollout('to-good')?.status?.wave ?? 0) >= 2, STEP_MS, 1_000), 'wave 2 never reached').toBe(true);
    await killRolloutHolder();
    const status = await cluster.untilPhase('to-good', 'Succeeded', seen);
    const elapsed = Date.now() - started;
    expect(status.moved).toBe(TENANTS.length);
    expect(conditionOf(status, 'Ready')).toBe('True');
    // The last batch's verdicts: every gate judged and passed, Prometheus's from what it scraped.
    expect((status.gates ?? []).map((g) => `${g.gate} ${g.verdict}`).sort()).toEqual(['PodRestarts Passed', 'PodsReady Passed', 'Prometheus Passed', 'TenantsReady Passed']);
    await cluster.allActiveOn(TENANTS, GOOD, 300_000);
    // Each tenant moved once, in wave order: batch numbers of wave 1 below wave 2's, below wave 3's.
    const moved = cluster.eventTenants('to-good', 'RolloutMoving');
    expect(moved.sort()).toEqual(TENANTS.map((t) => t.name).sort());
    expectWaveOrder(cluster.tenants());
    const writes = auditWritesSince(offset);
    figures.push(`${String(TENANTS.length)} tenants through three waves (batches of 50 %, zero bake, the rollout's operator killed once): ${seconds(elapsed)}`);
    figures.push(`API writes per moved tenant (every client, hand-over and helm upgrades included): ${(writes.length / TENANTS.length).toFixed(1)}`);
  }, STEP_MS * 2);
});
