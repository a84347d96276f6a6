/**
 * The gates a baked batch must pass, judged from what was observed (pure: reading the tenants, their
 * pods and Prometheus is the controller's). A gate that cannot be evaluated is Unknown, and Unknown
 * halts a rollout as Failed does: no gate ever passes by default.
 */
import type { GateResult, RolloutGates } from '../api/evarollout.ts';

/** One moved tenant as the gates see it. */
export interface TenantHealth {
  readonly name: string;
  /** Ready True, observedGeneration current, and owned by the target version. */
  readonly readyOnTarget: boolean;
  /** Container restarts of its module pods started since its move. */
  readonly podRestarts: number;
  readonly unreadyPods: number;
}

/** What a Prometheus query gave: one number, or why there is none. */
export type QueryAnswer = { readonly value: number } | { readonly error: string };

export const GATE_DEFAULTS = { readyTimeoutSeconds: 900, maxPodRestarts: 3, maxUnreadyPods: 0 } as const;
const NAMES_SHOWN = 50;

const listed = (names: readonly string[]): string[] => [...names].sort().slice(0, NAMES_SHOWN);

function perTenant(gate: string, batch: readonly TenantHealth[], failing: (t: TenantHealth) => boolean, what: string, limit: number): GateResult {
  const bad = batch.filter(failing).map((t) => t.name);
  if (bad.length === 0) return { gate, verdict: 'Passed', message: `every tenant at or below ${String(limit)} ${what}` };
  return { gate, verdict: 'Failed', message: `${String(bad.length)} of ${String(batch.length)} tenants above ${String(limit)} ${what}`, tenants: listed(bad) };
}

export function judgeQuery(gate: { readonly query: string; readonly max: number }, answer: QueryAnswer): GateResult {
  if ('error' in answer) return { gate: 'Prometheus', verdict: 'Unknown', message: `cannot evaluate ${gate.query}: ${answer.error}` };
  if (!Number.isFinite(answer.value)) return { gate: 'Prometheus', verdict: 'Unknown', message: `${gate.query} gave ${String(answer.value)}, not a number` };
  const verdict = answer.value > gate.max ? 'Failed' : 'Passed';
  return { gate: 'Prometheus', verdict, message: `${gate.query} = ${String(answer.value)} (max ${String(gate.max)})` };
}

/** Every gate of a baked batch; the Prometheus answer is given when the spec names a query. */
export function judgeBatch(batch: readonly TenantHealth[], gates: RolloutGates | undefined, answer?: QueryAnswer): GateResult[] {
  const maxRestarts = gates?.maxPodRestarts ?? GATE_DEFAULTS.maxPodRestarts;
  const maxUnready = gates?.maxUnreadyPods ?? GATE_DEFAULTS.maxUnreadyPods;
  const notReady = batch.filter((t) => !t.readyOnTarget).map((t) => t.name);
  const results: GateResult[] = [
    notReady.length === 0
      ? { gate: 'TenantsReady', verdict: 'Passed', message: `${String(batch.length)} tenants Ready on the target version` }
      : { gate: 'TenantsReady', verdict: 'Failed', message: `${String(notReady.length)} of ${String(batch.length)} tenants no longer Ready`, tenants: listed(notReady) },
    perTenant('PodRestarts', batch, (t) => t.podRestarts > maxRestarts, 'container restarts', maxRestarts),
    perTenant('PodsReady', batch, (t) => t.unreadyPods > maxUnready, 'module pods not Ready', maxUnready),
  ];
  if (gates?.prometheus !== undefined) results.push(judgeQuery(gates.prometheus, answer ?? { error: 'not asked' }));
  return results;
}

/** The batch passes only when every gate passed. */
export const passed = (results: readonly GateResult[]): boolean => results.every((r) => r.verdict === 'Passed');

/**
 * Before baking: the batch is Ready on the target (bake starts), still coming up, or past the ready
 * timeout (the TenantsReady gate fails with the laggards).
 */
export function readiness(batch: readonly TenantHealth[], secondsSinceMove: number, gates: RolloutGates | undefined): 'ready' | 'waiting' | GateResult {
  const notReady = batch.filter((t) => !t.readyOnTarget).map((t) => t.name);
  if (notReady.length === 0) return 'ready';
  const timeout = gates?.readyTimeoutSeconds ?? GATE_DEFAULTS.readyTimeoutSeconds;
  if (secondsSinceMove <= timeout) return 'waiting';
  return { gate: 'TenantsReady', verdict: 'Failed', message: `${String(notReady.length)} of ${String(batch.length)} tenants not Ready on the target version ${String(timeout)} s after the move`, tenants: listed(notReady) };
}
