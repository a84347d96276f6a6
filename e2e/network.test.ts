/**
 * Network isolation judged by a real enforcer, and tenant traffic through a real ingress controller
 * with TLS (issue 19), on the real node (scripts/lib/real-node.sh: kube-router's firewall enforces
 * NetworkPolicies; Traefik serves Ingresses as an ordinary pod). Two Starter tenants A and B are
 * provisioned by the operator chart, with INGRESS_CLASS=traefik and INGRESS_TLS_SECRET naming a wildcard
 * certificate this test makes from a throwaway CA.
 *
 * Every "refused" probe has its positive control: with the enforcer stopped, the very same probes
 * connect (so the test proves enforcement, not an unreachable address), and with it restarted they are
 * refused again without the operator doing anything. Probes run in A's own module pod (the stand-in's
 * `dial`, `kubectl exec`), and target only addresses inside the node's network namespace.
 *
 * Needs root, as CI has; FAILS (never skips) without it. Its node is the real-node tests' state folder
 * (EVA_REAL_NODE_E2E_DIR), removed at the end.
 */
import { testPki } from '../test/support/certificates.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODULES_BY_TIER } from '../src/api/modules.ts';
import { active, applyTenant, inNode, kube, kubeJson, kubeOk, nodeWithOperator, OPERATOR_NS, type PodView, podReady, pods, runScript, tenant, tenantNs, until } from '../test/support/real-node.ts';

const DOMAIN = 'tenants.eva.test';
const TRAEFIK_IP = '10.96.0.80';
const NODE_IP = '10.254.0.1';
const BRIDGE_IP = '10.244.0.1';
const A = { name: 'neta', code: 'NETAAA' };
const B = { name: 'netb', code: 'NETBBB' };
const MODULES = MODULES_BY_TIER.Starter;
const [FROM_MODULE = '', OWN_MODULE = ''] = MODULES;
const times: Record<string, number> = {};
const pki = testPki();
let wildcard: { cert: string; key: string };
const started = Date.now();

/** The platform's wildcard Secret (INGRESS_TLS_SECRET), from a certificate file and the test's key. */
function applyWildcard(files: { cert: string; key: string }): void {
  kubeOk(['apply', '-f', '-'], kubeOk(['create', 'secret', 'tls', 'eva-wildcard-tls', '-n', OPERATOR_NS, `--cert=${files.cert}`, `--key=${files.key}`, '--dry-run=client', '-o', 'json']));
}

const host = (code: string): string => `${code.toLowerCase()}.${DOMAIN}`;

/** GET https://<tenant host>/<module>/readyz through Traefik, verifying the host name against the test's CA. */
function httpsThroughIngress(code: string, module: string): { status: number; body: string } {
  const r = inNode(['curl', '-sS', '--max-time', '5', '--cacert', pki.caCert, '--resolve', `${host(code)}:443:${TRAEFIK_IP}`,
    '-w', '\n%{http_code}', `https://${host(code)}/${module}/readyz`]);
  const lines = r.stdout.trimEnd().split('\n');
  return { status: Number(lines.pop() ?? 0), body: r.status === 0 ? lines.join('\n') : r.stderr };
}

function runningPod(code: string, module: string): PodView {
  const pod = pods(tenantNs(code), `app.kubernetes.io/instance=${module}`).find((p) => podReady(p) && p.metadata.deletionTimestamp === undefined);
  if (!pod) throw new Error(`no Ready ${module} pod of ${code}`);
  return pod;
}

const podIp = (code: string, module: string): string => runningPod(code, module).status.podIP ?? '';
const serviceIp = (code: string, module: string): string => kubeOk(['get', 'service', module, '-n', tenantNs(code), '-o', 'jsonpath={.spec.clusterIP}']).trim();

/** A TCP connection from tenant A's pod: true when accepted. */
function dialFromA(target: string): boolean {
  const from = runningPod(A.code, FROM_MODULE).metadata.name;
  const r = kube(['exec', '-n', tenantNs(A.code), from, '--', '/eva-module', 'dial', '--timeout', '2s', target]);
  if (r.status !== 0 && !r.stdout.startsWith('refused:')) throw new Error(`probe ${target} did not run: ${r.stderr}${r.stdout}`);
  return r.status === 0;
}

interface Targets {
  refused: Record<string, string>;
  allowed: Record<string, string>;
}

function targets(): Targets {
  const operatorPod = pods(OPERATOR_NS, 'app.kubernetes.io/name=eva-operator').find(podReady);
  return {
    refused: {
      "B's pod": `${podIp(B.code, FROM_MODULE)}:8080`,
      "B's Service": `${serviceIp(B.code, FROM_MODULE)}:8080`,
      "NATS's monitoring port": `${NODE_IP}:8222`,
      'the API server (node address)': `${NODE_IP}:6443`,
      'the API server (Service kubernetes)': '10.96.0.1:443',
      "the operator's metrics port": `${operatorPod?.status.podIP ?? '?'}:8080`,
      "the node's kubelet": `${NODE_IP}:10250`,
      "the node's bridge address (API server)": `${BRIDGE_IP}:6443`,
    },
    allowed: {
      "A's own pod": `${podIp(A.code, OWN_MODULE)}:8080`,
      "A's own Service": `${serviceIp(A.code, OWN_MODULE)}:8080`,
      "NATS's client port": `${NODE_IP}:4222`,
    },
  };
}

const probe = (list: Record<string, string>): Record<string, boolean> => Object.fromEntries(Object.entries(list).map(([what, target]) => [what, dialFromA(target)]));
const all = (list: Record<string, string>, value: boolean): Record<string, boolean> => Object.fromEntries(Object.keys(list).map((k) => [k, value]));

function condition(name: string, type: string): { status: string; reason?: string; message?: string } | undefined {
  return tenant(name)?.status?.conditions?.find((c) => c.type === type);
}

describe('real node: NetworkPolicies enforced, tenant traffic through Traefik over verified HTTPS', () => {
  beforeAll(async () => {
    wildcard = pki.issue('wildcard', `*.${DOMAIN}`);
    await nodeWithOperator(times, {
      values: ['ingressClass=traefik', `baseDomain=${DOMAIN}`, 'ingressTls.secret=eva-system/eva-wildcard-tls',
        'networkPolicy.ingressNamespaces=kubernetes.io/metadata.name=ingress-traefik', 'driftIntervalSeconds=5'],
      beforeInstall: () => {
        applyWildcard(wildcard);
      },
    });
    const t0 = Date.now();
    applyTenant(A.name, A.code, {}, 'Starter');
    applyTenant(B.name, B.code, {}, 'Starter');
    await until('A and B Active', () => (active(A.name)() && active(B.name)() ? true : undefined), 420_000, 2_000);
    times['2 tenants to Active (real pods, address from Traefik, TLS copied)'] = (Date.now() - t0) / 1000;
  }, 2_400_000);

  afterAll(async () => {
    pki.remove();
    times['suite'] = (Date.now() - started) / 1000;
    process.stderr.write(`[network] times (s): ${JSON.stringify(times)}\n`);
    if (process.env.EVA_REAL_NODE_KEEP !== '1') await runScript('scripts/lib/real-node.sh', ['down'], 120_000);
  }, 180_000);

  it('gives each tenant Ingress the address Traefik writes, and a tls section naming the copied wildcard certificate', () => {
    for (const t of [A, B]) {
      const ingress = kubeJson(['get', 'ingress', 'eva-tenant', '-n', tenantNs(t.code)]) as { spec: { ingressClassName?: string; tls?: { hosts: string[]; secretName: string }[] }; status: { loadBalancer: { ingress?: { ip?: string }[] } } };
      expect(ingress.spec.ingressClassName).toBe('traefik');
      expect(ingress.spec.tls).toEqual([{ hosts: [host(t.code)], secretName: 'eva-tenant-tls' }]);
      expect(ingress.status.loadBalancer.ingress).toEqual([{ ip: TRAEFIK_IP }]);
      expect(kubeOk(['get', 'secret', 'eva-tenant-tls', '-n', tenantNs(t.code), '-o', 'jsonpath={.type}'])).toBe('kubernetes.io/tls');
      expect(condition(t.name, 'IngressReady')?.status).toBe('True');
    }
  });

  it("serves A's and B's hosts over HTTPS verified against the test's CA, each from its own tenant's modules", async () => {
    const t0 = Date.now();
    for (const t of [A, B]) {
      for (const module of MODULES) {
        const answer = await until(`https://${host(t.code)}/${module}/readyz`, () => {
          const r = httpsThroughIngress(t.code, module);
          return r.status === 200 ? r : undefined;
        }, 60_000);
        expect(JSON.parse(answer.body)).toMatchObject({ module, tenant: t.code, path: `/${module}/readyz`, ready: true });
      }
    }
    times['verified HTTPS answers through Traefik (all modules of A and B)'] = (Date.now() - t0) / 1000;
    // The client really verifies: a host the certificate does not name is refused by curl (positive control).
    const wrong = inNode(['curl', '-sS', '--max-time', '5', '--cacert', pki.caCert, '--resolve', `${host(A.code)}.other.test:443:${TRAEFIK_IP}`, `https://${host(A.code)}.other.test/${FROM_MODULE}/readyz`]);
    expect(wrong.status).not.toBe(0);
    expect(wrong.stderr).toMatch(/certificate|SSL/i);
  });

  it("refuses from A's pod: B's pod and Service, NATS monitoring, the API server, the operator's metrics, the node; allows A's own pods and NATS's client port", () => {
    const list = targets();
    expect(probe(list.refused)).toEqual(all(list.refused, false));
    expect(probe(list.allowed)).toEqual(all(list.allowed, true));
    // Cluster DNS: this node has none (scripts/lib/real-node.sh), so there is nothing to probe; fail if that changes.
    expect(kube(['get', 'service', 'kube-dns', '-n', 'kube-system']).status).not.toBe(0);
  });

  it('reports an allow-all NetworkPolicy added to A\'s namespace (condition and Event naming it), which the enforcer honours; removed, A is Active again', async () => {
    expect(condition(A.name, 'NamespaceReady')?.status).toBe('True');
    const monitor = `${NODE_IP}:8222`;
    expect(dialFromA(monitor)).toBe(false);
    const allowAll = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'allow-all', namespace: tenantNs(A.code) }, spec: { podSelector: {}, policyTypes: ['Ingress', 'Egress'], ingress: [{}], egress: [{}] } };
    const t0 = Date.now();
    kubeOk(['apply', '-f', '-'], JSON.stringify(allowAll));
    try {
    // Policies add up: the enforcer lets A reach NATS's monitoring port now; measured, applied -> enforced.
    await until('the allow-all policy enforced', () => (dialFromA(monitor) ? true : undefined), 30_000, 200);
    times['policy applied -> enforced (allow-all widening)'] = (Date.now() - t0) / 1000;
    const reported = await until('NamespaceReady False, NetworkPolicyForeign', () => {
      const c = condition(A.name, 'NamespaceReady');
      return c?.status === 'False' && c.reason === 'NetworkPolicyForeign' ? c : undefined;
    }, 60_000);
    expect(reported.message).toContain(`${tenantNs(A.code)}/allow-all`);
    times['allow-all applied -> reported'] = (Date.now() - t0) / 1000;
    const uid = kubeOk(['get', 'evatenant', A.name, '-o', 'jsonpath={.metadata.uid}']);
    const events = await until('a NetworkPolicyForeign Warning event', () => {
      const out = kubeOk(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.uid=${uid},reason=NetworkPolicyForeign,type=Warning`, '-o', 'jsonpath={.items[*].message}']);
      return out.includes('allow-all') ? out : undefined;
    }, 30_000);
    expect(events).toContain(`${tenantNs(A.code)}/allow-all`);
    expect(condition(B.name, 'NamespaceReady')?.status, 'B is not affected').toBe('True');
    } finally {
      kubeOk(['delete', 'networkpolicy', 'allow-all', '-n', tenantNs(A.code)]);
    }
    await until('A Active again', active(A.name), 120_000);
    await until('A refused the monitoring port again', () => (dialFromA(monitor) ? undefined : true), 30_000, 200);
  }, 300_000);

  it('with the enforcer stopped the same probes connect (enforcement, not unreachable addresses); restarted, it enforces again with no operator action', async () => {
    const list = targets();
    const operatorBefore = kubeOk(['get', 'networkpolicy', '-A', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}@{.metadata.resourceVersion} {end}']);
    await runScript('scripts/lib/real-node.sh', ['enforcer', 'stop'], 120_000);
    expect(probe(list.refused), 'without an enforcer every address answers').toEqual(all(list.refused, true));
    expect(probe(list.allowed)).toEqual(all(list.allowed, true));
    const t0 = Date.now();
    await runScript('scripts/lib/real-node.sh', ['enforcer', 'start'], 120_000);
    await until('the probes refused again', () => (Object.values(probe(list.refused)).every((ok) => !ok) ? true : undefined), 60_000, 500);
    times['enforcer restarted -> tenants isolated again'] = (Date.now() - t0) / 1000;
    expect(probe(list.refused)).toEqual(all(list.refused, false));
    expect(probe(list.allowed)).toEqual(all(list.allowed, true));
    // No operator action: not one NetworkPolicy was written meanwhile.
    expect(kubeOk(['get', 'networkpolicy', '-A', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}@{.metadata.resourceVersion} {end}'])).toBe(operatorBefore);
    for (const t of [A, B]) expect(httpsThroughIngress(t.code, FROM_MODULE).status).toBe(200);
  }, 300_000);

  it('reports an expired platform certificate on IngressReady, naming the Secret, while the tenant keeps being served', async () => {
    applyWildcard(pki.issue('expired', `*.${DOMAIN}`, { expired: true }));
    const reported = await until('IngressReady False, TlsCertificateExpired', () => {
      const c = condition(A.name, 'IngressReady');
      return c?.status === 'False' && c.reason === 'TlsCertificateExpired' ? c : undefined;
    }, 120_000);
    expect(reported.message).toContain(`${tenantNs(A.code)}/eva-tenant-tls`);
    // Still routed: the modules answer through Traefik (curl told not to verify, the certificate being expired).
    const r = inNode(['curl', '-sk', '--max-time', '5', '--resolve', `${host(A.code)}:443:${TRAEFIK_IP}`, `https://${host(A.code)}/${FROM_MODULE}/readyz`]);
    expect(JSON.parse(r.stdout)).toMatchObject({ module: FROM_MODULE, tenant: A.code });
    // The valid certificate back: Active again.
    applyWildcard(wildcard);
    await until('A Active again', active(A.name), 120_000);
  }, 300_000);
});
