/**
 * The one summarize(), as Flux's: from where a tenant stands, its summary conditions, Ready and
 * kstatus's abnormal-true pair (Reconciling while the operator works towards the spec, Stalled when
 * nothing changes until a human changes the input; each present only while True), and Suspended.
 * Every path derives them here (provisioning, hibernated, suspended, decommissioning, unserved, and a
 * multi-cluster hub's view of a tenant whose member stopped reporting):
 * nothing else in src/ sets Ready (src/status/summarize.test.ts checks that no other file does).
 */
import { PROVISIONING_CONDITIONS, type ProvisioningCondition } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import type { ConditionState } from './conditions.ts';

/** The reasons a tenant no running operator serves is reported with (src/controller/unserved-tenants.ts). */
export type UnservedReason = typeof Reason.OperatorShardAbsent | typeof Reason.OperatorOwnerAbsent | typeof Reason.OperatorVersionAbsent | typeof Reason.OperatorWaveAbsent;

/** Where a tenant stands, as far as its summary goes. */
export type Standing =
  /** The saga runs (or rests): Ready from the five; Stalled when a step waits for the user (`needsUser`: its reason). */
  | { readonly kind: 'provisioning'; readonly conditions: Readonly<Record<ProvisioningCondition, ConditionState>>; readonly needsUser?: Reason }
  /** Hibernated and at rest: as the spec asks. */
  | { readonly kind: 'hibernated' }
  /** spec.suspend: the operator changes nothing, so the stored Ready stays and nothing reconciles. */
  | { readonly kind: 'suspended'; readonly message: string }
  | { readonly kind: 'decommissioning'; readonly pending: readonly string[] }
  | { readonly kind: 'decommissioned'; readonly dataRetained: boolean }
  | { readonly kind: 'unserved'; readonly reason: UnservedReason; readonly message: string }
  /** Seen from a multi-cluster hub: the member holding the tenant stopped reporting, so what the hub has is its last report. */
  | { readonly kind: 'unreported'; readonly message: string }
  /** Seen from a multi-cluster hub: the member has not caught up with the work's generation yet (the engine applying it, or the member's operator observing it). */
  | { readonly kind: 'applying'; readonly message: string }
  /** Seen from a multi-cluster hub: the member's API server refused the tenant the engine applied there. */
  | { readonly kind: 'refused-by-member'; readonly message: string }
  /** Seen from a multi-cluster hub: the engine placed the tenant on no member. */
  | { readonly kind: 'unplaced'; readonly message: string };

/** The summary condition types; a summary without Ready keeps the stored one. */
export const SUMMARY_TYPES: ReadonlySet<string> = new Set(['Ready', 'Reconciling', 'Stalled', 'Suspended']);

const HIBERNATED_MESSAGE =
  'hibernated as asked (spec.lifecycle: Suspended), nothing is served: modules at zero replicas, Ingress withdrawn, NATS credentials refused, all data kept; set spec.lifecycle: Active to resume';

/** The summary conditions of a tenant standing where `standing` says. */
export function summarize(standing: Standing): Record<string, ConditionState> {
  switch (standing.kind) {
    case 'provisioning':
      return provisioningSummary(standing.conditions, standing.needsUser);
    case 'hibernated':
      // Ready True: kstatus reads Ready False as InProgress, so Flux's wait would never pass on a
      // hibernated tenant in Git. That nothing is served, the phase, reason and message say.
      return { Ready: { status: 'True', reason: Reason.Suspended, message: HIBERNATED_MESSAGE } };
    case 'suspended':
      return { Suspended: { status: 'True', reason: Reason.ReconciliationSuspended, message: standing.message } };
    case 'decommissioning':
      return withProgress({ status: 'False', reason: Reason.Decommissioning, message: `removing the tenant's resources; not removed yet: ${standing.pending.join('; ') || 'none'}` });
    case 'decommissioned':
      return { Ready: { status: 'True', reason: Reason.Decommissioned, message: decommissionedMessage(standing.dataRetained) } };
    case 'unserved': {
      const state: ConditionState = { status: 'False', reason: standing.reason, message: standing.message };
      return withProgress(state, { ...state, status: 'True' });
    }
    case 'unreported': {
      // Ready Unknown: nobody knows; Stalled: nothing changes until the member reports again.
      const state: ConditionState = { status: 'Unknown', reason: Reason.MemberNotReporting, message: standing.message };
      return { Ready: state, Stalled: { ...state, status: 'True' } };
    }
    case 'applying':
    case 'refused-by-member':
    case 'unplaced':
      return placedSummary(standing);
  }
}

/** A hub's word on a placed tenant: the member behind the work (Reconciling), or nowhere to be (Stalled). */
function placedSummary(standing: Extract<Standing, { kind: 'applying' | 'refused-by-member' | 'unplaced' }>): Record<string, ConditionState> {
  if (standing.kind === 'applying') return withProgress({ status: 'False', reason: Reason.MemberApplying, message: standing.message });
  const reason = standing.kind === 'unplaced' ? Reason.NoMemberMatches : Reason.MemberRefusedTenant;
  const state: ConditionState = { status: 'False', reason, message: standing.message };
  return withProgress(state, { ...state, status: 'True' });
}

function provisioningSummary(conditions: Readonly<Record<ProvisioningCondition, ConditionState>>, needsUser: Reason | undefined): Record<string, ConditionState> {
  const ready = readyOf(conditions);
  const stalled: ConditionState | undefined = needsUser === undefined ? undefined : { status: 'True', reason: needsUser, message: `needs a change by the user: ${ready.message}` };
  return withProgress(ready, stalled);
}

/** Where a rollout stands (src/rollout/decide.ts's last decision, as its controller records it). */
export type RolloutStanding =
  | { readonly kind: 'moving' | 'baking' | 'rollingBack' | 'paused' | 'succeeded' | 'rolledBack' | 'halted'; readonly message: string }
  | { readonly kind: 'stalled'; readonly reason: typeof Reason.TargetVersionAbsent | typeof Reason.RolloutOverlaps | typeof Reason.NothingToMove | typeof Reason.WaveEmpty; readonly message: string };

const ROLLOUT_REASONS = {
  moving: Reason.RolloutMoving,
  baking: Reason.RolloutBaking,
  rollingBack: Reason.RollingBack,
  paused: Reason.RolloutPaused,
  succeeded: Reason.RolloutSucceeded,
  rolledBack: Reason.RolledBack,
  halted: Reason.GateFailed,
} as const;

/**
 * A rollout's summary, with kstatus's meaning: Ready once it succeeded; Reconciling while it moves,
 * bakes or rolls back; Stalled when it ended short (rolled back, halted) or cannot start. Paused is
 * neither: Ready False, nothing in progress.
 */
export function summarizeRollout(standing: RolloutStanding): Record<string, ConditionState> {
  const reason = standing.kind === 'stalled' ? standing.reason : ROLLOUT_REASONS[standing.kind];
  const state: ConditionState = { status: 'False', reason, message: standing.message };
  switch (standing.kind) {
    case 'succeeded':
      return { Ready: { ...state, status: 'True' } };
    case 'paused':
      return { Ready: state };
    case 'rolledBack':
    case 'halted':
    case 'stalled':
      return withProgress(state, { ...state, status: 'True' });
    default:
      return { Ready: state, Reconciling: { ...state, status: 'True' } };
  }
}

/** Ready from the five: True when all are; else the first failing one's reason (or the first not True). */
function readyOf(conditions: Readonly<Record<ProvisioningCondition, ConditionState>>): ConditionState {
  const notTrue = PROVISIONING_CONDITIONS.filter((c) => conditions[c].status !== 'True');
  const first = notTrue[0];
  if (first === undefined) return { status: 'True', reason: Reason.Provisioned, message: 'all five conditions are True' };
  const failing = notTrue.find((c) => conditions[c].status === 'False');
  const shown = failing ?? first;
  return {
    status: failing ? 'False' : 'Unknown',
    reason: conditions[shown].reason,
    message: `${notTrue.join(', ')} not True; ${shown}: ${conditions[shown].message}`,
  };
}

/** Ready with kstatus's pair: Stalled when given, else Reconciling while Ready is not True. */
function withProgress(ready: ConditionState, stalled?: ConditionState): Record<string, ConditionState> {
  if (stalled) return { Ready: ready, Stalled: stalled };
  if (ready.status === 'True') return { Ready: ready };
  return { Ready: ready, Reconciling: { status: 'True', reason: Reason.Progressing, message: ready.message } };
}

function decommissionedMessage(dataRetained: boolean): string {
  return dataRetained
    ? 'everything the tenant owned is removed but its retained data (NATS account, disabled; streams; seed bucket); this object is kept'
    : 'everything the tenant owned is removed; this object is kept';
}
