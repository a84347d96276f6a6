import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

const minimal = { OPERATOR_VERSION: '1.0.0', NATS_URL: 'nats://127.0.0.1:4222' };

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('loadConfig', () => {
  it('applies documented defaults', () => {
    const config = loadConfig(minimal);
    expect(config).toMatchObject({
      operatorVersion: '1.0.0',
      helmSecretsDir: '/run/helm-secrets',
      metricsPort: 8080,
      driftIntervalSeconds: 300,
      maxWave: 3,
      allowNonTmpfsSecrets: false,
    });
    expect(config.chartBasePath).toMatch(/charts$/);
  });

  it('reports every bad variable at once, by name', () => {
    const found = problems({ OPERATOR_VERSION: 'latest', NATS_URL: 'nats://u:p@h:4222', METRICS_PORT: '70000', RECONCILE_CONCURRENCY: 'x', HELM_SECRETS_ALLOW_NON_TMPFS: 'maybe' });
    expect(found.map((p) => p.split(' ')[0])).toEqual(['OPERATOR_VERSION', 'NATS_URL', 'HELM_SECRETS_ALLOW_NON_TMPFS', 'METRICS_PORT', 'RECONCILE_CONCURRENCY']);
  });

  it('requires OPERATOR_VERSION and NATS_URL', () => {
    expect(problems({})).toEqual([
      'OPERATOR_VERSION is required (the semver of this operator build, e.g. 1.0.0)',
      'NATS_URL is required (e.g. nats://nats.eva-system:4222)',
    ]);
  });

  it('keeps NATS credentials out of the URL', () => {
    const config = loadConfig({ ...minimal, NATS_USER: 'op', NATS_PASSWORD: 'pw' });
    expect(config.nats).toEqual({ url: 'nats://127.0.0.1:4222', user: 'op', password: 'pw' });
  });
});
