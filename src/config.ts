/**
 * Operator configuration from the environment, validated once at start. Every bad value is reported
 * at once, each with the variable's name, so a misconfigured Deployment fails with a useful message.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { SEMVER_PATTERN } from './api/constants.ts';
import { parseCreds, publicKeyOf } from './adapters/nats-jwt.ts';

export interface NatsSettings {
  /** Where the operator connects; no credentials in it. */
  url: string;
  /** What the modules are told to connect to (Secret eva-nats, key url). */
  moduleUrl: string;
  /** The system user's credentials file (mounted Secret). Read when the operator starts, never logged. */
  systemCredsFile: string;
  /** The operator signing key's seed file (mounted Secret). */
  operatorSigningKeyFile: string;
}

/** Label selectors as matchLabels. */
export type Labels = Readonly<Record<string, string>>;

export interface NetworkPolicySettings {
  enabled: boolean;
  /** Namespaces allowed to send traffic in (the ingress controller's). */
  ingressNamespaces: Labels;
  /** Where NATS runs: pods in namespaces, or an address range (NATS outside the cluster). */
  nats: ({ namespaces: Labels; pods: Labels } | { cidr: string }) & { port: number };
  dns: { namespaces: Labels; pods: Labels };
  /** Delete NetworkPolicies in tenant namespaces that the operator did not write (else: report them). */
  removeForeign: boolean;
}

/**
 * TLS of the tenant Ingress: none; a cert-manager ClusterIssuer (annotation, and a per-tenant Secret
 * that cert-manager fills); or one wildcard certificate Secret the platform provides, copied into
 * each tenant namespace (an Ingress can only name a Secret of its own namespace).
 */
export type IngressTls =
  | { mode: 'none' }
  | { mode: 'issuer'; clusterIssuer: string }
  | { mode: 'secret'; source: { namespace: string; name: string } };

export interface IngressSettings {
  tls: IngressTls;
  /** Extra annotations on every tenant Ingress (INGRESS_ANNOTATIONS, a JSON object of strings). */
  annotations: Labels;
}

/** Where helm finds the render guard's plugin and the operator serves its check (steps/render-guard-server.ts). */
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
  renderGuard: RenderGuardSettings;
  helmSecretsDir: string;
  /** Helm processes at once (HELM_CONCURRENCY): they share the operator's memory limit. */
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

/** The plugin bundled beside the code that runs (the image's /app/helm-plugins, or the checkout's). */
export function renderGuardSettings(): RenderGuardSettings {
  return { pluginsDir: bundled('/app/helm-plugins', 'helm-plugins'), runtimeDir: tmpdir() };
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

  /** An equality label selector, `key=value[,key=value...]`, as matchLabels. */
  labels(name: string, fallback: string): Labels {
    const raw = this.string(name, fallback);
    const pairs = raw.split(',').map((part) => part.trim().split('='));
    const valid = pairs.every((p) => p.length === 2 && LABEL_KEY.test(p[0] ?? '') && LABEL_VALUE.test(p[1] ?? ''));
    if (!valid) {
      this.problems.push(`${name} must be a label selector like key=value,key2=value2, got "${raw}"`);
      return {};
    }
    return Object.fromEntries(pairs.map(([k, v]) => [k ?? '', v ?? '']));
  }

  /** A file that must exist and pass `check` (which throws with a reason); only its path is kept. */
  file(name: string, hint: string, check: (content: string) => void): string {
    const path = this.required(name, hint);
    if (path === '') return path;
    let content: string;
    try {
      content = readFileSync(path, 'utf8');
    } catch (err) {
      this.problems.push(`${name}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      return path;
    }
    try {
      check(content);
    } catch (err) {
      // The reason names the kind of key, never the content.
      this.problems.push(`${name}: ${path} ${err instanceof Error ? err.message : 'is not valid'}`);
    }
    return path;
  }
}

/** An IPv4 or IPv6 address range, e.g. 10.0.0.0/16 or fd00::/64. */
function isCidr(value: string): boolean {
  const [address = '', prefix, ...rest] = value.split('/');
  const family = isIP(address);
  if (family === 0 || prefix === undefined || rest.length > 0 || !/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** A non-empty label value (the default shard is SHARD unset, not empty). */
const SHARD_PATTERN = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

const NATS_URL_PATTERN = /^(nats|tls|wss?):\/\/[^\s/@]+\/?$/;

function readNats(env: EnvReader): NatsSettings {
  const url = env.required('NATS_URL', 'e.g. nats://nats.eva-system:4222');
  env.matching('NATS_URL', url, NATS_URL_PATTERN, 'a nats:// URL without credentials');
  const moduleUrl = env.optional('MODULE_NATS_URL');
  if (moduleUrl !== undefined) env.matching('MODULE_NATS_URL', moduleUrl, NATS_URL_PATTERN, 'a nats:// URL without credentials');
  for (const gone of ['NATS_USER', 'NATS_PASSWORD', 'NATS_TOKEN']) {
    if (env.optional(gone) !== undefined) env.problems.push(`${gone} is no longer used: NATS runs in operator mode (NATS_SYSTEM_CREDS_FILE, NATS_OPERATOR_SIGNING_KEY_FILE)`);
  }
  return {
    url,
    moduleUrl: moduleUrl ?? url,
    systemCredsFile: env.file('NATS_SYSTEM_CREDS_FILE', 'the system user credentials file from `eva-operator nats-bootstrap`', (text) => {
      parseCreds(text);
    }),
    operatorSigningKeyFile: env.file('NATS_OPERATOR_SIGNING_KEY_FILE', 'the operator signing key seed file from `eva-operator nats-bootstrap`', (text) => {
      publicKeyOf(text, 'operator');
    }),
  };
}

function natsPort(url: string): number {
  const port = /:(\d+)\/?$/.exec(url.split(',')[0]?.trim() ?? '')?.[1];
  return port === undefined ? 4222 : Number(port);
}

function readNetworkPolicy(env: EnvReader, nats: NatsSettings, operatorNamespace: string): NetworkPolicySettings {
  const cidr = env.optional('NETWORK_POLICY_NATS_CIDR');
  if (cidr !== undefined && !isCidr(cidr)) env.problems.push(`NETWORK_POLICY_NATS_CIDR must be an address range like 10.0.0.5/32, got "${cidr}"`);
  const port = natsPort(nats.moduleUrl);
  return {
    enabled: env.optional('NETWORK_POLICY') === undefined ? true : env.boolean('NETWORK_POLICY'),
    ingressNamespaces: env.labels('NETWORK_POLICY_INGRESS_NAMESPACES', 'kubernetes.io/metadata.name=ingress-nginx'),
    nats:
      cidr !== undefined
        ? { cidr, port }
        : {
            namespaces: env.labels('NETWORK_POLICY_NATS_NAMESPACES', `kubernetes.io/metadata.name=${operatorNamespace}`),
            pods: env.labels('NETWORK_POLICY_NATS_PODS', 'app.kubernetes.io/component=nats'),
            port,
          },
    dns: {
      namespaces: env.labels('NETWORK_POLICY_DNS_NAMESPACES', 'kubernetes.io/metadata.name=kube-system'),
      pods: env.labels('NETWORK_POLICY_DNS_PODS', 'k8s-app=kube-dns'),
    },
    removeForeign: env.boolean('NETWORK_POLICY_REMOVE_FOREIGN'),
  };
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** The annotation cert-manager's ingress-shim reads: the operator writes it itself (INGRESS_TLS_ISSUER). */
export const ISSUER_ANNOTATION = 'cert-manager.io/cluster-issuer';

function readIngressTls(env: EnvReader): IngressTls {
  const issuer = env.optional('INGRESS_TLS_ISSUER');
  const secret = env.optional('INGRESS_TLS_SECRET');
  if (issuer !== undefined && secret !== undefined) {
    env.problems.push('INGRESS_TLS_ISSUER and INGRESS_TLS_SECRET are exclusive: set one (or neither, for no TLS)');
    return { mode: 'none' };
  }
  if (issuer !== undefined) {
    env.matching('INGRESS_TLS_ISSUER', issuer, DNS_SUBDOMAIN, 'the name of a cert-manager ClusterIssuer');
    return { mode: 'issuer', clusterIssuer: issuer };
  }
  if (secret !== undefined) {
    const [namespace = '', name = '', ...rest] = secret.split('/');
    if (rest.length > 0 || !DNS_LABEL.test(namespace) || !DNS_SUBDOMAIN.test(name)) {
      env.problems.push(`INGRESS_TLS_SECRET must be <namespace>/<name> of a kubernetes.io/tls Secret, got "${secret}"`);
      return { mode: 'none' };
    }
    return { mode: 'secret', source: { namespace, name } };
  }
  return { mode: 'none' };
}

function readIngressAnnotations(env: EnvReader): Labels {
  const raw = env.optional('INGRESS_ANNOTATIONS');
  if (raw === undefined) return {};
  const problem = `INGRESS_ANNOTATIONS must be a JSON object of annotation names to strings, e.g. {"traefik.ingress.kubernetes.io/router.entrypoints":"websecure"}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    env.problems.push(problem);
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    env.problems.push(problem);
    return {};
  }
  const entries = Object.entries(parsed);
  const bad = entries.filter(([key, value]) => typeof value !== 'string' || !LABEL_KEY.test(key)).map(([key]) => key);
  if (bad.length > 0) env.problems.push(`${problem}; not valid: ${bad.join(', ')}`);
  if (ISSUER_ANNOTATION in parsed) env.problems.push(`INGRESS_ANNOTATIONS must not set ${ISSUER_ANNOTATION}: use INGRESS_TLS_ISSUER`);
  return Object.fromEntries(entries.filter(([key]) => !bad.includes(key) && key !== ISSUER_ANNOTATION));
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
    chartBasePath: env.string('CHART_BASE_PATH', bundled('/charts', 'charts')),
    seedsBasePath: env.string('SEEDS_BASE_PATH', bundled('/seeds', 'seeds')),
    imagesFile: env.string('IMAGES_FILE', bundled('/etc/eva-operator/images.txt', 'images.txt')),
    helmBinary: env.string('HELM_BINARY', 'helm'),
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
