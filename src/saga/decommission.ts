/**
 * The decommission saga: every step's `remove` is attempted in this order even when an earlier one
 * failed (a NATS outage must not hold back the helm uninstall), then every step verifies that its
 * resources are gone. Only when all are gone may the finalizer come off: zero residue.
 */
import { LABELS } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import { problemOf } from '../errors.ts';
import { retainedAccount } from '../steps/account.ts';
import { retainedSeed } from '../steps/seed/seed.ts';
import { retainedStreams } from '../steps/streams.ts';
import { type OperatorDeps, STEP_DESCRIPTORS, stepOf } from '../steps/registry.ts';
import { STEP_NAMES, type Step, type StepName } from '../steps/step.ts';
import { retainsData, type TenantScope } from '../tenancy/scope.ts';

/** The steps with something of their own to remove, in their descriptors' decommission order. */
export const DECOMMISSION_ORDER: readonly StepName[] = STEP_NAMES.flatMap((name) => {
  const part = STEP_DESCRIPTORS[name].decommission;
  return part === null ? [] : [{ name, order: part.order }];
})
  .sort((a, b) => a.order - b.order)
  .map(({ name }) => name);

const REMOVED = 'Removed';
/** The state of a step whose data spec.dataRetention Retain keeps: as final as Removed. */
const RETAINED = 'Retained';

type Removal = Pick<Step<OperatorDeps>, 'remove' | 'verifyRemoved'>;
/**
 * With spec.dataRetention Retain, what these steps do instead of removing: streams and seed bucket
 * stay, marked retained, the account stays on NATS disabled (its modules' user refused) with its keys,
 * marked retained (what a restore must find). Everything else (record, releases, namespace...) goes
 * as with Delete.
 */
const RETAINING: Partial<Record<StepName, Removal>> = { seed: retainedSeed, streams: retainedStreams, account: retainedAccount };

const removalOf = (step: StepName, scope: TenantScope): Removal => (retainsData(scope) ? (RETAINING[step] ?? stepOf(step)) : stepOf(step));
const doneState = (step: StepName, scope: TenantScope): string => (retainsData(scope) && RETAINING[step] !== undefined ? RETAINED : REMOVED);

/**
 * Steps named in the force annotation (their verification is skipped, their remove still runs);
 * unknown names are returned apart so they can be reported.
 */
export function forcedSteps(annotation: string | undefined): { steps: Set<StepName>; unknown: string[] } {
  const names = (annotation ?? '').split(',').map((n) => n.trim()).filter(Boolean);
  if (names.includes('all')) return { steps: new Set(DECOMMISSION_ORDER), unknown: [] };
  const known = new Set<string>(DECOMMISSION_ORDER);
  return {
    steps: new Set(names.filter((n): n is StepName => known.has(n))),
    unknown: names.filter((n) => !known.has(n)),
  };
}

/** What the remove of a forced step reported when it did not fail. */
export const FORCED_REMOVE_RAN = 'remove ran';

export interface DecommissionResult {
  /** Per step: REMOVED, or why not yet. */
  states: Record<string, string>;
  complete: boolean;
  /** Per forced step that ran: what its remove reported (FORCED_REMOVE_RAN, or its failure). */
  forced: Record<string, string>;
  /** The code's namespace belongs to another EvaTenant: its steps were left alone (nothing there was this tenant's). */
  namespaceOfAnother: boolean;
}

function describe(err: unknown): string {
  const { reason, message } = problemOf(err, Reason.RemoveFailed);
  return `${reason}: ${message}`;
}

async function removeStep(step: StepName, scope: TenantScope, deps: OperatorDeps): Promise<string | undefined> {
  try {
    await removalOf(step, scope).remove(scope, deps);
    return undefined;
  } catch (err) {
    scope.log.warn({ step, err }, 'decommission step failed; continuing with the next');
    return describe(err);
  }
}

async function verifyStep(step: StepName, scope: TenantScope, deps: OperatorDeps): Promise<string> {
  try {
    const verdict = await removalOf(step, scope).verifyRemoved(scope, deps);
    return verdict.ready ? doneState(step, scope) : `${verdict.reason}: ${verdict.message}`;
  } catch (err) {
    return describe(err);
  }
}

/** Steps whose objects live in the tenant namespace under fixed names (StepDescriptor.decommission). */
const inTenantNamespace = (step: StepName): boolean => STEP_DESCRIPTORS[step].decommission?.inTenantNamespace === true;

/**
 * The state of the in-namespace steps when they must not run, or undefined when the namespace is this
 * tenant's (or gone). A namespace of another tenant (a second EvaTenant asked for a capsule code in
 * use) or of nobody we know never let this tenant past the namespace step: nothing in it is ours, and
 * removing by name would delete the owner's objects.
 */
async function foreignNamespaceState(scope: TenantScope, deps: OperatorDeps): Promise<string | undefined> {
  try {
    const ns = await deps.reads.get('Namespace', '', scope.namespace);
    if (ns === undefined || ns.metadata?.labels?.[LABELS.tenantUid] === scope.tenant.metadata.uid) return undefined;
    return `${REMOVED} (namespace ${scope.namespace} is not this tenant's; left untouched)`;
  } catch (err) {
    return describe(err);
  }
}

/**
 * Steps in `forced` (forced past by a platform administrator) still run their remove, once per pass
 * and best effort; only their verification is skipped, and what the remove reported is returned.
 */
export async function decommission(scope: TenantScope, deps: OperatorDeps, forced: ReadonlySet<StepName> = new Set()): Promise<DecommissionResult> {
  const foreign = await foreignNamespaceState(scope, deps);
  const leftAlone = (step: StepName): string | undefined => (inTenantNamespace(step) ? foreign : undefined);
  const failures = new Map<StepName, string>();
  for (const step of DECOMMISSION_ORDER) {
    if (leftAlone(step) !== undefined) continue;
    const failure = await removeStep(step, scope, deps);
    if (failure) failures.set(step, failure);
  }
  const states: Record<string, string> = {};
  const reports: Record<string, string> = {};
  for (const step of DECOMMISSION_ORDER) {
    const alone = leftAlone(step);
    if (alone !== undefined) states[step] = alone;
    else if (forced.has(step)) {
      reports[step] = failures.get(step) ?? FORCED_REMOVE_RAN;
      states[step] = `${doneState(step, scope)} (forced; ${reports[step]})`;
    } else {
      const verified = await verifyStep(step, scope, deps);
      states[step] = verified === doneState(step, scope) ? verified : (failures.get(step) ?? verified);
    }
  }
  const complete = Object.values(states).every((s) => s.startsWith(REMOVED) || s.startsWith(RETAINED));
  return { states, complete, forced: reports, namespaceOfAnother: foreign !== undefined && foreign.startsWith(REMOVED) };
}
