/**
 * vitest globalSetup for the `cluster` project: brings up (or reuses) the test suite's OWN local
 * control plane and exports its environment to the test workers. It never skips: if the control
 * plane cannot start, every cluster test fails with the reason.
 *
 * Own state folder and NATS ports (TEST_CLUSTER below): a developer's dev cluster, its tenants and
 * an operator running against it (quickstart's) are never touched by the tests. The test plane is
 * kept between runs (a warm `up` takes seconds); `EVA_DEV_CLUSTER_DIR=<dir> scripts/dev-cluster.sh
 * down` removes it.
 */
import { execFileSync } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './tools.ts';

const script = join(repoRoot, 'scripts/dev-cluster.sh');

/** Where the suite's control plane lives, and its NATS ports (the dev cluster's are 14222/18222). */
export const TEST_CLUSTER = {
  EVA_DEV_CLUSTER_DIR: process.env['EVA_TEST_CLUSTER_DIR'] ?? join(process.env['XDG_STATE_HOME'] ?? join(homedir(), '.local/state'), 'eva-operator/test-cluster'),
  EVA_NATS_PORT: process.env['EVA_TEST_NATS_PORT'] ?? '24222',
  EVA_NATS_MONITOR_PORT: process.env['EVA_TEST_NATS_MONITOR_PORT'] ?? '28222',
} as const;

const EXPORTED = ['KUBECONFIG', 'NATS_URL', 'NATS_SYSTEM_CREDS_FILE', 'NATS_OPERATOR_SIGNING_KEY_FILE', 'EVA_NATS_MONITOR_URL', 'EVA_TOOLS_DIR'] as const;

function exportedVariables(envScript: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const name of EXPORTED) {
    vars[name] = execFileSync('bash', ['-c', `${envScript}\nprintf %s "$${name}"`], { encoding: 'utf8' });
  }
  return vars;
}

export default function setup(): void {
  // Children (quickstart.sh, dev-cluster.sh from tests) find the same plane through these.
  Object.assign(process.env, TEST_CLUSTER);
  execFileSync('bash', [script, 'up'], { stdio: ['ignore', 'inherit', 'inherit'] });
  const envScript = execFileSync('bash', [script, 'env'], { encoding: 'utf8' });
  const vars = exportedVariables(envScript);
  Object.assign(process.env, vars);
  process.env['PATH'] = `${vars['EVA_TOOLS_DIR'] ?? ''}:${process.env['PATH'] ?? ''}`;
}
