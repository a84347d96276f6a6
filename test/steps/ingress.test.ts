/**
 * Step ingress on the local control plane, whose default IngressClass is eva-lb (an address comes
 * from the kwok Stage): without INGRESS_CLASS the API server fills in the default class, which is not
 * drift; with INGRESS_CLASS the class is the operator's and a different one is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kube, loadKubeConfig } from '../../src/adapters/kube.ts';
import { ingressStep, type IngressStepDeps } from '../../src/steps/ingress.ts';
import { READY } from '../../src/steps/step.ts';
import { testScope } from '../support/fixtures.ts';
import { eventually, kubectlOk } from '../support/kubectl.ts';
import { runLetters } from '../support/random.ts';

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
  kube,
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
