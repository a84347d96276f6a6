/**
 * Status is derived, never set piecemeal: one pure function turns where the saga stands into the
 * five conditions, Ready (summarised from the five, as Flux's summarize() does) and the phase.
 * Kept apart from I/O so the whole decision table is tested as a table.
 */
import { Reason } from '../api/reasons.ts';
import {
  type ConditionStatus,
  type Phase,
  PROVISIONING_CONDITIONS,
  type ProvisioningCondition,
} from '../api/constants.ts';
import type { Condition } from '../api/evatenant.ts';
import { STEP_DESCRIPTORS } from '../steps/registry.ts';
import { STEP_NAMES, type StepName } from '../steps/step.ts';
import type { StepProblem } from './machine.ts';

/** The condition a step reports, from its descriptor. */
export const conditionOf = (step: StepName): ProvisioningCondition => STEP_DESCRIPTORS[step].condition;

const stepsOf = (condition: ProvisioningCondition): StepName[] => STEP_NAMES.filter((step) => conditionOf(step) === condition);

const TRUE_REASON: Readonly<Record<ProvisioningCondition, [Reason, string]>> = {
  NamespaceReady: [Reason.NamespaceActive, 'namespace, quota, limit range and network policy are in place'],
  Provisioned: [Reason.TenantRecordStored, 'NATS account, credentials, streams and tenant record are in place'],
  SeedLoaded: [Reason.SeedApplied, 'seed data is applied'],
  ModulesDeployed: [Reason.ReleasesDeployed, 'every module release is deployed and available'],
  IngressReady: [Reason.IngressAdmitted, 'the tenant ingress routes to every module'],
};

export type SagaStage = 'requested' | 'provisioning' | 'waiting' | 'failed' | 'interrupted' | 'active' | 'checking' | 'degraded';

/** Where the saga stands, as read from its snapshot. */
export interface SagaView {
  stage: SagaStage;
  /** The step running now (provisioning), or the one a shutdown stopped the saga before (interrupted). */
  currentStep?: StepName;
  problem?: StepProblem;
  wasActive: boolean;
  /** A spec change is being applied (as opposed to drift being repaired). */
  updating?: boolean;
}

export interface ConditionState {
  status: ConditionStatus;
  reason: Reason;
  message: string;
}

const conditionIndex = (c: ProvisioningCondition): number => PROVISIONING_CONDITIONS.indexOf(c);

function trueState(condition: ProvisioningCondition): ConditionState {
  const [reason, message] = TRUE_REASON[condition];
  return { status: 'True', reason, message };
}

function problemState(problem: StepProblem): ConditionState {
  return { status: 'False', reason: problem.reason, message: `${problem.step}: ${problem.message}` };
}

/** The condition group the saga is working on (or stuck at), if any. */
function focusOf(view: SagaView): { condition: ProvisioningCondition; state: ConditionState } | undefined {
  if (view.problem && view.stage !== 'active' && view.stage !== 'checking') {
    return { condition: conditionOf(view.problem.step), state: problemState(view.problem) };
  }
  if (view.stage === 'provisioning' && view.currentStep) {
    const condition = conditionOf(view.currentStep);
    // Written once per condition (not per step): the message names the condition's steps.
    return { condition, state: { status: 'Unknown', reason: Reason.Progressing, message: `running steps ${stepsOf(condition).join(', ')}` } };
  }
  // A graceful stop between two steps: what is done stays True, the next step is not started yet.
  if (view.stage === 'interrupted' && view.currentStep) {
    const condition = conditionOf(view.currentStep);
    return { condition, state: { status: 'Unknown', reason: Reason.Interrupted, message: `the operator stopped before step ${view.currentStep}; it resumes there` } };
  }
  return undefined;
}

export function desiredConditions(view: SagaView): Record<ProvisioningCondition, ConditionState> {
  const pending: ConditionState = { status: 'Unknown', reason: Reason.Pending, message: 'waiting for earlier steps' };
  const focus = focusOf(view);
  const allTrue = view.stage === 'active' || view.stage === 'checking';
  const result = {} as Record<ProvisioningCondition, ConditionState>;
  for (const condition of PROVISIONING_CONDITIONS) {
    if (allTrue) result[condition] = trueState(condition);
    else if (focus?.condition === condition) result[condition] = focus.state;
    // A tenant that was Active keeps its other conditions True while one is repaired.
    else if (view.wasActive) result[condition] = trueState(condition);
    else if (focus && conditionIndex(condition) < conditionIndex(focus.condition)) result[condition] = trueState(condition);
    else result[condition] = pending;
  }
  return result;
}

export function readyState(conditions: Record<ProvisioningCondition, ConditionState>): ConditionState {
  const notTrue = PROVISIONING_CONDITIONS.filter((c) => conditions[c].status !== 'True');
  if (notTrue.length === 0) return { status: 'True', reason: Reason.Provisioned, message: 'all five conditions are True' };
  const first = notTrue[0] as ProvisioningCondition;
  const failing = notTrue.find((c) => conditions[c].status === 'False');
  const shown = failing ?? first;
  return {
    status: failing ? 'False' : 'Unknown',
    reason: conditions[shown].reason,
    message: `${notTrue.join(', ')} not True; ${shown}: ${conditions[shown].message}`,
  };
}

export function phaseOf(view: SagaView): Phase {
  switch (view.stage) {
    case 'requested':
      return 'Requested';
    case 'active':
    case 'checking':
      return 'Active';
    case 'degraded':
      return 'Degraded';
    default:
      // Applying a change the user asked for is progress, not degradation, until a step fails.
      if (view.wasActive && view.updating && view.stage !== 'failed') return 'Provisioning';
      if (view.wasActive) return 'Degraded';
      // A tenant waiting for its user stays Failed while the operator retries (no flicker).
      return view.problem?.needsUser ? 'Failed' : 'Provisioning';
  }
}

/**
 * Merges desired condition states into the previous list, keeping lastTransitionTime when the
 * status did not change (Kubernetes condition conventions).
 */
export function mergeConditions(
  previous: readonly Condition[],
  desired: Readonly<Record<string, ConditionState>>,
  now: string,
  generation: number | undefined,
): Condition[] {
  return Object.entries(desired).map(([type, state]) => {
    const before = previous.find((c) => c.type === type);
    const condition: Condition = {
      type,
      status: state.status,
      reason: state.reason,
      message: state.message.slice(0, 32_000),
      lastTransitionTime: before?.status === state.status ? before.lastTransitionTime : now,
    };
    if (generation !== undefined) condition.observedGeneration = generation;
    return condition;
  });
}

/**
 * kstatus's abnormal-true conditions (Flux's summarize keeps them the same way: present only while
 * True). Stalled: nothing changes until a human changes the input, which kstatus reports as Failed.
 * Reconciling: the operator is still working towards the spec (kstatus InProgress).
 */
export function progressConditions(ready: ConditionState, stalled: ConditionState | undefined): Record<string, ConditionState> {
  if (stalled) return { Stalled: stalled };
  if (ready.status === 'True') return {};
  return { Reconciling: { status: 'True', reason: Reason.Progressing, message: ready.message } };
}

function stalledOf(view: SagaView, ready: ConditionState): ConditionState | undefined {
  const settled = view.stage === 'active' || view.stage === 'checking';
  if (settled || !view.problem?.needsUser) return undefined;
  return { status: 'True', reason: view.problem.reason, message: `needs a change by the user: ${ready.message}` };
}

export function allConditions(view: SagaView): Record<string, ConditionState> {
  const five = desiredConditions(view);
  const ready = readyState(five);
  return { ...five, Ready: ready, ...progressConditions(ready, stalledOf(view, ready)) };
}

const atRest = (view: SagaView): boolean => view.stage === 'active' || view.stage === 'checking';

/**
 * A hibernated tenant (spec.lifecycle Suspended) at rest: the conditions say how each part is kept,
 * and Ready is True with reason Suspended: the tenant is as its spec asks (like a Decommissioned one),
 * and kstatus reads Ready False as InProgress, so Flux's wait would never pass on a hibernated tenant
 * in Git. That nothing is served says the phase, the reason and the message. Before it rests, as
 * allConditions.
 */
export function hibernatedConditions(view: SagaView): Record<string, ConditionState> {
  const all = allConditions(view);
  if (!atRest(view)) return all;
  return {
    ...all,
    Provisioned: { status: 'True', reason: Reason.NatsCredentialsRefused, message: "NATS account, streams and tenant record are kept; the modules' credentials are refused" },
    ModulesDeployed: { status: 'True', reason: Reason.ScaledToZero, message: 'every module release is deployed with zero replicas' },
    IngressReady: { status: 'True', reason: Reason.IngressWithdrawn, message: 'the tenant Ingress is withdrawn: nothing is served' },
    Ready: {
      status: 'True',
      reason: Reason.Suspended,
      message: 'hibernated as asked (spec.lifecycle: Suspended), nothing is served: modules at zero replicas, Ingress withdrawn, NATS credentials refused, all data kept; set spec.lifecycle: Active to resume',
    },
  };
}

/** The phase of a hibernated tenant: Suspended once at rest, as phaseOf while it gets there. */
export const hibernatedPhase = (view: SagaView): Phase => (atRest(view) ? 'Suspended' : phaseOf(view));
