/**
 * Faults of the control plane while tenants provision: etcd frozen for 15 s (SIGSTOP), then the
 * kube-apiserver restarted, then NATS restarted. What real control planes survive, the local one
 * must too, and so must the operator (run as a Deployment would run it: started again if it exits).
 * Every tenant ends Active with exactly one of everything (test/support/converged.ts).
 *
 * It freezes etcd: it runs only on the test suite's own control plane (test/support/cluster-setup.ts),
 * never on a developer's. One operator version of its own, only tenants pinned to it.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_CLUSTER } from '../test/support/cluster-setup.ts';
import { kubectl, kubectlOk, tenantManifest } from '../test/support/kubectl.ts';
import { processAlive, repoRoot } from '../test/support/tools.ts';
import { expectConverged } from '../test/support/converged.ts';
import { type SupervisedOperator, superviseOperator } from '../test/support/operator.ts';
import { readTenant, waitForGone, waitForPhase } from '../test/support/tenants.ts';

const VERSION = '9.11.0';
const CODES = ['FAULTA', 'FAULTB', 'FAULTC', 'FAULTD', 'FAULTE', 'FAULTF'] as const;
const FREEZE_MS = 15_000;
const ACTIVE_TIMEOUT_MS = 300_000;

const figures: string[] = [];
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
let operator: SupervisedOperator;

/** The suite's control plane, and nothing else: this file stops and restarts its processes. */
function assertOwnControlPlane(): void {
  const kubeconfig = process.env['KUBECONFIG'] ?? '';
  if (dirname(kubeconfig) !== TEST_CLUSTER.EVA_DEV_CLUSTER_DIR) {
    throw new Error(`refusing to inject faults: KUBECONFIG ${kubeconfig} is not the test suite's control plane (${TEST_CLUSTER.EVA_DEV_CLUSTER_DIR})`);
  }
}

const pidFile = (component: string): string => join(TEST_CLUSTER.EVA_DEV_CLUSTER_DIR, 'kwok/clusters/eva/pids', `${component}.pid`);
const pidOf = (component: string): number => Number(readFileSync(pidFile(component), 'utf8').trim());

function devCluster(...args: string[]): void {
  const run = spawnSync('bash', [join(repoRoot, 'scripts/dev-cluster.sh'), ...args], { env: { ...process.env, ...TEST_CLUSTER }, encoding: 'utf8', timeout: 180_000 });
  if (run.status !== 0) throw new Error(`dev-cluster.sh ${args.join(' ')} failed (${String(run.status)}):\n${run.stderr}`);
}

async function timed(what: string, action: () => Promise<void> | void): Promise<void> {
  const started = Date.now();
  await action();
  figures.push(`${what}: ${seconds(Date.now() - started)}`);
}

async function deleteOurs(): Promise<void> {
  kubectl(['delete', 'evt', ...CODES.map((c) => c.toLowerCase()), '--ignore-not-found', '--wait=false']);
  for (const code of CODES) expect(await waitForGone(code.toLowerCase(), 180_000), `${code} not gone`).toBe(true);
}

describe('control plane faults while tenants provision', () => {
  beforeAll(async () => {
    assertOwnControlPlane();
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    operator = superviseOperator({ OPERATOR_VERSION: VERSION, MAX_WAVE: '0', POD_NAME: 'faults-0' });
    await operator.current().ready();
    await deleteOurs(); // leftovers of an interrupted run
  }, 300_000);

  afterAll(async () => {
    try {
      await deleteOurs();
    } finally {
      await operator.stop();
      console.log(`[faults] ${figures.join('; ')}`);
    }
  }, 300_000);

  it('etcd frozen 15 s, the API server restarted, NATS restarted: every tenant Active with one of everything', async () => {
    const controlPlane = ['kube-controller-manager', 'kube-scheduler'].map((c) => ({ component: c, pid: pidOf(c) }));
    const started = Date.now();
    for (const code of CODES) kubectlOk(['apply', '-f', '-'], tenantManifest(code.toLowerCase(), { capsuleCode: code, tier: 'Starter', seedsVersion: '1.0.0', operatorVersion: VERSION }));
    await sleep(1_500); // mid-provisioning: namespaces made, releases on their way

    const etcd = pidOf('etcd');
    await timed('etcd frozen', async () => {
      process.kill(etcd, 'SIGSTOP');
      try {
        await sleep(FREEZE_MS);
      } finally {
        process.kill(etcd, 'SIGCONT');
      }
    });
    await timed('kube-apiserver restarted', () => {
      devCluster('restart', 'kube-apiserver');
    });
    await timed('nats-server restarted', () => {
      devCluster('restart', 'nats-server');
    });
    const faultsOver = Date.now();

    for (const code of CODES) await waitForPhase(code.toLowerCase(), 'Active', ACTIVE_TIMEOUT_MS);
    figures.push(`all ${CODES.length} Active ${seconds(Date.now() - faultsOver)} after the last fault (${seconds(Date.now() - started)} after creation)`);
    figures.push(`operator restarts: ${operator.restarts}`);
    for (const code of CODES) await expectConverged(code, 'Starter', () => operator.current().secretFilesLeft());

    // The control plane's single controller-manager and scheduler lived through it (no leader election
    // to lose), and still work: a tenant's Deployments got their pods (ModulesDeployed True above).
    for (const { component, pid } of controlPlane) expect(processAlive(pid), `${component} (pid ${pid}) exited`).toBe(true);
    expect(readTenant(CODES[0].toLowerCase())?.conditions['ModulesDeployed']?.status).toBe('True');
  }, 900_000);
});
