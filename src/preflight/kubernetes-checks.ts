/** Decides the Kubernetes checks: the API server's version against the chart's floor, and the admission API. */
import { kubeVersionSatisfies } from '../versions.ts';
import type { AdmissionFacts, KubernetesFacts, Seen } from './facts.ts';
import { type CheckResult, couldNotCheck, fail, ok } from './result.ts';

export const KUBERNETES_VERSION = 'kubernetes-version';
export const ADMISSION_POLICIES = 'admission-policies';

const REACH_FIX = 'make the cluster reachable with your kubeconfig (kubectl cluster-info) and run again';

export function decideKubernetesVersion(facts: Seen<KubernetesFacts>): CheckResult {
  if (!facts.ok) return fail(KUBERNETES_VERSION, couldNotCheck(facts.error), REACH_FIX);
  const { gitVersion, floor } = facts.value;
  const satisfied = kubeVersionSatisfies(gitVersion, floor);
  if (satisfied === undefined) return fail(KUBERNETES_VERSION, `the API server reports version "${gitVersion}", which is not a version`, `run Kubernetes ${floor}`);
  if (!satisfied) return fail(KUBERNETES_VERSION, `${gitVersion} does not satisfy the chart's kubeVersion ${floor}`, `upgrade the cluster to Kubernetes ${floor}`);
  return ok(KUBERNETES_VERSION, `${gitVersion} satisfies ${floor}`);
}

/** The two kinds every admission policy of the chart is made of (Kubernetes 1.30+). */
export const ADMISSION_API = 'admissionregistration.k8s.io/v1';
export const ADMISSION_KINDS = ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'] as const;

export function decideAdmissionPolicies(facts: Seen<AdmissionFacts>): CheckResult {
  if (!facts.ok) return fail(ADMISSION_POLICIES, couldNotCheck(facts.error), REACH_FIX);
  const missing = ADMISSION_KINDS.filter((kind) => !facts.value.includes(kind));
  if (missing.length > 0) {
    return fail(
      ADMISSION_POLICIES,
      `${ADMISSION_API} does not serve ${missing.join(', ')}`,
      'upgrade to Kubernetes 1.30+ (or enable admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy on the API server): the chart installs its write confinement and tenant policies as ValidatingAdmissionPolicies',
    );
  }
  return ok(ADMISSION_POLICIES, `${ADMISSION_API} serves ${ADMISSION_KINDS.join(' and ')}`);
}
