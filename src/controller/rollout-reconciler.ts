/**
 * One pass of a rollout, kube-rs style: observe (tenants from the informer's cache, the Leases, the
 * batch's module pods, Prometheus when a baked batch is judged), decide (src/rollout/decide.ts), act
 * on the one decision (pin a batch, or return one), write the status (src/status/rollout-status.ts)
 * and an Event when something happened. Everything it touches goes through `RolloutPorts`, so the
 * pass is tested with an in-memory world; the API's ports are in operator wiring.
 */
import type { V1Lease, V1Pod } from '@kubernetes/client-node';
import { canonicalJson } from '../canonical-json.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import type { EvaRollout, EvaRolloutStatus } from '../api/evarollout.ts';
import { Reason } from '../api/reasons.ts';
import { decide, needsQuery, type RolloutAction, type RolloutWorld } from '../rollout/decide.ts';
import type { QueryAnswer } from '../rollout/gates.ts';
import { podFigures } from '../rollout/observed.ts';
import { batchTenants, type FleetTenant, inScope, skipped } from '../rollout/plan.ts';
import { counts, statusAfter } from '../rollout/record.ts';
import { fleetTenant, movePatch, returnPatch } from '../rollout/tenants.ts';
import { rolloutStanding, rolloutStatus } from '../status/rollout-status.ts';
import { tenantNamespace } from '../tenancy/names.ts';
import { isLeaseOfVersion } from './lease-names.ts';
import type { RolloutMetricsSink } from './metrics-sink.ts';
import { presentLeases } from './unserved-tenants.ts';

export interface RolloutPorts {
  /** Every EvaTenant and EvaRollout, as the informers' caches hold them. */
  tenants(): readonly EvaTenant[];
  rollouts(): readonly EvaRollout[];
  leases(): Promise<V1Lease[]>;
  modulePods(namespace: string): Promise<V1Pod[]>;
  ask(url: string, query: string): Promise<QueryAnswer>;
  /** A merge patch guarded by the resourceVersion it carries: a tenant changed meanwhile fails it (409). */
  patchTenant(name: string, patch: object): Promise<void>;
  writeStatus(rollout: EvaRollout, status: EvaRolloutStatus): Promise<void>;
  recordEvent(rollout: EvaRollout, type: 'Normal' | 'Warning', reason: Reason, message: string): Promise<void>;
  now(): number;
  /** Where each rollout stands and the gate verdicts (eva_rollout_*), when metrics are kept. */
  metrics?: RolloutMetricsSink;
}

const TERMINAL = new Set(['Succeeded', 'RolledBack']);
/** After a move, look again soon: the tenants' own events wake the controller sooner. */
const AFTER_MOVE_SECONDS = 5;

/** The first other rollout still in progress that reaches some of the same tenants not yet moved by this one. */
function overlapping(rollout: EvaRollout, others: readonly EvaRollout[], fleet: readonly FleetTenant[]): string | undefined {
  const mine = fleet.filter((t) => inScope(t, rollout.spec, rollout.metadata.name) && t.moved?.rollout !== rollout.metadata.name);
  const earlier = others.filter(
    (o) => o.metadata.name !== rollout.metadata.name && !TERMINAL.has(o.status?.phase ?? 'Pending') && (o.metadata.creationTimestamp ?? '') <= (rollout.metadata.creationTimestamp ?? ''),
  );
  return earlier.find((o) => mine.some((t) => inScope(t, o.spec, o.metadata.name)))?.metadata.name;
}

async function podsOfBatch(rollout: EvaRollout, tenants: readonly EvaTenant[], fleet: readonly FleetTenant[], ports: RolloutPorts): Promise<RolloutWorld['pods']> {
  const { phase, batch, movedAt } = rollout.status ?? {};
  if ((phase !== 'Moving' && phase !== 'Baking') || batch === undefined || movedAt === undefined) return new Map();
  const names = new Set(batchTenants(fleet, rollout.metadata.name, batch).map((t) => t.name));
  const figures = await Promise.all(
    tenants.filter((t) => names.has(t.metadata.name)).map(async (t) => [t.metadata.name, podFigures(await ports.modulePods(tenantNamespace(t.spec.capsuleCode)), new Date(movedAt))] as const),
  );
  return new Map(figures);
}

async function observe(rollout: EvaRollout, ports: RolloutPorts): Promise<{ world: RolloutWorld; tenants: readonly EvaTenant[] }> {
  const tenants = ports.tenants();
  const fleet = tenants.map(fleetTenant);
  const now = ports.now();
  const status = rollout.status ?? {};
  const live = presentLeases(await ports.leases(), now);
  const gate = rollout.spec.gates?.prometheus;
  const answer = gate !== undefined && needsQuery(rollout.spec, status, now) ? await ports.ask(gate.url, gate.query) : undefined;
  const world: RolloutWorld = {
    name: rollout.metadata.name,
    spec: rollout.spec,
    status,
    fleet,
    pods: await podsOfBatch(rollout, tenants, fleet, ports),
    targetRuns: [...live.keys()].some((lease) => isLeaseOfVersion(lease, rollout.spec.targetVersion)),
    overlapping: overlapping(rollout, ports.rollouts(), fleet),
    answer,
    now,
  };
  return { world, tenants };
}

/** Pins the batch: each tenant by its own guarded patch (a 409 fails the pass, which runs again on fresh reads). */
async function act(action: RolloutAction, rollout: EvaRollout, tenants: readonly EvaTenant[], ports: RolloutPorts): Promise<void> {
  if (action.kind !== 'move' && action.kind !== 'return') return;
  const byName = new Map(tenants.map((t) => [t.metadata.name, t]));
  for (const name of action.batch.tenants) {
    const tenant = byName.get(name);
    if (tenant === undefined) continue; // deleted meanwhile: nothing to move
    const patch = action.kind === 'move' ? movePatch(tenant, rollout.metadata.name, rollout.spec.targetVersion, action.batch) : returnPatch(tenant, action.to.get(name) ?? '');
    await ports.patchTenant(name, patch);
  }
}

function eventOf(action: RolloutAction): { type: 'Normal' | 'Warning'; reason: Reason; message: string } | undefined {
  switch (action.kind) {
    case 'move':
      return { type: 'Normal', reason: Reason.RolloutMoving, message: `wave ${String(action.batch.wave)} batch ${String(action.batch.batch)}: moving ${action.batch.tenants.join(', ')}` };
    case 'return':
      return { type: 'Warning', reason: Reason.RollingBack, message: `returning batch ${String(action.batch.batch)}: ${action.batch.tenants.join(', ')}` };
    case 'halt':
      return { type: 'Warning', reason: Reason.GateFailed, message: action.gates.filter((g) => g.verdict !== 'Passed').map((g) => `${g.gate} ${g.verdict}: ${g.message}`).join('; ') };
    case 'succeeded':
      return { type: 'Normal', reason: Reason.RolloutSucceeded, message: 'every tenant of the plan is on the target version' };
    case 'rolledBack':
      return { type: 'Warning', reason: Reason.RolledBack, message: 'every moved tenant is back on its earlier version' };
    default:
      return undefined;
  }
}

const messageOf = (action: RolloutAction): string => ('message' in action ? action.message : (eventOf(action)?.message ?? action.kind));

/** The status a pass leaves: where it stands after `action`, its counts (this pass's own move included) and its summary. */
function statusOf(rollout: EvaRollout, world: RolloutWorld, action: RolloutAction): EvaRolloutStatus {
  const at = new Date(world.now);
  const before = counts(world.fleet, rollout.spec, rollout.metadata.name);
  const change = action.kind === 'move' ? action.batch.tenants.length : action.kind === 'return' ? -action.batch.tenants.length : 0;
  const left = skipped(world.fleet, rollout.spec, rollout.metadata.name).slice(0, 50);
  const recorded = { ...statusAfter(action, world.status, at.toISOString()), total: before.total, moved: before.moved + change, ...(left.length > 0 || world.status.skipped !== undefined ? { skipped: left } : {}) };
  const decided = {
    stalled: action.kind === 'stall' ? { kind: 'stalled' as const, reason: Reason[action.reason], message: action.message } : undefined,
    paused: action.kind === 'wait' && action.reason === 'Paused',
  };
  return rolloutStatus(rollout, recorded, rolloutStanding(recorded, decided, messageOf(action)), at);
}

/** When to look again (seconds), or undefined to wait for an event. */
function requeueAfter(action: RolloutAction): number | undefined {
  if (action.kind === 'wait') return action.seconds > 0 ? action.seconds : undefined;
  return action.kind === 'stall' ? 30 : AFTER_MOVE_SECONDS;
}

/**
 * The rollout's gauges, and the verdicts its pass reached: counted once the status is stored, so a
 * pass that fails before (and judges again when retried) does not count them twice.
 */
function record(metrics: RolloutMetricsSink | undefined, name: string, status: EvaRolloutStatus, judged: RolloutAction['judged'] = []): void {
  if (metrics === undefined) return;
  metrics.setRolloutProgress(name, status.phase ?? 'Pending', status.moved ?? 0);
  for (const { gate, verdict } of judged) metrics.countGateResult(name, gate, verdict);
}

/**
 * An ended rollout moves nothing more, but a spec edited since is acknowledged (observedGeneration,
 * so kstatus and Argo CD see the ending, not a change in progress), and an operator that took over
 * the rollouts since still reports where it ended.
 */
async function acknowledgeEnded(rollout: EvaRollout, ports: RolloutPorts): Promise<void> {
  const status = rollout.status ?? {};
  if (rollout.metadata.generation !== undefined && status.observedGeneration !== rollout.metadata.generation) {
    const ended = rolloutStatus(rollout, status, rolloutStanding(status, {}, `rollout ${status.phase ?? ''}; later spec changes are not acted on`), new Date(ports.now()));
    await ports.writeStatus(rollout, ended);
  }
  record(ports.metrics, rollout.metadata.name, status);
}

/** One pass; returns when to look again (seconds), or undefined to wait for an event. */
export async function reconcileRollout(rollout: EvaRollout, ports: RolloutPorts): Promise<number | undefined> {
  if (TERMINAL.has(rollout.status?.phase ?? 'Pending')) {
    await acknowledgeEnded(rollout, ports);
    return undefined;
  }
  const { world, tenants } = await observe(rollout, ports);
  const action = decide(world);
  await act(action, rollout, tenants, ports);
  const status = statusOf(rollout, world, action);
  if (canonicalJson(rollout.status ?? {}) !== canonicalJson(status)) await ports.writeStatus(rollout, status);
  record(ports.metrics, rollout.metadata.name, status, action.judged);
  const event = eventOf(action);
  if (event !== undefined) await ports.recordEvent(rollout, event.type, event.reason, event.message);
  return requeueAfter(action);
}
