/**
 * vitest globalSetup for the `cluster` project: brings up (or reuses) the local control plane and
 * exports its environment to the test workers. It never skips: if the control plane cannot start,
 * every cluster test fails with the reason.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './tools.ts';

const script = join(repoRoot, 'scripts/dev-cluster.sh');

function exportedVariables(envScript: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const name of ['KUBECONFIG', 'NATS_URL', 'NATS_SYSTEM_CREDS_FILE', 'NATS_OPERATOR_SIGNING_KEY_FILE', 'EVA_NATS_MONITOR_URL', 'EVA_TOOLS_DIR']) {
    vars[name] = execFileSync('bash', ['-c', `${envScript}\nprintf %s "$${name}"`], { encoding: 'utf8' });
  }
  return vars;
}

/** A quickstart operator would claim the tenants the tests create: the tests own the cluster. */
function stopQuickstartOperator(): void {
  execFileSync('bash', [script, 'stop-operator'], { stdio: ['ignore', 'inherit', 'inherit'] });
}

export default function setup(): void {
  execFileSync('bash', [script, 'up'], { stdio: ['ignore', 'inherit', 'inherit'] });
  stopQuickstartOperator();
  const envScript = execFileSync('bash', [script, 'env'], { encoding: 'utf8' });
  const vars = exportedVariables(envScript);
  Object.assign(process.env, vars);
  process.env['PATH'] = `${vars['EVA_TOOLS_DIR'] ?? ''}:${process.env['PATH'] ?? ''}`;
}
