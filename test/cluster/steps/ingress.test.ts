/**
 * Step ingress on the local control plane, whose default IngressClass is eva-lb (an address comes
 * from the kwok Stage): without INGRESS_CLASS the API server fills in the default class, which is not
 * drift; with INGRESS_CLASS the class is the operator's and a different one is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import { ingressStep, type IngressStepDeps } from '../../../src/steps/ingress/ingress.ts';
import { READY } from '../../../src/steps/step.ts';
import { testScope } from '../../support/fixtures.ts';
import { apiKube } from '../../support/api-reads.ts';
import { eventually, kubectlOk } from '../../support/kubectl.ts';
import { runLetters } from '../../support/random.ts';
import { testPki } from '../../support/certificates.ts';
import type { IngressSettings } from '../../../src/config.ts';

const run = runLetters();
let kube: Kube;
const namespaces: string[] = [];

beforeAll(() => {
  kube = new Kube(loadKubeConfig());
});

afterAll(async () => {
  for (const name of namespaces) await kube.core.deleteNamespace({ name }).catch(() => undefined);
});

async function tenantScope(code: string): Promise<ReturnType<typeof testScope>> {
  const scope = testScope({ code });
  await kube.core.createNamespace({ body: { metadata: { name: scope.namespace } } });
  namespaces.push(scope.namespace);
  return scope;
}

const deps = (ingressClass?: string): IngressStepDeps => ({
  ...apiKube(kube),
  config: { baseDomain: 'tenants.example.test', ingressReadyOnCreate: false, ingress: { tls: { mode: 'none' }, annotations: {} }, ...(ingressClass ? { ingressClass } : {}) },
});

describe('step ingress with the cluster\'s default IngressClass', () => {
  it('without INGRESS_CLASS: the default class is filled in, the address arrives, verify is ready and ensure writes nothing more', async () => {
    const scope = await tenantScope(`IN${run}`);
    // Judged from what the apply returned: no address yet.
    expect(await ingressStep.ensure(scope, deps())).toMatchObject({ ready: false, reason: 'WaitingForAddress' });
    expect(kubectlOk(['get', 'ingress', 'eva-tenant', '-n', scope.namespace, '-o', 'jsonpath={.spec.ingressClassName}'])).toBe('eva-lb');
    let verdict = await ingressStep.verify(scope, deps());
    expect(await eventually(async () => (verdict = await ingressStep.verify(scope, deps())).ready, 30_000)).toBe(true);
    expect(verdict).toEqual(READY);
    const before = kubectlOk(['get', 'ingress', 'eva-tenant', '-n', scope.namespace, '-o', 'jsonpath={.metadata.resourceVersion}']);
    expect(await ingressStep.ensure(scope, deps()), 'judged from what ensure read').toEqual(READY);
    expect(kubectlOk(['get', 'ingress', 'eva-tenant', '-n', scope.namespace, '-o', 'jsonpath={.metadata.resourceVersion}'])).toBe(before);
  });

  it('with INGRESS_CLASS: another class on the Ingress is drift (the control for the case above)', async () => {
    const scope = await tenantScope(`IC${run}`);
    await ingressStep.ensure(scope, deps());
    expect(await ingressStep.verify(scope, deps('eva-plain'))).toMatchObject({ ready: false, reason: 'IngressDrifted' });
  });
});

describe('step ingress with TLS', () => {
  const pki = testPki();
  const platformNs = `eva-platform-${run.toLowerCase()}`;
  const tlsDeps = (tls: IngressSettings['tls'], annotations: Record<string, string> = {}): IngressStepDeps => ({
    ...apiKube(kube),
    config: { baseDomain: 'tenants.example.test', ingressReadyOnCreate: true, ingress: { tls, annotations } },
  });
  const secretMode = (): IngressStepDeps => tlsDeps({ mode: 'secret', source: { namespace: platformNs, name: 'wildcard' } });
  const putPlatformCertificate = (files: { cert: string; key: string }): void => {
    const secret = kubectlOk(['create', 'secret', 'tls', 'wildcard', '-n', platformNs, `--cert=${files.cert}`, `--key=${files.key}`, '--dry-run=client', '-o', 'json']);
    kubectlOk(['apply', '-f', '-'], secret);
  };

  beforeAll(async () => {
    await kube.core.createNamespace({ body: { metadata: { name: platformNs } } });
    namespaces.push(platformNs);
  });
  afterAll(() => {
    pki.remove();
  });

  it('INGRESS_TLS_SECRET: routes served while the platform Secret is missing (reported by name), then copied, rotated, and an expired one reported', async () => {
    const scope = await tenantScope(`TS${run}`);
    const host = `${scope.code.toLowerCase()}.tenants.example.test`;
    expect(await ingressStep.ensure(scope, secretMode())).toMatchObject({ ready: false, reason: 'TlsSecretMissing', message: expect.stringContaining(`Secret ${platformNs}/wildcard (INGRESS_TLS_SECRET)`) as unknown });
    // The routes are there all the same.
    expect(kubectlOk(['get', 'ingress', 'eva-tenant', '-n', scope.namespace, '-o', 'jsonpath={.spec.tls[0].secretName} {.spec.tls[0].hosts[0]} {.spec.rules[0].host}'])).toBe(`eva-tenant-tls ${host} ${host}`);
    putPlatformCertificate(pki.issue('first', '*.tenants.example.test'));
    expect(await ingressStep.ensure(scope, secretMode())).toEqual(READY);
    expect(await ingressStep.verify(scope, secretMode())).toEqual(READY);
    const copied = JSON.parse(kubectlOk(['get', 'secret', 'eva-tenant-tls', '-n', scope.namespace, '-o', 'json'])) as { type: string; metadata: { labels?: Record<string, string> } };
    expect(copied.type).toBe('kubernetes.io/tls');
    expect(copied.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('eva-operator');
    // The platform rotates its certificate: verify sees a stale copy, ensure copies again.
    putPlatformCertificate(pki.issue('second', '*.tenants.example.test'));
    expect(await ingressStep.verify(scope, secretMode())).toMatchObject({ ready: false, reason: 'TlsSecretMissing', message: expect.stringContaining('is not the current copy') as unknown });
    expect(await ingressStep.ensure(scope, secretMode())).toEqual(READY);
    // Expired: named, with the date.
    putPlatformCertificate(pki.issue('expired', '*.tenants.example.test', { expired: true }));
    expect(await ingressStep.ensure(scope, secretMode())).toMatchObject({ ready: false, reason: 'TlsCertificateExpired', message: expect.stringContaining(`Secret ${scope.namespace}/eva-tenant-tls (TLS of ${host}): the certificate expired at 2001-01-02`) as unknown });
    // Not for this host.
    putPlatformCertificate(pki.issue('other', '*.elsewhere.test'));
    expect(await ingressStep.ensure(scope, secretMode())).toMatchObject({ ready: false, reason: 'TlsCertificateInvalid', message: expect.stringContaining(`not valid for ${host}`) as unknown });
    // The copy goes with the step's remove.
    await ingressStep.remove(scope, secretMode());
    expect(await kube.core.readNamespacedSecret({ name: 'eva-tenant-tls', namespace: scope.namespace }).then(() => 'there', () => 'gone')).toBe('gone');
  });

  it('INGRESS_TLS_ISSUER: the cert-manager annotation, extra annotations and a tls section; ready once the issued Secret is there', async () => {
    const scope = await tenantScope(`TI${run}`);
    const deps = tlsDeps({ mode: 'issuer', clusterIssuer: 'letsencrypt-staging' }, { 'example.com/team': 'platform' });
    expect(await ingressStep.ensure(scope, deps)).toMatchObject({ ready: false, reason: 'TlsSecretMissing', message: expect.stringContaining('cert-manager (ClusterIssuer letsencrypt-staging) has not issued it yet') as unknown });
    const annotations = JSON.parse(kubectlOk(['get', 'ingress', 'eva-tenant', '-n', scope.namespace, '-o', 'jsonpath={.metadata.annotations}'])) as Record<string, string>;
    expect(annotations).toMatchObject({ 'cert-manager.io/cluster-issuer': 'letsencrypt-staging', 'example.com/team': 'platform' });
    // What cert-manager would write: a Secret of its own (none of the operator's labels).
    const issued = pki.issue('issued', `${scope.code.toLowerCase()}.tenants.example.test`);
    kubectlOk(['create', 'secret', 'tls', 'eva-tenant-tls', '-n', scope.namespace, `--cert=${issued.cert}`, `--key=${issued.key}`]);
    expect(await ingressStep.ensure(scope, deps)).toEqual(READY);
    // An annotation of the operator's changed by hand is drift; the same Ingress without TLS is drift too.
    kubectlOk(['annotate', '--overwrite', 'ingress', 'eva-tenant', '-n', scope.namespace, 'cert-manager.io/cluster-issuer=other']);
    expect(await ingressStep.verify(scope, deps)).toMatchObject({ ready: false, reason: 'IngressDrifted' });
    expect(await ingressStep.ensure(scope, deps)).toEqual(READY);
    expect(await ingressStep.verify(scope, tlsDeps({ mode: 'none' }))).toMatchObject({ ready: false, reason: 'IngressDrifted' });
  });
});
