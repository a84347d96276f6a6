/**
 * The decommission saga: every step's `remove` is attempted in this order even when an earlier one
 * failed (a NATS outage must not hold back the helm uninstall), then every step verifies that its
 * resources are gone. Only when all are gone may the finalizer come off: zero residue.
 */
import { STEPS, type OperatorDeps } from '../steps/registry.ts';
import type { StepName, TenantScope } from '../steps/step.ts';

export const DECOMMISSION_ORDER: readonly StepName[] = ['ingress', 'modules', 'seed', 'streams', 'record', 'alerts', 'quotas', 'namespace'];

export const REMOVED = 'Removed';

export interface DecommissionResult {
  /** Per step: REMOVED, or why not yet. */
  states: Record<string, string>;
  complete: boolean;
}

function describe(err: unknown): string {
  const reason = err instanceof Error && 'reason' in err && typeof err.reason === 'string' ? err.reason : 'RemoveFailed';
  return `${reason}: ${err instanceof Error ? err.message : 'unknown error'}`;
}

async function removeStep(step: StepName, scope: TenantScope, deps: OperatorDeps): Promise<string | undefined> {
  try {
    await STEPS[step].remove(scope, deps);
    return undefined;
  } catch (err) {
    scope.log.warn({ step, err }, 'decommission step failed; continuing with the next');
    return describe(err);
  }
}

async function verifyStep(step: StepName, scope: TenantScope, deps: OperatorDeps): Promise<string> {
  try {
    const verdict = await STEPS[step].verifyRemoved(scope, deps);
    return verdict.ready ? REMOVED : `${verdict.reason}: ${verdict.message}`;
  } catch (err) {
    return describe(err);
  }
}

/** Steps named in `skip` (forced past by a cluster operator) count as removed without checking. */
export async function decommission(scope: TenantScope, deps: OperatorDeps, skip: ReadonlySet<StepName> = new Set()): Promise<DecommissionResult> {
  const failures = new Map<StepName, string>();
  for (const step of DECOMMISSION_ORDER) {
    if (skip.has(step)) continue;
    const failure = await removeStep(step, scope, deps);
    if (failure) failures.set(step, failure);
  }
  const states: Record<string, string> = {};
  for (const step of DECOMMISSION_ORDER) {
    if (skip.has(step)) states[step] = `${REMOVED} (forced)`;
    else {
      const verified = await verifyStep(step, scope, deps);
      states[step] = verified === REMOVED ? REMOVED : (failures.get(step) ?? verified);
    }
  }
  const complete = Object.values(states).every((s) => s.startsWith(REMOVED));
  return { states, complete };
}
