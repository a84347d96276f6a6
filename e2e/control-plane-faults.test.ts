/**
 * Faults of the control plane while tenants provision, as a real one has them: etcd frozen (SIGSTOP)
 * for 15 s, then kube-apiserver restarted (same command line, as a kubelet restarts a static pod), then
 * nats-server restarted. Every tenant must reach Active with exactly one deployed release per module,
 * its streams, no pending release and no secret values file left. The operator is started again
 * whenever it exits (it does on lost leadership, as a Deployment's pod would be restarted).
 *
 * It freezes etcd: it runs only on the suite's own control plane (test/support/cluster-setup.ts, one
 * per checkout) and refuses any other.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODULES_BY_TIER } from '../src/api/modules.ts';
import { tenantNamespace } from '../src/steps/names.ts';
import { TEST_CLUSTER } from '../test/support/cluster-setup.ts';
import { eventually, kubectl, kubectlOk, requiredEnv, tenantManifest } from '../test/support/kubectl.ts';
import { alive, repoRoot } from '../test/support/tools.ts';
import { helmReleases } from './support/helm.ts';
import { streamNames } from './support/nats.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from './support/operator.ts';
import { waitForGone, waitForPhase } from './support/tenants.ts';

const OPERATOR_VERSION = '9.4.0';
const CODES = ['FAULTA', 'FAULTB', 'FAULTC', 'FAULTD'] as const;
const TIER = 'Starter';
const stateDir = requiredEnv('EVA_DEV_CLUSTER_DIR');
const pids = join(stateDir, 'kwok/clusters/eva/pids');
const logs = join(stateDir, 'kwok/clusters/eva/logs');

let secretsDir: string;
let operator: OperatorProcess;
let operatorStarts = 0;
let supervising: NodeJS.Timeout | undefined;

const pidOf = (component: string): number => Number(readFileSync(join(pids, `${component}.pid`), 'utf8').trim());
const apiReady = (): boolean => kubectl(['get', '--raw', '/readyz']).status === 0;

function startOurOperator(): void {
  operator = startOperator({ OPERATOR_VERSION, MAX_WAVE: '0' }, secretsDir);
  operatorStarts += 1;
}

/** kube-apiserver stopped (SIGTERM) and started again with the same arguments, folder, log and pid file. */
async function restartApiServer(): Promise<void> {
  const pid = pidOf('kube-apiserver');
  const argv = readFileSync(`/proc/${String(pid)}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
  const cwd = readlinkSync(`/proc/${String(pid)}/cwd`);
  process.kill(pid, 'SIGTERM');
  expect(await eventually(() => !alive(pid), 120_000, 200), 'the old kube-apiserver exits').toBe(true);
  const [command = '', ...args] = argv;
  const log = join(logs, 'kube-apiserver.log');
  const child = spawn('bash', ['-c', 'exec "$@" >>"$LOG" 2>&1 </dev/null', 'bash', command, ...args], { cwd, env: { ...process.env, LOG: log }, detached: true, stdio: 'ignore' });
  child.unref();
  writeFileSync(join(pids, 'kube-apiserver.pid'), `${String(child.pid)}\n`);
  expect(await eventually(apiReady, 120_000, 500), 'kube-apiserver ready again').toBe(true);
}

/** nats-server stopped and started again by `dev-cluster.sh up` (same configuration, data and ports). */
async function restartNats(): Promise<void> {
  const pid = Number(readFileSync(join(stateDir, 'nats.pid'), 'utf8').trim());
  process.kill(pid, 'SIGTERM');
  expect(await eventually(() => !alive(pid), 30_000, 200), 'the old nats-server exits').toBe(true);
  const up = spawnSync('bash', [join(repoRoot, 'scripts/dev-cluster.sh'), 'up'], { env: process.env, encoding: 'utf8', timeout: 120_000 });
  expect(up.status, up.stderr).toBe(0);
}

describe('faults of the control plane while tenants provision', () => {
  beforeAll(async () => {
    // Never a developer's cluster: this test freezes etcd.
    expect(stateDir).toBe(TEST_CLUSTER.EVA_DEV_CLUSTER_DIR);
    expect(readFileSync(`/proc/${String(pidOf('etcd'))}/cmdline`, 'utf8')).toContain(stateDir);
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    secretsDir = mkdtempSync('/dev/shm/eva-e2e-faults-');
    startOurOperator();
    await operator.ready(60_000);
    supervising = setInterval(() => {
      if (!alive(operator.pid)) startOurOperator();
    }, 1_000);
  }, 120_000);

  afterAll(async () => {
    clearInterval(supervising);
    for (const code of CODES) kubectl(['delete', 'evt', code.toLowerCase(), '--wait=false', '--ignore-not-found']);
    for (const code of CODES) await waitForGone(code.toLowerCase(), 180_000);
    await operator.stop();
    removeSecretsDir(operator);
  }, 300_000);

  it('etcd frozen 15 s, kube-apiserver restarted, nats-server restarted: every tenant Active, one of everything', async () => {
    const started = Date.now();
    for (const code of CODES) {
      kubectlOk(['apply', '-f', '-'], tenantManifest(code.toLowerCase(), { capsuleCode: code, tier: TIER, seedsVersion: '1.0.0', wave: 1, operatorVersion: OPERATOR_VERSION }));
    }
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const etcd = pidOf('etcd');
    const controllers = ['kube-controller-manager', 'kube-scheduler'].map(pidOf);
    process.kill(etcd, 'SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    process.kill(etcd, 'SIGCONT');
    const thawed = Date.now();
    await restartApiServer();
    const apiBack = Date.now();
    await restartNats();
    const natsBack = Date.now();
    for (const code of CODES) await waitForPhase(code.toLowerCase(), 'Active', 300_000);
    const allActive = Date.now();

    // The single controller-manager and scheduler outlived the stall (no leader election to lose).
    for (const pid of controllers) expect(alive(pid), `pid ${String(pid)}`).toBe(true);
    for (const code of CODES) {
      const namespace = tenantNamespace(code);
      const releases = helmReleases(namespace);
      expect(releases.map((r) => r.name), `${code}: one release per module`).toEqual([...MODULES_BY_TIER[TIER]].sort());
      for (const release of releases) expect(release.status, `${code} ${release.name}`).toBe('deployed');
      const pending = kubectlOk(['get', 'secret', '-n', namespace, '-l', 'owner=helm,status in (pending-install,pending-upgrade,pending-rollback)', '-o', 'name']).trim();
      expect(pending, `${code}: no pending release`).toBe('');
      expect(await streamNames(code), `${code}: its streams`).toEqual([`KV_eva-${code}-data`, `eva-${code}-commands`, `eva-${code}-events`]);
    }
    expect(operator.secretFilesLeft(), 'secret values files left').toEqual([]);
    const s = (ms: number): string => (ms / 1000).toFixed(1);
    console.info(
      `[faults] ${String(CODES.length)} ${TIER} tenants: etcd frozen 15 s from ${s(thawed - started - 15_000)} s; ` +
        `kube-apiserver ready ${s(apiBack - thawed)} s after the thaw; nats-server back ${s(natsBack - apiBack)} s later; ` +
        `all Active ${s(allActive - started)} s after apply (${s(allActive - natsBack)} s after NATS); operator started ${String(operatorStarts)} time(s)`,
    );
  }, 600_000);
});
