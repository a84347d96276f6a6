/**
 * A thin wrapper over the real helm CLI (Helm 4). One process per operation, started with execFile
 * and an argument array (never a shell). Secret values never appear in arguments: they reach helm only
 * as `--values <file>` (a tmpfs file, see secret-values-file.ts). Helm's stderr is redacted and turned
 * into typed step errors: a chart that does not render or objects the API server rejects are the
 * tenant's input (InputError); everything else is a dependency problem (DependencyError).
 *
 * Release state is also readable WITHOUT starting helm (`readReleases`): helm keeps each revision as a
 * Secret `sh.helm.release.v1.<release>.v<N>` labelled owner=helm, name, status, version plus the
 * release's own labels (`--labels`), so the drift check reads labels and never decodes the payload.
 */
import { Reason } from '../api/reasons.ts';
import { execFile } from 'node:child_process';
import { type BulkheadPolicy, bulkhead } from 'cockatiel';
import type { KubeReads } from './tenant-objects.ts';
import { redactSecrets } from '../log.ts';
import { DependencyError, InputError, type StepError } from '../errors.ts';

export interface HelmSettings {
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

/** A Helm 4 post-renderer plugin (type postrenderer/v1) and the environment it gets for this call. */
export interface PostRenderer {
  plugin: string;
  /** Added to helm's environment for this call only; helm passes its environment to the plugin. */
  env: Readonly<Record<string, string>>;
}

export interface UpgradeInstallOptions {
  release: string;
  namespace: string;
  /** A chart folder or archive. */
  chart: string;
  /** Applied in order; later files win. Secret values only ever come in here. */
  valuesFiles: readonly string[];
  /** Release labels (stored on helm's release Secret, readable by readReleases). */
  labels?: Readonly<Record<string, string>>;
  timeoutSeconds?: number;
  /** `--wait` (watcher strategy): return only when the resources are ready. */
  wait?: boolean;
  /** Revisions kept per release. */
  historyMax?: number;
  /** Values scrubbed from helm's messages, on top of the shape-based redaction (e.g. generated passwords). */
  sensitive?: readonly string[];
  /** Pipes the rendered manifests through this plugin; helm applies what it prints, nothing when it fails. */
  postRenderer?: PostRenderer;
}

export interface OperationOptions {
  timeoutSeconds?: number;
  wait?: boolean;
}

export interface HistoryEntry {
  revision: number;
  status: string;
  chart: string;
  appVersion: string;
  description: string;
}

export interface ReleaseInfo {
  name: string;
  namespace: string;
  version: number;
  status: string;
  description: string;
}

/** The latest revision of a release, from helm's storage Secret labels. */
export interface ReleaseRecord {
  name: string;
  version: number;
  status: string;
  /** The release's own labels (set with --labels); helm's bookkeeping labels are left out. */
  labels: Record<string, string>;
}

const DEFAULT_TIMEOUT_SECONDS = 300;
const DEFAULT_GRACE_MS = 30_000;
const MAX_MESSAGE_LENGTH = 2000;
// helm status/history output can be large (Helm 4 `status -o json` embeds the live resources).
const MAX_BUFFER = 64 * 1024 * 1024;
const HELM_STORAGE_LABELS = new Set(['name', 'owner', 'status', 'version', 'createdAt', 'modifiedAt']);
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Environment variables helm may see: what it needs to find the cluster and its own folders, nothing else. */
const PASSED_ENV = ['PATH', 'HOME', 'TMPDIR', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'GOGC', 'GOMEMLIMIT'];
/**
 * Go's garbage collector target for helm (the operator itself is Node: GOGC in its environment only
 * ever meant its children). A helm process lives well under a second and peaks near 60 MiB; doubling
 * the heap target cut its CPU time by about a sixth (0.12 -> 0.10 CPU-s per upgrade --install,
 * measured) for ~3 MiB more. GOGC set for the operator wins.
 */
const HELM_GOGC = '200';
const PASSED_ENV_PREFIXES = ['HELM_', 'XDG_'];

/** Reads process.env itself (not config.ts): what helm inherits from the operator is not the operator's configuration. */
function helmEnvironment(kubeconfig: string | undefined, pluginsDir: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (PASSED_ENV.includes(name.toUpperCase()) || PASSED_ENV_PREFIXES.some((p) => name.startsWith(p))) env[name] = value;
  }
  const config = kubeconfig ?? process.env['KUBECONFIG'];
  if (config !== undefined) env['KUBECONFIG'] = config;
  if (pluginsDir !== undefined) env['HELM_PLUGINS'] = pluginsDir;
  env['GOGC'] ??= HELM_GOGC;
  env['NO_COLOR'] = '1';
  return env;
}

/** The useful part of helm's stderr: its `Error:` text, without slog lines and the "UPGRADE FAILED" prefix. */
export function helmErrorText(stderr: string): string {
  const lines = stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('level='));
  const start = lines.findIndex((line) => line.startsWith('Error:'));
  const text = (start === -1 ? lines : lines.slice(start)).join('\n');
  return text
    .replace(/^Error:\s*/, '')
    .replace(/^(UPGRADE FAILED|INSTALLATION FAILED|ROLLBACK FAILED|uninstall):\s*/, '')
    .trim();
}

/** Removes secrets from helm's text: the caller's known values, then the shapes src/log.ts knows. */
export function scrubHelmText(text: string, sensitive: readonly string[] = []): string {
  let scrubbed = text;
  // Very short values would mangle the message and are no secret worth the name; longest first.
  for (const value of [...sensitive].filter((v) => v.length >= 4).sort((a, b) => b.length - a.length)) {
    scrubbed = scrubbed.split(value).join('[REDACTED]');
  }
  scrubbed = redactSecrets(scrubbed);
  return scrubbed.length > MAX_MESSAGE_LENGTH ? `${scrubbed.slice(0, MAX_MESSAGE_LENGTH)}…` : scrubbed;
}

const RENDER_FAILURES = [/execution error at \(/, /\btemplate: /, /parse error/i, /YAML parse error/, /unable to build kubernetes objects/, /error converting YAML to JSON/, /cannot load Chart\.yaml/];
const REJECTED_VALUES = [
  /values don't meet the specifications of the schema/,
  / is invalid: /,
  /failed to convert new object/,
  /unable to convert unstructured object/,
  /field not declared in schema/,
];

/** Routes a helm failure on what helm said (already scrubbed). Pure, so every shape is unit-tested. */
export function classifyHelmFailure(message: string, timedOut = false): StepError {
  if (timedOut) return new DependencyError(Reason.HelmTimeout, `helm did not finish in time: ${message}`);
  if (/exceeded quota|failed quota/.test(message)) return new InputError(Reason.QuotaExceeded, message);
  if (REJECTED_VALUES.some((p) => p.test(message))) return new InputError(Reason.InvalidHelmValues, message);
  if (RENDER_FAILURES.some((p) => p.test(message))) return new InputError(Reason.ChartRenderFailed, message);
  if (message.includes('another operation (install/upgrade/rollback) is in progress')) {
    return new DependencyError(Reason.ReleasePending, message);
  }
  if (/context deadline exceeded|timed out waiting/.test(message)) return new DependencyError(Reason.HelmTimeout, message);
  if (/Kubernetes cluster unreachable|connection refused|no such host/.test(message)) {
    return new DependencyError(Reason.KubernetesUnreachable, message);
  }
  return new DependencyError(Reason.HelmFailed, message);
}

function labelsArgument(labels: Readonly<Record<string, string>>): string {
  return Object.entries(labels)
    .map(([key, value]) => {
      // Validated here because helm's --labels is one comma-separated string: a comma would split it.
      if (!LABEL_KEY.test(key) || !LABEL_VALUE.test(value) || value.length > 63) {
        throw new Error(`invalid release label ${key}=${value}`);
      }
      return `${key}=${value}`;
    })
    .join(',');
}

export function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

export const str = (value: unknown): string => (typeof value === 'string' ? value : '');
export const num = (value: unknown): number => (typeof value === 'number' ? value : 0);

export function parseHistory(json: string): HistoryEntry[] {
  const parsed: unknown = JSON.parse(json);
  if (!Array.isArray(parsed)) throw new DependencyError(Reason.HelmFailed, 'helm history did not print a JSON list');
  return parsed.map((item) => {
    const entry = asRecord(item);
    return {
      revision: num(entry['revision']),
      status: str(entry['status']),
      chart: str(entry['chart']),
      appVersion: str(entry['app_version']),
      description: str(entry['description']),
    };
  });
}

/** Reads only identity and status: the rest of `helm status -o json` holds values and live Secrets. */
export function parseStatus(json: string): ReleaseInfo {
  const release = asRecord(JSON.parse(json) as unknown);
  const info = asRecord(release['info']);
  return {
    name: str(release['name']),
    namespace: str(release['namespace']),
    version: num(release['version']),
    status: str(info['status']),
    description: str(info['description']),
  };
}

interface ExecFailure {
  stderr?: string;
  killed?: boolean;
  signal?: string | null;
  code?: number | string;
  message?: string;
}

export class Helm {
  private readonly settings: HelmSettings;
  private readonly env: NodeJS.ProcessEnv;
  private readonly processes: BulkheadPolicy;

  constructor(settings: HelmSettings) {
    this.settings = settings;
    this.env = helmEnvironment(settings.kubeconfig, settings.pluginsDir);
    this.processes = bulkhead(settings.maxProcesses ?? Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY);
  }

  /** `helm upgrade --install`: installs the release, or upgrades it (also after a failed first install). */
  async upgradeInstall(options: UpgradeInstallOptions): Promise<void> {
    const timeout = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
    const args = ['upgrade', options.release, options.chart, '--install', '--namespace', options.namespace];
    for (const file of options.valuesFiles) args.push('--values', file);
    if (options.labels !== undefined && Object.keys(options.labels).length > 0) args.push('--labels', labelsArgument(options.labels));
    args.push('--timeout', `${timeout}s`, '--history-max', String(options.historyMax ?? 5));
    // Helm would fetch and parse the cluster's whole OpenAPI document on every call (two thirds of its
    // CPU time here) to check what the API server checks anyway: server-side apply rejects unknown or
    // mistyped fields with the same message.
    args.push('--disable-openapi-validation');
    // Helm 4: omitting --wait means "hookOnly"; a bare --wait means the kstatus "watcher" strategy.
    if (options.wait === true) args.push('--wait=watcher');
    if (options.postRenderer !== undefined) args.push('--post-renderer', options.postRenderer.plugin);
    await this.run(args, timeout, options.sensitive, options.postRenderer?.env);
  }

  /**
   * Removes the release and its resources; a release that does not exist is not an error. No hooks:
   * the module contract has none, and a delete hook would come from the stored record, not a render.
   */
  async uninstall(release: string, namespace: string, options: OperationOptions = {}): Promise<void> {
    const timeout = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
    const args = ['uninstall', release, '--namespace', namespace, '--ignore-not-found', '--no-hooks', '--timeout', `${timeout}s`];
    if (options.wait === true) args.push('--wait=watcher');
    await this.run(args, timeout);
  }

  /** The release's revisions, oldest first; empty when the release does not exist. */
  async history(release: string, namespace: string): Promise<HistoryEntry[]> {
    const out = await this.runAllowingNotFound(['history', release, '--namespace', namespace, '--output', 'json']);
    return out === undefined ? [] : parseHistory(out);
  }

  /** The latest revision's status, or undefined when the release does not exist. */
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
    return new Promise((resolve, reject) => {
      execFile(
        this.settings.binary,
        args,
        { env: extraEnv === undefined ? this.env : { ...this.env, ...extraEnv }, timeout, killSignal: 'SIGTERM', maxBuffer: MAX_BUFFER, encoding: 'utf8' },
        (error, stdout, stderr) => {
          if (error === null) {
            resolve(stdout);
            return;
          }
          reject(this.failure(args, error as ExecFailure, stderr, sensitive));
        },
      );
    });
  }

  private failure(args: readonly string[], error: ExecFailure, stderr: string, sensitive?: readonly string[]): StepError {
    // Not error.message: Node puts the whole command line there; helm's own words are what matter.
    const text = helmErrorText(stderr) || `helm exited with ${String(error.code ?? error.signal ?? 'an error')}`;
    const message = scrubHelmText(text, sensitive);
    const err = classifyHelmFailure(message, error.killed === true);
    // Only the subcommand and release: the values files' paths are harmless, but keep errors short.
    err.message = `helm ${args.slice(0, 2).join(' ')}: ${err.message}`;
    return err;
  }
}

/** The latest revision of every helm release in the namespace, from storage labels; no helm process. */
export async function readReleases(reads: Pick<KubeReads, 'list'>, namespace: string): Promise<ReleaseRecord[]> {
  const latest = new Map<string, ReleaseRecord>();
  for (const item of await reads.list('HelmRelease', namespace)) {
    const labels = item.metadata?.labels ?? {};
    const name = labels['name'];
    const version = Number(labels['version']);
    if (name === undefined || !Number.isInteger(version)) continue;
    const seen = latest.get(name);
    if (seen !== undefined && seen.version >= version) continue;
    const own = Object.fromEntries(Object.entries(labels).filter(([key]) => !HELM_STORAGE_LABELS.has(key)));
    latest.set(name, { name, version, status: labels['status'] ?? 'unknown', labels: own });
  }
  return [...latest.values()].sort((a, b) => a.name.localeCompare(b.name));
}
