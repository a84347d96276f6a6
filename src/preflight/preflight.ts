/** Runs the preflight: observe the cluster and NATS once, then decide every check from what was seen. */
import type { PreflightSettings } from '../config.ts';
import { Kube, loadKubeConfig } from '../adapters/kube.ts';
import type { Observations } from './facts.ts';
import { decideIngressClass, decideIngressException } from './ingress-checks.ts';
import { decideAdmissionPolicies, decideKubernetesVersion } from './kubernetes-checks.ts';
import { decideNats } from './nats-checks.ts';
import { observe } from './observe.ts';
import type { CheckResult } from './result.ts';
import { decideTls } from './tls-checks.ts';

/** Every check, in the order of the table: the cluster first, then NATS, then what tenants are reached by. */
export function decide(settings: PreflightSettings, seen: Observations): CheckResult[] {
  return [
    decideKubernetesVersion(seen.kubernetes),
    decideAdmissionPolicies(seen.admission),
    ...decideNats(seen.nats),
    decideIngressClass(settings.ingressClass, seen.ingressClasses),
    decideIngressException(settings.networkPolicy.ingressNamespaces, seen.ingressNamespaces),
    decideTls(seen.tls),
  ];
}

/** The cluster of the current kubeconfig context, or the pod's ServiceAccount in a cluster (loadFromDefault). */
export async function runPreflight(settings: PreflightSettings, timeoutMs: number): Promise<CheckResult[]> {
  let kube: Kube | undefined;
  const connect = (): Kube => {
    try {
      kube ??= new Kube(loadKubeConfig());
      return kube;
    } catch (err) {
      throw new Error(`cannot load the kubeconfig: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  };
  return decide(settings, await observe(settings, connect, timeoutMs));
}
