/**
 * A value is data: every module chart rendered with hostile strings in every leaf of its values.
 * Each render either yields exactly the chart's own four objects (kinds, names, no namespace but the
 * release's) or is refused by helm's values.schema.json check; nothing else passes. A positive
 * control renders the probe-path attack through the OLD unquoted template line and sees the
 * extra ConfigMap in kube-system, so this test can fail.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { MODULES } from '../../src/api/modules.ts';
import { HOSTILE, PROBE_ATTACK } from '../support/hostile-charts.ts';
import { chartsDir, type ConfigMap, type Deployment, helm, type HelmResult, parseManifest, type Secret, template } from '../support/chart-render.ts';

const SCHEMA_REFUSAL = "values don't meet the specifications of the schema";
const NAMESPACE = 'tenant-test';
const scratch = mkdtempSync(join(tmpdir(), 'eva-hostile-'));
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

type Path = (string | number)[];

/** Every leaf (scalar or empty collection) of a values tree, as a path. */
function leaves(value: unknown, path: Path = []): Path[] {
  if (Array.isArray(value)) return value.length === 0 ? [path] : value.flatMap((v, i) => leaves(v, [...path, i]));
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    return entries.length === 0 ? [path] : entries.flatMap(([k, v]) => leaves(v, [...path, k]));
  }
  return [path];
}

function setAt(root: Record<string, unknown>, path: Path, leaf: unknown): Record<string, unknown> {
  const copy = structuredClone(root);
  let node: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  const last = path.at(-1);
  if (last === undefined) throw new Error('empty path');
  node[last] = leaf;
  return copy;
}

function chartValues(module: string): Record<string, unknown> {
  const values = parse(readFileSync(join(chartsDir, module, 'values.yaml'), 'utf8')) as Record<string, unknown>;
  return { ...values, tenant: { code: 'ABCDEF', tier: 'Starter' } };
}

type Outcome = 'rendered' | 'refused';

/** What a safe render looks like: the four objects of the module, in the release namespace. */
function judge(module: string, result: HelmResult): Outcome {
  if (result.code !== 0) {
    expect(result.stderr).toContain(SCHEMA_REFUSAL);
    return 'refused';
  }
  const objects = parseManifest(result.stdout);
  const names = objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
  expect(names).toEqual([`ConfigMap/${module}-config`, `Deployment/${module}`, `Secret/${module}-credentials`, `Service/${module}`]);
  for (const object of objects) expect([undefined, NAMESPACE]).toContain((object.metadata as { namespace?: string }).namespace);
  return 'rendered';
}

async function inBatches<T, R>(items: readonly T[], size: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(run))));
  return out;
}

describe('module charts treat values as data', () => {
  const started = Date.now();
  const counts = { rendered: 0, refused: 0 };
  afterAll(() => {
    console.info(`[hostile-values] ${counts.rendered} renders safe, ${counts.refused} refused by values.schema.json, ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  it.each(MODULES)('%s: a hostile string in every leaf, one leaf at a time, renders only its own objects or is refused', async (module) => {
    const base = chartValues(module);
    const cases = leaves(base).flatMap((path) => HOSTILE.map((hostile) => ({ path, hostile })));
    const outcomes = await inBatches(cases, 4, async ({ path, hostile }) => judge(module, await template(module, setAt(base, path, hostile))));
    const rendered = outcomes.filter((o) => o === 'rendered').length;
    counts.rendered += rendered;
    counts.refused += outcomes.length - rendered;
    // config is free-form data: every hostile string there must render (the render path is exercised).
    expect(rendered).toBeGreaterThanOrEqual(leaves(base['config']).length * HOSTILE.length);
  }, 600_000);

  it.each(MODULES)('%s: hostile strings in every config leaf and key at once render as data', async (module) => {
    const base = chartValues(module);
    for (const hostile of HOSTILE) {
      let values = base;
      for (const path of leaves(base['config'])) values = setAt(values, ['config', ...path], hostile);
      values = setAt(values, ['config', hostile], hostile);
      const result = await template(module, values);
      expect(judge(module, result)).toBe('rendered');
      const configMap = parseManifest(result.stdout).find((o): o is ConfigMap => o.kind === 'ConfigMap');
      expect((parse(configMap?.data?.['config.yaml'] ?? '') as { config: Record<string, unknown> }).config[hostile]).toBe(hostile);
    }
  }, 300_000);
});

describe('module charts treat secretConfig as data', () => {
  it.each(MODULES)('%s: hostile strings in every secretConfig leaf and key at once render as data, into the Secret only', async (module) => {
    const base = chartValues(module);
    for (const hostile of HOSTILE) {
      // The shape of the chart's own config, every leaf and one key hostile.
      let secretConfig = structuredClone(base['config']) as Record<string, unknown>;
      for (const path of leaves(secretConfig)) secretConfig = setAt(secretConfig, path, hostile);
      secretConfig = setAt(secretConfig, [hostile], hostile);
      const result = await template(module, { ...base, secretConfig });
      expect(judge(module, result)).toBe('rendered');
      const objects = parseManifest(result.stdout);
      const secret = objects.find((o): o is Secret => o.kind === 'Secret');
      expect(parse(Buffer.from(secret?.data?.['secret-config.yaml'] ?? '', 'base64').toString())).toEqual(secretConfig);
      const configMap = objects.find((o): o is ConfigMap => o.kind === 'ConfigMap');
      expect(JSON.stringify(parse(configMap?.data?.['config.yaml'] ?? ''))).not.toContain(JSON.stringify(hostile));
    }
  }, 300_000);
});

describe('the issue’s probe-path attack', () => {
  it('is refused by values.schema.json', async () => {
    const result = await template('orbit-crm', { tenant: { code: 'ABCDEF' }, probes: { livenessPath: PROBE_ATTACK } });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(SCHEMA_REFUSAL);
    expect(result.stderr).toContain('/probes/livenessPath');
  });

  it('renders as data even without the schema (the quoting alone holds)', async () => {
    const chart = join(scratch, 'orbit-crm');
    cpSync(join(chartsDir, 'orbit-crm'), chart, { recursive: true });
    rmSync(join(chart, 'values.schema.json'));
    const file = join(scratch, 'attack.yaml');
    writeFileSync(file, stringify({ tenant: { code: 'ABCDEF' }, probes: { livenessPath: PROBE_ATTACK } }));
    const result = await helm(['template', 'orbit-crm', chart, '--namespace', NAMESPACE, '-f', file]);
    expect(judge('orbit-crm', result)).toBe('rendered');
    const deployment = parseManifest(result.stdout).find((o): o is Deployment => o.kind === 'Deployment');
    expect(deployment?.spec?.template.spec?.containers[0]?.livenessProbe?.httpGet?.path).toBe(PROBE_ATTACK);
  });

  it('positive control: the same attack through the old unquoted template line creates a ConfigMap in kube-system', async () => {
    const chart = join(scratch, 'old-unquoted');
    mkdirSync(join(chart, 'templates'), { recursive: true });
    writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: old-unquoted\nversion: 0.0.1\n');
    // The probe lines of _deployment.tpl before this change, in a minimal Deployment.
    writeFileSync(join(chart, 'templates', 'deployment.yaml'), [
      'apiVersion: apps/v1', 'kind: Deployment', 'metadata:', '  name: old', 'spec:', '  template:', '    spec:', '      containers:',
      '        - name: app', '          livenessProbe:', '            httpGet:',
      '              path: {{ dig "livenessPath" "/livez" (.Values.probes | default dict) }}', '              port: http', '',
    ].join('\n'));
    const file = join(scratch, 'old-attack.yaml');
    writeFileSync(file, stringify({ probes: { livenessPath: PROBE_ATTACK } }));
    const result = await helm(['template', 'old', chart, '-f', file]);
    expect(result.code).toBe(0);
    const injected = parseManifest(result.stdout).filter((o) => o.kind === 'ConfigMap');
    expect(injected.map((o) => `${(o.metadata as { namespace?: string }).namespace}/${o.metadata.name}`)).toEqual(['kube-system/pwned']);
  });
});
