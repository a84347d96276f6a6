import { describe, expect, it } from 'vitest';
import { seen, unseen } from './facts.ts';
import { decideAdmissionPolicies, decideKubernetesVersion } from './kubernetes-checks.ts';

const FLOOR = '>=1.30.0-0';

describe('decideKubernetesVersion', () => {
  it.each([
    ['v1.36.4', 'ok'],
    ['v1.30.0', 'ok'],
    ['v1.31.2-eks-7f9249a', 'ok'],
    ['v1.30.1+k3s1', 'ok'],
    ['v1.29.9', 'fail'],
    ['v1.29.9-gke.100', 'fail'],
    ['not-a-version', 'fail'],
  ])('%s against the chart floor: %s', (gitVersion, result) => {
    expect(decideKubernetesVersion(seen({ gitVersion, floor: FLOOR })).result).toBe(result);
  });

  it('a version below the floor says to upgrade to the floor', () => {
    expect(decideKubernetesVersion(seen({ gitVersion: 'v1.29.9', floor: FLOOR }))).toEqual({
      check: 'kubernetes-version',
      result: 'fail',
      detail: "v1.29.9 does not satisfy the chart's kubeVersion >=1.30.0-0",
      fix: 'upgrade the cluster to Kubernetes >=1.30.0-0',
    });
  });

  it('an unreachable API server fails with the reason (never passes)', () => {
    const result = decideKubernetesVersion(unseen('connect ECONNREFUSED 127.0.0.1:6443'));
    expect(result).toMatchObject({ result: 'fail', detail: 'could not check: connect ECONNREFUSED 127.0.0.1:6443' });
  });
});

describe('decideAdmissionPolicies', () => {
  const both = ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];

  it('passes when both kinds are served', () => {
    expect(decideAdmissionPolicies(seen(both)).result).toBe('ok');
  });

  it.each([
    ['neither kind served', [], 'ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding'],
    ['no bindings', ['ValidatingAdmissionPolicy'], 'ValidatingAdmissionPolicyBinding'],
  ])('fails with %s, naming what is missing and how to fix it', (_name, resources, missing) => {
    const result = decideAdmissionPolicies(seen(resources));
    expect(result).toMatchObject({ result: 'fail', detail: `admissionregistration.k8s.io/v1 does not serve ${missing}` });
    expect(result.result === 'fail' && result.fix).toContain('Kubernetes 1.30+');
  });

  it('fails when discovery could not run', () => {
    expect(decideAdmissionPolicies(unseen('the API server answered 403: forbidden')).result).toBe('fail');
  });
});
