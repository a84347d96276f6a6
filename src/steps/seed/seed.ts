/**
 * Step 'seed': puts the bundled seed data (seeds/<version>/<module>.json, read once at start by
 * bundle/seeds.ts) for the modules of the tenant's tier into the tenant's own KV bucket
 * `eva-<CODE>-data`, as `<module>.<entry key>` = JSON of the entry's value, and records what was
 * applied in the tenant record.
 *
 * Applying is a difference, never a reload: only keys whose value differs are put, so untouched keys
 * keep their revision and modules watching the bucket see only real changes. Keys are deleted only if
 * seed data owns them, i.e. they appear in the bundle of the previously applied version or of the
 * desired one (any module). Listing the bucket instead would also delete what modules wrote there
 * themselves, which is tenant data; a seed-owned key the module also writes is the accepted overlap.
 */
import { Reason } from '../../api/reasons.ts';
import { ACCOUNT_BY_TIER } from '../../api/tiers.ts';
import type { Kube } from '../../adapters/kube.ts';
import { seededByInitContainers } from './seed-init-containers.ts';
import { canonicalJson } from '../../canonical-json.ts';
import type { KV } from 'nats';
import { JS_ERR, jsErrCode, type NatsSession } from '../../adapters/nats.ts';
import type { NatsStepDeps } from '../step.ts';
import type { SeedCatalog, SeedEntries } from '../../bundle/seeds.ts';
import { dataBucket, kvStream } from '../../tenancy/names.ts';
import { codeInUse, type Custody, hasRetainedMarks, mayActOn, ownerMetadata, ownerOf, tenantUid, withoutRetainedMarks } from '../../tenancy/ownership.ts';
import { markRetained, notMarkedRetained } from '../streams.ts';
import { copyMovedStream } from '../moved-data.ts';
import type { NatsAccounts } from '../../nats/accounts.ts';
import { MODULES } from '../../api/modules.ts';
import type { Logger } from '../../log.ts';
import { DependencyError, InputError } from '../../errors.ts';
import { desiredSeedsVersion, readTenantRecord, type RecordStepDeps, type StoredRecord, writeTenantRecord } from '../record.ts';
import { READY, notReady, type Step, type Verdict } from '../step.ts';
import type { TenantScope } from '../../tenancy/scope.ts';

export interface SeedDiff {
  readonly puts: readonly { readonly key: string; readonly value: unknown }[];
  readonly deletes: readonly string[];
}

// ---- pure helpers ---------------------------------------------------------------------------------

function sameValue(value: unknown, storedText: string): boolean {
  try {
    return canonicalJson(value) === canonicalJson(JSON.parse(storedText));
  } catch {
    return false;
  }
}

/**
 * What to write so the bucket holds `desired`: puts for keys missing or different in `current`
 * (stored JSON text by key), deletes for present keys that seed data owns but no longer wants.
 */
export function diffSeed(
  desired: SeedEntries,
  current: ReadonlyMap<string, string>,
  owned: ReadonlySet<string>,
): SeedDiff {
  const puts = [...desired]
    .filter(([key, value]) => {
      const stored = current.get(key);
      return stored === undefined || !sameValue(value, stored);
    })
    .map(([key, value]) => ({ key, value }));
  const deletes = [...owned].filter((key) => !desired.has(key) && current.has(key)).sort();
  return { puts, deletes };
}

// ---- the bundle ------------------------------------------------------------------------------------

/** Every key seed data owns in these versions (all modules: a tier change drops whole modules). */
function ownedKeys(seeds: SeedCatalog, versions: readonly string[], log: Logger): Set<string> {
  const owned = new Set<string>();
  for (const version of new Set(versions)) {
    if (!seeds.has(version)) {
      log.warn({ step: 'seed', seedsVersion: version }, 'seeds version no longer bundled; keys it alone had are kept');
      continue;
    }
    for (const key of seeds.bundle(version, MODULES).entries.keys()) owned.add(key);
  }
  return owned;
}

// ---- NATS -----------------------------------------------------------------------------------------

async function readValues(kv: KV, keys: Iterable<string>): Promise<Map<string, string>> {
  const found = await Promise.all(
    [...keys].map(async (key): Promise<[string, string] | undefined> => {
      const entry = await kv.get(key);
      return entry !== null && entry.operation === 'PUT' ? [key, entry.string()] : undefined;
    }),
  );
  return new Map(found.filter((pair) => pair !== undefined));
}

async function applyDiff(kv: KV, diff: SeedDiff): Promise<void> {
  await Promise.all(diff.puts.map(({ key, value }) => kv.put(key, JSON.stringify(value))));
  await Promise.all(diff.deletes.map((key) => kv.delete(key)));
}

const bucketBytes = (scope: TenantScope): number => ACCOUNT_BY_TIER[scope.tenant.spec.tier].dataBucketBytes;

/** The tenant's bucket, created at its tier's size, or resized when the tier changed. */
async function openDataBucket(scope: TenantScope, nats: NatsAccounts, session: NatsSession, custody: Custody): Promise<KV> {
  const bucket = dataBucket(scope.code);
  await copyMovedStream(scope, nats, session, custody, kvStream(bucket));
  const kv = await session.kv(bucket, { history: 1, metadata: ownerMetadata(scope), max_bytes: bucketBytes(scope) });
  const { config } = (await kv.status()).streamInfo;
  const owner = ownerOf(config.metadata);
  if (!mayActOn(scope, custody, owner)) throw codeInUse(scope, `bucket ${bucket}`, owner ?? '');
  // A restored bucket (retained, then taken over by this tenant's keys record) is stamped with its new owner.
  const restamp = (owner !== undefined && owner !== tenantUid(scope)) || hasRetainedMarks(config.metadata);
  if (config.max_bytes !== bucketBytes(scope) || restamp) {
    await session.jsm.streams.update(config.name, { ...config, max_bytes: bucketBytes(scope), metadata: { ...withoutRetainedMarks(config.metadata), ...ownerMetadata(scope) } });
    scope.log.info({ step: 'seed', bucket, maxBytes: bucketBytes(scope), restored: restamp }, 'seed bucket resized for the tier or restored');
  }
  return kv;
}

async function tenantRecordOf(scope: TenantScope, session: NatsSession): Promise<StoredRecord> {
  const stored = await readTenantRecord(session, scope.code);
  if (!stored) {
    throw new DependencyError(Reason.TenantRecordMissing, `no tenant record for ${scope.code} yet (the record step comes first)`);
  }
  if (stored.record.uid !== tenantUid(scope)) throw codeInUse(scope, 'its tenant record', stored.record.uid);
  return stored;
}

async function recordApplied(session: NatsSession, stored: StoredRecord, version: string, digest: string): Promise<boolean> {
  const { record, revision } = stored;
  if (record.seed?.version === version && record.seed.digest === digest) return false;
  const now = new Date().toISOString();
  await writeTenantRecord(session, { ...record, seed: { version, digest, appliedAt: now }, updatedAt: now }, revision);
  return true;
}

// ---- the step -------------------------------------------------------------------------------------

interface Desired {
  readonly version: string;
  /** The spec named no version; the newest bundled one was picked. */
  readonly defaulted: boolean;
  readonly entries: SeedEntries;
  readonly digest: string;
}

/** Looks the bundle up before anything touches NATS: an unknown version writes nothing. */
function desiredSeed(scope: TenantScope, seeds: SeedCatalog): Desired {
  const { version, defaulted } = desiredSeedsVersion(scope, seeds);
  return { version, defaulted, ...seeds.bundle(version, scope.modules) };
}

async function ensureSeed(scope: TenantScope, deps: RecordStepDeps): Promise<Verdict> {
  const desired = desiredSeed(scope, deps.seeds);
  // Said by ensure only: verify runs on every drift check and would repeat it all day.
  if (desired.defaulted) {
    const notice = 'spec.seedsVersion not set; using the newest bundled seeds version';
    scope.log.info({ step: 'seed', seedsVersion: desired.version }, notice);
  }
  // The record lives in the operator's registry account, the data in the tenant's own account.
  const stored = await deps.nats.runInRegistry((session) => tenantRecordOf(scope, session));
  const previous = stored.record.seed?.version;
  const versions = [previous, desired.version].filter((v) => v !== undefined);
  const owned = ownedKeys(deps.seeds, versions, scope.log);
  const diff = await deps.nats.runInTenant(scope, async (session, custody) => {
    const kv = await openDataBucket(scope, deps.nats, session, custody);
    const current = await readValues(kv, new Set([...desired.entries.keys(), ...owned]));
    const changes = diffSeed(desired.entries, current, owned);
    await applyDiff(kv, changes);
    return changes;
  });
  const recorded = await deps.nats.runInRegistry((session) => recordApplied(session, stored, desired.version, desired.digest));
  if (diff.puts.length + diff.deletes.length > 0 || recorded) {
    scope.log.info(
      { step: 'seed', seedsVersion: desired.version, previous, puts: diff.puts.length, deletes: diff.deletes.length },
      'seed data applied',
    );
  }
  return READY;
}

async function verifySeed(scope: TenantScope, deps: SeedStepDeps): Promise<Verdict> {
  let desired: Desired;
  try {
    desired = desiredSeed(scope, deps.seeds);
  } catch (err) {
    if (err instanceof InputError) return notReady(err.reason, err.message);
    throw err;
  }
  const stored = await deps.nats.runInRegistry((session) => readTenantRecord(session, scope.code));
  const seed = stored?.record.seed;
  if (seed?.version !== desired.version || seed.digest !== desired.digest) {
    // Either the operator applied the seeds, or every module's seed init container did.
    if (deps.kube && (await seededByInitContainers(deps.kube, scope.namespace, scope.modules, desired.version))) return READY;
    const applied = seed?.version ?? 'none';
    return notReady(Reason.SeedPending, `seeds version ${desired.version} is not applied yet (applied: ${applied})`);
  }
  const bucket = dataBucket(scope.code);
  return deps.nats.runInTenant(scope, async (session) => {
    const kv = await session.existingKv(bucket);
    if (!kv) return notReady(Reason.SeedBucketMissing, `bucket ${bucket} does not exist`);
    const size = (await kv.status()).streamInfo.config.max_bytes;
    if (size !== bucketBytes(scope)) return notReady(Reason.SeedBucketDrifted, `bucket ${bucket} holds up to ${size} bytes, the ${scope.tenant.spec.tier} tier ${bucketBytes(scope)}`);
    return READY;
  });
}

async function removeSeed(scope: TenantScope, deps: NatsStepDeps): Promise<void> {
  await deps.nats.runInTenantIfAny(scope, async (session, custody) => {
    const kv = await session.existingKv(dataBucket(scope.code));
    if (!kv || !mayActOn(scope, custody, ownerOf((await kv.status()).metadata))) return;
    try {
      await kv.destroy();
    } catch (err) {
      if (jsErrCode(err) !== JS_ERR.streamNotFound) throw err;
    }
  });
}

async function verifySeedRemoved(scope: TenantScope, deps: NatsStepDeps): Promise<Verdict> {
  const verdict = await deps.nats.runInTenantIfAny(scope, async (session, custody) => {
    const kv = await session.existingKv(dataBucket(scope.code));
    if (kv && mayActOn(scope, custody, ownerOf((await kv.status()).metadata))) {
      return notReady(Reason.SeedBucketPresent, `bucket ${dataBucket(scope.code)} still exists`);
    }
    return READY;
  });
  return verdict ?? READY;
}

/** Retained (spec.dataRetention Retain): the bucket stays, marked retained like the streams. */
async function retainSeed(scope: TenantScope, deps: NatsStepDeps): Promise<void> {
  await deps.nats.runInTenantIfAny(scope, (session, custody) => markRetained(scope, session, custody, kvStream(dataBucket(scope.code))));
}

async function verifySeedRetained(scope: TenantScope, deps: NatsStepDeps): Promise<Verdict> {
  const problem = await deps.nats.runInTenantIfAny(scope, (session, custody) => notMarkedRetained(scope, session, custody, kvStream(dataBucket(scope.code))));
  return problem === undefined ? READY : notReady(Reason.RetentionPending, problem);
}

/** The seed step's remove and verifyRemoved when the tenant's data is retained. */
export const retainedSeed: Pick<Step<NatsStepDeps>, 'remove' | 'verifyRemoved'> = { remove: retainSeed, verifyRemoved: verifySeedRetained };

/** The seed step also reads pods (init containers) when it has the Kubernetes adapter. */
export type SeedStepDeps = RecordStepDeps & { readonly kube?: Kube };

export const seedStep: Step<SeedStepDeps> = {
  name: 'seed',
  ensure: ensureSeed,
  verify: verifySeed,
  remove: removeSeed,
  verifyRemoved: verifySeedRemoved,
};
