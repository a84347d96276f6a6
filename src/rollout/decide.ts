/**
 * One rollout pass, decided from what was observed (Flux's observe -> decide): pure, so every
 * branch is a table test, and the controller only observes, acts on the one action and writes the
 * status. The rollout's status says where it stands (phase, the batch in flight, when it moved and
 * when it was Ready); the tenants' annotations say what moved (plan.ts).
 */
import type { EvaRolloutSpec, EvaRolloutStatus, GateResult, RolloutPhase } from '../api/evarollout.ts';
import { batchTenants, type Batch, type FleetTenant, latestBatch, nextBatch, nextReturn, progress } from './plan.ts';
import { judgeBatch, passed, type QueryAnswer, readiness, type TenantHealth } from './gates.ts';

export interface RolloutWorld {
  readonly name: string;
  readonly spec: EvaRolloutSpec;
  readonly status: EvaRolloutStatus;
  readonly fleet: readonly FleetTenant[];
  /** Pod figures of the batch in flight, by tenant name (restarts since its move, pods not Ready). */
  readonly pods: ReadonlyMap<string, { readonly restarts: number; readonly unready: number }>;
  /** Whether an operator of the target version leads (its Lease is held and fresh). */
  readonly targetRuns: boolean;
  /** Another rollout in progress whose tenants overlap this one's, if any. */
  readonly overlapping: string | undefined;
  /** The Prometheus answer, when the spec names a query and the batch is baked. */
  readonly answer: QueryAnswer | undefined;
  readonly now: number;
}

export type RolloutAction = (
  | { readonly kind: 'stall'; readonly reason: 'TargetVersionAbsent' | 'RolloutOverlaps' | 'NothingToMove' | 'WaveEmpty'; readonly message: string }
  /** Nothing to do now: look again after `seconds` (0: on the next event). `Ended`: succeeded, rolled back or halted. */
  | { readonly kind: 'wait'; readonly reason: 'Paused' | 'WaitingForReady' | 'Baking' | 'Ended'; readonly message: string; readonly seconds: number }
  | { readonly kind: 'move'; readonly batch: Batch }
  /** The tenants record a batch the status does not (its write failed after the move): the status catches up, nothing moves. */
  | { readonly kind: 'recorded'; readonly batch: Batch }
  | { readonly kind: 'ready' }
  /** A gate failed (or could not be judged): halt, and return the moved tenants when `rollBack`. */
  | { readonly kind: 'halt'; readonly gates: GateResult[]; readonly rollBack: boolean }
  /** Rolling back: pin the batch's tenants to the versions they came from (`to`, by name). */
  | { readonly kind: 'return'; readonly batch: Batch; readonly to: ReadonlyMap<string, string> }
  | { readonly kind: 'succeeded' }
  | { readonly kind: 'rolledBack' }
) & {
  /**
   * The verdicts of the batch judged in this pass, on the step they led to (a halt, the next move,
   * the end); not on a pause's wait, since the batch is judged again once the pause is lifted.
   */
  readonly judged?: readonly GateResult[];
};

const DEFAULT_BAKE_SECONDS = 300;
/** How soon to look again while tenants come up (their own events wake the controller sooner). */
const POLL_SECONDS = 10;

const secondsSince = (iso: string | undefined, now: number): number => (iso === undefined ? 0 : (now - Date.parse(iso)) / 1000);

function healthOf(world: RolloutWorld, tenants: readonly FleetTenant[]): TenantHealth[] {
  return tenants.map((t) => ({
    name: t.name,
    readyOnTarget: t.ready && t.owner === world.spec.targetVersion,
    podRestarts: world.pods.get(t.name)?.restarts ?? 0,
    unreadyPods: world.pods.get(t.name)?.unready ?? 0,
  }));
}

/** Whether this pass needs Prometheus: the spec names a query and the batch in flight is baked. */
export function needsQuery(spec: EvaRolloutSpec, status: EvaRolloutStatus, now: number): boolean {
  return spec.gates?.prometheus !== undefined && status.phase === 'Baking' && secondsSince(status.readyAt, now) >= bakeSecondsOf(spec, status.wave);
}

function bakeSecondsOf(spec: EvaRolloutSpec, wave: number | undefined): number {
  return spec.waves.find((w) => w.wave === wave)?.bakeSeconds ?? DEFAULT_BAKE_SECONDS;
}

/** The next move, or the end: a pause holds it, an absent target version stalls it. */
function advance(world: RolloutWorld): RolloutAction {
  const batch = nextBatch(world.fleet, world.spec, world.name);
  if (batch === undefined) return { kind: 'succeeded' };
  if (world.spec.paused === true) return { kind: 'wait', reason: 'Paused', message: `paused before wave ${String(batch.wave)} batch ${String(batch.batch)}`, seconds: 0 };
  return { kind: 'move', batch };
}

const halt = (world: RolloutWorld, gates: GateResult[]): RolloutAction => ({ kind: 'halt', gates, rollBack: world.spec.onFailure !== 'Halt', judged: gates });

/** The step after a batch passed its gates, with their verdicts (see RolloutAction's `judged`). */
const afterPassing = (next: RolloutAction, gates: GateResult[]): RolloutAction => (next.kind === 'wait' ? next : { ...next, judged: gates });

/** A gate named in spec.skipGates passes, saying why (a person decided to go on without it). */
function waived(spec: EvaRolloutSpec, result: GateResult): GateResult {
  if (result.verdict === 'Passed' || !(spec.skipGates ?? []).some((g) => g === result.gate)) return result;
  return { gate: result.gate, verdict: 'Passed', message: `skipped (spec.skipGates); it said: ${result.message}` };
}

/** Halted by gates that spec.skipGates now names, all of them: the rollout moves on. */
function resumable(world: RolloutWorld): boolean {
  const failed = (world.status.gates ?? []).filter((g) => g.verdict !== 'Passed');
  return world.spec.abort !== true && failed.length > 0 && failed.every((g) => waived(world.spec, g).verdict === 'Passed');
}

const ABORTED: GateResult = { gate: 'Aborted', verdict: 'Failed', message: 'aborted by spec.abort' };

function judgeInFlight(world: RolloutWorld): RolloutAction {
  const { status, spec } = world;
  const batch = batchTenants(world.fleet, world.name, status.batch ?? 0);
  const health = healthOf(world, batch);
  if (status.phase === 'Moving') {
    const ready = readiness(health, secondsSince(status.movedAt, world.now), spec.gates);
    if (ready === 'waiting') return { kind: 'wait', reason: 'WaitingForReady', message: `wave ${String(status.wave)} batch ${String(status.batch)}: waiting for its tenants to be Ready on ${spec.targetVersion}`, seconds: POLL_SECONDS };
    return ready === 'ready' || waived(spec, ready).verdict === 'Passed' ? { kind: 'ready' } : halt(world, [ready]);
  }
  const left = bakeSecondsOf(spec, status.wave) - secondsSince(status.readyAt, world.now);
  if (left > 0) return { kind: 'wait', reason: 'Baking', message: `wave ${String(status.wave)} batch ${String(status.batch)} baking`, seconds: Math.ceil(left) };
  const gates = judgeBatch(health, spec.gates, world.answer).map((g) => waived(spec, g));
  return passed(gates) ? afterPassing(advance(world), gates) : halt(world, gates);
}

function rollBack(world: RolloutWorld): RolloutAction {
  const { status } = world;
  // The batch returned last must be Ready on its old version before the next one goes back.
  const returning = batchTenants(world.fleet, world.name, status.batch ?? 0);
  const back = returning.filter((t) => t.pinnedTo === t.moved?.from);
  if (back.length > 0 && !back.every((t) => t.ready && t.owner === t.moved?.from)) {
    return { kind: 'wait', reason: 'WaitingForReady', message: `wave ${String(status.wave)} batch ${String(status.batch)}: waiting for its tenants to be Ready on their earlier version`, seconds: POLL_SECONDS };
  }
  const next = nextReturn(world.fleet, world.name);
  return next === undefined ? { kind: 'rolledBack' } : { kind: 'return', batch: next, to: next.to };
}

/** A rollout that has stopped moving forward: ended (a halted one resumes when its failed gates are skipped), or going back. */
function stopped(world: RolloutWorld, phase: RolloutPhase): RolloutAction | undefined {
  if (phase === 'Halted' && resumable(world)) return afterPassing(advance(world), (world.status.gates ?? []).map((g) => waived(world.spec, g)));
  if (phase === 'Succeeded' || phase === 'RolledBack' || phase === 'Halted') return { kind: 'wait', reason: 'Ended', message: `rollout ${phase}`, seconds: 0 };
  return phase === 'RollingBack' ? rollBack(world) : undefined;
}

/** A plan that cannot start: nothing to move at all, or a wave it names with no tenant to move. */
function beforeTheFirstMove(world: RolloutWorld): RolloutAction | undefined {
  if (nextBatch(world.fleet, world.spec, world.name) === undefined) return { kind: 'stall', reason: 'NothingToMove', message: 'no tenant of the named waves is on another version' };
  const empty = progress(world.fleet, world.spec, world.name).findIndex((w) => w.total === 0);
  if (empty < 0) return undefined;
  const wave = world.spec.waves[empty]?.wave ?? 0;
  return { kind: 'stall', reason: 'WaveEmpty', message: `spec.waves[${String(empty)}]: wave ${String(wave)} has no tenant to move` };
}

export function decide(world: RolloutWorld): RolloutAction {
  const phase = world.status.phase ?? 'Pending';
  const ended = stopped(world, phase);
  if (ended !== undefined) return ended;
  const latest = latestBatch(world.fleet, world.name);
  if (latest !== undefined && latest.batch > (world.status.batch ?? 0)) return { kind: 'recorded', batch: latest };
  if (world.spec.abort === true) return halt(world, [ABORTED]);
  if (!world.targetRuns) return { kind: 'stall', reason: 'TargetVersionAbsent', message: `no operator of version ${world.spec.targetVersion} runs: nothing could claim a moved tenant` };
  if (world.overlapping !== undefined) return { kind: 'stall', reason: 'RolloutOverlaps', message: `rollout ${world.overlapping} moves some of the same tenants` };
  if (phase === 'Moving' || phase === 'Baking') return judgeInFlight(world);
  return beforeTheFirstMove(world) ?? advance(world);
}
