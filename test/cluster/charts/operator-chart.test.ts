/**
 * The operator's own chart (charts/eva-operator), with the pinned helm binary: lint, what it renders
 * (one operator version for annotation and env, the tmpfs for secret values, Pod Security restricted,
 * least-privilege RBAC without wildcards, the optional NATS and ServiceMonitor), the CRD copy, and on
 * the local control plane: it installs and uninstalls, and the operator provisions and decommissions
 * a tenant holding exactly the chart's RBAC (the real operator process, authenticated as the chart's
 * ServiceAccount, runs helm as it too).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { eventually, kubectl, kubectlOk } from '../../support/kubectl.ts';
import { repoRoot, tool } from '../../support/tools.ts';
import { type EnvVar, helm, type HelmResult, type KubeObject, parseManifest } from '../../support/chart-render.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../../support/operator.ts';
import { applyTenant, waitForGone, waitForPhase } from '../../support/tenants.ts';
import { leaseNameForVersion } from '../../../src/controller/lease-names.ts';
import { FINALIZER, GROUP, KIND, LABELS, MANAGED_BY, OWNER_ANNOTATION, PLURAL, WAVE_LABEL } from '../../../src/api/constants.ts';
import { tenantNamespace } from '../../../src/tenancy/names.ts';
import { natsBootstrapFiles } from '../../support/fixtures.ts';
import { type AuditEvent, auditOffset, auditWritesSince } from '../../support/audit.ts';
import { chartServiceAccount, serviceAccountKubeconfig } from '../../support/operator-identity.ts';

const chartDir = join(repoRoot, 'charts/eva-operator');
const NAMESPACE = 'eva-system';
const RELEASE = 'eva';
const FULLNAME = 'eva-eva-operator';
const NATS_URL = 'nats://nats.example:4222';
const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;
/** The public JWTs and the operator's Secret the quick-start NATS needs, from a real bootstrap. */
const bootstrapped = await natsBootstrapFiles();
const QUICK_START_NATS = ['--set', 'nats.enabled=true', '-f', bootstrapped.chartValues];

const chart = parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as { version: string; appVersion: string };

// ---- the parts of rendered objects the tests read ----------------------------------------------------

interface Volume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string };
  secret?: { secretName: string; defaultMode?: number };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    serviceAccountName?: string;
    securityContext?: Record<string, unknown>;
    containers: Container[];
    volumes?: Volume[];
    imagePullSecrets?: { name: string }[];
  };
}
interface Workload extends KubeObject {
  metadata: KubeObject['metadata'] & { namespace?: string };
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: PodTemplate };
}
interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}
interface RbacRole extends KubeObject {
  metadata: KubeObject['metadata'] & { namespace?: string };
  rules: Rule[];
}
interface Binding extends KubeObject {
  metadata: KubeObject['metadata'] & { namespace?: string };
  roleRef: { kind: string; name: string };
  subjects: { kind: string; name: string; namespace: string }[];
}
interface ServiceObject extends KubeObject {
  spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string | number }[] };
}
interface ServiceMonitor extends KubeObject {
  spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] };
}

async function template(args: readonly string[] = []): Promise<HelmResult> {
  return helm(['template', RELEASE, chartDir, '--namespace', NAMESPACE, ...args]);
}

async function render(args: readonly string[] = ['--set', `nats.url=${NATS_URL}`]): Promise<KubeObject[]> {
  const result = await template(args);
  if (result.code !== 0) throw new Error(`helm template failed (${result.code}): ${result.stderr}`);
  return parseManifest(result.stdout);
}

interface Kinds {
  Deployment: Workload;
  StatefulSet: Workload;
  ClusterRole: RbacRole;
  Role: RbacRole;
  Service: ServiceObject;
  ServiceMonitor: ServiceMonitor;
  ConfigMap: KubeObject & { data: Record<string, string> };
  NetworkPolicy: KubeObject & { spec: { ingress: unknown[] } };
  Pod: KubeObject & { spec: PodTemplate['spec'] & { restartPolicy?: string } };
}

/** The one object of this kind (and name); what helm rendered, read through the structural types above. */
function only<K extends keyof Kinds>(objects: readonly KubeObject[], kind: K, name?: string): Kinds[K] {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, got ${String(found.length)}`);
  return found[0] as Kinds[K];
}

const deploymentOf = (objects: readonly KubeObject[]): Workload => only(objects, 'Deployment');

function operatorContainer(objects: readonly KubeObject[]): Container {
  const container = deploymentOf(objects).spec.template.spec.containers.find((c) => c.name === 'operator');
  if (!container) throw new Error('no container named operator');
  return container;
}

function envOf(container: Container): Map<string, EnvVar> {
  return new Map((container.env ?? []).map((e) => [e.name, e]));
}

function envValue(container: Container, name: string): string | undefined {
  return envOf(container).get(name)?.value;
}

function expectRestricted(container: Container): void {
  expect(container.securityContext, container.name).toEqual({
    runAsNonRoot: true,
    runAsUser: 65532,
    runAsGroup: 65532,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  });
  expect(container.resources?.requests, container.name).toBeDefined();
  expect(container.resources?.limits, container.name).toBeDefined();
}

function expectRestrictedPodSpec(spec: PodTemplate['spec']): void {
  expect(spec.securityContext).toMatchObject({
    runAsNonRoot: true,
    runAsUser: 65532,
    seccompProfile: { type: 'RuntimeDefault' },
  });
  for (const container of spec.containers) expectRestricted(container);
}

const expectRestrictedPod = (workload: Workload): void => {
  expectRestrictedPodSpec(workload.spec.template.spec);
};

beforeAll(() => {
  // Builds the pinned binaries on a cold cache; later calls are instant.
  expect(existsSync(tool('helm'))).toBe(true);
}, 3_600_000);

describe('chart files', () => {
  it('is an apiVersion v2 application chart whose appVersion is the default operator version', () => {
    expect(parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8'))).toMatchObject({
      apiVersion: 'v2',
      name: 'eva-operator',
      type: 'application',
    });
    expect(chart.appVersion).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('ships the EvaTenant CRD byte-identical to crds/ (regenerate both with npm run crd:generate, then copy)', () => {
    const source = join(repoRoot, 'crds');
    const copy = join(chartDir, 'crds');
    expect(readdirSync(copy).sort()).toEqual(readdirSync(source).sort());
    for (const file of readdirSync(source)) {
      const hint = `charts/eva-operator/crds/${file} differs from crds/${file}: cp crds/${file} charts/eva-operator/crds/`;
      expect(readFileSync(join(copy, file)).equals(readFileSync(join(source, file))), hint).toBe(true);
    }
  });

  it('the default operator image is listed in images.txt', () => {
    const images = readFileSync(join(repoRoot, 'images.txt'), 'utf8');
    expect(images).toMatch(new RegExp(`^ghcr\\.io/aidonow/eva-operator:${chart.appVersion.replace(/\./g, '\\.')}@sha256:`, 'm'));
  });
});

describe('helm lint --strict', () => {
  it.each([
    ['nats.enabled=true', QUICK_START_NATS],
    ['nats.url', ['--set', `nats.url=${NATS_URL}`]],
    ['admissionPolicy.enabled=false', ['--set', `nats.url=${NATS_URL}`, '--set', 'admissionPolicy.enabled=false']],
    ['serviceMonitor and every optional setting', ['--set', `nats.url=${NATS_URL}`, '--set', 'metrics.serviceMonitor.enabled=true', '--set', 'ingressClass=eva-lb', '--set', 'airGapRegistry=registry.internal:5000']],
  ])('lints cleanly with %s', async (_name, args) => {
    const result = await helm(['lint', '--strict', chartDir, ...args]);
    expect(result.stderr + result.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
  });
});

describe('helm template: defaults', () => {
  it('without nats.url or nats.enabled rendering fails, saying what to set', async () => {
    const result = await template();
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('NATS is not configured: set nats.url');
    expect(result.stderr).toContain('nats.enabled=true');
  });

  it('nats.url and nats.enabled together fail', async () => {
    const result = await template(['--set', `nats.url=${NATS_URL}`, ...QUICK_START_NATS]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('choose one');
  });

  it('a nats.url with credentials fails', async () => {
    const result = await template(['--set', 'nats.url=nats://user:pw@nats:4222']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('without credentials');
  });

  it('renders the operator, its RBAC and the Grafana dashboard ConfigMap, no NATS and no ServiceMonitor', async () => {
    const objects = await render();
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      [
        `ClusterRole/${FULLNAME}`,
        `ClusterRole/${FULLNAME}-tenant-portal`,
        `ClusterRole/${FULLNAME}-platform-admin`,
        `ConfigMap/${FULLNAME}-dashboard`,
        `ClusterRoleBinding/${FULLNAME}`,
        `Deployment/${FULLNAME}`,
        `Pod/${FULLNAME}-preflight`,
        `Role/${FULLNAME}-events`,
        `Role/${FULLNAME}-leader-election`,
        `RoleBinding/${FULLNAME}-events`,
        `RoleBinding/${FULLNAME}-leader-election`,
        `Service/${FULLNAME}-metrics`,
        `ServiceAccount/${FULLNAME}`,
        `ValidatingAdmissionPolicy/${FULLNAME}-write-confinement`,
        `ValidatingAdmissionPolicyBinding/${FULLNAME}-write-confinement`,
        'ValidatingAdmissionPolicy/eva-tenant-deletion-protection',
        'ValidatingAdmissionPolicyBinding/eva-tenant-deletion-protection',
        'ValidatingAdmissionPolicy/eva-tenant-values',
        'ValidatingAdmissionPolicyBinding/eva-tenant-values',
        'ValidatingAdmissionPolicy/eva-tenant-platform-controls',
        'ValidatingAdmissionPolicyBinding/eva-tenant-platform-controls',
      ].sort(),
    );
  });

  it('keeps the cluster-wide policies on uninstall (they serve every release), and only them', async () => {
    const kept = (await render()).filter((o) => o.metadata.annotations?.['helm.sh/resource-policy'] === 'keep').map((o) => `${o.kind}/${o.metadata.name}`);
    const clusterWide = ['eva-tenant-deletion-protection', 'eva-tenant-values', 'eva-tenant-platform-controls'];
    expect(kept.sort()).toEqual(clusterWide.flatMap((name) => [`ValidatingAdmissionPolicy/${name}`, `ValidatingAdmissionPolicyBinding/${name}`]).sort());
  });

  it('runs 2 replicas of the chart appVersion image as the ServiceAccount, NATS_URL from nats.url', async () => {
    const objects = await render();
    const deployment = deploymentOf(objects);
    expect(deployment.spec.replicas).toBe(2);
    expect(deployment.spec.template.spec.serviceAccountName).toBe(FULLNAME);
    const container = operatorContainer(objects);
    expect(container.image).toBe(`ghcr.io/aidonow/eva-operator:${chart.appVersion}`);
    expect(container.args).toEqual(['run']);
    expect(envValue(container, 'NATS_URL')).toBe(NATS_URL);
  });

  it('annotation eva.aidonow.com/operator-version and env OPERATOR_VERSION come from one value', async () => {
    const check = (objects: KubeObject[], version: string): void => {
      const deployment = deploymentOf(objects);
      expect(deployment.spec.template.metadata.annotations?.['eva.aidonow.com/operator-version']).toBe(version);
      expect(envValue(operatorContainer(objects), 'OPERATOR_VERSION')).toBe(version);
    };
    check(await render(), chart.appVersion);
    check(await render(['--set', `nats.url=${NATS_URL}`, '--set', 'operatorVersion=1.4.0-rc.1']), '1.4.0-rc.1');
    const deployment = readFileSync(join(chartDir, 'templates/deployment.yaml'), 'utf8');
    // One helper, used for both: no second place where the version could come from.
    expect(deployment.match(/include "eva-operator\.version"/g)).toHaveLength(1);
    expect(deployment).not.toContain('.Values.operatorVersion');
  });

  it('an operatorVersion that is not semver fails rendering', async () => {
    const result = await template(['--set', `nats.url=${NATS_URL}`, '--set', 'operatorVersion=v1']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('operatorVersion');
  });

  it('POD_NAME and POD_NAMESPACE come from the downward API', async () => {
    const env = envOf(operatorContainer(await render()));
    expect(env.get('POD_NAME')?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');
    expect(env.get('POD_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.namespace');
  });

  it('secret values live on a tmpfs: emptyDir medium Memory at /run/helm-secrets = HELM_SECRETS_DIR', async () => {
    const objects = await render();
    const container = operatorContainer(objects);
    const volumes = new Map((deploymentOf(objects).spec.template.spec.volumes ?? []).map((v) => [v.name, v]));
    const mounts = new Map((container.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
    expect(envValue(container, 'HELM_SECRETS_DIR')).toBe('/run/helm-secrets');
    const secrets = volumes.get(mounts.get('/run/helm-secrets') ?? '');
    expect(secrets?.emptyDir?.medium).toBe('Memory');
    expect(envValue(container, 'HELM_SECRETS_ALLOW_NON_TMPFS')).toBeUndefined();
    // The root filesystem is read-only: helm's folders, HOME and /tmp are writable emptyDirs (on disk).
    for (const variable of ['HELM_CACHE_HOME', 'HELM_CONFIG_HOME', 'HELM_DATA_HOME', 'HOME', 'TMPDIR']) {
      const path = envValue(container, variable) ?? '';
      const volume = volumes.get(mounts.get(path) ?? '');
      expect(volume?.emptyDir, `${variable}=${path} is not an emptyDir mount`).toBeDefined();
      expect(volume?.emptyDir?.medium, variable).toBeUndefined();
    }
    expect(mounts.get('/tmp')).toBeDefined();
  });

  it('runs Pod Security restricted with a read-only root filesystem, requests and limits', async () => {
    const deployment = deploymentOf(await render());
    expectRestrictedPod(deployment);
    expect(deployment.spec.template.spec.containers).toHaveLength(1);
  });

  it('probes /healthz and /readyz on the metrics port, which the metrics Service exposes', async () => {
    const objects = await render(['--set', `nats.url=${NATS_URL}`, '--set', 'metrics.port=9090']);
    const container = operatorContainer(objects);
    expect(container.ports).toEqual([{ name: 'metrics', containerPort: 9090, protocol: 'TCP' }]);
    expect(envValue(container, 'METRICS_PORT')).toBe('9090');
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    const service = only(objects, 'Service', `${FULLNAME}-metrics`);
    expect(service.spec.ports).toEqual([{ name: 'metrics', port: 8080, targetPort: 'metrics', protocol: 'TCP' }]);
    expect(service.spec.selector).toEqual(deploymentOf(objects).spec.selector.matchLabels);
  });
});

describe('helm template: values', () => {
  const settings = [
    '--set', `nats.url=${NATS_URL}`,
    '--set', 'baseDomain=tenants.example.com',
    '--set', 'ingressClass=eva-lb',
    '--set', 'ingressReadyOnCreate=true',
    '--set', 'moduleOtelEndpoint=http://otel.observability:4318',
    '--set', 'airGapRegistry=registry.internal:5000/eva',
    '--set', 'concurrency=16',
    '--set', 'driftIntervalSeconds=60',
    '--set', 'maxWave=1',
    '--set', 'shard=eu-1',
    '--set', 'kubeApi.qps=20',
    '--set', 'kubeApi.burst=40',
    '--set', 'logLevel=debug',
    '--set', 'nats.auth.existingSecret=nats-credentials',
    '--set', 'nats.moduleUrl=nats://nats.eva-system.svc:4222',
    '--set', 'networkPolicy.ingressNamespaces=team=ingress',
    '--set', 'imagePullSecrets[0].name=ghcr-pull',
  ];

  it('every operator setting reaches its environment variable', async () => {
    const objects = await render(settings);
    const container = operatorContainer(objects);
    expect(Object.fromEntries([...envOf(container)].filter(([, e]) => e.value !== undefined).map(([n, e]) => [n, e.value]))).toMatchObject({
      EVA_BASE_DOMAIN: 'tenants.example.com',
      INGRESS_CLASS: 'eva-lb',
      INGRESS_READY_ON_CREATE: 'true',
      MODULE_OTEL_ENDPOINT: 'http://otel.observability:4318',
      AIRGAP_REGISTRY: 'registry.internal:5000/eva',
      RECONCILE_CONCURRENCY: '16',
      DRIFT_INTERVAL_SECONDS: '60',
      MAX_WAVE: '1',
      SHARD: 'eu-1',
      KUBE_API_QPS: '20',
      KUBE_API_BURST: '40',
      LOG_LEVEL: 'debug',
      METRICS_BIND_ADDRESS: '0.0.0.0',
      MODULE_NATS_URL: 'nats://nats.eva-system.svc:4222',
      NATS_SYSTEM_CREDS_FILE: '/etc/eva-operator/nats/system.creds',
      NATS_OPERATOR_SIGNING_KEY_FILE: '/etc/eva-operator/nats/operator-signing-key.nk',
      NETWORK_POLICY: 'true',
      NETWORK_POLICY_INGRESS_NAMESPACES: 'team=ingress',
      NETWORK_POLICY_NATS_NAMESPACES: `kubernetes.io/metadata.name=${NAMESPACE}`,
      NETWORK_POLICY_NATS_PODS: 'app.kubernetes.io/component=nats',
    });
    // The NATS keys arrive as files of a mounted Secret, readable by the operator only; never as env.
    const pod = deploymentOf(objects).spec.template.spec;
    expect(pod.volumes?.find((v) => v.name === 'nats-auth')?.secret).toEqual({ secretName: 'nats-credentials', defaultMode: 0o400 });
    expect(container.volumeMounts).toContainEqual({ name: 'nats-auth', mountPath: '/etc/eva-operator/nats', readOnly: true });
    expect([...envOf(container).values()].filter((e) => e.valueFrom?.secretKeyRef)).toEqual([]);
    expect(deploymentOf(objects).spec.template.spec.imagePullSecrets).toEqual([{ name: 'ghcr-pull' }]);
  });

  it('sets every variable src/config.ts (and its parts in src/config/) reads, except the paths the image sets and the tmpfs override', async () => {
    const parts = readdirSync(join(repoRoot, 'src/config')).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts')).map((f) => join('src/config', f));
    const config = ['src/config.ts', ...parts].map((file) => readFileSync(join(repoRoot, file), 'utf8')).join('\n');
    const read = new Set([...config.matchAll(/env\.(?:string|optional|required|integer|boolean|labels|file|matching)\('([A-Z_]+)'/g)].map((m) => m[1]));
    const fromImage = ['CHART_BASE_PATH', 'SEEDS_BASE_PATH', 'IMAGES_FILE', 'HELM_BINARY', 'HELM_SERVER_BINARY'];
    expect(read.size).toBeGreaterThan(15);
    const set = new Set(envOf(operatorContainer(await render(settings))).keys());
    const missing = [...read].filter((name) => name !== undefined && !set.has(name) && !fromImage.includes(name));
    // NETWORK_POLICY_NATS_CIDR replaces the NATS selectors when networkPolicy.natsCidr is set (below);
    // the Ingress TLS settings and annotations are passed only when set (below).
    expect(missing.sort()).toEqual(['HELM_SECRETS_ALLOW_NON_TMPFS', 'INGRESS_ANNOTATIONS', 'INGRESS_TLS_ISSUER', 'INGRESS_TLS_SECRET', 'NETWORK_POLICY_NATS_CIDR']);
    const withTls = envOf(operatorContainer(await render([...settings, '--set', 'ingressTls.secret=eva-system/wildcard', '--set-json', 'ingressAnnotations={"example.com/a":"x, y"}'])));
    expect(withTls.get('INGRESS_TLS_SECRET')?.value).toBe('eva-system/wildcard');
    expect(withTls.get('INGRESS_ANNOTATIONS')?.value).toBe('{"example.com/a":"x, y"}');
    const withIssuer = envOf(operatorContainer(await render([...settings, '--set', 'ingressTls.clusterIssuer=letsencrypt'])));
    expect(withIssuer.get('INGRESS_TLS_ISSUER')?.value).toBe('letsencrypt');
    const withCidr = envOf(operatorContainer(await render([...settings, '--set', 'networkPolicy.natsCidr=10.0.0.0/8'])));
    expect(withCidr.get('NETWORK_POLICY_NATS_CIDR')?.value).toBe('10.0.0.0/8');
    expect(withCidr.has('NETWORK_POLICY_NATS_PODS')).toBe(false);
    const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
    for (const name of fromImage) expect(dockerfile, `Dockerfile sets ${name}`).toMatch(new RegExp(`\\b${name}=/`));
  });

  it('unset optional settings are not passed (the operator defaults apply)', async () => {
    const env = envOf(operatorContainer(await render()));
    for (const name of ['SHARD', 'INGRESS_CLASS', 'MODULE_OTEL_ENDPOINT', 'AIRGAP_REGISTRY', 'MODULE_NATS_URL', 'NETWORK_POLICY_NATS_CIDR', 'NATS_USER', 'NATS_PASSWORD', 'NATS_TOKEN']) {
      expect(env.has(name), name).toBe(false);
    }
  });

  it('a digest renders the image as repository@digest and ignores the tag', async () => {
    const objects = await render(['--set', `nats.url=${NATS_URL}`, '--set', 'image.repository=registry.internal/eva-operator', '--set', 'image.tag=9.9.9', '--set', `image.digest=${DIGEST}`]);
    expect(operatorContainer(objects).image).toBe(`registry.internal/eva-operator@${DIGEST}`);
  });

  it.each([
    ['image.digest=latest', '/image/digest'],
    ['maxWave=4', 'maxWave'],
    ['shard=eu/1', 'shard'],
    ['concurrency=0', 'concurrency'],
    ['driftIntervalSeconds=0', 'driftIntervalSeconds'],
    ['logLevel=verbose', 'logLevel'],
    ['baseDomain=Not_A_Domain', 'baseDomain'],
  ])('%s is rejected, naming %s', async (setting, name) => {
    const result = await template(['--set', `nats.url=${NATS_URL}`, '--set', setting]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(name);
  });
});

describe('helm template: nats.enabled', () => {
  let objects: KubeObject[];
  beforeAll(async () => {
    objects = await render(QUICK_START_NATS);
  });

  it('refuses to render without the bootstrap\'s public JWTs, saying how to get them', async () => {
    const result = await template(['--set', 'nats.enabled=true']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('run `eva-operator nats-bootstrap`');
  });

  it('runs NATS in operator mode with a config the real nats-server accepts', () => {
    const config = only(objects, 'ConfigMap', `${FULLNAME}-nats-config`);
    const text = config.data['nats.conf'] ?? '';
    expect(text).toMatch(/^operator: eyJ/m);
    expect(text).toContain('resolver { type: full, dir: "/data/resolver", allow_delete: true');
    // A seed stands alone (SO/SA/SU + 56 characters); a public key may hold "SA..." inside it.
    expect(text).not.toMatch(/(?<![A-Z2-7])S[OAU][A-Z2-7]{50,}/);
    const dir = mkdtempSync(join(tmpdir(), 'eva-chart-nats-'));
    try {
      const file = join(dir, 'nats.conf');
      writeFileSync(file, text.replaceAll('/data/', `${dir}/`));
      const checked = spawnSync(tool('nats-server'), ['-c', file, '-t'], { encoding: 'utf8' });
      expect(checked.stdout + checked.stderr).toContain('is valid');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps the NATS monitoring port (every account\'s details) to its own namespace', () => {
    const policy = only(objects, 'NetworkPolicy', `${FULLNAME}-nats`);
    expect(policy.spec.ingress).toEqual([
      { ports: [{ protocol: 'TCP', port: 4222 }] },
      { from: [{ podSelector: {} }], ports: [{ protocol: 'TCP', port: 8222 }] },
    ]);
  });

  it('runs one NATS with JetStream from the nats image and points NATS_URL at its Service', () => {
    const nats = only(objects, 'StatefulSet', `${FULLNAME}-nats`);
    expect(nats.spec.replicas).toBe(1);
    const container = nats.spec.template.spec.containers[0];
    expect(container?.image).toBe('docker.io/library/nats:2.15.0-alpine');
    expect(container?.args).toContain('--config=/etc/nats/nats.conf');
    const service = only(objects, 'Service', `${FULLNAME}-nats`);
    expect(service.spec.selector).toEqual(nats.spec.selector.matchLabels);
    const client = service.spec.ports.find((p) => p.name === 'client');
    expect(envValue(operatorContainer(objects), 'NATS_URL')).toBe(`nats://${FULLNAME}-nats.${NAMESPACE}.svc:${String(client?.port)}`);
  });

  it('the NATS pod is Pod Security restricted too', () => {
    expectRestrictedPod(only(objects, 'StatefulSet'));
  });

  it('the NATS image version is the one versions.env pins', () => {
    const versions = readFileSync(join(repoRoot, 'versions.env'), 'utf8');
    const pinned = /^NATS_SERVER_VERSION=(.+)$/m.exec(versions)?.[1];
    const image = only(objects, 'StatefulSet').spec.template.spec.containers[0]?.image ?? '';
    expect(image.split(':').at(-1)?.startsWith(`${pinned ?? '?'}-`)).toBe(true);
  });
});

describe('helm template: metrics.serviceMonitor.enabled', () => {
  it('renders a ServiceMonitor scraping /metrics of the metrics Service', async () => {
    const objects = await render(['--set', `nats.url=${NATS_URL}`, '--set', 'metrics.serviceMonitor.enabled=true', '--set', 'metrics.serviceMonitor.labels.release=prometheus']);
    const monitor = only(objects, 'ServiceMonitor');
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(monitor.metadata.labels?.['release']).toBe('prometheus');
    expect(monitor.spec.endpoints).toEqual([expect.objectContaining({ port: 'metrics', path: '/metrics' })]);
    const service = only(objects, 'Service', `${FULLNAME}-metrics`);
    for (const [key, value] of Object.entries(monitor.spec.selector.matchLabels)) {
      expect(service.metadata.labels?.[key], key).toBe(value);
    }
  });
});

describe('helm test: the preflight pod (templates/tests/preflight.yaml)', () => {
  const withSettings = ['--set', `nats.url=${NATS_URL}`, '--set', 'ingressClass=eva-lb', '--set', 'ingressTls.clusterIssuer=letsencrypt', '--set', 'networkPolicy.ingressNamespaces=team=ingress', '--set-json', 'extraEnv=[{"name":"EXTRA","value":"1"}]', '--set', `image.digest=${DIGEST}`];
  const preflightPod = (objects: readonly KubeObject[]): Kinds['Pod'] => only(objects, 'Pod', `${FULLNAME}-preflight`);
  const preflightContainer = (objects: readonly KubeObject[]): Container => {
    const container = preflightPod(objects).spec.containers[0];
    if (!container) throw new Error('the preflight pod has no container');
    return container;
  };

  it('is a test hook, kept until the next run, that runs `eva-operator preflight` in the operator image as its ServiceAccount', async () => {
    const objects = await render(withSettings);
    const pod = preflightPod(objects);
    expect(pod.metadata.annotations).toEqual({ 'helm.sh/hook': 'test', 'helm.sh/hook-delete-policy': 'before-hook-creation' });
    expect(pod.spec.restartPolicy).toBe('Never');
    expect(pod.spec.serviceAccountName).toBe(deploymentOf(objects).spec.template.spec.serviceAccountName);
    expect(pod.spec.containers).toHaveLength(1);
    expect(preflightContainer(objects).image).toBe(operatorContainer(objects).image);
    expect(preflightContainer(objects).image).toBe(`ghcr.io/aidonow/eva-operator@${DIGEST}`);
    expect(preflightContainer(objects).args).toEqual(['preflight']);
  });

  it("has exactly the operator's environment (one list in _helpers.tpl), so it checks the settings the operator uses", async () => {
    for (const args of [withSettings, ['--set', `nats.url=${NATS_URL}`, '--set', 'ingressTls.secret=eva-system/wildcard', '--set', 'networkPolicy.enabled=false']]) {
      const objects = await render(args);
      expect(preflightContainer(objects).env).toEqual(operatorContainer(objects).env);
    }
    const env = envOf(preflightContainer(await render(withSettings)));
    expect(env.get('INGRESS_CLASS')?.value).toBe('eva-lb');
    expect(env.get('INGRESS_TLS_ISSUER')?.value).toBe('letsencrypt');
    expect(env.get('NETWORK_POLICY_INGRESS_NAMESPACES')?.value).toBe('team=ingress');
    expect(env.get('EXTRA')?.value).toBe('1');
    const deployment = readFileSync(join(chartDir, 'templates/deployment.yaml'), 'utf8');
    expect(deployment).toContain('{{- include "eva-operator.env" . | nindent 12 }}');
    expect(deployment).not.toContain('- name: NATS_URL');
  });

  it("mounts the operator's NATS Secret the same way (0400, read-only), never as env", async () => {
    const objects = await render(['--set', `nats.url=${NATS_URL}`, '--set', 'nats.auth.existingSecret=nats-credentials']);
    const pod = preflightPod(objects);
    expect(pod.spec.volumes?.find((v) => v.name === 'nats-auth')?.secret).toEqual({ secretName: 'nats-credentials', defaultMode: 0o400 });
    expect(preflightContainer(objects).volumeMounts).toContainEqual({ name: 'nats-auth', mountPath: '/etc/eva-operator/nats', readOnly: true });
    expect(envValue(preflightContainer(objects), 'NATS_SYSTEM_CREDS_FILE')).toBe('/etc/eva-operator/nats/system.creds');
    expect([...envOf(preflightContainer(objects)).values()].filter((e) => e.valueFrom?.secretKeyRef)).toEqual([]);
  });

  it('runs Pod Security restricted with a read-only root filesystem, requests and limits', async () => {
    expectRestrictedPodSpec(preflightPod(await render()).spec);
  });

  it('the ClusterRole reads the configured ClusterIssuer only, and only when one is configured', async () => {
    const issuerRules = (objects: KubeObject[]): Rule[] => only(objects, 'ClusterRole', FULLNAME).rules.filter((r) => r.resources.includes('clusterissuers'));
    expect(issuerRules(await render())).toEqual([]);
    expect(issuerRules(await render(withSettings))).toEqual([{ apiGroups: ['cert-manager.io'], resources: ['clusterissuers'], resourceNames: ['letsencrypt'], verbs: ['get'] }]);
  });
});

describe('RBAC', () => {
  /** The roles of who writes EvaTenants (templates/tenant-roles.yaml), bound by the installer, not to the operator. */
  const TENANT_ROLES: readonly string[] = [`${FULLNAME}-tenant-portal`, `${FULLNAME}-platform-admin`];
  let objects: KubeObject[];
  beforeAll(async () => {
    objects = await render();
  });

  /** The rules as "<group>/<resource> verb,verb" lines, resourceNames appended. */
  const flatten = (rules: readonly Rule[]): string[] =>
    rules
      .flatMap((r) => r.apiGroups.flatMap((g) => r.resources.map((res) => `${g === '' ? 'core' : g}/${res} ${[...r.verbs].sort().join(',')}${r.resourceNames ? ` [${r.resourceNames.join(',')}]` : ''}`)))
      .sort();

  it('no wildcard verbs, resources or API groups anywhere', () => {
    const roles = objects.filter((o): o is RbacRole => o.kind === 'ClusterRole' || o.kind === 'Role');
    expect(roles).toHaveLength(3 + TENANT_ROLES.length);
    for (const role of roles) {
      for (const rule of role.rules) {
        for (const word of [...rule.verbs, ...rule.resources, ...rule.apiGroups, ...(rule.resourceNames ?? [])]) {
          expect(word, `${role.kind} ${role.metadata.name}`).not.toContain('*');
        }
        expect(rule.verbs, 'escalation verbs').not.toEqual(expect.arrayContaining(['escalate']));
        expect(rule.verbs).not.toEqual(expect.arrayContaining(['bind']));
        expect(rule.verbs).not.toEqual(expect.arrayContaining(['impersonate']));
        // Platform administrators may delete tenants by label; the operator never deletes many at once.
        if (!TENANT_ROLES.includes(role.metadata.name)) expect(rule.verbs).not.toEqual(expect.arrayContaining(['deletecollection']));
      }
    }
  });

  it('the ClusterRole grants exactly what the operator and its helm processes use', () => {
    const role = only(objects, 'ClusterRole', FULLNAME);
    expect(flatten(role.rules)).toEqual(
      [
        'eva.aidonow.com/evarollouts get,list,watch',
        'eva.aidonow.com/evarollouts/status get,patch',
        'eva.aidonow.com/evatenants get,list,patch,watch',
        'eva.aidonow.com/evatenants platform-control',
        'eva.aidonow.com/evatenants/status update',
        'core/namespaces create,delete,get,list,patch,watch',
        'core/resourcequotas create,delete,get,list,patch,watch',
        'core/limitranges create,delete,get,list,patch,watch',
        'networking.k8s.io/ingresses create,delete,get,list,patch,watch',
        'networking.k8s.io/networkpolicies create,delete,get,list,patch,watch',
        'core/secrets create,delete,get,list,patch,update,watch',
        'core/configmaps create,delete,get,list,patch,watch',
        'core/services create,delete,get,patch',
        'apps/deployments create,delete,get,list,patch,watch',
        'core/pods list',
        // The `helm test` preflight's one read the operator lacks (templates/tests/preflight.yaml).
        'networking.k8s.io/ingressclasses list',
        'apiextensions.k8s.io/customresourcedefinitions get [prometheusrules.monitoring.coreos.com]',
        'monitoring.coreos.com/prometheusrules create,delete,get,patch',
      ].sort(),
    );
  });

  it('every ClusterRole rule says why, in a comment', () => {
    const text = readFileSync(join(chartDir, 'templates/rbac.yaml'), 'utf8');
    const lines = text.slice(0, text.indexOf('kind: ClusterRoleBinding')).split('\n');
    const rules = lines.flatMap((line, index) => (/^\s+- apiGroups:/.test(line) ? [index] : []));
    expect(rules.length).toBeGreaterThan(10);
    for (const index of rules) expect(lines[index - 1] ?? '', `rule at rbac.yaml line ${index + 1}`).toMatch(/^\s*#/);
  });

  it('the portal writes EvaTenants and reads their status; the platform administrator also holds platform-control and writes EvaRollouts', () => {
    expect(flatten(only(objects, 'ClusterRole', `${FULLNAME}-tenant-portal`).rules)).toEqual([
      'eva.aidonow.com/evatenants create,delete,get,list,patch,update,watch',
      'eva.aidonow.com/evatenants/status get',
    ]);
    expect(flatten(only(objects, 'ClusterRole', `${FULLNAME}-platform-admin`).rules)).toEqual([
      'eva.aidonow.com/evarollouts create,delete,get,list,patch,update,watch',
      'eva.aidonow.com/evarollouts/status get',
      'eva.aidonow.com/evatenants create,delete,deletecollection,get,list,patch,platform-control,update,watch',
      'eva.aidonow.com/evatenants/status get,patch,update',
    ]);
  });

  it('platformAdmins binds its groups and users (as data) to the platform-admin ClusterRole; none by default', async () => {
    const name = `${FULLNAME}-platform-admin`;
    expect(objects.filter((o) => o.kind === 'ClusterRoleBinding' && o.metadata.name === name)).toEqual([]);
    const odd = 'team: "x" # {{ .Values }}';
    const bound = await render(['--set', `nats.url=${NATS_URL}`, '--set-json', `platformAdmins=${JSON.stringify({ groups: ['platform-team', odd], users: ['system:serviceaccount:flux-system:kustomize-controller'] })}`]);
    const binding = bound.find((o): o is Binding => o.kind === 'ClusterRoleBinding' && o.metadata.name === name);
    expect(binding?.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name });
    const group = (subject: string): Record<string, string> => ({ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: subject });
    expect(binding?.subjects).toEqual([group('platform-team'), group(odd), { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'system:serviceaccount:flux-system:kustomize-controller' }]);
  });

  it('Leases only in the release namespace; Events only in default (where events of cluster-scoped objects go)', () => {
    const leases = only(objects, 'Role', `${FULLNAME}-leader-election`);
    expect(leases.metadata.namespace).toBe(NAMESPACE);
    expect(flatten(leases.rules)).toEqual(['coordination.k8s.io/leases create,get,list,update']);
    const events = only(objects, 'Role', `${FULLNAME}-events`);
    expect(events.metadata.namespace).toBe('default');
    expect(flatten(events.rules)).toEqual(['core/events create']);
  });

  it('every binding binds its role to the chart ServiceAccount only', () => {
    const bindings = objects.filter((o): o is Binding => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding');
    expect(bindings).toHaveLength(3);
    for (const binding of bindings) {
      expect(binding.roleRef.name).toBe(binding.metadata.name);
      expect(binding.roleRef.kind).toBe(binding.kind === 'ClusterRoleBinding' ? 'ClusterRole' : 'Role');
      expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: FULLNAME, namespace: NAMESPACE }]);
    }
  });

  it('rbac.prometheusRules=false drops the CRD read and PrometheusRules; rbac.create=false renders no RBAC', async () => {
    const without = only(await render(['--set', `nats.url=${NATS_URL}`, '--set', 'rbac.prometheusRules=false']), 'ClusterRole', FULLNAME);
    expect(flatten(without.rules).filter((r) => r.includes('prometheus'))).toEqual([]);
    const none = await render(['--set', `nats.url=${NATS_URL}`, '--set', 'rbac.create=false']);
    expect(none.filter((o) => o.apiVersion.startsWith('rbac.authorization.k8s.io'))).toEqual([]);
  });
});

describe('admission policy (templates/admission-policy.yaml; proven on the API server by admission-policy.test.ts)', () => {
  interface Policy extends KubeObject {
    spec: {
      failurePolicy: string;
      matchConditions: { name: string; expression: string }[];
      matchConstraints: { resourceRules: { resources: string[]; operations: string[] }[] };
      variables: { name: string; expression: string }[];
    };
  }
  interface PolicyBinding extends KubeObject {
    spec: { policyName: string; validationActions: string[]; matchResources?: unknown };
  }
  const policyOf = (objects: readonly KubeObject[]): Policy => objects.find((o) => o.kind === 'ValidatingAdmissionPolicy') as Policy;

  it('binds the policy with Deny to every request, fails closed, and matches every resource and subresource written', async () => {
    const objects = await render();
    const policy = policyOf(objects);
    const binding = objects.find((o): o is PolicyBinding => o.kind === 'ValidatingAdmissionPolicyBinding');
    expect(policy.apiVersion).toBe('admissionregistration.k8s.io/v1');
    expect(binding?.spec).toEqual({ policyName: policy.metadata.name, validationActions: ['Deny'] });
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], operations: ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] },
    ]);
  });

  it('judges only the chart ServiceAccount (also a named one), and knows the release namespace', async () => {
    const check = (policy: Policy, serviceAccount: string): void => {
      expect(policy.spec.matchConditions).toEqual([
        { name: 'operator-service-account', expression: `request.userInfo.username == "system:serviceaccount:${NAMESPACE}:${serviceAccount}"` },
      ]);
      expect(policy.spec.variables.find((v) => v.name === 'releaseNamespaceWrite')?.expression).toContain(`variables.requestNamespace == "${NAMESPACE}"`);
    };
    check(policyOf(await render()), FULLNAME);
    check(policyOf(await render(['--set', `nats.url=${NATS_URL}`, '--set', 'serviceAccount.name=eva-robot'])), 'eva-robot');
  });

  it('names the labels, annotation, finalizer and namespace prefix src/api and src/steps use', async () => {
    const text = JSON.stringify(policyOf(await render()).spec);
    for (const name of [`'${LABELS.managedBy}'`, `'${LABELS.tenantUid}'`, `'${MANAGED_BY}'`, `'${WAVE_LABEL}'`, `'${OWNER_ANNOTATION}'`, `'${FINALIZER}'`, `'${GROUP}'`, `'${PLURAL}'`, `'${tenantNamespace('')}'`, `'${KIND}'`]) {
      expect(text, name).toContain(name);
    }
  });

  it('admissionPolicy.enabled=false renders neither the policy nor its binding', async () => {
    const objects = await render(['--set', `nats.url=${NATS_URL}`, '--set', 'admissionPolicy.enabled=false']);
    expect(objects.filter((o) => o.apiVersion.startsWith('admissionregistration.k8s.io') && o.metadata.name.endsWith('-write-confinement'))).toEqual([]);
  });
});

// ---- on the local control plane ---------------------------------------------------------------------

const runId = `${String(process.pid)}-${randomBytes(3).toString('hex')}`;
const liveNamespace = `eva-chart-${runId}`;
const liveRelease = `evo-${runId}`;
const liveFullname = `${liveRelease}-eva-operator`;

function helmOk(result: HelmResult, what: string): string {
  if (result.code !== 0) throw new Error(`${what} failed (${result.code}): ${result.stderr}`);
  return result.stdout;
}

interface PodView {
  metadata: { name: string };
  status: { phase?: string };
}

function pods(namespace: string): PodView[] {
  return (JSON.parse(kubectlOk(['get', 'pods', '-n', namespace, '-o', 'json'])) as { items: PodView[] }).items;
}

/** Audited writes as sorted "<where> <group>/<resource>[/<subresource>] <verb>" lines with their counts. */
function writeTable(writes: readonly AuditEvent[], namespaces: Record<string, string>): [string, number][] {
  const counts = new Map<string, number>();
  for (const { verb, objectRef: ref = {} } of writes) {
    const namespace = ref.resource === 'namespaces' ? undefined : ref.namespace;
    const where = namespace === undefined ? 'cluster' : (namespaces[namespace] ?? `namespace ${namespace}`);
    const line = `${where} ${ref.apiGroup ?? 'core'}/${ref.resource ?? '?'}${ref.subresource ? `/${ref.subresource}` : ''} ${verb}`;
    counts.set(line, (counts.get(line) ?? 0) + 1);
  }
  return [...counts].sort(([a], [b]) => a.localeCompare(b));
}

describe('on the local control plane', () => {
  let installed = false;

  beforeAll(() => {
    // Pod Security restricted enforced: the chart's pods (operator and NATS) must be admitted under it.
    kubectlOk(['create', 'namespace', liveNamespace]);
    kubectlOk(['label', 'namespace', liveNamespace, 'pod-security.kubernetes.io/enforce=restricted', 'pod-security.kubernetes.io/enforce-version=latest']);
    // The operator's NATS Secret, as docs/install.md says to create it from the bootstrap's files.
    kubectlOk(['create', 'secret', 'generic', 'eva-operator-nats', '-n', liveNamespace, `--from-file=${join(bootstrapped.dir, 'system.creds')}`, `--from-file=${join(bootstrapped.dir, 'operator-signing-key.nk')}`]);
  });

  afterAll(async () => {
    if (installed) await helm(['uninstall', liveRelease, '--namespace', liveNamespace, '--wait', '--timeout', '120s']);
    kubectl(['delete', 'namespace', liveNamespace, '--ignore-not-found', '--wait=false']);
  }, 300_000);

  it('installs with nats.enabled=true: the operator pods and NATS run (kwok runs pods without pulling images)', async () => {
    const out = helmOk(
      await helm(['install', liveRelease, chartDir, '--namespace', liveNamespace, ...QUICK_START_NATS, '--wait', '--timeout', '180s']),
      'helm install',
    );
    installed = true;
    expect(out).toContain('STATUS: deployed');
    const running = await eventually(() => {
      const list = pods(liveNamespace);
      return list.length === 3 && list.every((p) => p.status.phase === 'Running');
    }, 120_000, 1_000);
    expect(running, JSON.stringify(pods(liveNamespace).map((p) => [p.metadata.name, p.status.phase]))).toBe(true);
    expect(pods(liveNamespace).map((p) => p.metadata.name).filter((n) => n.startsWith(`${liveFullname}-nats-`))).toHaveLength(1);
    // The CRD is there (installed from crds/, or already present).
    expect(kubectl(['get', 'crd', 'evatenants.eva.aidonow.com']).status).toBe(0);
  }, 300_000);

  describe('the operator with exactly the chart RBAC', () => {
    const version = `0.0.0-chart.${runId.replace(/[^0-9a-z]/g, '')}`;
    const code = `ZC${Array.from(randomBytes(4), (b) => String.fromCharCode(65 + (b % 26))).join('')}`;
    const tenant = code.toLowerCase();
    let operator: OperatorProcess | undefined;
    let dir: string;

    beforeAll(async () => {
      expect(installed, 'the chart must be installed first').toBe(true);
      dir = mkdtempSync(join(tmpdir(), 'eva-chart-rbac-'));
      const kubeconfig = serviceAccountKubeconfig(join(dir, 'kubeconfig'), chartServiceAccount({ release: liveRelease, namespace: liveNamespace }));
      expect(kubectlOk(['--kubeconfig', kubeconfig, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])).toBe(
        `system:serviceaccount:${liveNamespace}:${liveFullname}`,
      );
      // A version of its own with MAX_WAVE 0: it acts only on the tenant pinned to it, never on others'.
      operator = startOperator({
        KUBECONFIG: kubeconfig,
        OPERATOR_VERSION: version,
        MAX_WAVE: '0',
        POD_NAMESPACE: liveNamespace,
        POD_NAME: `${liveFullname}-test`,
      });
      await operator.ready(60_000);
    }, 120_000);

    afterAll(async () => {
      if (kubectl(['get', 'evt', tenant]).status === 0) {
        kubectl(['delete', 'evt', tenant, '--wait=false']);
        await waitForGone(tenant, 180_000);
      }
      if (operator) {
        await operator.stop();
        removeSecretsDir(operator);
      }
      rmSync(dir, { recursive: true, force: true });
    }, 300_000);

    it('provisions a Starter tenant to Active and decommissions it, with no request forbidden, under the admission policy', async () => {
      expect(kubectl(['get', 'validatingadmissionpolicybinding', `${liveFullname}-write-confinement`]).status, 'the chart installs its admission policy').toBe(0);
      const since = auditOffset();
      applyTenant(tenant, { capsuleCode: code, tier: 'Starter', seedsVersion: '1.0.0', wave: 1, operatorVersion: version });
      const active = await waitForPhase(tenant, 'Active', 240_000);
      for (const type of ['NamespaceReady', 'Provisioned', 'SeedLoaded', 'ModulesDeployed', 'IngressReady', 'Ready']) {
        expect(active.conditions[type]?.status, type).toBe('True');
      }
      // The Lease lives in the release namespace (the Role there), the Events in default (the Role there).
      expect(kubectl(['get', 'lease', '-n', liveNamespace, leaseNameForVersion(version)]).status).toBe(0);
      expect(kubectlOk(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${tenant}`, '-o', 'name'])).not.toBe('');

      kubectlOk(['delete', 'evt', tenant, '--wait=false']);
      expect(await waitForGone(tenant, 240_000), `EvaTenant ${tenant} was not removed`).toBe(true);
      expect(kubectl(['get', 'namespace', `eva-tenant-${tenant}`]).status).not.toBe(0);
      const logs = operator?.logs() ?? '';
      expect(logs, 'a request was forbidden: the chart RBAC or admission policy misses a permission').not.toMatch(/forbidden|HTTP-Code: 403/i);

      // What the operator and its helm processes wrote, where (the audit log records no Leases or Events).
      const writes = auditWritesSince(since).filter((w) => w.user?.username === `system:serviceaccount:${liveNamespace}:${liveFullname}`);
      const table = writeTable(writes, { [`eva-tenant-${tenant}`]: 'tenant namespace', [liveNamespace]: 'release namespace' });
      console.info(`[operator-chart] the operator's writes for one Starter tenant, provisioned and decommissioned:\n${table.map(([line, count]) => `  ${line} x${String(count)}`).join('\n')}`);
      expect(writes.filter((w) => w.responseStatus?.code === 403), 'refused writes').toEqual([]);
      const lines = table.map(([line]) => line);
      expect(lines.filter((line) => !/^(cluster (core\/namespaces|eva\.aidonow\.com\/evatenants(\/status)?)|tenant namespace .*|release namespace core\/secrets) /.test(line))).toEqual([]);
      // Each part of the policy is exercised: the tenant namespace, the NATS account keys, the EvaTenant.
      for (const part of ['cluster core/namespaces create', 'cluster core/namespaces delete', 'cluster eva.aidonow.com/evatenants patch', 'cluster eva.aidonow.com/evatenants/status update', 'release namespace core/secrets create', 'tenant namespace core/secrets create']) {
        expect(lines, part).toContain(part);
      }
    }, 600_000);
  });

  it('uninstalls cleanly: cluster-scoped RBAC, the admission policy and the events Role go, the CRD stays', async () => {
    helmOk(await helm(['uninstall', liveRelease, '--namespace', liveNamespace, '--wait', '--timeout', '120s']), 'helm uninstall');
    installed = false;
    expect(kubectl(['get', 'clusterrole', liveFullname]).status).not.toBe(0);
    expect(kubectl(['get', 'clusterrolebinding', liveFullname]).status).not.toBe(0);
    for (const role of ['tenant-portal', 'platform-admin']) expect(kubectl(['get', 'clusterrole', `${liveFullname}-${role}`]).status, role).not.toBe(0);
    expect(kubectl(['get', 'validatingadmissionpolicy', `${liveFullname}-write-confinement`]).status).not.toBe(0);
    expect(kubectl(['get', 'validatingadmissionpolicybinding', `${liveFullname}-write-confinement`]).status).not.toBe(0);
    expect(kubectl(['get', 'role', '-n', 'default', `${liveFullname}-events`]).status).not.toBe(0);
    expect(kubectl(['get', 'crd', 'evatenants.eva.aidonow.com']).status).toBe(0);
    kubectlOk(['delete', 'namespace', liveNamespace, '--wait=true', '--timeout=120s']);
  }, 300_000);
});
