/**
 * The render guard end to end: the real operator, real helm 4 with the guard plugin, the real API
 * server. The operator runs on a test-only copy of the module charts (CHART_BASE_PATH,
 * test/support/hostile-charts.ts) whose orbit-crm renders, for chosen tenants only, what an injected
 * value would make it render: a ConfigMap in kube-system on install, a cluster-admin
 * ClusterRoleBinding and a foreign image on upgrade. Nothing of it may reach the API server; the
 * tenant sees RenderRejected naming the object; no release is left pending; the other tenants, on
 * the same charts, stay Active (the positive control). Also: a version pin images.txt does not list
 * is a condition, not a pull; a listed pin runs the catalogue's image.
 *
 * Shared cluster: this file's operator has its own version; tenants' codes start with G.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, kubectl, kubectlOk } from '../../test/support/kubectl.ts';
import { clusterAdminBinding, configMapIn, deploymentWithImage, type HostileCharts, hostileCharts } from '../../test/support/hostile-charts.ts';
import { repoRoot, tool } from '../../test/support/tools.ts';
import { helmReleases } from '../../test/support/helm.ts';
import { metricSum, scrape } from '../../test/support/metrics.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../../test/support/operator.ts';
import { applyTenant, conditionFalse, isActive, pinnedVersion, waitForGone, waitForTenant } from '../../test/support/tenants.ts';

const VERSION = '9.12.0';
const PROBE = 'eva-guard-probe';
const FOREIGN_IMAGE = 'docker.io/library/busybox:1.36';
const CATALOGUE_IMAGE = 'ghcr.io/aidonow/orbit-crm:1.0.0';
/** name -> capsule code; A renders a ConfigMap in kube-system, B a cluster-admin binding and a foreign image once the chart changes. */
const TENANTS = { hostile: 'GUARDA', control: 'GUARDB', unlistedPin: 'GUARDC', listedPin: 'GUARDD' } as const;
const nameOf = (code: string): string => `e2e-${code.toLowerCase()}`;
const namespaceOf = (code: string): string => `eva-tenant-${code.toLowerCase()}`;

let charts: HostileCharts;
let operator: OperatorProcess;

function create(code: string, spec: Record<string, unknown> = {}): void {
  applyTenant(nameOf(code), { capsuleCode: code, tier: 'Starter', wave: 1, seedsVersion: '1.0.0', operatorVersion: VERSION, ...spec });
}

const exists = (args: string[]): boolean => kubectl(['get', ...args]).status === 0;

function deploymentImage(code: string): string {
  return kubectlOk(['get', 'deployment', 'orbit-crm', '-n', namespaceOf(code), '-o', 'jsonpath={.spec.template.spec.containers[*].image}']);
}

/** The chart really renders the forbidden objects for this tenant: without the guard, helm would apply them. */
function renderedWithoutGuard(code: string): string {
  const out = spawnSync(tool('helm'), ['template', 'orbit-crm', `${charts.path}/modules/orbit-crm`, '-n', namespaceOf(code), '--set', `tenant.code=${code}`], { encoding: 'utf8' });
  expect(out.status, out.stderr).toBe(0);
  return out.stdout;
}

beforeAll(async () => {
  kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
  kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
  charts = hostileCharts();
  charts.plant('orbit-crm', 'zz-probe.yaml', configMapIn('kube-system', PROBE, [TENANTS.hostile]));
  // Drift checks every few seconds: a changed chart (the upgrade case) is noticed without waiting minutes.
  operator = startOperator({ OPERATOR_VERSION: VERSION, CHART_BASE_PATH: charts.path, DRIFT_INTERVAL_SECONDS: '3' });
  await operator.ready();
  const leftovers = Object.values(TENANTS).map(nameOf).filter((name) => pinnedVersion(name) === VERSION);
  for (const name of leftovers) kubectl(['delete', 'evt', name, '--wait=false']);
  for (const name of leftovers) expect(await waitForGone(name, 240_000), `leftover ${name} not deleted`).toBe(true);
  kubectl(['delete', 'configmap', PROBE, '-n', 'kube-system', '--ignore-not-found']);
  kubectl(['delete', 'clusterrolebinding', PROBE, '--ignore-not-found']);
  create(TENANTS.hostile);
  create(TENANTS.control);
  create(TENANTS.unlistedPin, { versions: { 'orbit-crm': '9.9.9' } });
  create(TENANTS.listedPin, { versions: { 'orbit-crm': '1.0.0' } });
}, 600_000);

afterAll(async () => {
  const ours = Object.values(TENANTS).map(nameOf).filter((name) => pinnedVersion(name) === VERSION);
  for (const name of ours) kubectl(['delete', 'evt', name, '--wait=false']);
  for (const name of ours) await waitForGone(name, 240_000);
  await operator.stop();
  removeSecretsDir(operator);
  charts.remove();
}, 600_000);

describe('the render guard (real operator, helm and API server)', () => {
  it('a release rendering a ConfigMap in kube-system: nothing applied, RenderRejected names it, no release left; the other tenant is Active', async () => {
    expect(renderedWithoutGuard(TENANTS.hostile)).toMatch(new RegExp(`name: ${PROBE}\\n\\s+namespace: kube-system`));
    expect(renderedWithoutGuard(TENANTS.control)).not.toContain(PROBE);

    const { tenant } = await waitForTenant(nameOf(TENANTS.hostile), 'ModulesDeployed RenderRejected', conditionFalse('ModulesDeployed', 'RenderRejected'), 240_000);
    expect(tenant.conditions['ModulesDeployed']?.message).toContain(`ConfigMap/kube-system/${PROBE}: only namespace ${namespaceOf(TENANTS.hostile)} is allowed`);
    await waitForTenant(nameOf(TENANTS.control), 'Active', isActive, 240_000);

    expect(exists(['configmap', PROBE, '-n', 'kube-system'])).toBe(false);
    // No orbit-crm release in any state (helm stores nothing when the post-renderer refuses an install);
    // the tenant's other module is not held back.
    expect(helmReleases(namespaceOf(TENANTS.hostile))).toEqual([{ name: 'orbit-itsm', revision: '1', status: 'deployed' }]);
    expect(exists(['deployment', 'orbit-crm', '-n', namespaceOf(TENANTS.hostile)])).toBe(false);
    expect(helmReleases(namespaceOf(TENANTS.control))).toEqual([
      { name: 'orbit-crm', revision: '1', status: 'deployed' },
      { name: 'orbit-itsm', revision: '1', status: 'deployed' },
    ]);
    expect(deploymentImage(TENANTS.control)).toBe(CATALOGUE_IMAGE);
  }, 600_000);

  it('retries stay refused: nothing is applied and no release appears, however often the operator tries', async () => {
    // Each attempt is a new helm upgrade that renders and checks anew (steps/render-guard/render-guard-run.ts): a
    // failed upgrade counted now is a retry (the hostile tenant's is the only release that fails here).
    const failedUpgrades = async (): Promise<number> => metricSum(await scrape(operator), 'eva_helm_operations_total', 'operation="upgrade",result="error"');
    const before = await failedUpgrades();
    const retried = await eventually(async () => (await failedUpgrades()) > before, 240_000, 500);
    expect(retried, 'the operator did not retry the refused release').toBe(true);
    await waitForTenant(nameOf(TENANTS.hostile), 'still RenderRejected', conditionFalse('ModulesDeployed', 'RenderRejected'), 60_000);
    expect(helmReleases(namespaceOf(TENANTS.hostile))).toEqual([{ name: 'orbit-itsm', revision: '1', status: 'deployed' }]);
    expect(exists(['configmap', PROBE, '-n', 'kube-system'])).toBe(false);
  }, 300_000);

  it('an upgrade rendering a cluster-admin ClusterRoleBinding and a foreign image is refused; the release keeps its revision; fixed, the tenant is Active again', async () => {
    const control = namespaceOf(TENANTS.control);
    const before = kubectlOk(['get', 'deployment', 'orbit-crm', '-n', control, '-o', 'jsonpath={.metadata.resourceVersion}']);
    charts.plant('orbit-crm', 'zz-binding.yaml', clusterAdminBinding(PROBE, [TENANTS.control]));
    charts.plant('orbit-crm', 'deployment.yaml', deploymentWithImage(FOREIGN_IMAGE, [TENANTS.control]));
    expect(renderedWithoutGuard(TENANTS.control)).toContain('name: cluster-admin');
    expect(renderedWithoutGuard(TENANTS.control)).toContain(`image: "${FOREIGN_IMAGE}"`); // the library quotes every value

    const { tenant } = await waitForTenant(nameOf(TENANTS.control), 'ModulesDeployed RenderRejected', conditionFalse('ModulesDeployed', 'RenderRejected'), 240_000);
    const message = tenant.conditions['ModulesDeployed']?.message ?? '';
    expect(message).toContain(`ClusterRoleBinding/${PROBE}: rbac.authorization.k8s.io/v1 ClusterRoleBinding is not a kind a module may own`);
    expect(message).toContain(`Deployment/${control}/orbit-crm: image ${FOREIGN_IMAGE} is not in the catalogue (allowed: ${CATALOGUE_IMAGE})`);
    expect(exists(['clusterrolebinding', PROBE])).toBe(false);
    // helm stores no new revision when the post-renderer refuses an upgrade: revision 1, deployed, untouched.
    expect(helmReleases(control)).toEqual([
      { name: 'orbit-crm', revision: '1', status: 'deployed' },
      { name: 'orbit-itsm', revision: '1', status: 'deployed' },
    ]);
    expect(deploymentImage(TENANTS.control)).toBe(CATALOGUE_IMAGE);
    expect(kubectlOk(['get', 'deployment', 'orbit-crm', '-n', control, '-o', 'jsonpath={.metadata.resourceVersion}'])).toBe(before);

    charts.restore('orbit-crm', 'zz-binding.yaml');
    charts.restore('orbit-crm', 'deployment.yaml');
    await waitForTenant(nameOf(TENANTS.control), 'Active again', isActive, 240_000);
    expect(deploymentImage(TENANTS.control)).toBe(CATALOGUE_IMAGE);
  }, 600_000);

  it('a version pin images.txt does not list is a condition naming it, never a pull; a listed pin runs the catalogue image', async () => {
    const { tenant } = await waitForTenant(nameOf(TENANTS.unlistedPin), 'ModulesDeployed UnknownModuleVersion', conditionFalse('ModulesDeployed', 'UnknownModuleVersion'), 240_000);
    expect(tenant.conditions['ModulesDeployed']?.message).toContain('orbit-crm 9.9.9 is not in images.txt; available: 1.0.0');
    expect(helmReleases(namespaceOf(TENANTS.unlistedPin)).map((r) => r.name)).not.toContain('orbit-crm');
    expect(exists(['deployment', 'orbit-crm', '-n', namespaceOf(TENANTS.unlistedPin)])).toBe(false);

    await waitForTenant(nameOf(TENANTS.listedPin), 'Active', isActive, 240_000);
    expect(deploymentImage(TENANTS.listedPin)).toBe(CATALOGUE_IMAGE);
  }, 600_000);
});
