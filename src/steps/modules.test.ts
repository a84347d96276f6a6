import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ImageCatalog } from '../adapters/images.ts';
import { DependencyError, InputError } from '../errors.ts';
import { VALUES_HASH_LABEL } from './release-state.ts';
import {
  chartFingerprint,
  chartPath,
  combineFailures,
  credentialsSecretName,
  deploymentProblem,
  imagePullProblem,
  type ModuleStepDeps,
  releaseProblems,
  undesiredReleases,
} from './modules.ts';
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
    leaseNamespace: 'default',
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

function deployment(status: V1Deployment['status'], generation = 1, replicas = 1): V1Deployment {
  const d: V1Deployment = { metadata: { name: 'orbit-crm', generation }, spec: { replicas, selector: {}, template: {} }, status };
  return d;
}

describe('deployment readiness', () => {
  const available = { type: 'Available', status: 'True' };

  it('is ready when available, current and fully updated', () => {
    expect(deploymentProblem(deployment({ observedGeneration: 1, updatedReplicas: 1, conditions: [available] }))).toBeUndefined();
  });

  it('names a quota that keeps pods from being created', () => {
    const failure = {
      type: 'ReplicaFailure',
      status: 'True',
      reason: 'FailedCreate',
      message: 'pods "orbit-crm-5d-x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1',
    };
    expect(deploymentProblem(deployment({ observedGeneration: 1, updatedReplicas: 1, conditions: [available, failure] }, 1, 3))).toEqual({
      reason: 'QuotaExceeded',
      message: `orbit-crm: ${failure.message}`,
    });
  });

  it.each([
    ['an unobserved spec', deployment({ observedGeneration: 1, updatedReplicas: 1, conditions: [available] }, 2), 'DeploymentProgressing'],
    ['a rollout under way', deployment({ observedGeneration: 1, updatedReplicas: 1, conditions: [available] }, 1, 2), 'DeploymentProgressing'],
    ['old pods still serving a stuck rollout', deployment({ observedGeneration: 1, replicas: 2, updatedReplicas: 1, conditions: [available] }), 'DeploymentProgressing'],
    ['no availability', deployment({ observedGeneration: 1, updatedReplicas: 1, conditions: [{ type: 'Available', status: 'False' }] }), 'DeploymentUnavailable'],
    ['a stalled rollout', deployment({ observedGeneration: 1, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] }), 'DeploymentStalled'],
    ['another pod failure', deployment({ observedGeneration: 1, conditions: [{ type: 'ReplicaFailure', status: 'True', message: 'violates PodSecurity' }] }), 'ReplicaFailure'],
  ])('is not ready with %s', (_what, d, reason) => {
    expect(deploymentProblem(d)?.reason).toBe(reason);
  });
});

describe('image pull failures', () => {
  const pod = (waiting: { reason: string; message?: string } | undefined, init = false): V1Pod => {
    const statuses = [{ name: 'c', image: 'r:5000/aidonow/eva-forge:9.9.9', imageID: '', ready: false, restartCount: 0, ...(waiting ? { state: { waiting } } : {}) }];
    return { status: init ? { initContainerStatuses: statuses } : { containerStatuses: statuses } };
  };

  it.each([
    ['ErrImagePull', false],
    ['ImagePullBackOff', true],
    ['InvalidImageName', false],
  ])('names the image a pod cannot pull (%s, init container: %s)', (reason, init) => {
    expect(imagePullProblem('eva-forge', [pod(undefined), pod({ reason, message: 'not found' }, init)])).toEqual({
      reason: 'ImagePullFailed',
      message: `eva-forge: image r:5000/aidonow/eva-forge:9.9.9 cannot be pulled (${reason}: not found)`,
    });
  });

  it('says nothing of a pod still pulling or starting', () => {
    expect(imagePullProblem('eva-forge', [pod({ reason: 'ContainerCreating' }), pod(undefined)])).toBeUndefined();
  });
});

describe('release checks', () => {
  const ours = { 'app.kubernetes.io/managed-by': 'eva-operator' };
  const desired = new Map([['orbit-crm', 'h1'], ['orbit-itsm', 'h2']] as const);

  it('accepts deployed releases with the desired hashes', () => {
    const releases = [
      { name: 'orbit-crm', version: 1, status: 'deployed', labels: { ...ours, [VALUES_HASH_LABEL]: 'h1' } },
      { name: 'orbit-itsm', version: 4, status: 'deployed', labels: { ...ours, [VALUES_HASH_LABEL]: 'h2' } },
      { name: 'someone-elses', version: 1, status: 'deployed', labels: {} },
    ];
    expect(releaseProblems(desired, releases, new Set(['orbit-crm', 'orbit-itsm']))).toEqual([]);
  });

  it('reports missing, unsettled, outdated and undesired releases', () => {
    const releases = [
      { name: 'orbit-crm', version: 2, status: 'pending-upgrade', labels: { ...ours, [VALUES_HASH_LABEL]: 'h1' } },
      { name: 'eva-shell', version: 1, status: 'deployed', labels: ours },
    ];
    expect(releaseProblems(desired, releases, new Set(['orbit-crm'])).map((p) => p.reason)).toEqual(['ReleaseNotDeployed', 'ReleaseMissing', 'UndesiredRelease']);
    const outdated = [{ name: 'orbit-crm', version: 1, status: 'deployed', labels: { ...ours, [VALUES_HASH_LABEL]: 'old' } }];
    expect(releaseProblems(new Map([['orbit-crm', 'h1']]), outdated, new Set(['orbit-crm']))[0]?.reason).toBe('ReleaseOutdated');
  });

  it('only calls the operator’s own module releases undesired', () => {
    const releases = [
      { name: 'eva-shell', version: 1, status: 'deployed', labels: ours },
      { name: 'eva-shell-x', version: 1, status: 'deployed', labels: ours },
      { name: 'eva-forge', version: 1, status: 'deployed', labels: {} },
    ];
    expect(undesiredReleases(new Set(['orbit-crm']), releases).map((r) => r.name)).toEqual(['eva-shell']);
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
