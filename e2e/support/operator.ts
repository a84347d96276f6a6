/** Runs the real operator (node src/cli.ts on Node 24) as a child process against the local control plane. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../test/support/tools.ts';

export interface OperatorProcess {
  readonly secretsDir: string;
  readonly pid: number;
  logs(): string;
  /** Resolves once the operator watches (it logged "eva-operator started"). */
  ready(timeoutMs?: number): Promise<void>;
  /** Graceful stop (SIGTERM); resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL: no cleanup of any kind, as a crashed pod. */
  kill(): Promise<void>;
  secretFilesLeft(): string[];
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the cluster test setup did not run`);
  return value;
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => { resolve(code); });
  });
}

/**
 * A tmpfs folder for the operator's secret values files. It outlives the operator (tests look into it
 * after a stop or a crash) and goes when this test process exits, so /dev/shm does not fill up.
 */
function createdSecretsDir(): string {
  const dir = mkdtempSync('/dev/shm/eva-e2e-secrets-');
  process.once('exit', () => {
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** `entry`: the sources (default), or the bundle `npm run build` writes (dist/cli.js, what the image runs). */
export function startOperator(env: Record<string, string> = {}, secretsDir?: string, entry = 'src/cli.ts'): OperatorProcess {
  const dir = secretsDir ?? createdSecretsDir();
  const child = spawn(process.execPath, [join(repoRoot, entry), 'run'], {
    cwd: repoRoot,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '/root',
      KUBECONFIG: requiredEnv('KUBECONFIG'),
      NATS_URL: requiredEnv('NATS_URL'),
      NATS_SYSTEM_CREDS_FILE: requiredEnv('NATS_SYSTEM_CREDS_FILE'),
      NATS_OPERATOR_SIGNING_KEY_FILE: requiredEnv('NATS_OPERATOR_SIGNING_KEY_FILE'),
      OPERATOR_VERSION: '1.0.0',
      HELM_BINARY: join(requiredEnv('EVA_TOOLS_DIR'), 'helm'),
      HELM_SECRETS_DIR: dir,
      INGRESS_CLASS: 'eva-lb',
      METRICS_PORT: '0',
      METRICS_BIND_ADDRESS: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Never outlive the test or benchmark that started it (a crashed runner must not leave an
  // operator claiming tenants on the shared local cluster).
  const killChild = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killChild);
  child.once('exit', () => process.removeListener('exit', killChild));
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    secretsDir: dir,
    pid: child.pid ?? -1,
    logs: () => output,
    ready: async (timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!output.includes('"msg":"eva-operator started"')) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`operator did not start:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    stop: async () => {
      child.kill('SIGTERM');
      return exited(child);
    },
    kill: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
    secretFilesLeft: () => readdirSync(dir),
  };
}

export function removeSecretsDir(op: OperatorProcess): void {
  rmSync(op.secretsDir, { recursive: true, force: true });
}
