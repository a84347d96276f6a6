/**
 * Helm releases as the steps see them (`Helm`), whichever way helm runs: the helm SDK in one
 * long-lived process beside the operator (helm-server.ts, the default: no process per release) or the
 * helm CLI, a process per operation (helm-cli.ts). Both keep helm's own release records, so `helm list`
 * and `helm history` work for users. Secret values reach helm only as paths of values files on the
 * operator's tmpfs (secret-values-file.ts), never in an argument. What helm says when it fails is
 * redacted and turned into typed step errors here, one way for both: a chart that does not render or
 * objects the API server rejects are the tenant's input (InputError), everything else a dependency
 * problem (DependencyError).
 *
 * Release state is also readable WITHOUT helm (`readReleases`): helm keeps each revision as a Secret
 * `sh.helm.release.v1.<release>.v<N>` labelled owner=helm, name, status, version plus the release's
 * own labels, so the drift check reads labels and never decodes the payload.
 */
import { Reason } from '../api/reasons.ts';
import type { KubeReads } from './tenant-objects.ts';
import { redactSecrets } from '../log.ts';
import { DependencyError, InputError, type StepError } from '../errors.ts';

/**
 * The render guard a release is piped through before anything is applied (steps/render-guard/render-guard-run.ts):
 * the operator's guard socket and the one-time token registered for this release. Helm applies only
 * what the guard returns, nothing when it refuses or cannot answer.
 */
export interface PostRenderer {
  readonly socket: string;
  readonly token: string;
}

/** What the steps ask of helm. */
export interface Helm {
  /** `helm upgrade --install`: installs the release, or upgrades it (also after a failed first install). */
  upgradeInstall(options: UpgradeInstallOptions): Promise<void>;
  /**
   * Removes the release and its resources; a release that does not exist is not an error. No hooks:
   * the module contract has none, and a delete hook would come from the stored record, not a render.
   */
  uninstall(release: string, namespace: string, options?: OperationOptions): Promise<void>;
  /** The release's revisions, oldest first; empty when the release does not exist. */
  history(release: string, namespace: string): Promise<HistoryEntry[]>;
  /** The latest revision's status, or undefined when the release does not exist. */
  status(release: string, namespace: string): Promise<ReleaseInfo | undefined>;
  /** Ends what runs helm (the operator stops): operations in flight are cancelled. */
  close(): Promise<void>;
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
  /** Pipes the rendered manifests through the render guard; helm applies what it returns, nothing when it refuses. */
  postRenderer?: PostRenderer;
  /**
   * The caller just read helm's records of the release and found none: install without reading
   * helm's history first (a record that appears meanwhile makes the install fail, and it is retried).
   */
  firstInstall?: boolean;
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

export const DEFAULT_TIMEOUT_SECONDS = 300;
/** Extra time helm gets beyond its own timeout before the operator gives up on it. */
export const DEFAULT_GRACE_MS = 30_000;
const MAX_MESSAGE_LENGTH = 2000;
const HELM_STORAGE_LABELS = new Set(['name', 'owner', 'status', 'version', 'createdAt', 'modifiedAt']);
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Environment variables helm may see: what it needs to find the cluster and its own folders, nothing else. */
const PASSED_ENV = ['PATH', 'HOME', 'TMPDIR', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT', 'HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'GOGC', 'GOMEMLIMIT'];
const PASSED_ENV_PREFIXES = ['HELM_', 'XDG_'];

/**
 * The environment of a helm process. Reads process.env itself (not config.ts): what helm inherits
 * from the operator is not the operator's configuration.
 */
export function helmEnvironment(kubeconfig: string | undefined, extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (PASSED_ENV.includes(name.toUpperCase()) || PASSED_ENV_PREFIXES.some((p) => name.startsWith(p))) env[name] = value;
  }
  const config = kubeconfig ?? process.env['KUBECONFIG'];
  if (config !== undefined) env['KUBECONFIG'] = config;
  env['NO_COLOR'] = '1';
  return { ...env, ...extra };
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

/** Release labels must be Kubernetes labels (helm stores them as such): checked before helm sees them. */
export function checkedReleaseLabels(labels: Readonly<Record<string, string>> = {}): Readonly<Record<string, string>> {
  for (const [key, value] of Object.entries(labels)) {
    if (!LABEL_KEY.test(key) || !LABEL_VALUE.test(value) || value.length > 63) throw new Error(`invalid release label ${key}=${value}`);
  }
  return labels;
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

/** A failure either way helm ran: helm's own words, scrubbed, classified, named by operation and release. */
export function helmFailure(operation: string, release: string, text: string, options: { sensitive?: readonly string[] | undefined; timedOut?: boolean } = {}): StepError {
  const err = classifyHelmFailure(scrubHelmText(text, options.sensitive), options.timedOut === true);
  err.message = `helm ${operation} ${release}: ${err.message}`;
  return err;
}
