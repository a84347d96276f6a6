/**
 * Operator configuration from the environment, validated once at start. Every bad value is reported
 * at once, each with the variable's name, so a misconfigured Deployment fails with a useful message.
 */
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { SEMVER_PATTERN } from './api/constants.ts';

export interface NatsSettings {
  url: string;
  user?: string;
  password?: string;
  token?: string;
}

export interface OperatorConfig {
  operatorVersion: string;
  nats: NatsSettings;
  chartBasePath: string;
  seedsBasePath: string;
  imagesFile: string;
  helmBinary: string;
  helmSecretsDir: string;
  allowNonTmpfsSecrets: boolean;
  baseDomain: string;
  ingressClass?: string;
  ingressReadyOnCreate: boolean;
  metricsPort: number;
  metricsBindAddress: string;
  concurrency: number;
  driftIntervalSeconds: number;
  moduleOtelEndpoint?: string;
  airGapRegistry?: string;
  maxWave: number;
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

type Env = Readonly<Record<string, string | undefined>>;

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

class EnvReader {
  readonly problems: string[] = [];
  private readonly env: Env;
  constructor(env: Env) {
    this.env = env;
  }

  string(name: string, fallback: string): string {
    return this.optional(name) ?? fallback;
  }

  optional(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  required(name: string, hint: string): string {
    const value = this.optional(name);
    if (value === undefined) this.problems.push(`${name} is required (${hint})`);
    return value ?? '';
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  }

  boolean(name: string): boolean {
    const raw = this.optional(name)?.toLowerCase();
    if (raw === undefined || raw === 'false' || raw === '0') return false;
    if (raw === 'true' || raw === '1') return true;
    this.problems.push(`${name} must be true or false, got "${raw}"`);
    return false;
  }

  matching(name: string, value: string, pattern: RegExp, expected: string): void {
    if (value !== '' && !pattern.test(value)) this.problems.push(`${name} must be ${expected}, got "${value}"`);
  }
}

function readNats(env: EnvReader): NatsSettings {
  const url = env.required('NATS_URL', 'e.g. nats://nats.eva-system:4222');
  env.matching('NATS_URL', url, /^(nats|tls|wss?):\/\/[^\s/@]+\/?$/, 'a nats:// URL without credentials');
  const nats: NatsSettings = { url };
  const user = env.optional('NATS_USER');
  const password = env.optional('NATS_PASSWORD');
  const token = env.optional('NATS_TOKEN');
  if (user !== undefined) nats.user = user;
  if (password !== undefined) nats.password = password;
  if (token !== undefined) nats.token = token;
  return nats;
}

export function loadConfig(environment: Env = process.env): OperatorConfig {
  const env = new EnvReader(environment);
  const operatorVersion = env.required('OPERATOR_VERSION', 'the semver of this operator build, e.g. 1.0.0');
  env.matching('OPERATOR_VERSION', operatorVersion, new RegExp(SEMVER_PATTERN), 'a semantic version like 1.2.3');
  const baseDomain = env.string('EVA_BASE_DOMAIN', 'tenants.eva.local');
  env.matching('EVA_BASE_DOMAIN', baseDomain, /^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a DNS name');

  const config: OperatorConfig = {
    operatorVersion,
    nats: readNats(env),
    chartBasePath: env.string('CHART_BASE_PATH', bundled('/charts', 'charts')),
    seedsBasePath: env.string('SEEDS_BASE_PATH', bundled('/seeds', 'seeds')),
    imagesFile: env.string('IMAGES_FILE', bundled('/etc/eva-operator/images.txt', 'images.txt')),
    helmBinary: env.string('HELM_BINARY', 'helm'),
    helmSecretsDir: env.string('HELM_SECRETS_DIR', '/run/helm-secrets'),
    allowNonTmpfsSecrets: env.boolean('HELM_SECRETS_ALLOW_NON_TMPFS'),
    baseDomain,
    ingressReadyOnCreate: env.boolean('INGRESS_READY_ON_CREATE'),
    metricsPort: env.integer('METRICS_PORT', 8080, 0, 65535),
    metricsBindAddress: env.string('METRICS_BIND_ADDRESS', '0.0.0.0'),
    concurrency: env.integer('RECONCILE_CONCURRENCY', 8, 1, 256),
    driftIntervalSeconds: env.integer('DRIFT_INTERVAL_SECONDS', 300, 1, 86_400),
    maxWave: env.integer('MAX_WAVE', 3, 0, 3),
    logLevel: env.string('LOG_LEVEL', 'info'),
    leaseNamespace: env.string('POD_NAMESPACE', inClusterNamespace() ?? 'default'),
    identity: env.string('POD_NAME', `${hostname()}-${process.pid}`),
  };
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
