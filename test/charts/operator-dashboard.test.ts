/**
 * The Grafana dashboard of the operator chart: the ConfigMap Grafana's dashboard sidecar loads (label,
 * folder, namespace, off switch), the dashboard's shape, and every query against what the operator
 * really exports: each PromQL expression, parsed with Prometheus' grammar, names only series of the
 * operator's registry (src/metrics/metrics.ts), histogram_quantile reads _bucket series of its
 * histograms keeping le, and every label in a matcher, by (...) or legend exists where it is used.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/tools.ts';
import {
  allValues,
  type Catalogue,
  checkQuery,
  checkVariableQuery,
  type Dashboard,
  dashboardPath,
  loadDashboard,
  operatorCatalogue,
  parseDashboard,
  queryPanels,
  substitute,
  variableQuery,
} from '../support/dashboard.ts';
import { helm, type HelmResult, type KubeObject, parseManifest } from '../support/chart-render.ts';

const chartDir = join(repoRoot, 'charts/eva-operator');
const NAMESPACE = 'eva-system';
const FULLNAME = 'eva-eva-operator';
const DATA_KEY = 'eva-operator.json';

interface ConfigMapObject extends KubeObject {
  metadata: KubeObject['metadata'] & { namespace?: string };
  data?: Record<string, string>;
}

function template(args: readonly string[] = []): Promise<HelmResult> {
  return helm(['template', 'eva', chartDir, '--namespace', NAMESPACE, '--set', 'nats.url=nats://nats.example:4222', ...args]);
}

async function dashboardConfigMaps(args: readonly string[] = []): Promise<ConfigMapObject[]> {
  const result = await template(args);
  if (result.code !== 0) throw new Error(`helm template failed (${result.code}): ${result.stderr}`);
  return parseManifest(result.stdout).filter((o): o is ConfigMapObject => o.kind === 'ConfigMap' && o.metadata.name === `${FULLNAME}-dashboard`);
}

describe('the dashboard ConfigMap', () => {
  it('renders by default in the release namespace with the sidecar label grafana_dashboard: "1" and the dashboard JSON as it is in the chart', async () => {
    const [configMap, ...others] = await dashboardConfigMaps();
    expect(others).toEqual([]);
    expect(configMap?.metadata.namespace).toBe(NAMESPACE);
    expect(configMap?.metadata.labels).toMatchObject({ grafana_dashboard: '1', 'app.kubernetes.io/instance': 'eva' });
    expect(configMap?.metadata.annotations).toBeUndefined();
    expect(Object.keys(configMap?.data ?? {})).toEqual([DATA_KEY]);
    const json = configMap?.data?.[DATA_KEY] ?? '';
    expect(() => parseDashboard(json)).not.toThrow();
    expect(JSON.parse(json)).toEqual(JSON.parse(readFileSync(dashboardPath, 'utf8')));
  });

  it('label key and value, folder annotation, extra annotations and namespace are configurable', async () => {
    const [configMap] = await dashboardConfigMaps([
      '--set', 'dashboard.label.key=example.com/dashboard',
      '--set', 'dashboard.label.value=eva',
      '--set', 'dashboard.folder=EVA tenants',
      '--set', 'dashboard.folderAnnotation=grafana_folder',
      '--set', 'dashboard.annotations.team=platform',
      '--set', 'dashboard.namespace=monitoring',
    ]);
    expect(configMap?.metadata.namespace).toBe('monitoring');
    expect(configMap?.metadata.labels?.['example.com/dashboard']).toBe('eva');
    expect(configMap?.metadata.labels).not.toHaveProperty('grafana_dashboard');
    expect(configMap?.metadata.annotations).toEqual({ grafana_folder: 'EVA tenants', team: 'platform' });
  });

  it('a label value given as a number (--set dashboard.label.value=1) renders as the string "1"', async () => {
    const [configMap] = await dashboardConfigMaps(['--set', 'dashboard.label.value=1']);
    expect(configMap?.metadata.labels?.['grafana_dashboard']).toBe('1');
  });

  it('dashboard.enabled=false renders no dashboard ConfigMap', async () => {
    expect(await dashboardConfigMaps(['--set', 'dashboard.enabled=false'])).toEqual([]);
  });

  it('the values schema rejects a label key Kubernetes would reject', async () => {
    const result = await template(['--set', 'dashboard.label.key=grafana dashboard']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('/dashboard/label/key');
  });

  it('lints cleanly with every dashboard setting', async () => {
    const result = await helm(['lint', '--strict', chartDir, '--set', 'nats.url=nats://nats.example:4222', '--set', 'dashboard.folder=EVA', '--set', 'dashboard.namespace=monitoring']);
    expect(result.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(result.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
  });
});

describe('the dashboard JSON', () => {
  const dashboard: Dashboard = loadDashboard();
  const panels = queryPanels(dashboard);
  const targets = panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel, target })));
  const exprs = targets.map((t) => t.target.expr);

  it('is a Grafana dashboard of schemaVersion 39 or later with a stable uid', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39);
    expect(dashboard.uid).toBe('eva-operator');
  });

  it('has a Prometheus data source variable, and every panel and query uses it', () => {
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    for (const panel of panels) expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
    for (const { panel, target } of targets) expect(target.datasource, `${panel.title} ${target.refId}`).toEqual({ type: 'prometheus', uid: '${datasource}' });
    for (const v of dashboard.templating.list.filter((t) => t.type === 'query')) expect(v.datasource, v.name).toEqual({ type: 'prometheus', uid: '${datasource}' });
  });

  it('panels have unique ids and tile the 24-column grid without overlapping', () => {
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    const cells = new Map<string, string>();
    for (const { title, gridPos: { x, y, w, h } } of dashboard.panels) {
      expect(x >= 0 && w > 0 && x + w <= 24 && y >= 0 && h > 0, title).toBe(true);
      for (let col = x; col < x + w; col += 1) {
        for (let row = y; row < y + h; row += 1) {
          expect(cells.get(`${col},${row}`), `${title} overlaps`).toBeUndefined();
          cells.set(`${col},${row}`, title);
        }
      }
    }
  });

  it('every query panel has a title, a description, a unit and at least one query', () => {
    for (const panel of panels) {
      expect(panel.description, panel.title).toBeTruthy();
      expect(panel.fieldConfig?.defaults.unit, panel.title).toBeTruthy();
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
    }
  });

  it('shows what the issue asks for: tenants by phase, time to Active by tier, saga steps, queue depth per tenant, reconcile errors, work queue', () => {
    expect(exprs).toContainEqual(expect.stringMatching(/by \(phase\) \(eva_tenants\{/));
    expect(exprs).toContainEqual(expect.stringMatching(/^histogram_quantile\(0\.5, sum by \(tier, le\) \(rate\(eva_time_to_active_seconds_bucket/));
    expect(exprs).toContainEqual(expect.stringMatching(/^histogram_quantile\(0\.95, sum by \(tier, le\) \(rate\(eva_time_to_active_seconds_bucket/));
    expect(exprs).toContainEqual(expect.stringMatching(/^histogram_quantile\(0\.95, sum by \(step, le\) \(rate\(eva_saga_step_duration_seconds_bucket/));
    expect(exprs).toContainEqual(expect.stringMatching(/by \(capsule, stream\) \(capsule_queue_depth\{/));
    expect(exprs).toContainEqual(expect.stringMatching(/rate\(eva_reconcile_total\{[^}]*result="error"/));
    expect(exprs).toContainEqual(expect.stringMatching(/eva_workqueue_depth\{/));
  });

  it('every variable is substituted: only $job, $capsule and Grafana built-ins appear', () => {
    const values = allValues(dashboard);
    expect(Object.keys(values.variables).sort()).toEqual(['capsule', 'job']);
    for (const expr of exprs) expect(() => substitute(expr, values)).not.toThrow();
  });

  describe('against the series the operator exports', () => {
    let catalogue: Catalogue;

    beforeAll(async () => {
      catalogue = await operatorCatalogue();
    });

    it('the catalogue is the operator registry: its histograms have _bucket series with le', () => {
      expect(catalogue.get('eva_time_to_active_seconds_bucket')).toMatchObject({ type: 'histogram', labels: new Set(['tier', 'le']) });
      expect(catalogue.get('eva_reconcile_total')).toMatchObject({ type: 'counter', labels: new Set(['result', 'reason']) });
      expect(catalogue.get('capsule_queue_depth')?.labels).toEqual(new Set(['capsule', 'stream']));
    });

    it.each(targets.map(({ panel, target }) => [`${panel.title} / ${target.refId}`, target.expr, target.legendFormat] as const))(
      '%s: %s',
      (_name, expr, legend) => {
        expect(checkQuery(substitute(expr, allValues(dashboard)), catalogue, legend)).toEqual([]);
      },
    );

    it('the variable queries read labels that exist', () => {
      for (const v of dashboard.templating.list.filter((t) => t.type === 'query')) {
        expect(checkVariableQuery(substitute(variableQuery(v), allValues(dashboard)), catalogue), v.name).toEqual([]);
      }
    });

    // The check itself: each of these mistakes must be reported, or the tests above prove nothing.
    it.each([
      ['a metric the operator does not export', 'sum(rate(eva_reconcile_totals[5m]))', undefined, 'is not a series the operator exports'],
      ['a histogram without its _bucket suffix', 'histogram_quantile(0.9, sum by (le) (rate(eva_time_to_active_seconds[5m])))', undefined, 'use eva_time_to_active_seconds_bucket'],
      ['histogram_quantile over a counter', 'histogram_quantile(0.9, rate(eva_reconcile_total[5m]))', undefined, 'not the _bucket series of a histogram'],
      ['histogram_quantile over _count', 'histogram_quantile(0.9, sum by (tier) (rate(eva_time_to_active_seconds_count[5m])))', undefined, 'not the _bucket series of a histogram'],
      ['histogram_quantile dropping le', 'histogram_quantile(0.9, sum by (tier) (rate(eva_time_to_active_seconds_bucket[5m])))', undefined, 'must keep le'],
      ['by a label the metric lacks (reconciles have no tier)', 'sum by (tier) (rate(eva_reconcile_total{result="error"}[5m]))', undefined, 'has no label tier'],
      ['by a label an inner aggregation dropped', 'max by (phase) (sum by (job) (eva_tenants))', undefined, 'has no label phase'],
      ['a matcher on a label the metric lacks', 'eva_tenants{tier="Starter"}', undefined, 'eva_tenants has no label tier'],
      ['on (...) a label one side lacks', 'eva_workqueue_depth / on (phase) eva_tenants', undefined, 'has no label phase'],
      ['a legend label the result lacks', 'sum by (result) (rate(eva_reconcile_total[5m]))', '{{tier}}', 'legend {{tier}}'],
      ['an expression that does not parse', 'sum(rate(eva_reconcile_total[5m]', undefined, 'does not parse'],
    ])('reports %s', (_name, expr, legend, problem) => {
      expect(checkQuery(expr, catalogue, legend).join('\n')).toContain(problem);
    });

    it('accepts what is right: labels kept through topk and histogram_quantile, or, and on (...)', () => {
      expect(checkQuery('topk(3, max by (capsule, stream) (capsule_queue_depth))', catalogue, '{{capsule}} {{stream}}')).toEqual([]);
      expect(checkQuery('histogram_quantile(0.5, sum by (tier, le) (rate(eva_time_to_active_seconds_bucket[1m])))', catalogue, '{{tier}}')).toEqual([]);
      expect(checkQuery('sum by (job) (rate(eva_reconcile_total{result="error"}[1m])) or sum by (job) (eva_reconcile_total) * 0', catalogue, '{{job}}')).toEqual([]);
      expect(checkQuery('sum by (job) (eva_workqueue_depth) / on (job) sum by (job) (eva_tenants)', catalogue, '{{job}}')).toEqual([]);
      expect(checkQuery('topk(3, capsule_queue_depth)', catalogue, '{{le}}').join('\n')).toContain('legend {{le}}');
    });

    it('an unknown variable is reported rather than left in the query', () => {
      expect(() => substitute('eva_tenants{job=~"$namespace"}', allValues(dashboard))).toThrow('unknown variable $namespace');
    });
  });
});
