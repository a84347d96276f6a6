/** kubectl as a user runs it, against the local control plane (pinned binary, same minor as the server). */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { API_VERSION, KIND } from '../../src/api/constants.ts';

export interface CommandResult {
  status: number;
  stdout: string;
  stderr: string;
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the cluster test setup did not run`);
  return value;
}

export function kubectl(args: readonly string[], input?: string): CommandResult {
  const result = spawnSync(join(requiredEnv('EVA_TOOLS_DIR'), 'kubectl'), args, {
    encoding: 'utf8',
    input,
    env: { ...process.env, KUBECONFIG: requiredEnv('KUBECONFIG') },
    timeout: 120_000,
    // `kubectl get <every resource> -A -o json` of a whole cluster is several MiB (the default is 1 MiB).
    maxBuffer: 256 * 1024 * 1024,
  });
  if (result.error) throw result.error;
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** Runs kubectl and throws with its stderr when it fails. */
export function kubectlOk(args: readonly string[], input?: string): string {
  const result = kubectl(args, input);
  if (result.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout;
}

/** Polls until `check` returns (or resolves to) true or the timeout passes; returns whether it became true. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 60_000, intervalMs = 250): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return check();
}

/** An EvaTenant manifest as a user writes it (no uid, no defaults), for `kubectl apply -f -`. */
export function tenantManifest(name: string, spec: Record<string, unknown>, labels?: Record<string, string>): string {
  return JSON.stringify({ apiVersion: API_VERSION, kind: KIND, metadata: { name, ...(labels ? { labels } : {}) }, spec });
}
