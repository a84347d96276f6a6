/**
 * Real pods (issue 10): the operator image built without a daemon (scripts/build-image.sh), pushed the
 * air-gapped way into the real node's registry (scripts/mirror-images.sh through `real-node.sh
 * load-images`), charts/eva-operator installed with it on a real kubelet (scripts/lib/real-node.sh:
 * containerd, runc, CNI, kube-proxy, NATS in operator mode, all in a network namespace with no route
 * out), and a Customer tenant whose module pods (the stand-ins of images/module-standin) really start,
 * read their tenant's NATS credentials and publish heartbeats.
 *
 * Needs root (namespaces, cgroups, mounts), as CI has: without it the test FAILS with the reason, it
 * never skips. Its node lives in its own state folder (EVA_REAL_NODE_E2E_DIR, default
 * ~/.local/state/eva-operator/real-node-e2e) and is removed at the end; the shared clusters are untouched.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODULES_BY_TIER } from '../src/api/modules.ts';
import type { HeartbeatReport } from './support/real-node-probe.ts';
import { inNodeOk, kube, kubeJson, kubeOk, NATS_URL, type PodView, podReady, pods, REGISTRY, realNodeState, type Result, runScript, until } from './support/real-node.ts';

const OPERATOR_NS = 'eva-system';
const CUSTOMER = 'rnode';
const CUSTOMER_CODE = 'RNODEA';
const cacheRoot = process.env.EVA_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(process.env.HOME ?? '/root', '.cache'), 'eva-operator');
const imagesDir = join(cacheRoot, 'images');
const times: Record<string, number> = {};
/** In the operator's images.txt, never in the registry. */
// Below 1.0.0, so that unpinned tenants keep 1.0.0 (an unpinned tenant gets the highest version listed).
const MISSING_VERSION = '0.0.1-missing';
const MISSING_IMAGE = `ghcr.io/aidonow/orbit-crm:${MISSING_VERSION}@sha256:${'0'.repeat(64)}`;

interface TenantView {
  metadata: { name: string; generation?: number };
  status?: { phase?: string; observedGeneration?: number; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

const tenantNs = (code: string): string => `eva-tenant-${code.toLowerCase()}`;

function tenant(name: string): TenantView | undefined {
  const r = kube(['get', 'evatenant', name, '-o', 'json']);
  return r.status === 0 ? (JSON.parse(r.stdout) as TenantView) : undefined;
}

function applyTenant(name: string, code: string, extra: Record<string, unknown> = {}): void {
  const manifest = { apiVersion: 'eva.aidonow.com/v1alpha1', kind: 'EvaTenant', metadata: { name }, spec: { capsuleCode: code, tier: 'Customer', seedsVersion: '1.0.0', ...extra } };
  kubeOk(['apply', '-f', '-'], JSON.stringify(manifest));
}

const active = (name: string) => (): TenantView | undefined => {
  const t = tenant(name);
  return t?.status?.phase === 'Active' && t.status.observedGeneration === t.metadata.generation ? t : undefined;
};

/** The image references of images.txt as scripts/build-image.sh wrote it: repository -> digest. */
function builtDigests(): Map<string, string> {
  const lines = readFileSync(join(imagesDir, 'images.txt'), 'utf8').split('\n').filter((l) => l.includes('@sha256:'));
  return new Map(lines.map((l) => {
    const [ref = '', digest = ''] = l.split('@');
    return [ref.replace(/:[^:/]+$/, ''), digest];
  }));
}

function leaseHolder(): string | undefined {
  const leases = (kubeJson(['get', 'leases', '-n', OPERATOR_NS]) as { items: { metadata: { name: string }; spec: { holderIdentity?: string } }[] }).items;
  return leases.find((l) => l.metadata.name.startsWith('eva-operator'))?.spec.holderIdentity || undefined;
}

const operatorPods = (): PodView[] => pods(OPERATOR_NS, 'app.kubernetes.io/name=eva-operator').filter((p) => p.metadata.deletionTimestamp === undefined);

function heartbeats(code: string, modules: readonly string[]): HeartbeatReport {
  // The tenant's own credentials, from its Secret, on stdin of the probe (never argv, never disk).
  const out = inNodeOk(['bash', '-c', `kubectl get secret eva-nats -n ${tenantNs(code)} -o 'jsonpath={.data.nats\\.creds}' | base64 -d | node_modules/.bin/node e2e/support/real-node-probe.ts heartbeats ${code} ${modules.join(' ')}`]);
  return JSON.parse(out) as HeartbeatReport;
}

describe('real node: the operator image and chart, real module pods', () => {
  beforeAll(async () => {
    if (process.getuid?.() !== 0) throw new Error('the real-node test needs root (network/mount/PID namespaces, cgroups): run the suite as root, as CI does');
    times['image build'] = await runScript('scripts/build-image.sh', [], 1_500_000);
    await runScript('scripts/lib/real-node.sh', ['down'], 120_000);
    times['node up'] = await runScript('scripts/lib/real-node.sh', ['up'], 300_000);
    times['images to registry'] = await runScript('scripts/lib/real-node.sh', ['load-images', join(imagesDir, 'images.tar')], 300_000);
    const operatorDigest = builtDigests().get('ghcr.io/aidonow/eva-operator');
    if (operatorDigest === undefined) throw new Error(`${imagesDir}/images.txt names no operator image`);
    kubeOk(['apply', '-f', 'scripts/dev-cluster/ingress-classes.yaml']);
    kubeOk(['create', 'namespace', OPERATOR_NS]);
    // The operator resolves module images from the digests this build made (chart value
    // imagesConfigMap), plus one version whose image was never pushed (the pull-failure case).
    const images = `${readFileSync(join(imagesDir, 'images.txt'), 'utf8')}${MISSING_IMAGE}\n`;
    kubeOk(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'eva-images', namespace: OPERATOR_NS }, data: { 'images.txt': images } }));
    kubeOk(['label', 'namespace', OPERATOR_NS, 'pod-security.kubernetes.io/enforce=restricted', 'pod-security.kubernetes.io/enforce-version=latest']);
    // The operator's NATS files, from the node's nats-auth folder (0600) straight into the Secret.
    inNodeOk(['kubectl', 'create', 'secret', 'generic', 'eva-operator-nats', '-n', OPERATOR_NS,
      `--from-file=system.creds=${realNodeState}/nats-auth/system.creds`, `--from-file=operator-signing-key.nk=${realNodeState}/nats-auth/operator-signing-key.nk`]);
    const started = Date.now();
    inNodeOk(['helm', 'install', 'eva-operator', 'charts/eva-operator', '-n', OPERATOR_NS, '--wait', '--timeout', '4m',
      '--set', `image.repository=${REGISTRY}/aidonow/eva-operator`, '--set', `image.digest=${operatorDigest}`,
      '--set', `nats.url=${NATS_URL}`, '--set', `airGapRegistry=${REGISTRY}`, '--set', 'ingressReadyOnCreate=true',
      '--set', 'networkPolicy.natsCidr=10.254.0.1/32', '--set', 'imagesConfigMap=eva-images', '--set', 'resources.requests.cpu=50m'], undefined, 300_000);
    times['operator chart to Ready'] = (Date.now() - started) / 1000;
  }, 1_800_000);

  afterAll(async () => {
    process.stderr.write(`[real-node] times (s): ${JSON.stringify(times)}\n`);
    if (process.env.EVA_REAL_NODE_KEEP !== '1') await runScript('scripts/lib/real-node.sh', ['down'], 120_000);
  }, 180_000);

  it('runs both operator replicas Ready from the built image, pulled by digest, one of them leading', async () => {
    const running = await until('2 operator pods Ready', () => {
      const p = operatorPods();
      return p.length === 2 && p.every(podReady) ? p : undefined;
    }, 120_000);
    const digest = builtDigests().get('ghcr.io/aidonow/eva-operator') ?? '';
    for (const p of running) {
      expect(p.spec.containers[0]?.image).toBe(`${REGISTRY}/aidonow/eva-operator@${digest}`);
      expect(p.status.containerStatuses?.[0]?.imageID).toContain(digest);
    }
    const holder = await until('a lease holder', leaseHolder, 60_000);
    expect(running.map((p) => p.metadata.name)).toContain(holder);
  }, 600_000);

  it('keeps the secrets dir a tmpfs and the root filesystem read-only in the operator pod', () => {
    const pod = operatorPods()[0]?.metadata.name ?? '';
    const mounts = kubeOk(['exec', '-n', OPERATOR_NS, pod, '--', 'node', '-e', "process.stdout.write(require('fs').readFileSync('/proc/self/mounts','utf8'))"]);
    expect(mounts).toMatch(/^\S+ \/run\/helm-secrets tmpfs /m);
    expect(mounts).toMatch(/^overlay \/ overlay ro[,\s]/m);
  });

  it('brings a Customer tenant applied with kubectl to Active, every module pod Running, each heartbeat in its tenant stream', async () => {
    const started = Date.now();
    applyTenant(CUSTOMER, CUSTOMER_CODE);
    await until(`${CUSTOMER} Active`, active(CUSTOMER), 300_000);
    times['tenant to Active'] = (Date.now() - started) / 1000;
    const modules = MODULES_BY_TIER.Customer;
    const modulePods = pods(tenantNs(CUSTOMER_CODE)).filter((p) => p.metadata.deletionTimestamp === undefined);
    expect(modulePods.filter(podReady).length).toBeGreaterThanOrEqual(modules.length);
    // Pulled the air-gapped way: from the node's registry, by the digest the build made.
    const digests = builtDigests();
    for (const p of modulePods) {
      const module = p.metadata.labels?.['app.kubernetes.io/instance'] ?? '';
      expect(p.spec.containers[0]?.image).toBe(`${REGISTRY}/aidonow/${module}@${digests.get(`ghcr.io/aidonow/${module}`) ?? '?'}`);
    }
    const report = await until('a heartbeat of every module', () => {
      const r = heartbeats(CUSTOMER_CODE, modules);
      return Object.values(r).every((h) => h !== null) ? r : undefined;
    }, 60_000, 2_000);
    for (const module of modules) expect(report[module]).toMatchObject({ module, tenant: CUSTOMER_CODE });
    const t = tenant(CUSTOMER);
    expect(t?.status?.conditions?.find((c) => c.type === 'IngressReady')?.status).toBe('True');
  }, 600_000);

  it('leaves no values file in the operator pods after installs', () => {
    for (const p of operatorPods()) {
      const left = kubeOk(['exec', '-n', OPERATOR_NS, p.metadata.name, '--', 'node', '-e', "process.stdout.write(require('fs').readdirSync('/run/helm-secrets').join('\\n'))"]);
      expect(left.trim()).toBe('');
    }
  });

  it('refuses a pod that violates restricted Pod Security in the tenant namespace (positive control)', () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'privileged', namespace: tenantNs(CUSTOMER_CODE) }, spec: { containers: [{ name: 'c', image: `${REGISTRY}/eva/pause`, securityContext: { privileged: true } }] } };
    const r = kube(['apply', '-f', '-'], JSON.stringify(pod));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/violates PodSecurity "restricted/);
  });

  it('confines the operator identity by the chart admission policy: refused in kube-system, allowed in its tenant namespace (positive control)', () => {
    const asOperator = (namespace: string): Result => kube(['--as', `system:serviceaccount:${OPERATOR_NS}:eva-operator`, 'create', '--dry-run=server', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'confinement-probe', namespace }, data: { x: 'y' } }));
    const refused = asOperator('kube-system');
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("ValidatingAdmissionPolicy 'eva-operator-write-confinement'");
    const allowed = asOperator(tenantNs(CUSTOMER_CODE));
    expect(allowed.stderr).toBe('');
    expect(allowed.status).toBe(0);
  });

  it('hands over to the standby when the leader pod is deleted; a tenant applied afterwards reaches Active', async () => {
    const leader = leaseHolder() ?? '';
    kubeOk(['delete', 'pod', '-n', OPERATOR_NS, leader, '--wait=false']);
    const next = await until('another leader', () => {
      const h = leaseHolder();
      return h !== undefined && h !== leader ? h : undefined;
    }, 120_000);
    expect(next).not.toBe(leader);
    applyTenant('rnodeb', 'RNODEB');
    await until('rnodeb Active', active('rnodeb'), 300_000);
  }, 600_000);

  it('reports a module image that cannot be pulled, leaves other tenants alone, and recovers when the pin is fixed', async () => {
    applyTenant('rnodeb', 'RNODEB', { versions: { 'orbit-crm': MISSING_VERSION } });
    const failed = await until('ModulesDeployed False with ImagePullFailed', () => {
      const c = tenant('rnodeb')?.status?.conditions?.find((x) => x.type === 'ModulesDeployed');
      return c?.status === 'False' && c.reason === 'ImagePullFailed' ? c : undefined;
    }, 240_000, 2_000);
    expect(failed.message).toContain(`${REGISTRY}/aidonow/orbit-crm@sha256:${'0'.repeat(64)}`);
    expect(active(CUSTOMER)()).toBeDefined();
    applyTenant('rnodeb', 'RNODEB', { versions: {} });
    await until('rnodeb Active again', active('rnodeb'), 300_000);
  }, 600_000);

  it('deletes a tenant with zero residue, its pods included', async () => {
    for (const name of ['rnodeb', CUSTOMER]) kubeOk(['delete', 'evatenant', name, '--wait=false']);
    await until('tenants gone', () => (tenant('rnodeb') === undefined && tenant(CUSTOMER) === undefined ? true : undefined), 300_000);
    for (const code of ['RNODEB', CUSTOMER_CODE]) {
      await until(`${tenantNs(code)} gone`, () => (kube(['get', 'namespace', tenantNs(code)]).status !== 0 ? true : undefined), 120_000);
    }
    // Not one container of theirs left in containerd (sandboxes included).
    for (const code of ['RNODEB', CUSTOMER_CODE]) {
      const left = await until(`${tenantNs(code)}'s containers gone`, () => {
        const ids = inNodeOk(['ctr', '--address', '/run/containerd/containerd.sock', '-n', 'k8s.io', 'containers', 'ls', '-q', `labels."io.kubernetes.pod.namespace"==${tenantNs(code)}`]).trim();
        return ids === '' ? ids : undefined;
      }, 120_000);
      expect(left).toBe('');
    }
  }, 600_000);
});
