/**
 * Fleet rollout benchmark on the local control plane (a benchmark that prints figures, not a test).
 *
 *   npm run bench:rollout -- [--count 100] [--batch-percent 50] [--keep]
 *
 * Two operator versions run side by side in a shard of their own: OLD owns `count` Starter tenants
 * over three waves (10 %, 30 % and 60 % of them: internal, pilot, fleet); an EvaRollout with zero
 * bake time then moves every tenant to NEW, in batches of `batch-percent` of each wave. Prints the
 * time from the rollout's apply to Succeeded and to every tenant Active on NEW, when each wave began,
 * and the API writes per moved tenant by client (audit log). The charts are the same in both
 * versions, so the figures are the hand-over's and the rollout's own: no module changes.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { EvaRolloutStatus } from '../src/api/evarollout.ts';
import setupCluster from '../test/support/cluster-setup.ts';
import { auditOffset, auditWritesSince } from '../test/support/audit.ts';
import { eventually, kubectl, kubectlOk } from '../test/support/kubectl.ts';
import { adminOperatorEnv, type OperatorProcess, startOperator } from '../test/support/operator.ts';
import { type Planned, plannedTenants, RolloutCluster, seconds } from '../test/support/rollouts.ts';
import { repoRoot } from '../test/support/tools.ts';

// Versions and shard of this benchmark alone: no test file's operator takes its tenants.
const OLD = '6.0.0';
const NEW = '6.1.0';
const SHARD = 'bench-rollout';
const ROLLOUT = 'bench-rollout';
const WAVE_SHARES = [0.1, 0.3, 0.6] as const;
const STEP_MS = 1_800_000;

function options(): { count: number; batchPercent: number; keep: boolean } {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', default: '100' },
      'batch-percent': { type: 'string', default: '50' },
      keep: { type: 'boolean', default: false },
    },
  });
  const count = Number(values.count);
  const batchPercent = Number(values['batch-percent']);
  if (!Number.isInteger(count) || count < 3) throw new Error('--count must be an integer of at least 3 (one tenant per wave)');
  if (!Number.isInteger(batchPercent) || batchPercent < 1 || batchPercent > 100) throw new Error('--batch-percent must be an integer from 1 to 100');
  return { count, batchPercent, keep: values.keep };
}

/** Wave sizes for `count` tenants: the shares rounded, the last wave taking the rest. */
function waveSizes(count: number): number[] {
  const first = WAVE_SHARES.slice(0, -1).map((share) => Math.max(1, Math.round(count * share)));
  return [...first, count - first.reduce((a, b) => a + b, 0)];
}

function launch(podName: string, version: string): OperatorProcess {
  return startOperator({ ...adminOperatorEnv(), OPERATOR_VERSION: version, POD_NAME: podName, SHARD, MAX_WAVE: '0' });
}

/** Polls the rollout every second until it ends; returns when each wave was first seen moving and when it ended. */
async function followRollout(cluster: RolloutCluster, started: number): Promise<{ waves: Map<number, number>; ended: number; status: EvaRolloutStatus | undefined }> {
  const waves = new Map<number, number>();
  let status: EvaRolloutStatus | undefined;
  await eventually(() => {
    status = cluster.readRollout(ROLLOUT)?.status;
    const wave = status?.wave;
    if (wave !== undefined && !waves.has(wave)) waves.set(wave, Date.now() - started);
    return ['Succeeded', 'Halted', 'RolledBack'].includes(status?.phase ?? '');
  }, STEP_MS, 1_000);
  return { waves, ended: Date.now() - started, status };
}

/** Writes per moved tenant, by client (the User-Agent's product: eva-operator/<version>, Helm, ...). */
function writesByClient(offset: number, moved: number): string[] {
  const counts = new Map<string, number>();
  for (const event of auditWritesSince(offset)) {
    const client = (event.userAgent ?? '?').split(' ')[0] ?? '?';
    counts.set(client, (counts.get(client) ?? 0) + 1);
  }
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const rows = [...counts].sort((a, b) => b[1] - a[1]).map(([client, n]) => `    ${client}: ${(n / moved).toFixed(2)}`);
  return [`  API writes per moved tenant (every client): ${(total / moved).toFixed(2)}`, ...rows];
}

async function provisionOn(cluster: RolloutCluster, tenants: readonly Planned[]): Promise<void> {
  const started = Date.now();
  for (const t of tenants) cluster.applyTenant(t, OLD);
  if ((await cluster.untilActiveOn(tenants, OLD)).length > 0) throw new Error(`the tenants were not all Active on ${OLD} within ${seconds(STEP_MS)}`);
  console.log(`  provisioned on ${OLD}: ${seconds(Date.now() - started)}`);
}

/** Applies the rollout and follows it to its end; prints its figures and returns whether every tenant moved. */
async function roll(cluster: RolloutCluster, tenants: readonly Planned[], sizes: readonly number[], batchPercent: number): Promise<boolean> {
  const offset = auditOffset();
  const started = Date.now();
  cluster.applyRollout(ROLLOUT, {
    targetVersion: NEW,
    fromVersion: OLD,
    waves: sizes.map((_, i) => ({ wave: i + 1, batch: { percent: batchPercent }, bakeSeconds: 0 })),
    gates: { readyTimeoutSeconds: 600 },
    onFailure: 'Halt',
  });
  const { waves, ended, status } = await followRollout(cluster, started);
  const allMoved = (await cluster.untilActiveOn(tenants, NEW)).length === 0;
  const phase = status?.phase ?? '(no status)';
  console.log(`  rollout ${phase} after ${seconds(ended)}; every tenant Active on ${NEW} after ${seconds(Date.now() - started)}${allMoved ? '' : ' (NOT ALL: timed out)'}`);
  for (const [wave, at] of [...waves].sort((a, b) => a[0] - b[0])) console.log(`    wave ${String(wave)} (${String(sizes[wave - 1] ?? 0)} tenants) began at ${seconds(at)}`);
  console.log(writesByClient(offset, tenants.length).join('\n'));
  const succeeded = phase === 'Succeeded' && allMoved;
  if (!succeeded) console.log(`bench:rollout FAILED: the rollout ended ${phase}${allMoved ? '' : `, not every tenant Active on ${NEW}`}`);
  return succeeded;
}

async function main(): Promise<void> {
  const { count, batchPercent, keep } = options();
  setupCluster();
  kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
  const cluster = new RolloutCluster(kubectl, SHARD, STEP_MS);
  const sizes = waveSizes(count);
  const tenants = plannedTenants('BRO', sizes);
  const operators = [launch('bench-rollout-old', OLD), launch('bench-rollout-new', NEW)];
  await Promise.all(operators.map((op) => op.ready(120_000)));
  // Leftovers of an interrupted run (tenants on NEW would read as moved already): a clean start.
  kubectl(['delete', 'evr', ROLLOUT, '--ignore-not-found']);
  await cluster.deleteTenants([...cluster.tenants().keys()].map((name) => ({ name })), STEP_MS);

  console.log(`${String(count)} Starter tenants in waves of ${sizes.join(', ')} on ${OLD}; moving them to ${NEW} in batches of ${String(batchPercent)} %, zero bake`);
  await provisionOn(cluster, tenants);
  const succeeded = await roll(cluster, tenants, sizes, batchPercent);
  if (!keep) {
    kubectl(['delete', 'evr', ROLLOUT, '--ignore-not-found']);
    await cluster.deleteTenants(tenants, STEP_MS);
  }
  await Promise.all(operators.map((op) => op.stop()));
  if (!succeeded) process.exitCode = 1;
}

await main();
