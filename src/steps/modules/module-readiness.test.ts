import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { deploymentProblem, imagePullProblem, wakingState } from './module-readiness.ts';

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

  it('wakes its tenant when it turns Available, fails or changes, not at each stage of a rollout', () => {
    const progressing = wakingState(deployment({ observedGeneration: 1, updatedReplicas: 0, conditions: [] }));
    const unavailable = wakingState(deployment({ observedGeneration: 1, updatedReplicas: 1, conditions: [{ type: 'Available', status: 'False' }] }));
    const ready = wakingState(deployment({ observedGeneration: 1, updatedReplicas: 1, conditions: [available] }));
    const stalled = wakingState(deployment({ observedGeneration: 1, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] }));
    const changed = wakingState(deployment({ observedGeneration: 1, updatedReplicas: 1, conditions: [available] }, 2));
    expect(unavailable, 'Progressing -> Unavailable is one rollout').toBe(progressing);
    expect(new Set([progressing, ready, stalled, changed]).size, 'Available, stalled and a new generation each wake').toBe(4);
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
