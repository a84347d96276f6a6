/**
 * Step 'credentials' against the real API server: the Secret is generated once with three keys, an
 * existing one (rotated by hand) is never replaced, replicas racing to create it agree on the winner's
 * values, and remove leaves nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import { credentialsSecretName, credentialsStep } from '../../../src/steps/credentials.ts';
import { READY } from '../../../src/steps/step.ts';
import type { TenantScope } from '../../../src/tenancy/scope.ts';
import { testScope } from '../../support/fixtures.ts';
import { apiKube } from '../../support/api-reads.ts';
import { runLetters } from '../../support/random.ts';

const runId = runLetters();
let kube: Kube;
const namespaces: string[] = [];
let counter = 0;

async function tenant(): Promise<TenantScope> {
  counter += 1;
  const scope = testScope({ code: `${runId}C${String.fromCharCode(64 + counter)}` });
  await kube.core.createNamespace({ body: { metadata: { name: scope.namespace } } });
  namespaces.push(scope.namespace);
  return scope;
}

async function stored(scope: TenantScope): Promise<Record<string, string> | undefined> {
  const secret = await apiKube(kube).reads.get('Secret', scope.namespace, credentialsSecretName(scope.code));
  if (secret === undefined) return undefined;
  return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
}

beforeAll(() => {
  kube = new Kube(loadKubeConfig());
});

afterAll(async () => {
  for (const name of namespaces) await kube.core.deleteNamespace({ name }).catch(() => undefined);
});

describe('credentials step (real API server)', () => {
  it('generates the Secret once and keeps it as it is, rotated by hand or not', async () => {
    const scope = await tenant();
    expect(await credentialsStep.verify(scope, apiKube(kube))).toMatchObject({ ready: false, reason: 'CredentialsMissing' });
    expect(await credentialsStep.ensure(scope, apiKube(kube))).toEqual(READY);
    const first = await stored(scope);
    expect(Object.keys(first ?? {}).sort()).toEqual(['api-key', 'db-password', 'jwt-secret']);
    for (const value of Object.values(first ?? {})) expect(value).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(await credentialsStep.verify(scope, apiKube(kube))).toEqual(READY);

    await credentialsStep.ensure(scope, apiKube(kube));
    expect(await stored(scope)).toEqual(first);
    await kube.core.patchNamespacedSecret({
      name: credentialsSecretName(scope.code),
      namespace: scope.namespace,
      body: [{ op: 'replace', path: '/data/db-password', value: Buffer.from('rotated-by-hand').toString('base64') }],
    });
    await credentialsStep.ensure(scope, apiKube(kube));
    expect((await stored(scope))?.['db-password']).toBe('rotated-by-hand');
  });

  it('replicas racing to create it end with one set of values', async () => {
    const scope = await tenant();
    const verdicts = await Promise.all([1, 2, 3].map(() => credentialsStep.ensure(scope, apiKube(kube))));
    // The winner knows from its write; a loser leaves it to verify, which reads the winner's.
    expect(verdicts).toContainEqual(READY);
    expect(await credentialsStep.verify(scope, apiKube(kube))).toEqual(READY);
    expect(Object.keys((await stored(scope)) ?? {})).toHaveLength(3);
  });

  it('remove deletes the Secret and is idempotent', async () => {
    const scope = await tenant();
    await credentialsStep.ensure(scope, apiKube(kube));
    expect(await credentialsStep.verifyRemoved(scope, apiKube(kube))).toMatchObject({ ready: false, reason: 'CredentialsRemain' });
    await credentialsStep.remove(scope, apiKube(kube));
    expect(await credentialsStep.verifyRemoved(scope, apiKube(kube))).toEqual(READY);
    expect(await stored(scope)).toBeUndefined();
    await credentialsStep.remove(scope, apiKube(kube));
  });
});
