/**
 * NamespaceReady, part 1: the tenant's namespace, labelled with its code, tier, wave and the owning
 * EvaTenant's UID, under Pod Security `restricted`. A namespace that belongs to another tenant (same
 * capsuleCode) or to nobody we know is never adopted: the step fails with a clear condition instead.
 */
import { Reason } from '../api/reasons.ts';
import type { V1Namespace } from '@kubernetes/client-node';
import { API_VERSION, KIND, LABELS, MANAGED_BY } from '../api/constants.ts';
import { isConflict, type Kube } from '../adapters/kube.ts';
import type { KubeReads } from '../adapters/tenant-objects.ts';
import { InputError } from '../errors.ts';
import { notReady, READY, type Step, type Verdict } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';

export interface KubeStepDeps {
  kube: Kube;
  /** The API server while provisioning, the watch caches in the drift check (adapters/tenant-objects.ts). */
  reads: KubeReads;
}

const POD_SECURITY = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/enforce-version': 'latest',
  'pod-security.kubernetes.io/warn': 'restricted',
  'pod-security.kubernetes.io/audit': 'restricted',
};

function namespaceLabels(scope: TenantScope): Record<string, string> {
  return {
    [LABELS.capsuleCode]: scope.code,
    [LABELS.tier]: scope.tenant.spec.tier,
    [LABELS.wave]: String(scope.tenant.spec.wave),
    [LABELS.tenantUid]: scope.tenant.metadata.uid ?? '',
    [LABELS.managedBy]: MANAGED_BY,
    ...POD_SECURITY,
  };
}

export function desiredNamespace(scope: TenantScope): V1Namespace {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: scope.namespace,
      labels: namespaceLabels(scope),
      // A safety net: should the EvaTenant vanish without its finalizer, the namespace goes with it.
      ownerReferences: [
        { apiVersion: API_VERSION, kind: KIND, name: scope.tenant.metadata.name, uid: scope.tenant.metadata.uid ?? '', controller: true },
      ],
    },
  };
}

const readNamespace = (reads: KubeReads, name: string): Promise<V1Namespace | undefined> => reads.get('Namespace', '', name);

/** Refuses a namespace that is not this tenant's. */
function assertOwned(scope: TenantScope, ns: V1Namespace): void {
  const labels = ns.metadata?.labels ?? {};
  const ownerUid = labels[LABELS.tenantUid];
  if (ownerUid === scope.tenant.metadata.uid) return;
  if (labels[LABELS.managedBy] === MANAGED_BY && ownerUid) {
    const owner = ns.metadata?.ownerReferences?.[0]?.name ?? `uid ${ownerUid}`;
    throw new InputError(
      Reason.CapsuleCodeInUse,
      `capsuleCode ${scope.code} is already used by EvaTenant ${owner}; namespace ${scope.namespace} belongs to it and was left untouched`,
    );
  }
  throw new InputError(
    Reason.NamespaceNotOwned,
    `namespace ${scope.namespace} exists but was not created by eva-operator; it was left untouched (delete or rename it to use capsuleCode ${scope.code})`,
  );
}

async function ensure(scope: TenantScope, { kube, reads }: KubeStepDeps): Promise<Verdict> {
  let existing = await readNamespace(reads, scope.namespace);
  if (!existing) {
    try {
      // Create, not apply: two tenants racing for one code must not both "win" a server-side apply.
      existing = await kube.core.createNamespace({ body: desiredNamespace(scope) });
      reads.namespaceCreated?.(scope.namespace);
      scope.log.info({ namespace: scope.namespace }, 'namespace created');
      return READY;
    } catch (err) {
      if (!isConflict(err)) throw err;
      existing = await readNamespace(reads, scope.namespace);
      if (!existing) throw err;
    }
  }
  assertOwned(scope, existing);
  if (existing.status?.phase === 'Terminating') return terminating(scope);
  if (!labelsMatch(existing, namespaceLabels(scope))) await kube.apply(desiredNamespace(scope));
  return READY;
}

const terminating = (scope: TenantScope): Verdict => notReady(Reason.NamespaceTerminating, `namespace ${scope.namespace} is being deleted`);

function labelsMatch(ns: V1Namespace, desired: Record<string, string>): boolean {
  const labels = ns.metadata?.labels ?? {};
  return Object.entries(desired).every(([k, v]) => labels[k] === v);
}

async function verify(scope: TenantScope, { reads }: KubeStepDeps): Promise<Verdict> {
  const ns = await readNamespace(reads, scope.namespace);
  if (!ns) return notReady(Reason.NamespaceMissing, `namespace ${scope.namespace} does not exist`);
  assertOwned(scope, ns);
  if (ns.status?.phase === 'Terminating') return terminating(scope);
  if (!labelsMatch(ns, namespaceLabels(scope))) return notReady(Reason.NamespaceLabelsDrifted, `namespace ${scope.namespace} labels differ from the tenant`);
  return READY;
}

async function remove(scope: TenantScope, { kube, reads }: KubeStepDeps): Promise<void> {
  const ns = await readNamespace(reads, scope.namespace);
  if (!ns || ns.metadata?.labels?.[LABELS.tenantUid] !== scope.tenant.metadata.uid) return;
  if (ns.metadata?.deletionTimestamp) return;
  await kube.core.deleteNamespace({ name: scope.namespace });
}

async function verifyRemoved(scope: TenantScope, { reads }: KubeStepDeps): Promise<Verdict> {
  const ns = await readNamespace(reads, scope.namespace);
  if (!ns || ns.metadata?.labels?.[LABELS.tenantUid] !== scope.tenant.metadata.uid) return READY;
  return notReady(Reason.NamespaceTerminating, `namespace ${scope.namespace} is still being deleted`);
}

export const namespaceStep: Step<KubeStepDeps> = { name: 'namespace', ensure, verify, remove, verifyRemoved };
