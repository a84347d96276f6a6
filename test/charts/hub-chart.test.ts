/**
 * The hub chart (charts/eva-hub), rendered by the pinned helm: its policy refuses from the portal the
 * same platform controls as the operator chart's platform-controls.yaml refuses on a cluster, and its
 * values are data. What the hub's API server makes of it: e2e/multi-cluster.test.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { repoRoot } from '../support/tools.ts';
import { helm } from '../support/chart-render.ts';

const render = (chart: string, args: readonly string[]) => helm(['template', 'eva', join(repoRoot, 'charts', chart), '--namespace', 'eva-system', ...args]);

/** The keys a rendered policy compares old with new for: `"<key>" in variables.old<Annotations|Labels>`. */
function controlledKeys(rendered: string): string[] {
  const keys = [...rendered.matchAll(/\\"(eva\.aidonow\.com\/[a-z-]+)\\" in variables\.old(Annotations|Labels)/g)].map((m) => `${m[2] ?? ''} ${m[1] ?? ''}`);
  return [...new Set(keys)].sort();
}

interface RenderedObject {
  kind: string;
  rules?: { resources: string[]; verbs: string[] }[];
  spec?: { replicas: number; template: { spec: { containers: { image: string; args: string[] }[] } } };
}

/** The verbs the rendered role of `kind` grants on `resource`. */
const verbsOn = (objects: readonly RenderedObject[], kind: string, resource: string): string[] | undefined =>
  objects.find((o) => o.kind === kind)?.rules?.find((r) => r.resources.includes(resource))?.verbs;

describe('the hub chart', () => {
  it("refuses from the portal exactly the platform controls the operator chart's policy refuses (annotations, labels, spec.operatorVersion, spec.suspend)", async () => {
    const hub = await render('eva-hub', ['--show-only', 'templates/tenant-works-policy.yaml']);
    const cluster = await render('eva-operator', ['--set', 'nats.url=nats://nats.example:4222', '--show-only', 'templates/platform-controls.yaml']);
    expect(hub.code, hub.stderr).toBe(0);
    expect(cluster.code, cluster.stderr).toBe(0);
    expect(controlledKeys(hub.stdout)).toEqual(controlledKeys(cluster.stdout));
    expect(controlledKeys(hub.stdout)).toContain('Annotations eva.aidonow.com/restore-from-uid');
    for (const field of ['spec.operatorVersion', 'spec.suspend']) {
      expect(hub.stdout).toContain(`sets, changes or removes ${field}`);
      expect(cluster.stdout).toContain(`${field} may be set, changed or removed`);
    }
  });

  it('names the executor the members run (the operator chart default), and takes no executor that is not a name', async () => {
    const operatorDefault = await render('eva-operator', ['--set', 'nats.url=nats://nats.example:4222', '--set', 'hubExecutor.create=true', '--show-only', 'templates/hub-executor.yaml']);
    expect(operatorDefault.stdout).toContain('name: eva-hub-executor\n  namespace: eva-system');
    const hub = await render('eva-hub', ['--show-only', 'templates/tenant-works-policy.yaml']);
    expect(hub.stdout).toContain('serviceAccount.namespace == "eva-system"');
    expect(hub.stdout).toContain('serviceAccount.name == "eva-hub-executor"');
    const injected = await render('eva-hub', ['--set', "executor.name=x' || true || '"]);
    expect(injected.code).not.toBe(0);
    expect(injected.stderr).toContain('/executor/name');
  });

  it('is released with the operator chart: the same version and appVersion (scripts/release.sh refuses otherwise)', () => {
    const versions = (chart: string): unknown => {
      const { version, appVersion } = parse(readFileSync(join(repoRoot, 'charts', chart, 'Chart.yaml'), 'utf8')) as { version: string; appVersion: string };
      return { version, appVersion };
    };
    expect(versions('eva-hub')).toEqual(versions('eva-operator'));
  });

  it('renders no policy when told (tenantWorksPolicy=false), the roles still', async () => {
    const off = await render('eva-hub', ['--set', 'tenantWorksPolicy=false']);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).not.toContain('ValidatingAdmissionPolicy');
    expect(off.stdout).toContain('name: eva-hub-tenant-portal');
  });

  it('renders the hub controller: one replica of the operator image running `hub`, the rights to write works\' status and read members; the mover\'s rights only with moves; its values data', async () => {
    const summary = await render('eva-hub', ['--set', 'controller.tenantsNamespace=portal-tenants', '--show-only', 'templates/controller.yaml']);
    expect(summary.code, summary.stderr).toBe(0);
    const objects = parseAllDocuments(summary.stdout).map((d) => d.toJS() as RenderedObject);
    const deployment = objects.find((o) => o.kind === 'Deployment');
    expect(deployment?.spec?.replicas).toBe(1);
    expect(deployment?.spec?.template.spec.containers[0]?.image).toBe('ghcr.io/aidonow/eva-operator:0.1.0');
    expect(deployment?.spec?.template.spec.containers[0]?.args).toEqual(['hub', '--namespace', 'eva-system', '--tenants-namespace', 'portal-tenants', '--interval', '2']);
    expect(verbsOn(objects, 'ClusterRole', 'manifestworks/status')).toEqual(['patch']);
    expect(verbsOn(objects, 'ClusterRole', 'manifestworks')).toEqual(['get', 'list']);
    expect(verbsOn(objects, 'ClusterRole', 'placements/status')).toEqual(['patch']);
    expect(verbsOn(objects, 'ClusterRole', 'placementdecisions')).toBeUndefined();
    expect(objects.some((o) => o.kind === 'Role')).toBe(false);

    const moving = await render('eva-hub', ['--set', 'controller.moves=true', '--show-only', 'templates/controller.yaml']);
    const withMoves = parseAllDocuments(moving.stdout).map((d) => d.toJS() as RenderedObject);
    expect(withMoves.find((o) => o.kind === 'Deployment')?.spec?.template.spec.containers[0]?.args).toContain('--moves');
    // Works it rewrites as the platform (not judged as the portal); Secrets only listed in its own namespace.
    expect(verbsOn(withMoves, 'ClusterRole', 'manifestworks')).toContain('platform-control');
    expect(verbsOn(withMoves, 'Role', 'secrets')).toEqual(['list']);

    expect((await render('eva-hub', ['--set', 'controller.enabled=false'])).stdout).not.toContain('kind: Deployment');
    const injected = await render('eva-hub', ['--set', 'controller.tenantsNamespace=a --kubeconfig=/x']);
    expect(injected.code).not.toBe(0);
    expect(injected.stderr).toContain('/controller/tenantsNamespace');
  });
});
