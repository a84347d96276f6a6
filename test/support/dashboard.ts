/**
 * The Grafana dashboard shipped with the operator chart (charts/eva-operator/dashboards/eva-operator.json):
 * its shape, its queries with Grafana's variables substituted, and a check of every PromQL expression
 * against the series the operator exports (parsed with Prometheus' own PromQL grammar, lezer-promql).
 * Used by test/charts/operator-dashboard.test.ts and by bench/render-dashboard.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { OperatorMetrics } from '../../src/metrics/metrics.ts';
import { repoRoot } from './tools.ts';

export const dashboardPath = join(repoRoot, 'charts/eva-operator/dashboards/eva-operator.json');

const DatasourceRef = Type.Object({ type: Type.String(), uid: Type.String() });
const Override = Type.Object({
  matcher: Type.Object({ id: Type.String(), options: Type.String() }),
  properties: Type.Array(Type.Object({ id: Type.String(), value: Type.Unknown() })),
});
const TargetSchema = Type.Object({
  refId: Type.String(),
  expr: Type.String({ minLength: 1 }),
  legendFormat: Type.Optional(Type.String()),
  instant: Type.Optional(Type.Boolean()),
  range: Type.Optional(Type.Boolean()),
  datasource: Type.Optional(DatasourceRef),
});
const GridPos = Type.Object({ x: Type.Integer(), y: Type.Integer(), w: Type.Integer(), h: Type.Integer() });
const PanelSchema = Type.Object({
  id: Type.Integer(),
  type: Type.String(),
  title: Type.String(),
  description: Type.Optional(Type.String()),
  gridPos: GridPos,
  datasource: Type.Optional(DatasourceRef),
  targets: Type.Optional(Type.Array(TargetSchema)),
  fieldConfig: Type.Optional(
    Type.Object({
      defaults: Type.Object({
        unit: Type.Optional(Type.String()),
        decimals: Type.Optional(Type.Integer()),
        thresholds: Type.Optional(Type.Object({ steps: Type.Array(Type.Object({ color: Type.String(), value: Type.Union([Type.Number(), Type.Null()]) })) })),
        custom: Type.Optional(Type.Object({ stacking: Type.Optional(Type.Object({ mode: Type.String() })), showPoints: Type.Optional(Type.String()) })),
      }),
      overrides: Type.Array(Override),
    }),
  ),
});
const VariableSchema = Type.Object({
  name: Type.String(),
  type: Type.String(),
  label: Type.Optional(Type.String()),
  query: Type.Union([Type.String(), Type.Object({ query: Type.String() })]),
  datasource: Type.Optional(DatasourceRef),
  includeAll: Type.Optional(Type.Boolean()),
  multi: Type.Optional(Type.Boolean()),
  allValue: Type.Optional(Type.String()),
});
const DashboardSchema = Type.Object({
  uid: Type.String({ minLength: 1 }),
  title: Type.String({ minLength: 1 }),
  schemaVersion: Type.Integer(),
  panels: Type.Array(PanelSchema),
  templating: Type.Object({ list: Type.Array(VariableSchema) }),
  time: Type.Object({ from: Type.String(), to: Type.String() }),
});

export type Dashboard = Static<typeof DashboardSchema>;
export type Panel = Static<typeof PanelSchema>;
export type Target = Static<typeof TargetSchema>;
export type Variable = Static<typeof VariableSchema>;

/** Parses dashboard JSON text; throws listing every place it does not have the expected shape. */
export function parseDashboard(text: string): Dashboard {
  const value: unknown = JSON.parse(text);
  const problems = [...Value.Errors(DashboardSchema, value)].map((e) => `${e.path || '/'}: ${e.message}`);
  if (problems.length > 0) throw new Error(`not a dashboard of the expected shape:\n${problems.join('\n')}`);
  return value as Dashboard;
}

export function loadDashboard(path = dashboardPath): Dashboard {
  return parseDashboard(readFileSync(path, 'utf8'));
}

/** The panels that query (every panel but rows), in dashboard order. */
export function queryPanels(dashboard: Dashboard): Panel[] {
  return dashboard.panels.filter((p) => p.type !== 'row');
}

/** What Grafana puts in for its variables when the queries run. */
export interface VariableValues {
  /** Dashboard variables by name, e.g. job: '.+' (a multi-value variable's "All"). */
  readonly variables: Readonly<Record<string, string>>;
  readonly rateInterval: string;
  readonly range: string;
  readonly interval: string;
}

/** The variables' "All" values (allValue, else .*) and fixed intervals: what the check parses. */
export function allValues(dashboard: Dashboard, intervals: Omit<VariableValues, 'variables'> = { rateInterval: '1m', range: '1h', interval: '15s' }): VariableValues {
  const variables: Record<string, string> = {};
  for (const v of dashboard.templating.list) if (v.type !== 'datasource') variables[v.name] = v.allValue ?? '.*';
  return { variables, ...intervals };
}

/** Substitutes $name, ${name}, $__rate_interval, $__range and $__interval as Grafana does; throws on any other $variable. */
export function substitute(expr: string, values: VariableValues): string {
  const builtins: Record<string, string> = { __rate_interval: values.rateInterval, __range: values.range, __interval: values.interval };
  return expr.replace(/\$\{(\w+)\}|\$(\w+)/g, (_match, braced: string | undefined, bare: string | undefined) => {
    const name = braced ?? bare ?? '';
    const value = builtins[name] ?? values.variables[name];
    if (value === undefined) throw new Error(`unknown variable $${name} in ${expr}`);
    return value;
  });
}

// ---- what the operator exports ---------------------------------------------------------------------

/** Labels every scraped series gets from its target (Prometheus' job and instance). */
export const TARGET_LABELS: readonly string[] = ['job', 'instance'];

export interface SeriesInfo {
  /** The metric family: the histogram's name for its _bucket, _sum and _count series. */
  readonly family: string;
  readonly type: string;
  readonly labels: ReadonlySet<string>;
}
/** Series name -> what it is and which labels its samples carry. */
export type Catalogue = ReadonlyMap<string, SeriesInfo>;

const SUFFIXES: Readonly<Record<string, readonly string[]>> = { histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count'] };

function familyOf(sample: string, types: ReadonlyMap<string, string>): [string, string] | undefined {
  const direct = types.get(sample);
  if (direct !== undefined && direct !== 'histogram') return [sample, direct];
  for (const [family, type] of types) {
    if ((SUFFIXES[type] ?? []).some((suffix) => suffix !== '' && sample === family + suffix)) return [family, type];
  }
  return undefined;
}

/** The series of a Prometheus text exposition (what a scrape of /metrics reads), with their label names. */
export function catalogueFromExposition(text: string): Catalogue {
  const types = new Map<string, string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(match[1] ?? '', match[2] ?? '');
  const series = new Map<string, { family: string; type: string; labels: Set<string> }>();
  for (const line of text.split('\n')) {
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+/.exec(line);
    if (!sample?.[1]) continue;
    const name = sample[1];
    const [family, type] = familyOf(name, types) ?? [name, 'untyped'];
    const entry = series.get(name) ?? { family, type, labels: new Set<string>() };
    for (const label of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)) entry.labels.add(label[1] ?? '');
    series.set(name, entry);
  }
  return series;
}

/**
 * The operator's own registry (src/metrics/metrics.ts) after one call of every method that records
 * a sample, so that each labelled metric has a series and its label names show. A new labelled
 * metric must be exercised here too: until then a panel querying it fails the check ("no series").
 */
export async function operatorCatalogue(): Promise<Catalogue> {
  const metrics = new OperatorMetrics();
  metrics.observeReconcile('error', 0.2);
  metrics.observeStep('modules', 'Starter', 1.5);
  metrics.observeTimeToActive('Starter', 3);
  metrics.setTenantsByPhase({ Active: 1 });
  metrics.setWorkqueueDepth(0);
  metrics.setTenantsPinnedToAbsentVersion(0);
  metrics.setTenantsInAbsentShard(0);
  metrics.setTenantsAboveMaxWave(0);
  metrics.setTenantsOwnedByAbsentOperator(0);
  metrics.observeKubeRequest('GET', 0.01);
  metrics.setQueueDepth('ABCDEF', 'events', 0);
  return catalogueFromExposition(await metrics.metricsText());
}

// ---- checking PromQL -------------------------------------------------------------------------------

type Node = ReturnType<typeof parser.parse>['topNode'];

function text(expr: string, node: Node): string {
  return expr.slice(node.from, node.to);
}

function descendants(node: Node, name: string): Node[] {
  const found: Node[] = [];
  const cursor = node.cursor();
  do {
    if (cursor.name === name) found.push(cursor.node);
  } while (cursor.next() && cursor.from < node.to);
  return found.filter((n) => n.from >= node.from && n.to <= node.to);
}

/** The expression arguments of a function call or an aggregation (numbers and strings included). */
function callArguments(call: Node): Node[] {
  const body = call.getChild('FunctionCallBody');
  const args: Node[] = [];
  for (let child = body?.firstChild ?? null; child !== null; child = child.nextSibling) args.push(child);
  return args;
}

function groupingLabels(clause: Node | null, expr: string): string[] {
  return (clause?.getChild('GroupingLabels')?.getChildren('LabelName') ?? []).map((n) => text(expr, n));
}

interface Selector {
  readonly node: Node;
  readonly metric: string;
  readonly info: SeriesInfo | undefined;
}

function selectorsIn(node: Node, expr: string, catalogue: Catalogue): Selector[] {
  return descendants(node, 'VectorSelector').map((n) => {
    const metric = n.getChild('Identifier');
    const name = metric ? text(expr, metric) : '';
    return { node: n, metric: name, info: catalogue.get(name) };
  });
}

function labelsOf(selector: Selector): Set<string> {
  return new Set([...(selector.info?.labels ?? []), ...TARGET_LABELS]);
}

function checkSelectors(selectors: readonly Selector[], expr: string, catalogue: Catalogue): string[] {
  const problems: string[] = [];
  for (const s of selectors) {
    if (s.metric === '') {
      problems.push(`${text(expr, s.node)}: name the metric before the braces`);
      continue;
    }
    if (!s.info) {
      const family = [...catalogue.values()].some((i) => i.family === s.metric && i.type === 'histogram');
      problems.push(`${s.metric} is not a series the operator exports${family ? ` (a histogram: use ${s.metric}_bucket, _sum or _count)` : ''}`);
      continue;
    }
    for (const matcher of descendants(s.node, 'LabelName')) {
      const label = text(expr, matcher);
      if (!labelsOf(s).has(label)) problems.push(`${s.metric} has no label ${label} (it has ${[...labelsOf(s)].sort().join(', ')})`);
    }
  }
  return problems;
}

/** Labels named in by (...) / without (...) and on (...) / ignoring (...) must be labels of what they group. */
function checkGrouping(root: Node, expr: string, catalogue: Catalogue): string[] {
  const problems: string[] = [];
  const check = (clause: Node, operands: readonly (Node | undefined)[]): void => {
    for (const operand of operands) {
      if (!operand) continue;
      const labels = outputLabels(operand, expr, catalogue);
      for (const label of groupingLabels(clause, expr).filter((l) => !labels.has(l))) {
        problems.push(`${text(expr, clause)}: ${text(expr, operand)} has no label ${label} (it has ${[...labels].sort().join(', ') || 'none'})`);
      }
    }
  };
  for (const agg of descendants(root, 'AggregateExpr')) {
    const modifier = agg.getChild('AggregateModifier');
    if (modifier) check(modifier, [callArguments(agg).at(-1)]);
  }
  for (const bin of descendants(root, 'BinaryExpr')) {
    const matching = bin.getChild('MatchingModifierClause');
    if (matching) check(matching, [bin.firstChild ?? undefined, bin.lastChild ?? undefined]);
  }
  return problems;
}

function keepsLe(arg: Node, expr: string): boolean {
  for (const agg of descendants(arg, 'AggregateExpr')) {
    const modifier = agg.getChild('AggregateModifier');
    const labels = groupingLabels(modifier, expr);
    const without = Boolean(modifier?.getChild('Without'));
    if (without ? labels.includes('le') : !labels.includes('le')) return false;
  }
  return true;
}

/** histogram_quantile(φ, v): v only from _bucket series of histograms, with le kept by every aggregation. */
function checkHistogramQuantiles(root: Node, expr: string, catalogue: Catalogue): string[] {
  const problems: string[] = [];
  for (const call of descendants(root, 'FunctionCall').filter((c) => c.getChild('FunctionIdentifier')?.getChild('HistogramQuantile'))) {
    const vector = callArguments(call)[1];
    if (!vector) {
      problems.push(`${text(expr, call)}: histogram_quantile needs two arguments`);
      continue;
    }
    for (const s of selectorsIn(vector, expr, catalogue)) {
      if (s.info?.type !== 'histogram' || !s.metric.endsWith('_bucket')) problems.push(`histogram_quantile over ${s.metric}: not the _bucket series of a histogram the operator exports`);
    }
    if (!keepsLe(vector, expr)) problems.push(`${text(expr, vector)}: every aggregation inside histogram_quantile must keep le`);
  }
  return problems;
}

type LabelRule = (node: Node, expr: string, catalogue: Catalogue) => Set<string>;

const innerLabels: LabelRule = (node, expr, catalogue) => (node.firstChild ? outputLabels(node.firstChild, expr, catalogue) : new Set());

/** Aggregations that select series (topk, bottomk, limitk, limit_ratio): their result keeps every label. */
const SELECTING = ['Topk', 'Bottomk', 'LimitK', 'LimitRatio'];

function aggregateLabels(node: Node, expr: string, catalogue: Catalogue): Set<string> {
  const modifier = node.getChild('AggregateModifier');
  const inner = callArguments(node).at(-1);
  const labels = inner ? outputLabels(inner, expr, catalogue) : new Set<string>();
  if (SELECTING.includes(node.getChild('AggregateOp')?.firstChild?.name ?? '')) return labels;
  if (modifier?.getChild('By')) return new Set(groupingLabels(modifier, expr));
  // without (...) drops the labels it names; no modifier at all drops every label.
  for (const label of modifier ? groupingLabels(modifier, expr) : [...labels]) labels.delete(label);
  return labels;
}

function functionLabels(node: Node, expr: string, catalogue: Catalogue): Set<string> {
  const args = callArguments(node);
  const quantile = node.getChild('FunctionIdentifier')?.getChild('HistogramQuantile');
  const vector = quantile ? args[1] : args.find((a) => !['NumberDurationLiteral', 'StringLiteral'].includes(a.name));
  const labels = vector ? outputLabels(vector, expr, catalogue) : new Set<string>();
  if (quantile) labels.delete('le');
  return labels;
}

/** How each kind of expression passes labels on (a binary operation: its left side's, as without group_right). */
const OUTPUT_LABELS: Readonly<Record<string, LabelRule>> = {
  PromQL: innerLabels,
  ParenExpr: innerLabels,
  MatrixSelector: innerLabels,
  SubqueryExpr: innerLabels,
  OffsetExpr: innerLabels,
  BinaryExpr: innerLabels,
  VectorSelector: (node, expr, catalogue) => labelsOf(selectorsIn(node, expr, catalogue)[0] ?? { node, metric: '', info: undefined }),
  AggregateExpr: aggregateLabels,
  FunctionCall: functionLabels,
};

/** The labels a query's result series carry (what a legend's {{label}} can show). */
function outputLabels(node: Node, expr: string, catalogue: Catalogue): Set<string> {
  return OUTPUT_LABELS[node.name]?.(node, expr, catalogue) ?? new Set();
}

function parseErrors(tree: ReturnType<typeof parser.parse>, expr: string): string[] {
  const problems: string[] = [];
  tree.iterate({
    enter: (n) => {
      if (n.type.isError) problems.push(`does not parse at ${n.from}: ${JSON.stringify(expr.slice(Math.max(0, n.from - 20), n.from + 20))}`);
    },
  });
  return [...new Set(problems)];
}

/**
 * Problems of one PromQL expression (variables already substituted) against what the operator
 * exports; empty when none. legendFormat's {{label}}s must be labels of the result.
 */
export function checkQuery(expr: string, catalogue: Catalogue, legendFormat?: string): string[] {
  const tree = parser.parse(expr);
  const errors = parseErrors(tree, expr);
  if (errors.length > 0) return errors;
  const root = tree.topNode;
  const unknown = checkSelectors(selectorsIn(root, expr, catalogue), expr, catalogue);
  if (unknown.length > 0) return unknown;
  const problems = [...checkGrouping(root, expr, catalogue), ...checkHistogramQuantiles(root, expr, catalogue)];
  if (problems.length === 0 && legendFormat !== undefined) {
    const labels = outputLabels(root, expr, catalogue);
    for (const match of legendFormat.matchAll(/\{\{\s*(\w+)\s*\}\}/g)) {
      const label = match[1] ?? '';
      if (!labels.has(label)) problems.push(`legend {{${label}}}: the result has no label ${label} (it has ${[...labels].sort().join(', ') || 'none'})`);
    }
  }
  return problems;
}

/** label_values(<selector>, <label>) of a query variable, checked like a panel query; other queries are reported. */
export function checkVariableQuery(query: string, catalogue: Catalogue): string[] {
  const match = /^label_values\((.+),\s*(\w+)\)$/.exec(query.trim());
  if (!match?.[1] || !match[2]) return [`${query}: only label_values(<selector>, <label>) is checked here`];
  const problems = checkQuery(match[1], catalogue);
  if (problems.length > 0) return problems;
  const labels = outputLabels(parser.parse(match[1]).topNode, match[1], catalogue);
  return labels.has(match[2]) ? [] : [`${query}: the series have no label ${match[2]}`];
}

export function variableQuery(variable: Variable): string {
  return typeof variable.query === 'string' ? variable.query : variable.query.query;
}
