/**
 * The identity the tests' operators run as (test/support/operator-identity.ts): startOperator's
 * environment authenticates with a real ServiceAccount token as the chart's ServiceAccount, not as
 * the admin, and the chart's policy refuses its writes outside the operator's places; the end-of-run
 * check sees a refused write of such an identity in the audit log (positive control, made with an
 * identity of its own so the suite's stays without refusals).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { auditOffset } from '../../support/audit.ts';
import { kubectl, kubectlOk, requiredEnv } from '../../support/kubectl.ts';
import { type ChartRelease, confinedIdentity, policyRefusal, policyOf, refusedWritesSince, serviceAccountUser, SUITE_OPERATOR } from '../../support/operator-identity.ts';
import { operatorEnv } from '../../support/operator.ts';

const whoami = (kubeconfig: string): string => kubectlOk(['--kubeconfig', kubeconfig, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);

describe("the tests' operator identity", () => {
  const dir = mkdtempSync(join(tmpdir(), 'eva-identity-test-'));
  const control: ChartRelease = { release: 'eva-e2e-control', namespace: 'eva-e2e-control' };
  let rendered = '';

  afterAll(() => {
    if (rendered) kubectl(['delete', '-f', '-', '--ignore-not-found', '--wait=false'], rendered);
    kubectl(['delete', 'namespace', control.namespace, '--ignore-not-found', '--wait=false']);
    rmSync(dir, { recursive: true, force: true });
  });

  it("startOperator's environment: the chart ServiceAccount's token (0600, outside the checkout) and its release namespace, never the admin kubeconfig", () => {
    const env = operatorEnv({}, dir);
    const kubeconfig = env['KUBECONFIG'] ?? '';
    expect(kubeconfig).not.toBe(requiredEnv('KUBECONFIG'));
    expect(kubeconfig.startsWith(tmpdir())).toBe(true);
    expect(statSync(kubeconfig).mode & 0o777).toBe(0o600);
    expect(whoami(kubeconfig)).toBe(serviceAccountUser(SUITE_OPERATOR));
    expect(env['POD_NAMESPACE']).toBe(SUITE_OPERATOR.namespace);
    expect(whoami(requiredEnv('KUBECONFIG'))).not.toBe(serviceAccountUser(SUITE_OPERATOR));
  });

  it('a write it may not make is refused by the policy, and the end-of-run check sees it; an allowed one is not counted (positive control)', async () => {
    const identity = await confinedIdentity(control, dir);
    rendered = identity.rendered;
    const since = auditOffset();
    const asControl = (namespace: string): ReturnType<typeof kubectl> =>
      kubectl(['--kubeconfig', identity.kubeconfig, 'create', 'configmap', 'identity-probe', '-n', namespace, '--dry-run=server']);
    const refused = asControl('kube-system');
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain(policyRefusal(policyOf(control)));
    // Allowed by RBAC and the policy: a labelled key Secret in its release namespace.
    const allowed = kubectl(['--kubeconfig', identity.kubeconfig, 'create', '-f', '-', '--dry-run=server'],
      JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'identity-probe', namespace: control.namespace, labels: { 'app.kubernetes.io/managed-by': 'eva-operator' } } }));
    expect(allowed.stderr).toBe('');
    let seen: string[] = [];
    for (let i = 0; i < 50 && seen.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      seen = refusedWritesSince(since, serviceAccountUser(control));
    }
    expect(seen).toHaveLength(1);
    expect(seen[0]).toContain('/namespaces/kube-system/configmaps');
  });
});
