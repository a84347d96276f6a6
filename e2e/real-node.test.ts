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
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLLOUT_ANNOTATIONS } from '../src/api/evarollout.ts';
import { MODULES_BY_TIER } from '../src/api/modules.ts';
import type { OperatorProcess } from '../test/support/operator.ts';
import type { HeartbeatReport } from '../test/support/real-node-probe.ts';
import { active, applyTenant, builtDigests, inNodeOk, kube, kubeJson, kubeOk, nodeWithOperator, OPERATOR_NS, type PodView, podReady, pods, PROCESS_OPERATORS_NS, REGISTRY, type Result, runScript, startNodeOperator, tenant, tenantNs, until } from '../test/support/real-node.ts';
import { chartsWithDeployment, conditionOf, expectFailedGate, type Planned, plannedTenants, RolloutCluster, seconds } from '../test/support/rollouts.ts';

const CUSTOMER = 'rnode';
const CUSTOMER_CODE = 'RNODEA';
const times: Record<string, number> = {};
/** In the operator's images.txt, never in the registry. */
// Below 1.0.0, so that unpinned tenants keep 1.0.0 (an unpinned tenant gets the highest version listed).
const MISSING_VERSION = '0.0.1-missing';
const MISSING_IMAGE = `ghcr.io/aidonow/orbit-crm:${MISSING_VERSION}@sha256:${'0'.repeat(64)}`;

function leaseHolder(): string | undefined {
  const leases = (kubeJson(['get', 'leases', '-n', OPERATOR_NS]) as { items: { metadata: { name: string }; spec: { holderIdentity?: string } }[] }).items;
  return leases.find((l) => l.metadata.name.startsWith('eva-operator'))?.spec.holderIdentity || undefined;
}

const operatorPods = (): PodView[] => pods(OPERATOR_NS, 'app.kubernetes.io/name=eva-operator').filter((p) => p.metadata.deletionTimestamp === undefined);

function heartbeats(code: string, modules: readonly string[]): HeartbeatReport {
  // The tenant's own credentials, from its Secret, on stdin of the probe (never argv, never disk).
  const out = inNodeOk(['bash', '-c', `kubectl get secret eva-nats -n ${tenantNs(code)} -o 'jsonpath={.data.nats\\.creds}' | base64 -d | node_modules/.bin/node test/support/real-node-probe.ts heartbeats ${code} ${modules.join(' ')}`]);
  return JSON.parse(out) as HeartbeatReport;
}

// One node for both describes: the operator chart's, then the rollout's.
beforeAll(async () => {
  // Plus one version whose image was never pushed (the pull-failure case).
  await nodeWithOperator(times, { extraImages: `${MISSING_IMAGE}\n`, values: ['ingressReadyOnCreate=true'] });
}, 1_800_000);

afterAll(async () => {
  process.stderr.write(`[real-node] times (s): ${JSON.stringify(times)}\n`);
  if (process.env.EVA_REAL_NODE_KEEP !== '1') await runScript('scripts/lib/real-node.sh', ['down'], 120_000);
}, 180_000);

describe('real node: the operator image and chart, real module pods', () => {
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

// ---- a small fleet rollout (docs/rollouts.md), real pods and real readiness ----------------------
// Three operator versions from this checkout's sources, as processes in the node (startNodeOperator),
// in a shard of their own: OLD owns the tenants at the start; BAD's module charts give every pod a
// readiness probe of a port nothing listens on (the pods run, never Ready); GOOD's add a pod annotation
// (so a move really replaces the pods).
const RO = { OLD: '7.1.0', GOOD: '7.2.0', BAD: '7.3.0', SHARD: 'rollout', STEP_MS: 600_000 } as const;
const RO_TENANTS = plannedTenants('RNRO', [2, 1]);
const roWave = (wave: number): Planned[] => RO_TENANTS.filter((t) => t.wave === wave);
const fleet = new RolloutCluster(kube, RO.SHARD, RO.STEP_MS);
const BAD_PORT = 9;

const livePods = (t: Planned): PodView[] => pods(tenantNs(t.code)).filter((p) => p.metadata.deletionTimestamp === undefined);
const probesBadPort = (p: PodView): boolean => p.spec.containers[0]?.readinessProbe?.httpGet?.port === BAD_PORT;

/** Each of `tenants` runs BAD's pods (their containers running), none of them Ready. */
const runningUnready = (tenants: readonly Planned[]) => (): true | undefined =>
  tenants.every((t) => {
    const bad = livePods(t).filter(probesBadPort);
    return bad.length > 0 && bad.every((p) => p.status.containerStatuses?.[0]?.state?.running !== undefined && !podReady(p));
  }) || undefined;

/** Every pod of `tenants` Ready, none of BAD's, and each with the annotation when one is given. */
function expectPodsReady(tenants: readonly Planned[], annotation?: string): void {
  for (const t of tenants) {
    const now = livePods(t);
    expect(now.length, t.name).toBeGreaterThanOrEqual(MODULES_BY_TIER.Starter.length);
    for (const p of now) {
      expect(podReady(p) && !probesBadPort(p), `${p.metadata.namespace}/${p.metadata.name}`).toBe(true);
      if (annotation !== undefined) expect(p.metadata.annotations?.[annotation], p.metadata.name).toBeDefined();
    }
  }
}

/** Rollout `name` of every OLD tenant to `version`: wave 1's two at once, then wave 2, zero bake. */
function rollout(name: string, version: string, readyTimeoutSeconds: number): void {
  fleet.applyRollout(name, {
    targetVersion: version,
    fromVersion: RO.OLD,
    waves: [{ wave: 1, batch: { count: 2 }, bakeSeconds: 0 }, { wave: 2, batch: { percent: 100 }, bakeSeconds: 0 }],
    gates: { readyTimeoutSeconds },
    onFailure: 'Rollback',
  });
}

describe('real node: a small fleet rollout, real pods and readiness', () => {
  const operators: OperatorProcess[] = [];
  const charts: string[] = [];
  const figures: string[] = [];
  const launch = (name: string, version: string, env: Record<string, string> = {}): Promise<void> => {
    const op = startNodeOperator({ OPERATOR_VERSION: version, POD_NAME: name, SHARD: RO.SHARD, ...env });
    operators.push(op);
    return op.ready(120_000);
  };

  beforeAll(async () => {
    // The chart's operator would run these rollouts too (its Lease eva-rollouts is in its own namespace),
    // finding none of these versions' Leases there (they are in PROCESS_OPERATORS_NS).
    kubeOk(['scale', 'deployment', 'eva-operator', '-n', OPERATOR_NS, '--replicas=0']);
    kubeOk(['create', 'namespace', PROCESS_OPERATORS_NS]);
    const bad = chartsWithDeployment('bad', `{{- $_ := set (index $d.spec.template.spec.containers 0) "readinessProbe" (dict "httpGet" (dict "path" "/readyz" "port" ${String(BAD_PORT)}) "periodSeconds" 2) }}`);
    const good = chartsWithDeployment('good', '{{- $_ := set $d.spec.template.metadata.annotations "eva-e2e.test/charts" "good" }}');
    charts.push(bad, good);
    await launch('ro-old', RO.OLD);
    for (const t of RO_TENANTS) fleet.applyTenant(t, RO.OLD);
    await Promise.all([fleet.allActiveOn(RO_TENANTS, RO.OLD), launch('ro-good', RO.GOOD, { CHART_BASE_PATH: good }), launch('ro-bad', RO.BAD, { CHART_BASE_PATH: bad }),
      until("the chart's operator pods gone", () => pods(OPERATOR_NS, 'app.kubernetes.io/name=eva-operator').length === 0 || undefined, 300_000, 2_000)]);
  }, RO.STEP_MS);

  afterAll(async () => {
    kube(['delete', 'evr', 'to-bad', 'to-good', '--ignore-not-found']);
    await fleet.deleteTenants(RO_TENANTS, 300_000);
    await Promise.all(operators.map((op) => op.stop()));
    for (const dir of charts) rmSync(dir, { recursive: true, force: true });
    console.log(`\n[real-node rollout figures]\n${figures.map((f) => `  ${f}`).join('\n')}\n`);
  }, RO.STEP_MS);

  it('halts a rollout to a version whose pods never turn Ready and rolls it back: every tenant Ready on the old version, its pods Ready, its data kept', async () => {
    const data = new Map(roWave(1).map((t) => [t.name, fleet.tenantData(t)]));
    const seen = new Map<string, number>();
    rollout('to-bad', RO.BAD, 60);
    const [status] = await Promise.all([fleet.untilPhase('to-bad', 'RolledBack', seen), until("BAD's pods running, not Ready", runningUnready(roWave(1)), RO.STEP_MS, 2_000)]);
    expectFailedGate(status, 'TenantsReady', roWave(1));
    expect(fleet.eventTenants('to-bad', 'RolloutMoving').sort()).toEqual(roWave(1).map((t) => t.name).sort());
    await fleet.allActiveOn(RO_TENANTS, RO.OLD, 300_000);
    await until('the old pods Ready again', () => { expectPodsReady(roWave(1)); return true; }, 300_000, 2_000);
    expect(fleet.tenants().get(roWave(2)[0]?.name ?? '')?.metadata.annotations?.[ROLLOUT_ANNOTATIONS.rollout]).toBeUndefined();
    for (const t of roWave(1)) expect(fleet.tenantData(t), `${t.name}: namespace or NATS credentials changed`).toBe(data.get(t.name));
    figures.push(`rollback of ${String(roWave(1).length)} tenants: ${seconds((seen.get('RolledBack') ?? 0) - (seen.get('RollingBack') ?? 0))} from the halt to RolledBack`);
  }, RO.STEP_MS * 2);

  it('moves every tenant to a good version, gates passing, its new pods Ready (positive control)', async () => {
    const started = Date.now();
    rollout('to-good', RO.GOOD, 300);
    const status = await fleet.untilPhase('to-good', 'Succeeded', new Map());
    figures.push(`${String(RO_TENANTS.length)} tenants through two waves (zero bake): ${seconds(Date.now() - started)} to Succeeded`);
    expect(status.moved).toBe(RO_TENANTS.length);
    expect(conditionOf(status, 'Ready')).toBe('True');
    await fleet.allActiveOn(RO_TENANTS, RO.GOOD, 300_000);
    await until("GOOD's pods Ready", () => { expectPodsReady(RO_TENANTS, 'eva-e2e.test/charts'); return true; }, 300_000, 2_000);
  }, RO.STEP_MS * 2);
});
