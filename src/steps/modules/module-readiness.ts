/**
 * Whether a module's Deployment serves, and if not why, judged from what the controller-manager and
 * the kubelet report (conditions, rollout counters, pods' waiting reasons). Pure: the modules step,
 * the status's module summary (observed.ts) and the benchmarks (bench/) judge Ready the same way.
 */
import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import type { ModuleName } from '../../api/modules.ts';
import { Reason, ROLLOUT_PROGRESS } from '../../api/reasons.ts';

export type Problem = { reason: Reason; message: string };
type DeploymentCondition = NonNullable<NonNullable<V1Deployment['status']>['conditions']>[number];

/** The label helm's charts put on a module's objects: the release (= module) they belong to. */
const INSTANCE_LABEL = 'app.kubernetes.io/instance';

/** Pods the ReplicaSet could not create (a quota, a LimitRange, Pod Security) or a stalled rollout. */
function conditionProblem(name: string, conditions: readonly DeploymentCondition[]): Problem | undefined {
  const failure = conditions.find((c) => c.type === 'ReplicaFailure' && c.status === 'True');
  if (failure !== undefined) {
    const message = `${name}: ${failure.message ?? failure.reason ?? 'cannot create pods'}`;
    return { reason: message.includes('exceeded quota') ? Reason.QuotaExceeded : Reason.ReplicaFailure, message };
  }
  const progressing = conditions.find((c) => c.type === 'Progressing');
  if (progressing?.reason !== 'ProgressDeadlineExceeded') return undefined;
  return { reason: Reason.DeploymentStalled, message: `${name}: ${progressing.message ?? 'progress deadline exceeded'}` };
}

/** The controller has seen the current spec and every wanted replica runs the current template. */
function rolloutProblem(name: string, deployment: V1Deployment): Problem | undefined {
  const { metadata, spec, status } = deployment;
  if ((status?.observedGeneration ?? 0) < (metadata?.generation ?? 0)) {
    return { reason: Reason.DeploymentProgressing, message: `${name}: the new spec is not observed yet` };
  }
  const wanted = spec?.replicas ?? 1;
  const updated = status?.updatedReplicas ?? 0;
  if (updated < wanted) return { reason: Reason.DeploymentProgressing, message: `${name}: ${updated}/${wanted} replicas updated` };
  return oldReplicasProblem(name, status, updated);
}

/**
 * Old pods still serving while the new ones do not start (e.g. their image cannot be pulled): the
 * Deployment stays Available, yet the rollout has not finished.
 */
function oldReplicasProblem(name: string, status: V1Deployment['status'], updated: number): Problem | undefined {
  const total = status?.replicas ?? 0;
  if (total <= updated) return undefined;
  return { reason: Reason.DeploymentProgressing, message: `${name}: ${total - updated} old replica(s) still running, ${updated} updated` };
}

/** Why a release's Deployment is not serving yet, or undefined when it is. */
export function deploymentProblem(deployment: V1Deployment): Problem | undefined {
  const name = deployment.metadata?.name ?? '?';
  const conditions = deployment.status?.conditions ?? [];
  const problem = conditionProblem(name, conditions) ?? rolloutProblem(name, deployment);
  if (problem !== undefined) return problem;
  const available = conditions.find((c) => c.type === 'Available');
  if (available?.status === 'True') return undefined;
  return { reason: Reason.DeploymentUnavailable, message: `${name}: ${available?.message ?? 'not available yet'}` };
}

/** The release a module Deployment belongs to. */
export function instanceOf(deployment: V1Deployment): string | undefined {
  return deployment.metadata?.labels?.[INSTANCE_LABEL];
}

/** The kubelet's waiting reasons that mean "this image cannot be had" (not "still pulling"). */
const IMAGE_PULL_FAILURES = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull']);

/**
 * A pod of the module whose container (init containers included) waits on an image it cannot pull:
 * the Deployment only says "unavailable"; this says why, naming the image.
 */
export function imagePullProblem(name: string, pods: readonly V1Pod[]): Problem | undefined {
  for (const pod of pods) {
    const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
    const stuck = statuses.find((c) => IMAGE_PULL_FAILURES.has(c.state?.waiting?.reason ?? ''));
    if (stuck === undefined) continue;
    const waiting = stuck.state?.waiting;
    return { reason: Reason.ImagePullFailed, message: `${name}: image ${stuck.image} cannot be pulled (${waiting?.reason ?? ''}${waiting?.message ? `: ${waiting.message}` : ''})` };
  }
  return undefined;
}

/** Why the modules' Deployments are not serving yet (a missing one is the release's state: Drifted). */
export function deploymentProblems(deployments: readonly V1Deployment[], modules: readonly ModuleName[], pods: readonly V1Pod[]): Problem[] {
  const problems: Problem[] = [];
  for (const module of modules) {
    for (const deployment of deployments.filter((d) => instanceOf(d) === module)) {
      const problem = deploymentProblem(deployment);
      if (problem === undefined) continue;
      const ownPods = pods.filter((p) => p.metadata?.labels?.[INSTANCE_LABEL] === module);
      problems.push(problem.reason === Reason.QuotaExceeded ? problem : (imagePullProblem(problem.message.split(':')[0] ?? module, ownPods) ?? problem));
    }
  }
  // Quota first: it will not fix itself, and it is the message the tenant's owner needs.
  return problems.sort((a, b) => Number(b.reason === Reason.QuotaExceeded) - Number(a.reason === Reason.QuotaExceeded));
}

/**
 * What of a Deployment wakes the tenant waiting on it (the modules step's wakeOn): its spec changed
 * (generation), it became Available, it fails (a quota, a stalled rollout), and not each stage of a
 * rollout in between (Progressing, then Unavailable): the tenant waits through those either way, and
 * a pass for each would read and write for nothing.
 */
export function wakingState(deployment: V1Deployment): string {
  const reason = deploymentProblem(deployment)?.reason;
  const state = reason === undefined ? 'Available' : ROLLOUT_PROGRESS.has(reason) ? 'RollingOut' : reason;
  return JSON.stringify([deployment.metadata?.generation, state]);
}
