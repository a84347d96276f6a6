/**
 * The real node of e2e/real-node.test.ts (scripts/lib/real-node.sh): its API server, registry and NATS
 * answer only inside the node's network namespace, so every command here runs through
 * `real-node.sh exec` (nsenter into the node's namespaces, the pinned kubectl and helm on PATH).
 */
import { spawn, spawnSync } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../test/support/tools.ts';

/** The test's own node: never the default dev cluster other engineers use. */
export const realNodeState = process.env.EVA_REAL_NODE_E2E_DIR ?? join(process.env.XDG_STATE_HOME ?? join(homedir(), '.local/state'), 'eva-operator/real-node-e2e');
export const REGISTRY = '10.254.0.1:5000';
export const NATS_URL = 'nats://10.254.0.1:4222';

const script = join(repoRoot, 'scripts/lib/real-node.sh');
const env = (): NodeJS.ProcessEnv => ({ ...process.env, EVA_DEV_CLUSTER_DIR: realNodeState });

export interface Result {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs a command inside the node (cwd: the checkout). */
export function inNode(args: readonly string[], input?: string, timeoutMs = 120_000): Result {
  const result = spawnSync('bash', [script, 'exec', '--', ...args], { cwd: repoRoot, env: env(), input, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw result.error;
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

export function inNodeOk(args: readonly string[], input?: string, timeoutMs?: number): string {
  const result = inNode(args, input, timeoutMs);
  if (result.status !== 0) throw new Error(`${args.join(' ')} failed (${result.status}): ${result.stderr}${result.stdout}`);
  return result.stdout;
}

export const kube = (args: readonly string[], input?: string): Result => inNode(['kubectl', ...args], input);
export const kubeOk = (args: readonly string[], input?: string): string => inNodeOk(['kubectl', ...args], input);
export const kubeJson = (args: readonly string[]): unknown => JSON.parse(kubeOk([...args, '-o', 'json']));

/** A script of the checkout (real-node.sh up/down, build-image.sh), its progress echoed to stderr; seconds taken. */
export function runScript(path: string, args: readonly string[], timeoutMs: number): Promise<number> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(repoRoot, path), ...args], { cwd: repoRoot, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    let output = '';
    const echo = (chunk: Buffer): void => {
      output += chunk.toString();
      process.stderr.write(chunk);
    };
    child.stdout.on('data', echo);
    child.stderr.on('data', echo);
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      if (status === 0) resolve((Date.now() - started) / 1000);
      else reject(new Error(`${path} ${args.join(' ')} exited with ${status}:\n${output.slice(-4000)}`));
    });
  });
}

export async function until<T>(what: string, check: () => T | undefined, timeoutMs: number, intervalMs = 1_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface PodView {
  metadata: { name: string; namespace: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: { containers: { image: string }[] };
  status: {
    phase?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { name: string; ready: boolean; imageID: string; state?: { waiting?: { reason?: string; message?: string } } }[];
  };
}

export const podReady = (p: PodView): boolean => p.status.phase === 'Running' && (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

export function pods(namespace: string, selector?: string): PodView[] {
  return (kubeJson(['get', 'pods', '-n', namespace, ...(selector ? ['-l', selector] : [])]) as { items: PodView[] }).items;
}
