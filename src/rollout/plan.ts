/**
 * Which tenants a rollout moves and in what order: pure, recomputed from the fleet on every pass, so
 * that nothing but the tenants themselves records a move. A tenant moved by a rollout carries its
 * name, its batch and the version it came from (annotations written in the same patch as its pin):
 * after a crash the plan reads the same, no tenant is moved twice, and a rollback knows where each
 * one returns.
 */
import type { EvaRolloutSpec, RolloutWave } from '../api/evarollout.ts';

/** What the plan needs of one EvaTenant. */
export interface FleetTenant {
  readonly name: string;
  readonly wave: number;
  /** The operator version that owns it (eva.aidonow.com/operator-version). */
  readonly owner: string | undefined;
  /** spec.operatorVersion. */
  readonly pinnedTo: string | undefined;
  /** spec.suspend: no owner writes it, so it cannot be handed over (skipped, and listed). */
  readonly suspended: boolean;
  /** Ready True with observedGeneration current (a hibernated tenant at rest is Ready). */
  readonly ready: boolean;
  /** Set when a rollout moved it: which, in which wave and batch (numbered across the rollout, 1, 2, ...), from which version. */
  readonly moved: { readonly rollout: string; readonly wave: number; readonly batch: number; readonly from: string } | undefined;
}

export interface Batch {
  readonly wave: number;
  /** Numbered across the rollout (1, 2, ...): the order the batches moved in, whatever their waves. */
  readonly batch: number;
  readonly tenants: readonly string[];
}

/** The version a tenant is on as far as a rollout cares: its pin, else its owner. */
const versionOf = (tenant: FleetTenant): string | undefined => tenant.pinnedTo ?? tenant.owner;

const movedBy = (tenant: FleetTenant, rollout: string): boolean => tenant.moved?.rollout === rollout;

/** Whether the rollout has this tenant to move (or has moved it): in one of its waves, from the right version. */
export function inScope(tenant: FleetTenant, spec: EvaRolloutSpec, rollout: string): boolean {
  if (movedBy(tenant, rollout)) return true;
  if (tenant.suspended || !spec.waves.some((w) => w.wave === tenant.wave)) return false;
  const version = versionOf(tenant);
  if (version === undefined || version === spec.targetVersion) return false;
  return spec.fromVersion === undefined || version === spec.fromVersion;
}

/** The tenants of the plan's waves a rollout leaves where they are because spec.suspend stops their hand-over. */
export function skipped(fleet: readonly FleetTenant[], spec: EvaRolloutSpec, rollout: string): string[] {
  return fleet.filter((t) => t.suspended && !movedBy(t, rollout) && inScope({ ...t, suspended: false }, spec, rollout)).map((t) => t.name).sort();
}

/** Tenants per batch of a wave of `total` tenants: a count, or a percentage rounded up; at least one. */
export function batchSize(wave: RolloutWave, total: number): number {
  const size = wave.batch.count ?? Math.ceil(((wave.batch.percent ?? 100) * total) / 100);
  return Math.max(1, size);
}

export interface WaveProgress {
  readonly wave: number;
  readonly total: number;
  readonly moved: number;
}

/** Per wave of the plan, in its order: how many tenants it has and how many this rollout moved. */
export function progress(fleet: readonly FleetTenant[], spec: EvaRolloutSpec, rollout: string): WaveProgress[] {
  const scoped = fleet.filter((t) => inScope(t, spec, rollout));
  return spec.waves.map(({ wave }) => {
    const ofWave = scoped.filter((t) => (t.moved?.rollout === rollout ? t.moved.wave : t.wave) === wave);
    return { wave, total: ofWave.length, moved: ofWave.filter((t) => movedBy(t, rollout)).length };
  });
}

/**
 * The next batch to move: the first wave of the plan with tenants left, its next tenants by name (a
 * stable order whatever order the API lists them in). Undefined when every tenant in scope moved.
 */
export function nextBatch(fleet: readonly FleetTenant[], spec: EvaRolloutSpec, rollout: string): Batch | undefined {
  for (const wave of spec.waves) {
    const ofWave = fleet.filter((t) => inScope(t, spec, rollout) && !movedBy(t, rollout) && t.wave === wave.wave);
    if (ofWave.length === 0) continue;
    const movedOfWave = fleet.filter((t) => t.moved?.rollout === rollout && t.moved.wave === wave.wave);
    const size = batchSize(wave, ofWave.length + movedOfWave.length);
    const tenants = ofWave.map((t) => t.name).sort().slice(0, size);
    return { wave: wave.wave, batch: lastBatch(fleet, rollout) + 1, tenants };
  }
  return undefined;
}

/** The number of the last batch this rollout moved (0 before the first). */
function lastBatch(fleet: readonly FleetTenant[], rollout: string): number {
  return Math.max(0, ...fleet.map((t) => (t.moved?.rollout === rollout ? t.moved.batch : 0)));
}

/** The last batch this rollout moved, as the tenants record it (undefined before the first). */
export function latestBatch(fleet: readonly FleetTenant[], rollout: string): Batch | undefined {
  const batch = lastBatch(fleet, rollout);
  const tenants = batchTenants(fleet, rollout, batch);
  const wave = tenants[0]?.moved?.wave;
  return wave === undefined ? undefined : { wave, batch, tenants: tenants.map((t) => t.name).sort() };
}

/** The tenants of one batch this rollout moved. */
export function batchTenants(fleet: readonly FleetTenant[], rollout: string, batch: number): FleetTenant[] {
  return fleet.filter((t) => t.moved?.rollout === rollout && t.moved.batch === batch);
}

/**
 * What a rollback returns next: the latest batch this rollout moved that is still moved (the reverse
 * of the order they went in), and the version each tenant came from.
 */
export function nextReturn(fleet: readonly FleetTenant[], rollout: string): Batch & { readonly to: ReadonlyMap<string, string> } | undefined {
  const moved = fleet.filter((t) => movedBy(t, rollout) && versionOf(t) !== t.moved?.from);
  const batch = Math.max(0, ...moved.map((t) => t.moved?.batch ?? 0));
  const going = moved.filter((t) => t.moved?.batch === batch).sort((a, b) => a.name.localeCompare(b.name));
  const first = going[0]?.moved;
  if (first === undefined) return undefined;
  return { wave: first.wave, batch, tenants: going.map((t) => t.name), to: new Map(going.map((t) => [t.name, t.moved?.from ?? ''])) };
}
