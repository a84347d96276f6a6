import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DependencyError } from '../errors.ts';
import { ChartCatalog, chartFingerprint, chartPath } from './charts.ts';

const CHARTS = fileURLToPath(new URL('../../charts', import.meta.url));

describe('chart fingerprint', () => {
  it('names the chart version and changes when any chart file changes', () => {
    const copy = mkdtempSync(join(tmpdir(), 'eva-chart-'));
    try {
      cpSync(chartPath(CHARTS, 'orbit-crm'), copy, { recursive: true });
      const before = chartFingerprint(copy);
      expect(before).toMatch(/^1\.0\.0\+[a-f0-9]{16}$/);
      expect(chartFingerprint(copy)).toBe(before);
      writeFileSync(join(copy, 'templates', 'service.yaml'), '{{- include "eva-module-lib.service" . }}\n# changed\n');
      expect(chartFingerprint(copy)).not.toBe(before);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('reports a missing chart as the operator’s problem', () => {
    expect(() => chartFingerprint('/nonexistent/chart')).toThrow(DependencyError);
  });
});

describe('chart catalogue', () => {
  it('holds every module chart with its path and fingerprint', () => {
    const catalog = ChartCatalog.load(CHARTS);
    expect(catalog.chart('orbit-crm')).toEqual({ path: chartPath(CHARTS, 'orbit-crm'), fingerprint: chartFingerprint(chartPath(CHARTS, 'orbit-crm')) });
    expect(catalog.chart('eva-forge').fingerprint).toMatch(/^\d+\.\d+\.\d+\+[a-f0-9]{16}$/);
  });

  it('reports a missing chart as the operator’s problem when a module asks for it', () => {
    const catalog = ChartCatalog.load('/nonexistent/charts');
    expect(() => catalog.chart('orbit-crm')).toThrow(expect.objectContaining({ reason: 'ChartMissing' }) as Error);
    expect(() => catalog.chart('orbit-crm')).toThrow(DependencyError);
  });

  it('fingerprints a chart again once its files changed under a running operator, and only that chart', async () => {
    const copy = mkdtempSync(join(tmpdir(), 'eva-charts-'));
    cpSync(join(CHARTS, 'modules'), join(copy, 'modules'), { recursive: true });
    const catalog = ChartCatalog.load(copy).watch();
    try {
      const [crm, itsm] = [catalog.chart('orbit-crm').fingerprint, catalog.chart('orbit-itsm').fingerprint];
      expect(catalog.chart('orbit-crm').fingerprint, 'positive control: unchanged until a file changes').toBe(crm);
      writeFileSync(join(copy, 'modules', 'orbit-crm', 'templates', 'zz-added.yaml'), '# added\n');
      await expect.poll(() => catalog.chart('orbit-crm').fingerprint, { timeout: 5_000 }).not.toBe(crm);
      expect(catalog.chart('orbit-crm').fingerprint).toBe(chartFingerprint(join(copy, 'modules', 'orbit-crm')));
      expect(catalog.chart('orbit-itsm').fingerprint).toBe(itsm);
    } finally {
      catalog.close();
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('without a watch (no modules folder when it started) fingerprints on every use, so a chart that appears later is found', () => {
    const base = mkdtempSync(join(tmpdir(), 'eva-charts-'));
    const catalog = ChartCatalog.load(base).watch();
    try {
      expect(() => catalog.chart('orbit-crm')).toThrow(expect.objectContaining({ reason: 'ChartMissing' }) as Error);
      cpSync(join(CHARTS, 'modules'), join(base, 'modules'), { recursive: true });
      expect(catalog.chart('orbit-crm').fingerprint).toBe(chartFingerprint(chartPath(CHARTS, 'orbit-crm')));
    } finally {
      catalog.close();
      rmSync(base, { recursive: true, force: true });
    }
  });
});
