/**
 * The tier quota on object counts, against the real API server (its ResourceQuota admission, and the
 * controller-manager that counts usage): a Starter namespace refuses the Secret past the tier's limit
 * with a message naming the quota; the last one within it is admitted, and so is one after a delete
 * (the positive control: the refusal is the count, not something else about the Secret). Enterprise,
 * whose CPU and memory stay unbounded, gets the counts too.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Tier } from '../../../src/api/constants.ts';
import { QUOTA_BY_TIER } from '../../../src/api/tiers.ts';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import { messageOf } from '../../../src/errors.ts';
import { quotasStep } from '../../../src/steps/quotas.ts';
import type { TenantScope } from '../../../src/tenancy/scope.ts';
import { apiKube } from '../../support/api-reads.ts';
import { testScope } from '../../support/fixtures.ts';
import { eventually } from '../../support/kubectl.ts';
import { runLetters } from '../../support/random.ts';

const kube = new Kube(loadKubeConfig());
const run = runLetters();
const namespaces: string[] = [];

afterAll(async () => {
  for (const name of namespaces) await kube.core.deleteNamespace({ name }).catch(() => undefined);
});

/** A tenant namespace with its tier quota, once the controller-manager has counted what it holds. */
async function quotaedNamespace(tier: Tier, code: string): Promise<TenantScope> {
  const scope = testScope({ code, tier });
  await kube.core.createNamespace({ body: { metadata: { name: scope.namespace, labels: { 'eva-test': 'quotas' } } } });
  namespaces.push(scope.namespace);
  await quotasStep.ensure(scope, apiKube(kube));
  const counted = await eventually(async () => {
    const quota = await kube.core.readNamespacedResourceQuota({ name: 'eva-tier-quota', namespace: scope.namespace });
    return quota.status?.used?.['secrets'] !== undefined;
  }, 30_000);
  expect(counted, 'the controller-manager never counted the quota').toBe(true);
  return scope;
}

const createSecret = (namespace: string, name: string): Promise<unknown> =>
  kube.core.createNamespacedSecret({ namespace, body: { metadata: { name }, stringData: { value: name } } });

async function refusal(create: () => Promise<unknown>): Promise<string> {
  try {
    await create();
  } catch (err) {
    return messageOf(err);
  }
  throw new Error('expected the API server to refuse the write');
}

describe('tier quotas on object counts (real API server)', () => {
  it('a Starter namespace admits Secrets up to the tier limit and refuses the next one, naming eva-tier-quota', async () => {
    const scope = await quotaedNamespace('Starter', `QS${run}`);
    const limit = Number(QUOTA_BY_TIER.Starter.secrets);
    const held = (await kube.core.listNamespacedSecret({ namespace: scope.namespace })).items.length;
    for (let i = held; i < limit; i += 1) await createSecret(scope.namespace, `filler-${String(i)}`);
    expect((await kube.core.listNamespacedSecret({ namespace: scope.namespace })).items).toHaveLength(limit);

    const message = await refusal(() => createSecret(scope.namespace, 'one-too-many'));
    expect(message).toContain(`exceeded quota: eva-tier-quota, requested: secrets=1, used: secrets=${String(limit)}, limited: secrets=${String(limit)}`);

    // Positive control: with one Secret fewer (counted again by the controller-manager), the same create is admitted.
    await kube.core.deleteNamespacedSecret({ name: `filler-${String(held)}`, namespace: scope.namespace });
    const admitted = await eventually(() => createSecret(scope.namespace, 'one-too-many').then(() => true, () => false), 30_000);
    expect(admitted).toBe(true);
  });

  it('Enterprise bounds the counts and nothing else: no CPU or memory requests, no PVC, NodePort or LoadBalancer', async () => {
    const scope = await quotaedNamespace('Enterprise', `QE${run}`);
    const quota = await kube.core.readNamespacedResourceQuota({ name: 'eva-tier-quota', namespace: scope.namespace });
    expect(quota.spec?.hard).toEqual({ ...QUOTA_BY_TIER.Enterprise });
    expect(quota.spec?.hard?.['requests.cpu']).toBeUndefined();
    const pvc = await refusal(() =>
      kube.core.createNamespacedPersistentVolumeClaim({
        namespace: scope.namespace,
        body: { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
      }),
    );
    expect(pvc).toContain('exceeded quota: eva-tier-quota, requested: persistentvolumeclaims=1, used: persistentvolumeclaims=0, limited: persistentvolumeclaims=0');
    expect(await quotasStep.verify(scope, apiKube(kube))).toEqual({ ready: true });
  });
});
