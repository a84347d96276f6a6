/**
 * Runs the real operator (node src/cli.ts on Node 24) as a child process against the local control
 * plane, as the chart's ServiceAccount under the chart's RBAC and admission policy (the identity
 * test/support/operator-identity.ts makes; the helm processes it runs inherit it).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { exited, groupExited, killOnExit, signalGroup } from './child-processes.ts';
import { requiredEnv } from './kubectl.ts';
import { suiteOperatorEnv } from './operator-identity.ts';
import { helmServerBinary, repoRoot } from './tools.ts';

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
  /** Resolves with the exit code once the process has exited, for whatever reason. */
  exited(): Promise<number | null>;
  secretFilesLeft(): string[];
}

const secretsDirs = new Set<string>();

/**
 * A tmpfs folder for the operator's secret values files. It outlives the operator (tests look into it
 * after a stop or a crash) and goes when this test process exits (one exit listener for them all, so
 * a benchmark starting many operators adds no listener each), so /dev/shm does not fill up.
 */
function createdSecretsDir(): string {
  const dir = mkdtempSync('/dev/shm/eva-e2e-secrets-');
  if (secretsDirs.size === 0) {
    process.once('exit', () => {
      for (const each of secretsDirs) rmSync(each, { recursive: true, force: true });
    });
  }
  secretsDirs.add(dir);
  return dir;
}

/**
 * The environment of an operator run by the tests: the suite's confined identity (KUBECONFIG as the
 * chart's ServiceAccount, POD_NAMESPACE its release namespace) unless `env` names a KUBECONFIG of its
 * own (the benchmarks: `adminOperatorEnv`), the local NATS, the pinned helm, then `env`.
 */
export function operatorEnv(env: Record<string, string>, secretsDir: string): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '',
    HOME: process.env['HOME'] ?? '/root',
    ...(env['KUBECONFIG'] === undefined ? suiteOperatorEnv() : {}),
    NATS_URL: requiredEnv('NATS_URL'),
    NATS_SYSTEM_CREDS_FILE: requiredEnv('NATS_SYSTEM_CREDS_FILE'),
    NATS_OPERATOR_SIGNING_KEY_FILE: requiredEnv('NATS_OPERATOR_SIGNING_KEY_FILE'),
    OPERATOR_VERSION: '1.0.0',
    HELM_BINARY: join(requiredEnv('EVA_TOOLS_DIR'), 'helm'),
    // The operator's helm as the image runs it; a test that records helm CLI calls sets this to ''.
    HELM_SERVER_BINARY: helmServerBinary(),
    HELM_SECRETS_DIR: secretsDir,
    INGRESS_CLASS: 'eva-lb',
    METRICS_PORT: '0',
    METRICS_BIND_ADDRESS: '127.0.0.1',
    LOG_LEVEL: 'info',
    ...env,
  };
}

/**
 * The admin identity of the cluster setup (Leases and keys in `default`), for the benchmarks only:
 * their figures compare with the earlier runs of docs/measurements.md, made with it. Tests never.
 */
export function adminOperatorEnv(): Record<string, string> {
  return { KUBECONFIG: requiredEnv('KUBECONFIG'), POD_NAMESPACE: 'default' };
}

/**
 * `entry`: the sources (default), or the bundle `npm run build` writes (dist/cli.js, what the image runs).
 * `wrapper`: a command the operator runs under (e.g. `bash scripts/lib/real-node.sh exec --`, into the
 * real node's namespaces); its process group is then signalled, and `exited` waits for all of it.
 */
export function startOperator(env: Record<string, string> = {}, secretsDir?: string, entry = 'src/cli.ts', wrapper: readonly string[] = []): OperatorProcess {
  const dir = secretsDir ?? createdSecretsDir();
  const [command = process.execPath, ...prefix] = [...wrapper, ...(wrapper.length > 0 ? [process.execPath] : [])];
  const child = spawn(command, [...prefix, join(repoRoot, entry), 'run'], {
    cwd: repoRoot,
    env: operatorEnv(env, dir),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: wrapper.length > 0,
  });
  const signal = (s: NodeJS.Signals): void => {
    if (wrapper.length > 0) signalGroup(child, s);
    else child.kill(s);
  };
  const ended = (): Promise<number | null> => (wrapper.length > 0 ? groupExited(child) : exited(child));
  killOnExit(child, () => { signal('SIGKILL'); });
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
      signal('SIGTERM');
      return ended();
    },
    kill: async () => {
      signal('SIGKILL');
      await ended();
    },
    exited: ended,
    secretFilesLeft: () => readdirSync(dir),
  };
}

export function removeSecretsDir(op: OperatorProcess): void {
  rmSync(op.secretsDir, { recursive: true, force: true });
}

export interface SupervisedOperator {
  /** The operator process running now (a new one after each restart). */
  current(): OperatorProcess;
  /** How many times it exited on its own and was started again. */
  readonly restarts: number;
  stop(): Promise<void>;
}

/**
 * The operator as a Deployment runs it: started again (same POD_NAME and secrets folder) whenever it
 * exits on its own, e.g. on a lost lease while the API server stalls, as client-go's elector exits.
 */
export function superviseOperator(env: Record<string, string>): SupervisedOperator {
  let op = startOperator(env);
  let restarts = 0;
  const state = { stopping: false };
  const stopping = (): boolean => state.stopping;
  const watch = (): void => {
    const child = op;
    void child.exited().then(async () => {
      if (stopping() || child !== op) return;
      restarts += 1;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      if (stopping()) return;
      op = startOperator(env, child.secretsDir);
      watch();
    });
  };
  watch();
  return {
    current: () => op,
    get restarts() {
      return restarts;
    },
    stop: async () => {
      state.stopping = true;
      await op.stop();
    },
  };
}
