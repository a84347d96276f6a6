/**
 * Operator configuration from the environment, validated once at start. Every bad value is reported
 * at once, each with the variable's name, so a misconfigured Deployment fails with a useful message.
 * The only module that reads configuration from the environment (src/layering.test.ts checks it;
 * adapters/helm.ts also reads process.env, only to hand part of it down to helm):
 * the sections' readers live in config/ (NATS, NetworkPolicy, Ingress), the reader itself in
 * config/env-reader.ts.
 */
import { existsSync, readFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SEMVER_PATTERN } from './api/constants.ts';
import { type Env, EnvReader } from './config/env-reader.ts';
import { type IngressSettings, readIngressAnnotations, readIngressTls } from './config/ingress.ts';
import { type NatsSettings, readNats } from './config/nats.ts';
import { type NetworkPolicySettings, readNetworkPolicy } from './config/network-policy.ts';
import { type PreflightSettings, readPreflight } from './config/preflight.ts';

export type { Labels } from './config/env-reader.ts';
export { type IngressSettings, type IngressTls, ISSUER_ANNOTATION } from './config/ingress.ts';
export type { NatsSettings } from './config/nats.ts';
export type { NetworkPolicySettings } from './config/network-policy.ts';
export type { PreflightSettings } from './config/preflight.ts';

/** Where helm finds the render guard's plugin and the operator serves its check (steps/render-guard/render-guard-server.ts). */
export interface RenderGuardSettings {
  /** HELM_PLUGINS for the operator's helm: holds the post-renderer plugin eva-render-guard. */
  pluginsDir: string;
  /** Where the guard's private socket folder is made: TMPDIR (the chart mounts /tmp writable). */
  runtimeDir: string;
}

export interface OperatorConfig {
  operatorVersion: string;
  nats: NatsSettings;
  networkPolicy: NetworkPolicySettings;
  chartBasePath: string;
  seedsBasePath: string;
  imagesFile: string;
  helmBinary: string;
  /** The helm SDK process (HELM_SERVER_BINARY): when set, releases go to it, not to a helm process each. */
  helmServerBinary: string | undefined;
  renderGuard: RenderGuardSettings;
  helmSecretsDir: string;
  /** Helm operations at once (HELM_CONCURRENCY): they share the operator's memory limit. */
  helmConcurrency: number;
  allowNonTmpfsSecrets: boolean;
  baseDomain: string;
  ingressClass?: string;
  ingressReadyOnCreate: boolean;
  ingress: IngressSettings;
  metricsPort: number;
  metricsBindAddress: string;
  concurrency: number;
  driftIntervalSeconds: number;
  /** Client-side rate limit of the operator's own API requests (helm's are its own). */
  kubeApi: { qps: number; burst: number };
  moduleOtelEndpoint?: string;
  airGapRegistry?: string;
  maxWave: number;
  /** The shard this Deployment serves (label eva.aidonow.com/shard); undefined: the default shard. */
  shard?: string;
  logLevel: string;
  /** Leader election: the Lease lives here; identity is the pod name. */
  leaseNamespace: string;
  identity: string;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

/** The namespace a pod runs in, from its service account mount (absent outside a cluster). */
function inClusterNamespace(): string | undefined {
  const file = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
}

/** Where bundled files live: the image's fixed path, or the checkout this code runs from. */
function bundled(imagePath: string, checkoutRelative: string): string {
  if (existsSync(imagePath)) return imagePath;
  return fileURLToPath(new URL(`../${checkoutRelative}`, import.meta.url));
}

/** The plugin bundled beside the code that runs (the image's /app/helm-plugins, or the checkout's). */
export function renderGuardSettings(): RenderGuardSettings {
  return { pluginsDir: bundled('/app/helm-plugins', 'helm-plugins'), runtimeDir: tmpdir() };
}

/** Where the charts are: the module charts under modules/, and the operator chart's Chart.yaml under eva-operator/. */
const chartBasePathOf = (env: EnvReader): string => env.string('CHART_BASE_PATH', bundled('/charts', 'charts'));

/** A non-empty label value (the default shard is SHARD unset, not empty). */
const SHARD_PATTERN = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** What `eva-operator version` prints: OPERATOR_VERSION as set, without the rest of the operator's configuration. */
/** OPERATOR_VERSION (the chart sets it), else the version this build was made as: its package.json, next to src/ or dist/. */
export function operatorVersionOf(environment: Env = process.env): string {
  return environment['OPERATOR_VERSION'] ?? builtVersion();
}

function builtVersion(): string {
  try {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The helm binary the release subcommands run (HELM, as the scripts set it; the operator's own is HELM_BINARY). */
export function releaseHelmBinary(environment: Env = process.env): string {
  return environment['HELM'] ?? 'helm';
}

/**
 * What `eva-operator preflight` checks against: the environment with the command's flags laid over it
 * (`overrides`, as the variables they stand for), read by the operator's own readers (config/preflight.ts).
 */
export function preflightSettingsOf(overrides: Env, environment: Env = process.env): PreflightSettings {
  const env = new EnvReader({ ...environment, ...overrides });
  const settings = readPreflight(env, join(chartBasePathOf(env), 'eva-operator', 'Chart.yaml'));
  if (env.problems.length > 0) throw new ConfigError(env.problems);
  return settings;
}

export function loadConfig(environment: Env = process.env): OperatorConfig {
  const env = new EnvReader(environment);
  const operatorVersion = env.required('OPERATOR_VERSION', 'the semver of this operator build, e.g. 1.0.0');
  env.matching('OPERATOR_VERSION', operatorVersion, new RegExp(SEMVER_PATTERN), 'a semantic version like 1.2.3');
  const baseDomain = env.string('EVA_BASE_DOMAIN', 'tenants.eva.local');
  env.matching('EVA_BASE_DOMAIN', baseDomain, /^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a DNS name');

  const nats = readNats(env);
  const leaseNamespace = env.string('POD_NAMESPACE', inClusterNamespace() ?? 'default');
  const config: OperatorConfig = {
    operatorVersion,
    nats,
    networkPolicy: readNetworkPolicy(env, nats, leaseNamespace),
    chartBasePath: chartBasePathOf(env),
    seedsBasePath: env.string('SEEDS_BASE_PATH', bundled('/seeds', 'seeds')),
    imagesFile: env.string('IMAGES_FILE', bundled('/etc/eva-operator/images.txt', 'images.txt')),
    helmBinary: env.string('HELM_BINARY', 'helm'),
    helmServerBinary: env.optional('HELM_SERVER_BINARY'),
    renderGuard: renderGuardSettings(),
    helmSecretsDir: env.string('HELM_SECRETS_DIR', '/run/helm-secrets'),
    helmConcurrency: env.integer('HELM_CONCURRENCY', 4, 1, 64),
    allowNonTmpfsSecrets: env.boolean('HELM_SECRETS_ALLOW_NON_TMPFS'),
    baseDomain,
    ingressReadyOnCreate: env.boolean('INGRESS_READY_ON_CREATE'),
    ingress: { tls: readIngressTls(env), annotations: readIngressAnnotations(env) },
    metricsPort: env.integer('METRICS_PORT', 8080, 0, 65535),
    metricsBindAddress: env.string('METRICS_BIND_ADDRESS', '0.0.0.0'),
    concurrency: env.integer('RECONCILE_CONCURRENCY', 8, 1, 256),
    driftIntervalSeconds: env.integer('DRIFT_INTERVAL_SECONDS', 300, 1, 86_400),
    // Measured (docs/measurements.md): 50 QPS (Flux's default) doubles the 100-tenant run; 200 does not slow it.
    kubeApi: { qps: env.integer('KUBE_API_QPS', 200, 1, 10_000), burst: env.integer('KUBE_API_BURST', 400, 1, 100_000) },
    maxWave: env.integer('MAX_WAVE', 3, 0, 3),
    logLevel: env.string('LOG_LEVEL', 'info'),
    leaseNamespace,
    identity: env.string('POD_NAME', `${hostname()}-${process.pid}`),
  };
  const shard = env.optional('SHARD');
  if (shard !== undefined) {
    env.matching('SHARD', shard, SHARD_PATTERN, 'a label value: 1-63 letters, digits, - _ . (unset for the default shard)');
    config.shard = shard;
  }
  const ingressClass = env.optional('INGRESS_CLASS');
  if (ingressClass !== undefined) config.ingressClass = ingressClass;
  const otel = env.optional('MODULE_OTEL_ENDPOINT');
  if (otel !== undefined) config.moduleOtelEndpoint = otel;
  const registry = env.optional('AIRGAP_REGISTRY');
  if (registry !== undefined) config.airGapRegistry = registry;
  if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal'].includes(config.logLevel)) {
    env.problems.push(`LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, got "${config.logLevel}"`);
  }
  if (env.problems.length > 0) throw new ConfigError(env.problems);
  return config;
}
