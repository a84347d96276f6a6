/**
 * NamespaceReady, part 2: the tier's ResourceQuota and the LimitRange with container defaults. Every
 * tier's quota bounds object counts (Secrets, ConfigMaps, Services, PVCs, pods); Enterprise and
 * Platform bound no CPU or memory (src/api/tiers.ts).
 */
import { LABELS, MANAGED_BY } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import type { V1LimitRange, V1ResourceQuota } from '@kubernetes/client-node';
import { CONTAINER_DEFAULTS, QUOTA_BY_TIER } from '../api/tiers.ts';
import { deleteIgnoringNotFound } from '../adapters/kube.ts';
import type { KubeReads } from '../adapters/tenant-objects.ts';
import type { KubeStepDeps } from './namespace.ts';
import { notReady, READY, type Step, type Verdict } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';

const QUOTA_NAME = 'eva-tier-quota';
const LIMIT_RANGE_NAME = 'eva-container-defaults';

function labels(scope: TenantScope): Record<string, string> {
  return { [LABELS.capsuleCode]: scope.code, [LABELS.tier]: scope.tenant.spec.tier, [LABELS.managedBy]: MANAGED_BY };
}

function desiredQuotaHard(scope: TenantScope): Record<string, string> {
  return { ...QUOTA_BY_TIER[scope.tenant.spec.tier] };
}

function desiredQuota(scope: TenantScope, hard: Record<string, string>): V1ResourceQuota {
  return { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: QUOTA_NAME, namespace: scope.namespace, labels: labels(scope) }, spec: { hard } };
}

const defaults = { cpu: CONTAINER_DEFAULTS.cpu, memory: CONTAINER_DEFAULTS.memory };

function desiredLimitRange(scope: TenantScope): V1LimitRange {
  return {
    apiVersion: 'v1',
    kind: 'LimitRange',
    metadata: { name: LIMIT_RANGE_NAME, namespace: scope.namespace, labels: labels(scope) },
    spec: { limits: [{ type: 'Container', _default: defaults, defaultRequest: defaults }] },
  };
}

/** The tier's ResourceQuota and the LimitRange, as this step writes them (bench/peers.ts applies them too). */
export function desiredQuotaObjects(scope: TenantScope): [V1ResourceQuota, V1LimitRange] {
  return [desiredQuota(scope, desiredQuotaHard(scope)), desiredLimitRange(scope)];
}

const readQuota = (reads: KubeReads, namespace: string): Promise<V1ResourceQuota | undefined> => reads.get('ResourceQuota', namespace, QUOTA_NAME);
const readLimitRange = (reads: KubeReads, namespace: string): Promise<V1LimitRange | undefined> => reads.get('LimitRange', namespace, LIMIT_RANGE_NAME);

function sameMap(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  const left = a ?? {};
  return Object.keys(left).length === Object.keys(b).length && Object.entries(b).every(([k, v]) => left[k] === v);
}

function limitRangeMatches(lr: V1LimitRange | undefined): boolean {
  const limit = lr?.spec?.limits.find((l) => l.type === 'Container');
  return !!limit && sameMap(limit._default, defaults) && sameMap(limit.defaultRequest, defaults);
}

async function verify(scope: TenantScope, { reads }: KubeStepDeps): Promise<Verdict> {
  const hard = desiredQuotaHard(scope);
  const quota = await readQuota(reads, scope.namespace);
  if (!quota) return notReady(Reason.QuotaMissing, `ResourceQuota ${QUOTA_NAME} is missing`);
  if (!sameMap(quota.spec?.hard, hard)) return notReady(Reason.QuotaDrifted, `ResourceQuota ${QUOTA_NAME} differs from the ${scope.tenant.spec.tier} tier`);
  if (!limitRangeMatches(await readLimitRange(reads, scope.namespace))) {
    return notReady(Reason.LimitRangeDrifted, `LimitRange ${LIMIT_RANGE_NAME} is missing or differs`);
  }
  return READY;
}

async function ensure(scope: TenantScope, { kube, reads }: KubeStepDeps): Promise<Verdict> {
  const hard = desiredQuotaHard(scope);
  const quota = await readQuota(reads, scope.namespace);
  if (!sameMap(quota?.spec?.hard, hard)) await kube.apply(desiredQuota(scope, hard));
  if (!limitRangeMatches(await readLimitRange(reads, scope.namespace))) await kube.apply(desiredLimitRange(scope));
  return READY;
}

async function remove(scope: TenantScope, { kube }: KubeStepDeps): Promise<void> {
  await deleteIgnoringNotFound(() => kube.core.deleteNamespacedResourceQuota({ name: QUOTA_NAME, namespace: scope.namespace }));
  await deleteIgnoringNotFound(() => kube.core.deleteNamespacedLimitRange({ name: LIMIT_RANGE_NAME, namespace: scope.namespace }));
}

async function verifyRemoved(scope: TenantScope, { reads }: KubeStepDeps): Promise<Verdict> {
  if (await readQuota(reads, scope.namespace)) return notReady(Reason.QuotaPresent, `ResourceQuota ${QUOTA_NAME} still exists`);
  if (await readLimitRange(reads, scope.namespace)) return notReady(Reason.LimitRangePresent, `LimitRange ${LIMIT_RANGE_NAME} still exists`);
  return READY;
}

export const quotasStep: Step<KubeStepDeps> = { name: 'quotas', ensure, verify, remove, verifyRemoved };
