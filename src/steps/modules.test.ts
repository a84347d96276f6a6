import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ImageCatalog } from '../adapters/images.ts';
import { DependencyError, InputError } from '../errors.ts';
import { chartFingerprint, chartPath, combineFailures, credentialsSecretName, type ModuleStepDeps } from './modules.ts';
import { renderGuardSettings } from '../config.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const DIGEST = 'c'.repeat(64);

const deps: Pick<ModuleStepDeps, 'images' | 'config'> = {
  images: ImageCatalog.parse(
    `ghcr.io/aidonow/orbit-crm:1.0.0@sha256:PLACEHOLDER\nghcr.io/aidonow/orbit-crm:1.1.0@sha256:${DIGEST}\nghcr.io/aidonow/orbit-itsm:1.0.0@sha256:PLACEHOLDER\n`,
  ),
  config: {
    chartBasePath: join(repoRoot, 'charts'),
    seedsBasePath: join(repoRoot, 'seeds'),
    helmSecretsDir: '/dev/shm',
    allowNonTmpfsSecrets: false,
    moduleOtelEndpoint: 'http://otel.eva-system:4318',
    renderGuard: renderGuardSettings(),
  },
};


describe('chart fingerprint', () => {
  it('names the chart version and changes when any chart file changes', () => {
    const copy = mkdtempSync(join(tmpdir(), 'eva-chart-'));
    try {
      cpSync(chartPath(deps.config.chartBasePath, 'orbit-crm'), copy, { recursive: true });
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

describe('failures of several modules', () => {
  it('surfaces an InputError first and names every module', () => {
    const err = combineFailures([
      { module: 'orbit-crm', error: new DependencyError('HelmFailed', 'api down') },
      { module: 'orbit-itsm', error: new InputError('ChartRenderFailed', 'bad value') },
    ]);
    expect(err).toBeInstanceOf(InputError);
    expect(err?.reason).toBe('ChartRenderFailed');
    expect(err?.message).toBe('orbit-crm: api down; orbit-itsm: bad value');
    expect(combineFailures([])).toBeUndefined();
    expect(combineFailures([{ module: 'x', error: new Error('plain') }])).toBeInstanceOf(DependencyError);
  });

  it('names the credentials Secret after the code', () => {
    expect(credentialsSecretName('ACMECO')).toBe('eva-acmeco-credentials');
  });
});
