/**
 * The watch caches the drift check reads, against the real API server: steps judge cached objects as
 * they judge fresh ones, both as first listed and as later changed by a watch event (wire JSON, where
 * the client's models rename fields: LimitRange `_default`, NetworkPolicy `_from`); drift made by hand
 * shows in the cache; reads from it cost no request; what the steps never read is not held.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import { apiReads, type KubeReads, TenantObjectCache } from '../../../src/adapters/tenant-objects.ts';
import { createLogger } from '../../../src/log.ts';
import { alertRulesFileKey, alertRulesName, alertsStep } from '../../../src/steps/alerts.ts';
import { namespaceStep } from '../../../src/steps/namespace.ts';
import { type NetworkStepDeps, networkStep } from '../../../src/steps/network.ts';
import { quotasStep } from '../../../src/steps/quotas.ts';
import { READY, type Step, type Verdict } from '../../../src/steps/step.ts';
import type { TenantScope } from '../../../src/tenancy/scope.ts';
import { testScope } from '../../support/fixtures.ts';
import { eventually, kubectl, kubectlOk, tenantManifest } from '../../support/kubectl.ts';
import { runLetters } from '../../support/random.ts';
import { repoRoot } from '../../support/tools.ts';

const run = runLetters();
let requests = 0;
const kube = new Kube(loadKubeConfig({ onRequest: () => { requests += 1; } }));
const objects = new TenantObjectCache({ kube, log: createLogger('silent') });
const direct = apiReads(kube);
const cached = objects.reads;
const code = `TO${run}`;
/** Its uid is the real EvaTenant's (beforeAll): the namespace's owner must exist, or the garbage collector deletes it. */
let scope: TenantScope = testScope({ code });
const network: NetworkStepDeps['config']['networkPolicy'] = {
  enabled: true,
  ingressNamespaces: { 'kubernetes.io/metadata.name': 'ingress-nginx' },
  nats: { namespaces: { 'kubernetes.io/metadata.name': 'eva-system' }, pods: { 'app.kubernetes.io/component': 'nats' }, port: 4222 },
  dns: { namespaces: { 'kubernetes.io/metadata.name': 'kube-system' }, pods: { 'k8s-app': 'kube-dns' } },
  removeForeign: false,
};

interface Judged {
  step: Step<NetworkStepDeps>;
  deps: (reads: KubeReads) => NetworkStepDeps;
}
const judged: Record<string, Judged> = {
  namespace: { step: namespaceStep, deps: (reads) => ({ kube, reads, config: { networkPolicy: network } }) },
  quotas: { step: quotasStep, deps: (reads) => ({ kube, reads, config: { networkPolicy: network } }) },
  network: { step: networkStep, deps: (reads) => ({ kube, reads, config: { networkPolicy: network } }) },
  alerts: { step: alertsStep, deps: (reads) => ({ kube, reads, config: { networkPolicy: network } }) },
};

/** What verify says from the cache, once the watch caught up with what the API says. */
async function cachedVerdictMatches(name: string): Promise<{ api: Verdict; cache: Verdict }> {
  const { step, deps } = judged[name] ?? {};
  if (step === undefined || deps === undefined) throw new Error(name);
  const api = await step.verify(scope, deps(direct));
  let cache = await step.verify(scope, deps(cached));
  await eventually(async () => {
    cache = await step.verify(scope, deps(cached));
    return JSON.stringify(cache) === JSON.stringify(api);
  }, 10_000);
  return { api, cache };
}

beforeAll(async () => {
  kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
  // Pinned to a version no operator runs: nobody reconciles it.
  kubectlOk(['apply', '-f', '-'], tenantManifest(code.toLowerCase(), { capsuleCode: code, tier: 'Starter', operatorVersion: '0.0.0-cache-test' }));
  scope = testScope({ code, uid: kubectlOk(['get', 'evt', code.toLowerCase(), '-o', 'jsonpath={.metadata.uid}']) });
  // Listed at start: the namespace and quota exist before the caches do.
  await namespaceStep.ensure(scope, { kube, reads: direct });
  await quotasStep.ensure(scope, { kube, reads: direct });
  await objects.start();
  // Arrive by watch events.
  await networkStep.ensure(scope, { kube, reads: direct, config: { networkPolicy: network } });
  await alertsStep.ensure(scope, { kube, reads: direct });
});

afterAll(async () => {
  await objects.stop();
  kubectl(['delete', 'evt', code.toLowerCase(), '--wait=false', '--ignore-not-found']);
  kubectl(['delete', 'namespace', scope.namespace, '--wait=false', '--ignore-not-found']);
});

describe('tenant object caches', () => {
  it.each(Object.keys(judged))('%s: verify from the cache agrees with verify from the API: in sync', async (name) => {
    const { api, cache } = await cachedVerdictMatches(name);
    expect(api).toEqual(READY);
    expect(cache).toEqual(READY);
  });

  it('reads answered by the caches make no API request', async () => {
    requests = 0;
    for (const name of Object.keys(judged)) await judged[name]?.step.verify(scope, judged[name].deps(cached));
    // alerts asks once a minute whether the Prometheus Operator is installed, and it did above.
    expect(requests).toBe(0);
    for (const name of Object.keys(judged)) await judged[name]?.step.verify(scope, judged[name].deps(direct));
    expect(requests, 'positive control: the same verifies against the API').toBeGreaterThanOrEqual(5);
  });

  const drifts: [string, string, string[]][] = [
    ['quotas', 'QuotaDrifted', ['patch', 'resourcequota', 'eva-tier-quota', '--type', 'merge', '-p', '{"spec":{"hard":{"pods":"5"}}}']],
    ['quotas', 'LimitRangeDrifted', ['patch', 'limitrange', 'eva-container-defaults', '--type', 'json', '-p', '[{"op":"replace","path":"/spec/limits/0/default/cpu","value":"3"}]']],
    ['network', 'NetworkPolicyDrifted', ['patch', 'networkpolicy', 'eva-tenant-isolation', '--type', 'json', '-p', '[{"op":"remove","path":"/spec/ingress/0/from/1"}]']],
    ['alerts', 'AlertRulesDrifted', ['patch', 'configmap', alertRulesName(scope.code), '--type', 'merge', '-p', JSON.stringify({ data: { [alertRulesFileKey(scope.code)]: 'groups: []' } })]],
    ['namespace', 'NamespaceLabelsDrifted', ['label', 'namespace', scope.namespace, 'eva.aidonow.com/tier=Platform', '--overwrite']],
  ];

  it.each(drifts)('%s: drift by hand (%s) shows in the cache; ensure repairs it and the cache sees that too', async (name, reason, args) => {
    kubectlOk([...args, ...(args.includes(scope.namespace) ? [] : ['-n', scope.namespace])]);
    const broken = await cachedVerdictMatches(name);
    expect(broken.api).toMatchObject({ ready: false, reason });
    expect(broken.cache).toEqual(broken.api);
    const { step, deps } = judged[name] ?? {};
    await step?.ensure(scope, deps?.(direct) ?? { kube, reads: direct, config: { networkPolicy: network } });
    const repaired = await cachedVerdictMatches(name);
    expect(repaired.cache).toEqual(READY);
  });

  it('holds no managedFields, and nothing of objects without the operator\'s labels', async () => {
    const quota = await cached.get('ResourceQuota', scope.namespace, 'eva-tier-quota');
    expect(quota?.spec?.hard).toBeDefined();
    expect(quota?.metadata?.managedFields).toBeUndefined();
    expect((await direct.get('ResourceQuota', scope.namespace, 'eva-tier-quota'))?.metadata?.managedFields, 'positive control').toBeDefined();
    kubectlOk(['create', 'configmap', 'not-ours', '-n', scope.namespace, '--from-literal=a=b']);
    expect(await eventually(async () => (await direct.get('ConfigMap', scope.namespace, 'not-ours')) !== undefined, 5_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await cached.get('ConfigMap', scope.namespace, 'not-ours')).toBeUndefined();
  });

  it('keeps helm release Secrets as labels only and module Deployments without their pod template', async () => {
    kubectlOk(['apply', '-n', scope.namespace, '-f', '-'], JSON.stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'sh.helm.release.v1.orbit-crm.v1', labels: { owner: 'helm', name: 'orbit-crm', version: '1', status: 'deployed', 'app.kubernetes.io/managed-by': 'eva-operator' } },
      data: { release: Buffer.from('payload').toString('base64') },
    }));
    kubectlOk(['create', 'deployment', 'orbit-crm', '-n', scope.namespace, '--image=registry.invalid/x:1']);
    kubectlOk(['label', 'deployment', 'orbit-crm', '-n', scope.namespace, 'eva.aidonow.com/module=orbit-crm']);
    expect(await eventually(async () => (await cached.list('Deployment', scope.namespace)).length === 1, 10_000)).toBe(true);
    expect(await eventually(async () => (await cached.list('HelmRelease', scope.namespace)).length === 1, 10_000)).toBe(true);
    const [release] = await cached.list('HelmRelease', scope.namespace);
    expect(release?.metadata?.labels?.['status']).toBe('deployed');
    expect(release?.data).toBeUndefined();
    expect(await cached.get('Secret', scope.namespace, 'sh.helm.release.v1.orbit-crm.v1'), 'not among the operator\'s own Secrets').toBeUndefined();
    const [deployment] = await cached.list('Deployment', scope.namespace);
    expect(deployment?.spec?.replicas).toBe(1);
    expect(deployment?.spec?.template.spec).toBeUndefined();
    expect((await direct.list('Deployment', scope.namespace))[0]?.spec?.template.spec, 'positive control').toBeDefined();
  });
});
