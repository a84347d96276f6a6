/**
 * Helm as one long-lived process beside the operator (HELM_SERVER_BINARY, helm-server/ in this
 * repository): the helm SDK, the library the helm CLI and Flux's helm-controller are built from,
 * asked over HTTP on a unix socket in a private folder (mode 0700) of the operator's tmpfs. A release
 * costs no Go start, and discovery of the cluster is kept warm across releases (refreshed when a kind
 * is unknown); helm's release records are the CLI's own.
 *
 * Supervision: started on the first call; when it exits (crash, OOM kill), the calls it was serving
 * fail with HelmFailed and the next call starts a new one; a release it left pending is unlocked by
 * the next pass like after any interrupted helm (steps/modules/release-state.ts). It ends with the operator:
 * `close()`, or, if the operator is killed, when its standard input (held by the operator) closes.
 * Secret values travel as paths of values files on the tmpfs, as with the CLI; the request names no
 * value.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { type BulkheadPolicy, bulkhead } from 'cockatiel';
import type { Logger } from 'pino';
import { Reason } from '../api/reasons.ts';
import { DependencyError } from '../errors.ts';
import {
  asRecord,
  checkedReleaseLabels,
  DEFAULT_GRACE_MS,
  DEFAULT_TIMEOUT_SECONDS,
  type Helm,
  helmEnvironment,
  helmFailure,
  type HistoryEntry,
  type OperationOptions,
  parseHistory,
  parseStatus,
  type ReleaseInfo,
  str,
  type UpgradeInstallOptions,
} from './helm.ts';

export interface HelmServerSettings {
  /** The eva-helm-server binary (config.helmServerBinary). */
  binary: string;
  /** Where its socket's private folder is made (the operator's tmpfs). */
  runtimeDir: string;
  /** KUBECONFIG for the server; unset in a pod, where it uses the in-cluster service account. */
  kubeconfig?: string;
  /** At most this many operations at once (each holds a rendered release in memory). Unlimited when unset. */
  maxConcurrent?: number;
  /** Extra time an operation gets beyond its own timeout before the operator gives up on it. */
  graceMs?: number;
  /** Where the server's warnings go. */
  logger?: Pick<Logger, 'warn' | 'info'>;
  /** Called with every operation and its request before it is sent (metrics count them, tests inspect them). */
  onCall?: (operation: string, request: Readonly<Record<string, unknown>>) => void;
}

interface Running {
  readonly child: ChildProcess;
  readonly socket: string;
  readonly exited: Promise<void>;
}

interface Reply {
  readonly status: number;
  readonly body: string;
}

const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
/** sun_path holds 108 bytes on Linux, the terminating NUL included. */
const MAX_SOCKET_PATH_BYTES = 107;
const NOT_FOUND = 404;
/**
 * Go's garbage collector target for the server: rendering allocates freely, and the collector was about
 * a fifth of its CPU in a profile at the default (100); 200 runs it half as often for more heap (83 MiB
 * resident with 10 releases in flight, against 65-67 at 100; docs/measurements.md). GOGC set for the operator wins.
 */
const SERVER_GOGC = '200';

export class HelmServer implements Helm, AsyncDisposable {
  private readonly settings: HelmServerSettings;
  private readonly requests: BulkheadPolicy;
  private running: Promise<Running> | undefined;
  /** The process `running` is for: an exit clears `running` only if it is still this one's. */
  private child: ChildProcess | undefined;
  private closing = false;
  /** How many times a server was started (1 when it never stopped). */
  starts = 0;

  constructor(settings: HelmServerSettings) {
    this.settings = settings;
    this.requests = bulkhead(settings.maxConcurrent ?? Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY);
  }

  async upgradeInstall(options: UpgradeInstallOptions): Promise<void> {
    const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
    const body = {
      release: options.release,
      namespace: options.namespace,
      chart: resolve(options.chart),
      valuesFiles: options.valuesFiles.map((file) => resolve(file)),
      labels: checkedReleaseLabels(options.labels),
      timeoutSeconds,
      wait: options.wait === true,
      historyMax: options.historyMax ?? 5,
      firstInstall: options.firstInstall === true,
      ...(options.postRenderer === undefined ? {} : { guard: { socket: options.postRenderer.socket, token: options.postRenderer.token } }),
    };
    await this.call('upgrade', options.release, '/v1/upgrade-install', body, timeoutSeconds, options.sensitive);
  }

  async uninstall(release: string, namespace: string, options: OperationOptions = {}): Promise<void> {
    const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
    await this.call('uninstall', release, '/v1/uninstall', { release, namespace, timeoutSeconds, wait: options.wait === true }, timeoutSeconds);
  }

  async history(release: string, namespace: string): Promise<HistoryEntry[]> {
    const reply = await this.call('history', release, '/v1/history', { release, namespace }, 60);
    return reply.status === NOT_FOUND ? [] : parseHistory(reply.body);
  }

  async status(release: string, namespace: string): Promise<ReleaseInfo | undefined> {
    const reply = await this.call('status', release, '/v1/status', { release, namespace }, 60);
    return reply.status === NOT_FOUND ? undefined : parseStatus(reply.body);
  }

  /** Ends the server: its operations in flight are cancelled (their releases recover on the next pass). */
  async close(): Promise<void> {
    this.closing = true;
    const running = await this.running?.catch(() => undefined);
    if (running === undefined) return;
    running.child.stdin?.end();
    const stopped = await Promise.race([running.exited.then(() => true), sleep(STOP_TIMEOUT_MS).then(() => false)]);
    if (!stopped) running.child.kill('SIGKILL');
    await running.exited;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** One operation; 404 (no such release) is an answer, any other failure is thrown as helm's error. */
  private call(operation: string, release: string, path: string, body: Readonly<Record<string, unknown>>, timeoutSeconds: number, sensitive?: readonly string[]): Promise<Reply> {
    return this.requests.execute(async () => {
      this.settings.onCall?.(operation, body);
      const deadlineMs = timeoutSeconds * 1000 + (this.settings.graceMs ?? DEFAULT_GRACE_MS);
      const send = async (): Promise<Reply> => post((await this.start()).socket, path, JSON.stringify(body), deadlineMs);
      const reply = await send()
        .catch((err: unknown) => {
          // Not even connected (a server that died before its exit was seen): nothing was sent, so a new one gets it.
          if (!isNotListening(err)) throw err;
          this.forgetServer();
          return send();
        })
        .catch((err: unknown) => {
          if (err instanceof DeadlineError) throw helmFailure(operation, release, `no answer in ${String(deadlineMs / 1000)} s`, { timedOut: true });
          if (err instanceof DependencyError) throw err;
          throw new DependencyError(Reason.HelmFailed, `helm ${operation} ${release}: the helm server stopped during the operation (${err instanceof Error ? err.message : String(err)})`);
        });
      if (reply.status < 300 || (reply.status === NOT_FOUND && (operation === 'history' || operation === 'status'))) return reply;
      throw helmFailure(operation, release, errorText(reply), { sensitive });
    });
  }

  /** The next call starts a new server; this one is killed if it still runs. */
  private forgetServer(): void {
    this.child?.kill('SIGKILL');
    this.child = undefined;
    this.running = undefined;
  }

  private start(): Promise<Running> {
    if (this.closing) return Promise.reject(new DependencyError(Reason.HelmFailed, 'the helm server is stopping with the operator'));
    this.running ??= this.launch().catch((err: unknown) => {
      this.running = undefined;
      throw new DependencyError(Reason.HelmFailed, `the helm server could not start: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    });
    return this.running;
  }

  private async launch(): Promise<Running> {
    const dir = mkdtempSync(join(this.settings.runtimeDir, 'eva-helm-'));
    chmodSync(dir, 0o700);
    const socket = join(dir, 'helm.sock');
    if (Buffer.byteLength(socket) > MAX_SOCKET_PATH_BYTES) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`the socket path ${socket} is too long for a unix socket (set TMPDIR shorter)`);
    }
    const env = helmEnvironment(this.settings.kubeconfig);
    env['GOGC'] ??= SERVER_GOGC;
    const child = spawn(this.settings.binary, ['--socket', socket], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.starts += 1;
    this.child = child;
    const stderr: string[] = [];
    createInterface({ input: child.stderr }).on('line', (line) => {
      stderr.push(line);
      if (stderr.length > 20) stderr.shift();
      this.settings.logger?.warn({ helmServer: serverLine(line) }, 'helm server');
    });
    const exited = new Promise<void>((resolveExit) => {
      child.once('exit', (code, signal) => {
        rmSync(dir, { recursive: true, force: true });
        if (!this.closing) this.settings.logger?.warn({ code, signal }, 'the helm server exited; the next release starts a new one');
        // Only if it is still the current server: a newer one may already run.
        if (this.child === child) {
          this.child = undefined;
          this.running = undefined;
        }
        resolveExit();
      });
    });
    const current: Promise<Running> = waitReady(child, child.stdout, exited, stderr).then(() => ({ child, socket, exited }));
    // An idle server keeps neither the operator nor a test process alive; it ends when they do (stdin).
    child.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr]) (stream as { unref?: () => void } | null)?.unref?.();
    return current;
  }
}

/** Resolves when the server printed `ready` (its socket listens), rejects when it exited before. */
function waitReady(child: ChildProcess, stdout: Readable, exited: Promise<void>, stderr: readonly string[]): Promise<void> {
  return new Promise<void>((resolveReady, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`not ready in ${String(READY_TIMEOUT_MS / 1000)} s`));
    }, READY_TIMEOUT_MS);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`it exited: ${stderr.map(serverLine).join('; ')}`));
    });
    createInterface({ input: stdout }).once('line', (line) => {
      clearTimeout(timer);
      if (line === 'ready') resolveReady();
      else reject(new Error(`it printed ${JSON.stringify(line.slice(0, 200))} instead of ready`));
    });
  });
}

/** A JSON log line of the server as `message (key=value ...)`; anything else as it came. */
function serverLine(line: string): string {
  try {
    const { msg, level, ...rest } = asRecord(JSON.parse(line) as unknown);
    const details = Object.entries(rest).filter(([key]) => key !== 'time').map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
    return `${str(level)} ${str(msg)}${details.length > 0 ? ` (${details.join(' ')})` : ''}`;
  } catch {
    return line;
  }
}

function errorText(reply: Reply): string {
  try {
    return str(asRecord(JSON.parse(reply.body) as unknown)['error']) || `HTTP ${String(reply.status)}`;
  } catch {
    return `HTTP ${String(reply.status)}: ${reply.body.slice(0, 200)}`;
  }
}

class DeadlineError extends Error {}

/** The socket is gone or nobody listens on it: the request was never sent. */
const isNotListening = (err: unknown): boolean => {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ENOENT' || code === 'ECONNREFUSED';
};

/** POSTs a JSON body over the unix socket; the request is abandoned (and the server's context cancelled) after deadlineMs. */
function post(socketPath: string, path: string, body: string, deadlineMs: number): Promise<Reply> {
  return new Promise<Reply>((resolveReply, reject) => {
    const req = request({ socketPath, path, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        clearTimeout(timer);
        resolveReply({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    const timer = setTimeout(() => req.destroy(new DeadlineError('deadline')), deadlineMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolveSleep) => setTimeout(resolveSleep, ms).unref());
