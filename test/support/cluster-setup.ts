/**
 * vitest globalSetup for the `cluster` project: brings up (or reuses) the test suite's OWN local
 * control plane and exports its environment to the test workers. It never skips: if the control
 * plane cannot start, every cluster test fails with the reason.
 *
 * Own state folder and NATS ports (TEST_CLUSTER below), one per checkout: a developer's dev cluster,
 * its tenants and an operator running against it (quickstart's) are never touched by the tests, nor is
 * the test plane of another checkout on the same machine. The test plane is
 * kept between runs (a warm `up` takes seconds), and recreated when scripts/dev-cluster.sh would make it
 * differently; `EVA_DEV_CLUSTER_DIR=<dir> scripts/dev-cluster.sh down` removes it.
 *
 * With EVA_CONTROL_PLANE=oldest-control-plane (scripts/test.sh's compatibility stage) the plane runs
 * the oldest Kubernetes the chart accepts, in a folder and on NATS ports of its own, and is removed
 * when the run ends: it is brought up for that one stage only.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './tools.ts';

const script = join(repoRoot, 'scripts/dev-cluster.sh');

/**
 * One plane per checkout, named after its path: two checkouts on one machine (e.g. git worktrees of
 * two engineers) never share, stop or recreate each other's. NATS ports from the same hash, away from
 * the dev cluster's 14222/18222: 24222-25221 and 28222-29221.
 */
export const checkout = createHash('sha256').update(repoRoot).digest('hex').slice(0, 8);
export const portOffset = Number.parseInt(checkout.slice(0, 4), 16) % 1000;

/** The oldest Kubernetes the chart accepts, for the compatibility stage; else the pinned newest. */
const oldest = process.env['EVA_CONTROL_PLANE'] === 'oldest-control-plane';
const planeName = oldest ? `test-cluster-oldest-${checkout}` : `test-cluster-${checkout}`;
/** The oldest plane's NATS ports: 26222-27221 and 30222-31221, clear of the newest's. */
const portBase = oldest ? 2000 : 0;

/** Where the suite's control plane lives, and its NATS ports. */
export const TEST_CLUSTER = {
  EVA_DEV_CLUSTER_DIR: process.env['EVA_TEST_CLUSTER_DIR'] ?? join(process.env['XDG_STATE_HOME'] ?? join(homedir(), '.local/state'), `eva-operator/${planeName}`),
  EVA_NATS_PORT: process.env['EVA_TEST_NATS_PORT'] ?? String(24222 + portBase + portOffset),
  EVA_NATS_MONITOR_PORT: process.env['EVA_TEST_NATS_MONITOR_PORT'] ?? String(28222 + portBase + portOffset),
  EVA_CONTROL_PLANE: oldest ? 'oldest-control-plane' : 'control-plane',
  // Throwaway: a plane made by an older scripts/dev-cluster.sh (other flags, node size) is recreated.
  EVA_DEV_CLUSTER_RECREATE: 'changed',
} as const;

const EXPORTED = ['KUBECONFIG', 'NATS_URL', 'NATS_SYSTEM_CREDS_FILE', 'NATS_OPERATOR_SIGNING_KEY_FILE', 'EVA_NATS_MONITOR_URL', 'EVA_TOOLS_DIR'] as const;

function exportedVariables(envScript: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const name of EXPORTED) {
    vars[name] = execFileSync('bash', ['-c', `${envScript}\nprintf %s "$${name}"`], { encoding: 'utf8' });
  }
  return vars;
}

/** A control plane's state folder and NATS ports, and how scripts/dev-cluster.sh makes it (EVA_DEV_CLUSTER_*). */
export type ClusterSettings = Readonly<Record<string, string>> & { EVA_DEV_CLUSTER_DIR: string; EVA_NATS_PORT: string; EVA_NATS_MONITOR_PORT: string };

/** Brings up (or reuses) the control plane `settings` name; returns its environment (`dev-cluster.sh env`). */
export function clusterUp(settings: ClusterSettings): Record<string, string> {
  const env = { ...process.env, ...settings };
  execFileSync('bash', [script, 'up'], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  return exportedVariables(execFileSync('bash', [script, 'env'], { env, encoding: 'utf8' }));
}

/** Brings up (or reuses) the control plane `settings` name and exports its environment into this process. */
export function useCluster(settings: ClusterSettings): void {
  // Children (quickstart.sh, dev-cluster.sh from tests) find the same plane through these.
  Object.assign(process.env, settings);
  const vars = clusterUp(settings);
  Object.assign(process.env, vars);
  process.env['PATH'] = `${vars['EVA_TOOLS_DIR'] ?? ''}:${process.env['PATH'] ?? ''}`;
}

/** Stops the control plane in `dir` and removes its state (never call it on a plane this process did not make). */
export function removeCluster(dir: string): void {
  execFileSync('bash', [script, 'down'], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, EVA_DEV_CLUSTER_DIR: dir } });
}

export default function setup(): (() => void) | undefined {
  console.info(`[cluster-setup] the suite's control plane: ${TEST_CLUSTER.EVA_DEV_CLUSTER_DIR} (NATS ${TEST_CLUSTER.EVA_NATS_PORT}/${TEST_CLUSTER.EVA_NATS_MONITOR_PORT}, ${TEST_CLUSTER.EVA_CONTROL_PLANE})`);
  useCluster(TEST_CLUSTER);
  return oldest ? () => { removeCluster(TEST_CLUSTER.EVA_DEV_CLUSTER_DIR); } : undefined;
}
