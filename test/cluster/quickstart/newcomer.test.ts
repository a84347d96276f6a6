/**
 * README's two commands on a machine where the user already has a dev cluster with a tenant and a
 * running operator (`scripts/quickstart.sh --local`): the test suite runs on its own control plane
 * (test/support/cluster-setup.ts) and leaves the user's cluster, tenant and operator as they were.
 *
 * "The user's" cluster here is a real second control plane in a throwaway state folder, with NATS
 * and metrics on ports of its own, made by quickstart exactly as README says; it is removed after.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import setupTestCluster, { TEST_CLUSTER } from '../../support/cluster-setup.ts';
import { eventually, kubectlOk, requiredEnv, tenantManifest } from '../../support/kubectl.ts';
import { waitForGone, waitForPhase } from '../../support/tenants.ts';
import { processAlive, repoRoot } from '../../support/tools.ts';

const CODE = 'NEWCMR';
const userDir = mkdtempSync(join(tmpdir(), 'eva-user-dev-cluster-'));
/** The user's shell: their own cluster (not the suite's), as `EVA_DEV_CLUSTER_DIR` selects it. */
const userEnv: NodeJS.ProcessEnv = {
  PATH: process.env['PATH'],
  HOME: process.env['HOME'],
  EVA_DEV_CLUSTER_DIR: userDir,
  // Below the ephemeral range (32768-60999): an outgoing connection may hold a port there when NATS binds it.
  EVA_NATS_PORT: '15222',
  EVA_NATS_MONITOR_PORT: '19222',
  EVA_METRICS_PORT: '18099',
};

function run(script: string, args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs: number): { status: number | null; output: string } {
  const result = spawnSync('bash', [join(repoRoot, script), ...args], { env, encoding: 'utf8', timeout: timeoutMs });
  return { status: result.status, output: `${result.stdout}\n${result.stderr}` };
}

const userKubectl = (args: readonly string[]): string => {
  const result = spawnSync(join(process.env['EVA_TOOLS_DIR'] ?? '', 'kubectl'), ['--kubeconfig', join(userDir, 'kubeconfig'), ...args], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`kubectl ${args.join(' ')} on the user's cluster: ${result.stderr}`);
  return result.stdout;
};


interface UserState {
  operatorPid: number;
  tenantResourceVersion: string;
  phase: string;
}

function userState(): UserState {
  const [rv, phase] = userKubectl(['get', 'evt', CODE.toLowerCase(), '-o', 'jsonpath={.metadata.resourceVersion} {.status.phase}']).split(' ');
  return { operatorPid: Number(readFileSync(join(userDir, 'operator.pid'), 'utf8').trim()), tenantResourceVersion: rv ?? '', phase: phase ?? '' };
}

afterAll(() => {
  const down = run('scripts/dev-cluster.sh', ['down'], userEnv, 120_000);
  rmSync(userDir, { recursive: true, force: true });
  expect(down.status, down.output).toBe(0);
}, 180_000);

describe('the newcomer path: a user\'s dev cluster with a tenant and an operator, then the test suite', () => {
  let before: UserState;

  beforeAll(() => {
    const quickstart = run('scripts/quickstart.sh', ['--local', '--code', CODE, '--timeout', '240'], userEnv, 600_000);
    expect(quickstart.status, quickstart.output).toBe(0);
    before = userState();
    expect(before.phase).toBe('Active');
    expect(processAlive(before.operatorPid), 'the user\'s operator runs').toBe(true);
  }, 660_000);

  it('the suite\'s control plane is another one: own state folder, own NATS, own API server', () => {
    setupTestCluster();
    expect(process.env['EVA_DEV_CLUSTER_DIR']).toBe(TEST_CLUSTER.EVA_DEV_CLUSTER_DIR);
    expect(process.env['KUBECONFIG']).toBe(join(TEST_CLUSTER.EVA_DEV_CLUSTER_DIR, 'kubeconfig'));
    expect(process.env['NATS_URL']).toBe(`nats://127.0.0.1:${TEST_CLUSTER.EVA_NATS_PORT}`);
    const server = (kubeconfig: string): string =>
      kubectlOk(['--kubeconfig', kubeconfig, 'config', 'view', '--minify', '-o', 'jsonpath={.clusters[0].cluster.server}']);
    expect(server(join(userDir, 'kubeconfig'))).not.toBe(server(process.env['KUBECONFIG'] ?? ''));
  }, 300_000);

  it('what the tests do there (CRD, a tenant applied and deleted) leaves the user\'s tenant and operator as they were', async () => {
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['apply', '-f', '-'], tenantManifest(CODE.toLowerCase(), { capsuleCode: CODE, tier: 'Starter', operatorVersion: '9.9.9' }));
    // The control: the write landed (on the suite's cluster: an object of the same name as the user's,
    // pinned elsewhere), while the user's tenant keeps its own pin.
    expect(kubectlOk(['get', 'evt', CODE.toLowerCase(), '-o', 'jsonpath={.spec.operatorVersion}'])).toBe('9.9.9');
    expect(userKubectl(['get', 'evt', CODE.toLowerCase(), '-o', 'jsonpath={.spec.operatorVersion}'])).not.toBe('9.9.9');
    kubectlOk(['delete', 'evt', CODE.toLowerCase(), '--wait=false']);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const after = userState();
    expect(after).toEqual(before);
    expect(processAlive(after.operatorPid), 'the user\'s operator still runs').toBe(true);
    const status = run('scripts/dev-cluster.sh', ['status'], userEnv, 60_000);
    expect(status.status, status.output).toBe(0);
  }, 120_000);

  it('quickstart\'s operator is supervised: started again after it exits (e.g. on lost leadership), and stop-operator ends both', async () => {
    const supervisor = userState().operatorPid;
    const childOf = (pid: number): number[] =>
      (spawnSync('pgrep', ['-P', String(pid), '-f', 'src/cli.ts run'], { encoding: 'utf8' }).stdout.match(/\d+/g) ?? []).map(Number);
    const [first] = childOf(supervisor);
    expect(first, 'the supervisor runs the operator').toBeDefined();
    process.kill(first ?? 0, 'SIGKILL');
    expect(await eventually(() => childOf(supervisor).some((pid) => pid !== first), 30_000, 200), 'a new operator process').toBe(true);
    const [second] = childOf(supervisor);
    expect(await eventually(() => userKubectl(['get', 'evt', CODE.toLowerCase(), '-o', 'jsonpath={.status.phase}']) === 'Active', 60_000)).toBe(true);
    const stop = run('scripts/dev-cluster.sh', ['stop-operator'], userEnv, 60_000);
    expect(stop.status, stop.output).toBe(0);
    expect(await eventually(() => !processAlive(supervisor) && !processAlive(second ?? 0), 30_000, 200), 'supervisor and operator gone').toBe(true);
  }, 180_000);
});

/** A bash block run as written, without blocking the event loop (the operator's output keeps flowing meanwhile). */
function runBlock(block: string, env: NodeJS.ProcessEnv): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', block], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (status) => {
      resolve({ status, output });
    });
  });
}

/** The first ```bash block after `heading` in a page. */
function blockAfter(page: string, heading: string): string {
  const text = readFileSync(join(repoRoot, page), 'utf8');
  return /```bash\n([\s\S]*?)```/.exec(text.slice(text.indexOf(heading)))?.[1] ?? '';
}

describe('docs/operator.md, "Running the operator from a checkout", then README\'s first tenant: both blocks as written', () => {
  const block = blockAfter('docs/operator.md', '## Running the operator from a checkout');
  const firstTenant = blockAfter('README.md', '## First tenant');
  let operator: ChildProcess | undefined;

  afterAll(async () => {
    if (operator?.pid !== undefined) {
      process.kill(-operator.pid, 'SIGTERM');
      await new Promise((resolve) => operator?.once('exit', resolve));
    }
  }, 60_000);

  it('needs no setting beyond `dev-cluster.sh env`: the sample tenant is Ready within `kubectl wait`, and goes on delete', async () => {
    expect(block).toContain('npx eva-operator');
    expect(firstTenant).toContain('kubectl wait evt/acmeco --for=condition=Ready');
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    // The suite's cluster (EVA_DEV_CLUSTER_DIR, as cluster-setup exported it); metrics on a free port.
    const env = { PATH: process.env['PATH'], HOME: process.env['HOME'], EVA_DEV_CLUSTER_DIR: TEST_CLUSTER.EVA_DEV_CLUSTER_DIR, METRICS_PORT: '0' };
    let output = '';
    operator = spawn('bash', ['-c', block], { cwd: repoRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    operator.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    operator.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    expect(await eventually(() => output.includes('"eva-operator started"'), 120_000, 500), output.slice(-3000)).toBe(true);
    // The user's shell: the suite's kubeconfig and the pinned kubectl on PATH.
    const userShell = { ...process.env, KUBECONFIG: requiredEnv('KUBECONFIG'), PATH: `${requiredEnv('EVA_TOOLS_DIR')}:${process.env['PATH'] ?? ''}` };
    const applied = await runBlock(firstTenant, userShell);
    expect(applied.status, `${applied.output}\n${output.slice(-3000)}`).toBe(0);
    expect(applied.output).toMatch(/^acmeco\s+ACMECO\s+Starter\s+Active/m);
    const active = await waitForPhase('acmeco', 'Active', 30_000).catch((err: unknown) => err);
    expect(active, output.slice(-3000)).toMatchObject({ phase: 'Active' });
    kubectlOk(['delete', 'evt', 'acmeco', '--wait=false']);
    expect(await waitForGone('acmeco', 120_000), output.slice(-3000)).toBe(true);
  }, 540_000);
});
