/**
 * Step 'record': the tenant record in the JetStream KV bucket `eva-tenants`, keyed by capsule code.
 * It is the registry of which tenant (by Kubernetes uid) owns a capsule code, and what it was given
 * (tier, modules, seed data). Writes use the key's revision as a precondition, so the record and seed
 * steps (or two operator replicas) never overwrite each other's fields.
 *
 * It also answers "which seeds version does this tenant want", because the record stores it and the
 * seed step applies it: both must resolve a missing spec.seedsVersion the same way.
 */
import { Reason } from '../api/reasons.ts';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { KV } from 'nats';
import { JS_ERR, jsErrCode, type NatsSession } from '../adapters/nats.ts';
import type { NatsStepDeps } from './step.ts';
import { codeInUse, tenantUid } from '../tenancy/ownership.ts';
import { TIERS } from '../api/constants.ts';
import { MODULES } from '../api/modules.ts';
import { StringEnum } from '../api/schema-kinds.ts';
import type { SeedCatalog } from '../bundle/seeds.ts';
import { DependencyError } from '../errors.ts';
import { READY, notReady, type Step, type Verdict } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';

export const TENANTS_BUCKET = 'eva-tenants';
const TENANTS_HISTORY = 5;

const AppliedSeedSchema = Type.Object({ version: Type.String(), digest: Type.String(), appliedAt: Type.String() });

const TenantRecordSchema = Type.Object({
  code: Type.String(),
  tier: StringEnum(TIERS),
  uid: Type.String(),
  modules: Type.Array(StringEnum(MODULES)),
  seedsVersion: Type.String(),
  seed: Type.Optional(AppliedSeedSchema),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export type AppliedSeed = Static<typeof AppliedSeedSchema>;
export type TenantRecord = Static<typeof TenantRecordSchema>;
export interface StoredRecord {
  readonly record: TenantRecord;
  /** The KV revision read, the precondition of the next write. */
  readonly revision: number;
}

/** The fields the record step owns (the seed step owns `seed`; timestamps follow writes). */
type OwnedFields = Pick<TenantRecord, 'code' | 'tier' | 'uid' | 'modules' | 'seedsVersion'>;

/** The record stores the seeds version the tenant wants, so it needs the bundled ones (the newest is the default). */
export type RecordStepDeps = NatsStepDeps & { readonly seeds: SeedCatalog };

// ---- seeds versions -------------------------------------------------------------------------------

export interface DesiredSeedsVersion {
  readonly version: string;
  /** True when the spec named none and the newest bundled version was picked. */
  readonly defaulted: boolean;
}

/** spec.seedsVersion, or the newest bundled version when the spec leaves it out. */
export function desiredSeedsVersion(scope: TenantScope, seeds: SeedCatalog): DesiredSeedsVersion {
  const requested = scope.tenant.spec.seedsVersion;
  if (requested !== undefined) return { version: requested, defaulted: false };
  const newest = seeds.versions[0];
  if (newest === undefined) {
    throw new DependencyError(Reason.SeedsNotBundled, `no seeds versions are bundled under ${seeds.source}`);
  }
  return { version: newest, defaulted: true };
}

// ---- the record in KV -----------------------------------------------------------------------------

function parseTenantRecord(raw: unknown, code: string): TenantRecord {
  if (!Value.Check(TenantRecordSchema, raw)) {
    throw new DependencyError(Reason.TenantRecordCorrupt, `the tenant record for ${code} in ${TENANTS_BUCKET} is not valid`);
  }
  return raw;
}

async function readFrom(kv: KV, code: string): Promise<StoredRecord | undefined> {
  const entry = await kv.get(code);
  if (entry === null || entry.operation !== 'PUT') return undefined;
  let raw: unknown;
  try {
    raw = entry.json<unknown>();
  } catch {
    raw = undefined;
  }
  return { record: parseTenantRecord(raw, code), revision: entry.revision };
}

/** Reads the record without creating anything (safe for verify). */
export async function readTenantRecord(session: NatsSession, code: string): Promise<StoredRecord | undefined> {
  const kv = await session.existingKv(TENANTS_BUCKET);
  return kv ? readFrom(kv, code) : undefined;
}

/**
 * Writes the record if the key is still at `revision` (undefined: the key must not exist) and returns
 * the new revision. Creates the bucket when missing. A lost race is a DependencyError: retry re-reads.
 */
export async function writeTenantRecord(
  session: NatsSession,
  record: TenantRecord,
  revision: number | undefined,
): Promise<number> {
  const kv = await tenantsBucket(session);
  const data = JSON.stringify(record);
  try {
    return revision === undefined ? await kv.create(record.code, data) : await kv.update(record.code, data, revision);
  } catch (err) {
    if (jsErrCode(err) !== JS_ERR.wrongLastSequence) throw err;
    throw new DependencyError(Reason.TenantRecordConflict, `the tenant record for ${record.code} changed while being written`, {
      cause: err,
    });
  }
}

function tenantsBucket(session: NatsSession): Promise<KV> {
  return session.kv(TENANTS_BUCKET, { history: TENANTS_HISTORY, description: 'eva-operator tenant records' });
}

// ---- the step -------------------------------------------------------------------------------------

function ownedFields(scope: TenantScope, seeds: SeedCatalog): OwnedFields {
  return {
    code: scope.code,
    tier: scope.tenant.spec.tier,
    uid: tenantUid(scope),
    modules: [...scope.modules],
    seedsVersion: desiredSeedsVersion(scope, seeds).version,
  };
}

/** The owned fields that differ between the record and what the tenant wants; empty when in sync. */
function recordDrift(record: TenantRecord, desired: OwnedFields): string[] {
  const keys = ['code', 'tier', 'uid', 'modules', 'seedsVersion'] as const;
  return keys.filter((key) => JSON.stringify(record[key]) !== JSON.stringify(desired[key]));
}

async function ensureRecord(scope: TenantScope, deps: RecordStepDeps): Promise<Verdict> {
  const desired = ownedFields(scope, deps.seeds);
  await deps.nats.runInRegistry(async (session) => {
    const current = await readFrom(await tenantsBucket(session), scope.code);
    if (current && current.record.uid !== desired.uid) throw codeInUse(scope, 'its tenant record', current.record.uid);
    if (current && recordDrift(current.record, desired).length === 0) return;
    const now = new Date().toISOString();
    const createdAt = current?.record.createdAt ?? now;
    await writeTenantRecord(session, { ...current?.record, ...desired, createdAt, updatedAt: now }, current?.revision);
    scope.log.info({ step: 'record', created: current === undefined }, 'tenant record written');
  });
  return READY;
}

async function verifyRecord(scope: TenantScope, deps: RecordStepDeps): Promise<Verdict> {
  const desired = ownedFields(scope, deps.seeds);
  const current = await deps.nats.runInRegistry((session) => readTenantRecord(session, scope.code));
  if (!current) return notReady(Reason.TenantRecordMissing, `no tenant record for ${scope.code} in ${TENANTS_BUCKET}`);
  if (current.record.uid !== desired.uid) {
    return notReady(Reason.CapsuleCodeInUse, `the tenant record for ${scope.code} belongs to uid ${current.record.uid}`);
  }
  const drift = recordDrift(current.record, desired);
  if (drift.length > 0) return notReady(Reason.TenantRecordDrifted, `tenant record fields differ: ${drift.join(', ')}`);
  return READY;
}

async function removeRecord(scope: TenantScope, deps: NatsStepDeps): Promise<void> {
  const uid = tenantUid(scope);
  await deps.nats.runInRegistry(async (session) => {
    const kv = await session.existingKv(TENANTS_BUCKET);
    const current = kv ? await readFrom(kv, scope.code) : undefined;
    if (!kv || !current) return;
    // A tenant that lost the race for its code must not delete the winner's record on its way out.
    if (current.record.uid !== uid) {
      scope.log.info({ step: 'record', owner: current.record.uid }, 'tenant record belongs to another tenant; left as is');
      return;
    }
    await kv.purge(scope.code, { previousSeq: current.revision });
  });
}

async function verifyRecordRemoved(scope: TenantScope, deps: NatsStepDeps): Promise<Verdict> {
  const uid = tenantUid(scope);
  const current = await deps.nats.runInRegistry((session) => readTenantRecord(session, scope.code));
  if (current && current.record.uid === uid) {
    return notReady(Reason.TenantRecordPresent, `the tenant record for ${scope.code} still exists`);
  }
  return READY;
}

export const recordStep: Step<RecordStepDeps> = {
  name: 'record',
  ensure: ensureRecord,
  verify: verifyRecord,
  remove: removeRecord,
  verifyRemoved: verifyRecordRemoved,
};
