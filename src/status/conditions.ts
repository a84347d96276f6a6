/**
 * The condition table: where the saga stands (its view) turned into the five conditions the steps
 * report and the phase, and how a new set merges into the stored one. Ready and the other summary
 * conditions are summarize()'s alone (summarize.ts). Pure, so the whole table is tested as a table.
 */
import { Reason } from '../api/reasons.ts';
import {
  type ConditionStatus,
  type Phase,
  PROVISIONING_CONDITIONS,
  type ProvisioningCondition,
} from '../api/constants.ts';
import type { Condition } from '../api/evatenant.ts';
import type { StepProblem } from '../saga/provisioning-machine.ts';
import type { SagaView } from '../saga/view.ts';
import { conditionOf } from '../steps/registry.ts';
import { STEP_NAMES, type StepName } from '../steps/step.ts';

const stepsOf = (condition: ProvisioningCondition): StepName[] => STEP_NAMES.filter((step) => conditionOf(step) === condition);

const TRUE_REASON: Readonly<Record<ProvisioningCondition, [Reason, string]>> = {
  NamespaceReady: [Reason.NamespaceActive, 'namespace, quota, limit range and network policy are in place'],
  Provisioned: [Reason.TenantRecordStored, 'NATS account, credentials, streams and tenant record are in place'],
  SeedLoaded: [Reason.SeedApplied, 'seed data is applied'],
  ModulesDeployed: [Reason.ReleasesDeployed, 'every module release is deployed and available'],
  IngressReady: [Reason.IngressAdmitted, 'the tenant ingress routes to every module'],
};

export interface ConditionState {
  status: ConditionStatus;
  reason: Reason;
  message: string;
}

/** The saga is at rest with every step done (active), or checking for drift from there. */
export const atRest = (view: SagaView): boolean => view.stage === 'active' || view.stage === 'checking';

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
  const allTrue = atRest(view);
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
 * The five of a hibernated tenant (spec.lifecycle Suspended) at rest say how each part is kept;
 * before it rests, the five as for any tenant.
 */
export function hibernatedConditions(view: SagaView): Record<ProvisioningCondition, ConditionState> {
  const five = desiredConditions(view);
  if (!atRest(view)) return five;
  return {
    ...five,
    Provisioned: { status: 'True', reason: Reason.NatsCredentialsRefused, message: "NATS account, streams and tenant record are kept; the modules' credentials are refused" },
    ModulesDeployed: { status: 'True', reason: Reason.ScaledToZero, message: 'every module release is deployed with zero replicas' },
    IngressReady: { status: 'True', reason: Reason.IngressWithdrawn, message: 'the tenant Ingress is withdrawn: nothing is served' },
  };
}

/** The phase of a hibernated tenant: Suspended once at rest, as phaseOf while it gets there. */
export const hibernatedPhase = (view: SagaView): Phase => (atRest(view) ? 'Suspended' : phaseOf(view));
