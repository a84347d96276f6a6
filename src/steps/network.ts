/**
 * NamespaceReady, part 3: the tenant namespace's NetworkPolicy. Pods take traffic only from their own
 * namespace and from the ingress controller's; they reach only their own namespace, cluster DNS and
 * NATS's client port (so not NATS's monitoring port, which shows every account). Enforcement needs a
 * CNI plugin that enforces NetworkPolicy; without one the object is inert. Policies add up (a pod is
 * allowed what ANY policy selecting it allows), so any other policy in the namespace is reported
 * (NetworkPolicyForeign: condition and Event), or deleted with NETWORK_POLICY_REMOVE_FOREIGN.
 */
import { LABELS, MANAGED_BY } from '../api/constants.ts';
import type { V1NetworkPolicy, V1NetworkPolicyPeer } from '@kubernetes/client-node';
import { Reason } from '../api/reasons.ts';
import { canonicalJson } from '../canonical-json.ts';
import type { NetworkPolicySettings } from '../config.ts';
import { deleteIgnoringNotFound, type Kube } from '../adapters/kube.ts';
import type { KubeReads } from '../adapters/tenant-objects.ts';
import { notReady, READY, type Step, type Verdict } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';

export const NETWORK_POLICY_NAME = 'eva-tenant-isolation';

export interface NetworkStepDeps {
  kube: Kube;
  reads: KubeReads;
  config: { networkPolicy: NetworkPolicySettings };
}

function natsPeer(settings: NetworkPolicySettings): V1NetworkPolicyPeer {
  const peer = settings.nats;
  if ('cidr' in peer) return { ipBlock: { cidr: peer.cidr } };
  return { namespaceSelector: { matchLabels: { ...peer.namespaces } }, podSelector: { matchLabels: { ...peer.pods } } };
}

export function desiredNetworkPolicy(scope: TenantScope, settings: NetworkPolicySettings): V1NetworkPolicy {
  const sameNamespace: V1NetworkPolicyPeer = { podSelector: {} };
  const dns: V1NetworkPolicyPeer = {
    namespaceSelector: { matchLabels: { ...settings.dns.namespaces } },
    podSelector: { matchLabels: { ...settings.dns.pods } },
  };
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: NETWORK_POLICY_NAME,
      namespace: scope.namespace,
      labels: { [LABELS.capsuleCode]: scope.code, [LABELS.managedBy]: MANAGED_BY },
    },
    spec: {
      podSelector: {},
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ _from: [sameNamespace, { namespaceSelector: { matchLabels: { ...settings.ingressNamespaces } } }] }],
      egress: [
        { to: [sameNamespace] },
        { to: [dns], ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }] },
        { to: [natsPeer(settings)], ports: [{ protocol: 'TCP', port: settings.nats.port }] },
      ],
    },
  };
}

const readPolicy = (reads: KubeReads, namespace: string): Promise<V1NetworkPolicy | undefined> => reads.get('NetworkPolicy', namespace, NETWORK_POLICY_NAME);

/** The API server answers `from` where the client model says `_from`: compare as JSON on the wire. */
const specOf = (policy: V1NetworkPolicy | undefined): string =>
  canonicalJson(JSON.parse(JSON.stringify(policy?.spec ?? {}).replaceAll('"_from":', '"from":')));

const matches = (actual: V1NetworkPolicy | undefined, desired: V1NetworkPolicy): boolean => actual !== undefined && specOf(actual) === specOf(desired);

const isOurs = (policy: V1NetworkPolicy): boolean => policy.metadata?.name === NETWORK_POLICY_NAME && policy.metadata.labels?.[LABELS.managedBy] === MANAGED_BY;

/** NetworkPolicies in the tenant namespace that the operator did not write, by name. */
async function foreignPolicies(reads: KubeReads, namespace: string): Promise<string[]> {
  return (await reads.list('NetworkPolicy', namespace)).filter((p) => !isOurs(p)).map((p) => p.metadata?.name ?? '?').sort();
}

function foreignVerdict(namespace: string, names: readonly string[]): Verdict {
  const list = names.map((n) => `${namespace}/${n}`).join(', ');
  return notReady(
    Reason.NetworkPolicyForeign,
    `NetworkPolicy ${list} was not written by the operator: policies add up, so it may widen the tenant's isolation (delete it, or set NETWORK_POLICY_REMOVE_FOREIGN=true to have the operator delete it)`,
  );
}

async function removeForeign(kube: Kube, namespace: string, names: readonly string[]): Promise<void> {
  for (const name of names) await deleteIgnoringNotFound(() => kube.networking.deleteNamespacedNetworkPolicy({ name, namespace }));
}

async function ensure(scope: TenantScope, { kube, reads, config }: NetworkStepDeps): Promise<Verdict> {
  const current = await readPolicy(reads, scope.namespace);
  if (!config.networkPolicy.enabled) {
    if (current?.metadata?.labels?.[LABELS.managedBy] === MANAGED_BY) await remove(scope, { kube });
    return READY;
  }
  const desired = desiredNetworkPolicy(scope, config.networkPolicy);
  if (!matches(current, desired)) await kube.apply(desired);
  const foreign = await foreignPolicies(reads, scope.namespace);
  if (foreign.length === 0) return READY;
  if (!config.networkPolicy.removeForeign) return foreignVerdict(scope.namespace, foreign);
  scope.log.warn({ policies: foreign }, 'deleting NetworkPolicies the operator did not write (NETWORK_POLICY_REMOVE_FOREIGN)');
  await removeForeign(kube, scope.namespace, foreign);
  return READY;
}

async function verify(scope: TenantScope, { reads, config }: NetworkStepDeps): Promise<Verdict> {
  const current = await readPolicy(reads, scope.namespace);
  if (!config.networkPolicy.enabled) {
    return current?.metadata?.labels?.[LABELS.managedBy] === MANAGED_BY
      ? notReady(Reason.NetworkPolicyDrifted, `NetworkPolicy ${NETWORK_POLICY_NAME} exists although NETWORK_POLICY is off`)
      : READY;
  }
  if (current === undefined) return notReady(Reason.NetworkPolicyMissing, `NetworkPolicy ${NETWORK_POLICY_NAME} does not exist`);
  if (!matches(current, desiredNetworkPolicy(scope, config.networkPolicy))) {
    return notReady(Reason.NetworkPolicyDrifted, `NetworkPolicy ${NETWORK_POLICY_NAME} differs from the tenant isolation policy`);
  }
  const foreign = await foreignPolicies(reads, scope.namespace);
  return foreign.length === 0 ? READY : foreignVerdict(scope.namespace, foreign);
}

async function remove(scope: TenantScope, { kube }: Pick<NetworkStepDeps, 'kube'> & Partial<NetworkStepDeps>): Promise<void> {
  await deleteIgnoringNotFound(() => kube.networking.deleteNamespacedNetworkPolicy({ name: NETWORK_POLICY_NAME, namespace: scope.namespace }));
}

async function verifyRemoved(scope: TenantScope, { reads }: NetworkStepDeps): Promise<Verdict> {
  return (await readPolicy(reads, scope.namespace)) ? notReady(Reason.NetworkPolicyPresent, `NetworkPolicy ${NETWORK_POLICY_NAME} still exists`) : READY;
}

export const networkStep: Step<NetworkStepDeps> = { name: 'network', ensure, verify, remove, verifyRemoved };
