/**
 * Helm as a CLI process per operation (HELM_BINARY, when no helm server is configured): started with
 * execFile and an argument array (never a shell). Kept for what the SDK process cannot be asked: a
 * helm binary a platform swaps in or wraps (tests record its calls this way). Each call pays a Go
 * start, a chart read and a discovery of the cluster (docs/measurements.md has the figures beside
 * helm-server.ts's).
 *
 * The render guard is helm's post-renderer plugin (helm-plugins/eva-render-guard), a small client of
 * the operator's guard socket, given the socket and token through helm's environment.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { type BulkheadPolicy, bulkhead } from 'cockatiel';
import { Reason } from '../api/reasons.ts';
import { DependencyError, type StepError } from '../errors.ts';
import {
  checkedReleaseLabels,
  DEFAULT_GRACE_MS,
  DEFAULT_TIMEOUT_SECONDS,
  type Helm,
  helmEnvironment,
  helmErrorText,
  helmFailure,
  type HistoryEntry,
  type OperationOptions,
  parseHistory,
  parseStatus,
  type PostRenderer,
  type ReleaseInfo,
  type UpgradeInstallOptions,
} from './helm.ts';

export interface HelmCliSettings {
  /** The helm binary (config.helmBinary; tests: tool('helm')). */
  binary: string;
  /** KUBECONFIG for helm; unset in a pod, where helm uses the in-cluster service account. */
  kubeconfig?: string;
  /** Extra time a helm process gets beyond its own --timeout before it is terminated. */
  processGraceMs?: number;
  /** Called with the arguments of every helm process before it starts (tests count and inspect them). */
  onSpawn?: (args: readonly string[]) => void;
  /**
   * At most this many helm processes at once (the rest wait their turn): each holds about 40 MiB
   * resident, and they share the operator's memory limit. Unlimited when unset.
   */
  maxProcesses?: number;
  /** HELM_PLUGINS for every helm process: where its post-renderer plugins are (the render guard's). */
  pluginsDir?: string;
}

/** The render guard's plugin (helm-plugins/eva-render-guard/plugin.yaml). */
export const RENDER_GUARD_PLUGIN = 'eva-render-guard';

/** The plugin's arguments and environment for one guarded call: the socket and token only, never the policy. */
export function guardPlugin(postRenderer: PostRenderer): { args: string[]; env: Record<string, string> } {
  return {
    args: ['--post-renderer', RENDER_GUARD_PLUGIN],
    env: { EVA_RENDER_GUARD_SOCKET: postRenderer.socket, EVA_RENDER_GUARD_TOKEN: postRenderer.token },
  };
}

/**
 * Go's garbage collector target for helm (the operator itself is Node: GOGC in its environment only
 * ever meant its children). A helm process lives well under a second and peaks near 60 MiB; doubling
 * the heap target cut its CPU time by about a sixth (0.12 -> 0.10 CPU-s per upgrade --install,
 * measured) for ~3 MiB more. GOGC set for the operator wins.
 */
const HELM_GOGC = '200';
// helm status/history output can be large (Helm 4 `status -o json` embeds the live resources).
const MAX_BUFFER = 64 * 1024 * 1024;
/** How long a helm process gets after SIGTERM when the operator stops, before SIGKILL. */
const STOP_GRACE_MS = 5_000;

/** SIGTERM, then SIGKILL after the grace; resolves once the process has exited. */
async function terminate(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => { resolve(); }));
  if (child.exitCode !== null || child.signalCode !== null) return;
  // As execFile's own kill does: without its pipes, a grandchild holding them cannot delay the call's end.
  child.stdout?.destroy();
  child.stderr?.destroy();
  child.kill('SIGTERM');
  const escalate = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(escalate);
}

interface ExecFailure {
  stderr?: string;
  killed?: boolean;
  signal?: string | null;
  code?: number | string;
  message?: string;
}

export class HelmCli implements Helm {
  private readonly settings: HelmCliSettings;
  private readonly env: NodeJS.ProcessEnv;
  private readonly processes: BulkheadPolicy;
  /** The helm processes running now: close() ends them. */
  private readonly running = new Set<ChildProcess>();
  private closed = false;

  constructor(settings: HelmCliSettings) {
    this.settings = settings;
    const env = helmEnvironment(settings.kubeconfig, settings.pluginsDir === undefined ? {} : { HELM_PLUGINS: settings.pluginsDir });
    env['GOGC'] ??= HELM_GOGC;
    this.env = env;
    this.processes = bulkhead(settings.maxProcesses ?? Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY);
  }

  /**
   * Ends the helm processes still running and refuses new ones: called when the operator stops or
   * loses its Lease, so that no helm acts for a replica that no longer may (a process the operator
   * started would outlive its exit). Their releases recover on the next pass, as after any
   * interrupted helm (steps/modules/release-state.ts).
   */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.running].map(terminate));
  }

  async upgradeInstall(options: UpgradeInstallOptions): Promise<void> {
    const timeout = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
    const args = ['upgrade', options.release, options.chart, '--install', '--namespace', options.namespace];
    for (const file of options.valuesFiles) args.push('--values', file);
    const labels = Object.entries(checkedReleaseLabels(options.labels));
    // helm's --labels is one comma-separated string: checked labels hold no comma.
    if (labels.length > 0) args.push('--labels', labels.map(([key, value]) => `${key}=${value}`).join(','));
    args.push('--timeout', `${timeout}s`, '--history-max', String(options.historyMax ?? 5));
    // Helm would fetch and parse the cluster's whole OpenAPI document on every call (two thirds of its
    // CPU time here) to check what the API server checks anyway: server-side apply rejects unknown or
    // mistyped fields with the same message.
    args.push('--disable-openapi-validation');
    // Helm 4: omitting --wait means "hookOnly"; a bare --wait means the kstatus "watcher" strategy.
    if (options.wait === true) args.push('--wait=watcher');
    const guard = options.postRenderer === undefined ? undefined : guardPlugin(options.postRenderer);
    if (guard !== undefined) args.push(...guard.args);
    await this.run(args, timeout, options.sensitive, guard?.env);
  }

  async uninstall(release: string, namespace: string, options: OperationOptions = {}): Promise<void> {
    const timeout = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
    const args = ['uninstall', release, '--namespace', namespace, '--ignore-not-found', '--no-hooks', '--timeout', `${timeout}s`];
    if (options.wait === true) args.push('--wait=watcher');
    await this.run(args, timeout);
  }

  async history(release: string, namespace: string): Promise<HistoryEntry[]> {
    const out = await this.runAllowingNotFound(['history', release, '--namespace', namespace, '--output', 'json']);
    return out === undefined ? [] : parseHistory(out);
  }

  async status(release: string, namespace: string): Promise<ReleaseInfo | undefined> {
    const out = await this.runAllowingNotFound(['status', release, '--namespace', namespace, '--output', 'json']);
    return out === undefined ? undefined : parseStatus(out);
  }

  private async runAllowingNotFound(args: string[]): Promise<string | undefined> {
    try {
      return await this.run(args, 60);
    } catch (err) {
      if (err instanceof DependencyError && /release: not found/.test(err.message)) return undefined;
      throw err;
    }
  }

  private run(args: string[], helmTimeoutSeconds: number, sensitive?: readonly string[], extraEnv?: Readonly<Record<string, string>>): Promise<string> {
    return this.processes.execute(() => this.spawn(args, helmTimeoutSeconds, sensitive, extraEnv));
  }

  private spawn(args: string[], helmTimeoutSeconds: number, sensitive?: readonly string[], extraEnv?: Readonly<Record<string, string>>): Promise<string> {
    this.settings.onSpawn?.(args);
    const timeout = helmTimeoutSeconds * 1000 + (this.settings.processGraceMs ?? DEFAULT_GRACE_MS);
    if (this.closed) return Promise.reject(this.stoppedFailure(args));
    return new Promise((resolve, reject) => {
      const child = execFile(
        this.settings.binary,
        args,
        { env: extraEnv === undefined ? this.env : { ...this.env, ...extraEnv }, timeout, killSignal: 'SIGTERM', maxBuffer: MAX_BUFFER, encoding: 'utf8' },
        (error, stdout, stderr) => {
          this.running.delete(child);
          if (error === null) resolve(stdout);
          else reject(this.closed ? this.stoppedFailure(args) : this.failure(args, error as ExecFailure, stderr, sensitive));
        },
      );
      this.running.add(child);
    });
  }

  private stoppedFailure(args: readonly string[]): StepError {
    return new DependencyError(Reason.HelmFailed, `helm ${args[0] ?? ''} ${args[1] ?? ''}: stopped with the operator`);
  }

  private failure(args: readonly string[], error: ExecFailure, stderr: string, sensitive?: readonly string[]): StepError {
    // Not error.message: Node puts the whole command line there; helm's own words are what matter.
    const text = helmErrorText(stderr) || `helm exited with ${String(error.code ?? error.signal ?? 'an error')}`;
    return helmFailure(args[0] ?? '', args[1] ?? '', text, { sensitive, timedOut: error.killed === true });
  }
}
