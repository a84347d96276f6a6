/**
 * Step 'credentials' (before 'modules', reported under ModulesDeployed): the Secret
 * eva-<code>-credentials in the tenant namespace with the credentials every module of the tenant gets
 * (EVA_CREDENTIAL_<NAME> in the containers; step 'modules' renders them into each release through the
 * tmpfs values file). Generated once; an existing Secret (possibly rotated by hand) is never replaced.
 */
import type { V1Secret } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { LABELS, MANAGED_BY } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import { deleteIgnoringNotFound, isConflict, type Kube } from '../adapters/kube.ts';
import type { KubeReads } from '../adapters/tenant-objects.ts';
import { notReady, READY, type Step, type Verdict } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';

export interface CredentialsStepDeps {
  readonly kube: Kube;
  readonly reads: KubeReads;
}

const CREDENTIAL_KEYS = ['db-password', 'api-key', 'jwt-secret'] as const;

export const credentialsSecretName = (code: string): string => `eva-${code.toLowerCase()}-credentials`;

/** The shape createNamespacedSecret sends; a plain interface because the client's V1Secret is a class. */
interface SecretBody {
  apiVersion: 'v1';
  kind: 'Secret';
  type: 'Opaque';
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  stringData: Record<string, string>;
}

function credentialsSecret(scope: TenantScope): SecretBody {
  // 24 random bytes = 192 bits, URL-safe base64: no character needs quoting in YAML, env or URLs.
  const data = Object.fromEntries(CREDENTIAL_KEYS.map((key) => [key, randomBytes(24).toString('base64url')]));
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: credentialsSecretName(scope.code),
      namespace: scope.namespace,
      labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.capsuleCode]: scope.code },
    },
    stringData: data,
  };
}

function decodeSecret(secret: V1Secret): Record<string, string> {
  return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

/** The tenant's credentials as stored, or undefined when the Secret does not exist. */
export async function readCredentials(reads: KubeReads, scope: TenantScope): Promise<Record<string, string> | undefined> {
  const secret = await reads.get('Secret', scope.namespace, credentialsSecretName(scope.code));
  return secret === undefined ? undefined : decodeSecret(secret);
}

/** READY once it wrote or read the Secret; after a lost race, verify reads the winner's. */
async function ensure(scope: TenantScope, { kube, reads }: CredentialsStepDeps): Promise<Verdict | undefined> {
  if ((await readCredentials(reads, scope)) !== undefined) return READY;
  try {
    // Create, not apply: a lost race must keep the winner's values, never overwrite them.
    await kube.create(credentialsSecret(scope));
  } catch (err) {
    if (!isConflict(err)) throw err;
    return undefined;
  }
  scope.log.info({ credentialsSecretName: credentialsSecretName(scope.code) }, 'module credentials generated');
  return READY;
}

async function verify(scope: TenantScope, { reads }: CredentialsStepDeps): Promise<Verdict> {
  if ((await readCredentials(reads, scope)) !== undefined) return READY;
  return notReady(Reason.CredentialsMissing, `Secret ${credentialsSecretName(scope.code)} does not exist`);
}

async function remove(scope: TenantScope, { kube }: CredentialsStepDeps): Promise<void> {
  await deleteIgnoringNotFound(() => kube.core.deleteNamespacedSecret({ name: credentialsSecretName(scope.code), namespace: scope.namespace }));
}

async function verifyRemoved(scope: TenantScope, { reads }: CredentialsStepDeps): Promise<Verdict> {
  if ((await readCredentials(reads, scope)) === undefined) return READY;
  return notReady(Reason.CredentialsRemain, `Secret ${credentialsSecretName(scope.code)} still exists`);
}

export const credentialsStep: Step<CredentialsStepDeps> = { name: 'credentials', ensure, verify, remove, verifyRemoved };
