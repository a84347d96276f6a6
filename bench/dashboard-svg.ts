/**
 * Draws the Grafana dashboard's panels from Prometheus query results into one SVG laid out like the
 * dashboard's grid (rows, panel widths and heights, titles, axes, legends, Grafana's colours). Each
 * panel is a vega-lite chart rendered by vega to SVG; this module only places them on the grid.
 * Used by bench/render-dashboard.ts.
 */
import { parse, View } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import type { Dashboard, Panel } from '../test/support/dashboard.ts';

/** One series of one query: its legend name and its samples (null where Prometheus has none, or NaN). */
export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [timeMs: number, value: number | null])[];
}

export interface PanelData {
  readonly panel: Panel;
  /** Every target's series, in target order. */
  readonly series: readonly Series[];
  /** The query step (Grafana's $__interval): a longer gap between samples breaks the line. */
  readonly stepMs: number;
}

export interface Layout {
  readonly startMs: number;
  readonly endMs: number;
  /** Lines under the dashboard title: what was measured, when, with what. */
  readonly subtitle: readonly string[];
  readonly widthPx?: number;
}

const COLUMN_PX_DEFAULT = 1560 / 24;
const ROW_PX = 34;
const GAP_PX = 8;
const FONT = 'Inter, Helvetica, Arial, sans-serif';

/** Grafana's named colours (light theme) and its classic palette, in order. */
const NAMED: Readonly<Record<string, string>> = {
  green: '#56A64B',
  red: '#E02F44',
  orange: '#FF780A',
  yellow: '#E0B400',
  blue: '#3274D9',
  purple: '#A352CC',
  text: '#6E6E6E',
};
const PALETTE = ['#7EB26D', '#EAB839', '#6ED0E0', '#EF843C', '#E24D42', '#1F78C1', '#BA43A6', '#705DA0', '#508642', '#CCA300', '#447EBC', '#C15C17', '#890F02', '#0A437C', '#6D1F62', '#584477'];

function colour(name: string): string {
  return NAMED[name] ?? name;
}

/** Series name -> colour: the panel's byName / byFrameRefID overrides first, then the classic palette. */
function colours(panel: Panel, names: readonly string[]): string[] {
  const fixed = new Map<string, string>();
  for (const override of panel.fieldConfig?.overrides ?? []) {
    const value = override.properties.find((p) => p.id === 'color')?.value as { fixedColor?: string } | undefined;
    if (value?.fixedColor === undefined) continue;
    if (override.matcher.id === 'byName') fixed.set(override.matcher.options, colour(value.fixedColor));
    if (override.matcher.id === 'byFrameRefID') for (const n of names) fixed.set(n, colour(value.fixedColor));
  }
  let next = 0;
  return names.map((n) => fixed.get(n) ?? PALETTE[next++ % PALETTE.length] ?? '#888');
}

/** Series names in the order of the colour overrides (e.g. phases in lifecycle order), the rest by name. */
function overrideRank(panel: Panel): (name: string) => number {
  const order = (panel.fieldConfig?.overrides ?? []).filter((o) => o.matcher.id === 'byName').map((o) => o.matcher.options);
  return (name) => (order.includes(name) ? order.indexOf(name) : order.length);
}

function ordered(panel: Panel, names: Iterable<string>): string[] {
  const rank = overrideRank(panel);
  return [...new Set(names)].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b, 'en', { numeric: true }));
}

/** A value as Grafana shows it for the panel's unit (s, ops, none/short). */
export function formatValue(value: number, unit: string | undefined, decimals?: number): string {
  if (unit === 's') {
    if (value === 0) return '0 s';
    if (value < 1) return `${(value * 1000).toFixed(0)} ms`;
    if (value < 60) return `${value.toFixed(decimals ?? (value < 10 ? 2 : 1))} s`;
    return `${(value / 60).toFixed(1)} min`;
  }
  const text = decimals !== undefined ? value.toFixed(decimals) : String(Number(value.toPrecision(3)));
  return unit === 'ops' ? `${text} ops/s` : text;
}

/** The same formatting as a vega expression, for axis labels. */
function axisLabelExpr(unit: string | undefined): string {
  if (unit === 's') return "datum.value == 0 ? '0' : datum.value < 1 ? format(datum.value * 1000, '.0f') + ' ms' : datum.value < 60 ? format(datum.value, '.3~r') + ' s' : format(datum.value / 60, '.2~r') + ' min'";
  if (unit === 'ops') return "format(datum.value, '.2~r') + ' ops/s'";
  return "format(datum.value, '~s')";
}

const TITLE = { anchor: 'start', fontSize: 13, fontWeight: 600, font: FONT, color: '#24292E', offset: 6 } as const;
const CONFIG = {
  font: FONT,
  view: { stroke: null },
  axis: { labelFont: FONT, labelColor: '#52545C', labelFontSize: 10, gridColor: '#E6E6E6', domainColor: '#BDBDBD', tickColor: '#BDBDBD', title: null },
  legend: { labelFont: FONT, labelFontSize: 10, labelColor: '#24292E', symbolSize: 60, symbolType: 'stroke', symbolStrokeWidth: 3, orient: 'bottom', direction: 'horizontal', title: null, labelLimit: 220, columnPadding: 12 },
} as const;

/** What every panel's spec shares: its size inside the grid cell, its title and the Grafana-like look. */
interface Frame {
  width: number;
  height: number;
  autosize: { type: 'fit'; contains: 'padding' };
  title: typeof TITLE & { text: string };
  config: typeof CONFIG;
}

function frame(panel: Panel, width: number, height: number): Frame {
  return { width, height, autosize: { type: 'fit', contains: 'padding' }, title: { text: panel.title, ...TITLE }, config: CONFIG };
}

function noData(panel: Panel, width: number, height: number): TopLevelSpec {
  return {
    ...frame(panel, width, height),
    data: { values: [{ text: 'No data' }] },
    mark: { type: 'text', fontSize: 16, color: '#8E8E8E', font: FONT },
    encoding: { text: { field: 'text' } },
  };
}

interface Row {
  t: number;
  value: number | null;
  series: string;
  isolated: boolean;
}

/**
 * Rows for a line chart: a null where the series has no sample for more than 1.5 steps (Grafana breaks
 * the line there, as with spanNulls off), and `isolated` for samples with no neighbour (drawn as points).
 */
function timeRows(series: readonly Series[], stepMs: number): Row[] {
  const rows: Row[] = [];
  for (const s of series) {
    const points = s.points.filter((p): p is readonly [number, number] => p[1] !== null);
    points.forEach(([t, value], i) => {
      const before = points[i - 1];
      const after = points[i + 1];
      const joinedBefore = before !== undefined && t - before[0] <= 1.5 * stepMs;
      const joinedAfter = after !== undefined && after[0] - t <= 1.5 * stepMs;
      if (before !== undefined && !joinedBefore) rows.push({ t: before[0] + stepMs, value: null, series: s.name, isolated: false });
      rows.push({ t, value, series: s.name, isolated: !joinedBefore && !joinedAfter });
    });
  }
  return rows;
}

/** The value axis: labels in the panel's unit; whole numbers only when the panel shows no decimals. */
function valueAxis(panel: Panel): { labelExpr: string; tickCount: number; tickMinStep?: number } {
  const { unit, decimals } = panel.fieldConfig?.defaults ?? {};
  return { labelExpr: axisLabelExpr(unit), tickCount: 5, ...(decimals === 0 ? { tickMinStep: 1 } : {}) };
}

function timeseries(data: PanelData, layout: Layout, width: number, height: number): TopLevelSpec {
  const { panel } = data;
  const stacked = panel.fieldConfig?.defaults.custom?.stacking?.mode === 'normal';
  const names = ordered(panel, data.series.map((s) => s.name));
  const everyPoint = panel.fieldConfig?.defaults.custom?.showPoints === 'always';
  // Seconds on the time axis for a short range (as Grafana does).
  const timeFormat = layout.endMs - layout.startMs <= 15 * 60_000 ? '%H:%M:%S' : '%H:%M';
  return {
    ...frame(panel, width, height),
    data: { values: timeRows(data.series, data.stepMs) },
    encoding: {
      x: { field: 't', type: 'temporal', scale: { domain: [layout.startMs, layout.endMs] }, axis: { format: timeFormat, tickCount: Math.max(2, Math.floor(width / 110)), grid: false } },
      y: { field: 'value', type: 'quantitative', stack: stacked ? 'zero' : null, axis: valueAxis(panel), scale: { zero: true } },
      color: { field: 'series', type: 'nominal', sort: names, scale: { domain: names, range: colours(panel, names) }, legend: { columns: Math.max(1, Math.floor(width / 230)), labelLimit: 210 } },
    },
    layer: stacked
      ? [{ mark: { type: 'area', opacity: 0.3, line: { strokeWidth: 1.2 }, interpolate: 'linear' } }]
      : [
          { mark: { type: 'line', strokeWidth: 1.4, interpolate: 'linear' } },
          // Grafana draws a point where a sample has no neighbour, and at every sample with showPoints "always".
          { transform: [{ filter: everyPoint ? 'datum.value != null' : 'datum.isolated' }], mark: { type: 'point', filled: true, size: 14, opacity: 1 } },
        ],
  };
}

/** The value a bar gauge or stat shows: the last sample (reduceOptions lastNotNull). */
function lastValue(series: Series): number | undefined {
  const present = series.points.filter((p) => p[1] !== null);
  return present.at(-1)?.[1] ?? undefined;
}

function bargauge(data: PanelData, width: number, height: number): TopLevelSpec {
  const { panel } = data;
  const { unit, decimals } = panel.fieldConfig?.defaults ?? {};
  // Every series in target order (p50s, then p95s; by name within a target), each with the value it shows.
  const bars = data.series.flatMap((s) => {
    const value = lastValue(s);
    return value === undefined ? [] : [{ name: s.name, value, label: formatValue(value, unit, decimals) }];
  });
  // Named series (e.g. phases) in the order of the colour overrides; the others stay in target order.
  const rank = overrideRank(panel);
  bars.sort((a, b) => rank(a.name) - rank(b.name));
  const names = bars.map((b) => b.name);
  const max = Math.max(0, ...bars.map((b) => b.value));
  return {
    ...frame(panel, width, height),
    data: { values: bars },
    encoding: {
      y: { field: 'name', type: 'nominal', sort: names, axis: { title: null, labelFontSize: 11, labelColor: '#24292E', ticks: false, domain: false, labelLimit: 160 } },
      x: { field: 'value', type: 'quantitative', scale: { domain: [0, max > 0 ? max * 1.3 : 1] }, axis: null },
    },
    layer: [
      { mark: { type: 'bar', cornerRadius: 2, height: { band: 0.72 } }, encoding: { color: { field: 'name', type: 'nominal', scale: { domain: names, range: colours(panel, names) }, legend: null } } },
      { mark: { type: 'text', align: 'left', dx: 5, fontSize: 12, fontWeight: 600, color: '#24292E' }, encoding: { text: { field: 'label' } } },
    ],
  };
}

function stat(data: PanelData, width: number, height: number): TopLevelSpec {
  const { panel } = data;
  const { unit, decimals } = panel.fieldConfig?.defaults ?? {};
  const first = data.series[0];
  const value = first ? lastValue(first) : undefined;
  if (value === undefined) return noData(panel, width, height);
  // The colour of the highest threshold step the value reaches (the first step has no value: the base).
  const steps = panel.fieldConfig?.defaults.thresholds?.steps ?? [];
  const reached = steps.filter((step) => step.value === null || value >= step.value).at(-1);
  const background = colour(reached?.color ?? 'green');
  return {
    ...frame(panel, width, height),
    data: { values: [{ label: formatValue(value, unit, decimals) }] },
    layer: [
      { mark: { type: 'rect', color: background, cornerRadius: 2 }, encoding: { x: { value: 0 }, x2: { value: width }, y: { value: 0 }, y2: { value: height } } },
      { mark: { type: 'text', fontSize: 44, fontWeight: 600, color: '#FFFFFF', font: FONT, align: 'center', baseline: 'middle' }, encoding: { text: { field: 'label' }, x: { value: width / 2 }, y: { value: height / 2 } } },
    ],
  };
}

function panelSpec(data: PanelData, layout: Layout, width: number, height: number): TopLevelSpec {
  if (data.panel.type !== 'stat' && data.series.every((s) => s.points.every((p) => p[1] === null))) return noData(data.panel, width, height);
  if (data.panel.type === 'timeseries') return timeseries(data, layout, width, height);
  if (data.panel.type === 'bargauge') return bargauge(data, width, height);
  if (data.panel.type === 'stat') return stat(data, width, height);
  throw new Error(`panel type ${data.panel.type} (${data.panel.title}) is not drawn`);
}

async function toSvg(spec: TopLevelSpec): Promise<string> {
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c] ?? c);
}

/** The whole dashboard: a title, row headings, and each panel's vega SVG placed at its grid position. */
export async function dashboardSvg(dashboard: Dashboard, panels: readonly PanelData[], layout: Layout): Promise<string> {
  const column = (layout.widthPx ?? COLUMN_PX_DEFAULT * 24) / 24;
  const headerPx = 40 + 16 * layout.subtitle.length;
  const yOf = (gridY: number): number => headerPx + gridY * ROW_PX;
  const parts: string[] = [];
  for (const row of dashboard.panels.filter((p) => p.type === 'row')) {
    parts.push(`<text x="${GAP_PX}" y="${yOf(row.gridPos.y) + ROW_PX * 0.7}" font-family="${FONT}" font-size="15" font-weight="600" fill="#24292E">${escapeXml(row.title)}</text>`);
  }
  for (const data of panels) {
    const { x, y, w, h } = data.panel.gridPos;
    const [left, top, width, height] = [x * column + GAP_PX / 2, yOf(y) + GAP_PX / 2, w * column - GAP_PX, h * ROW_PX - GAP_PX];
    parts.push(`<rect x="${left}" y="${top}" width="${width}" height="${height}" rx="3" fill="#FFFFFF" stroke="#D8D9DA"/>`);
    const svg = await toSvg(panelSpec(data, layout, Math.floor(width - 2), Math.floor(height - 2)));
    // vega's root <svg> becomes a nested one, positioned at the panel's place on the grid.
    parts.push(svg.replace(/^<svg /, `<svg x="${left + 1}" y="${top + 1}" `));
  }
  const bottom = Math.max(...dashboard.panels.map((p) => p.gridPos.y + p.gridPos.h));
  const [totalWidth, totalHeight] = [column * 24, yOf(bottom) + GAP_PX];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" version="1.1" width="${totalWidth}" height="${totalHeight}" viewBox="0 0 ${totalWidth} ${totalHeight}">`,
    `<rect width="${totalWidth}" height="${totalHeight}" fill="#F4F5F5"/>`,
    `<text x="${GAP_PX}" y="24" font-family="${FONT}" font-size="20" font-weight="600" fill="#24292E">${escapeXml(dashboard.title)}</text>`,
    ...layout.subtitle.map((line, i) => `<text x="${GAP_PX}" y="${44 + 16 * i}" font-family="${FONT}" font-size="12" fill="#52545C">${escapeXml(line)}</text>`),
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
