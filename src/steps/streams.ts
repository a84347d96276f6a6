/**
 * Step 'streams': the tenant's two JetStream streams, `eva-<CODE>-events` and `eva-<CODE>-commands`,
 * each capturing only `capsule.<CODE>.<kind>.>` (the subject prefix is what isolates tenants), sized
 * by the tier table. Streams carry their owner's uid in metadata, so a second EvaTenant claiming the
 * same capsule code can neither resize nor delete the first tenant's streams.
 */
import { Reason } from '../api/reasons.ts';
import { DiscardPolicy, nanos, RetentionPolicy, StorageType, type StreamConfig, type StreamInfo } from 'nats';
import { JS_ERR, jsErrCode, type NatsSession, streamInfo as info } from '../adapters/nats.ts';
import type { NatsStepDeps } from './step.ts';
import { STREAM_LIMITS_BY_TIER, type StreamLimits } from '../api/tiers.ts';
import { DependencyError, InputError } from '../errors.ts';
import { STREAM_KINDS, streamName, streamSubject, type StreamKind } from '../tenancy/names.ts';
import { codeInUse, type Custody, hasRetainedMarks, isRetainedBy, mayActOn, ownerMetadata, ownerOf, retainedMetadata, retentionOf, withoutRetainedMarks } from '../tenancy/ownership.ts';
import { READY, notReady, type Step, type Verdict } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';
import { copyMovedStream } from './moved-data.ts';

/** The part of a stream's configuration this step owns; everything else is left as the server has it. */
export type OwnedStreamConfig = Pick<
  StreamConfig,
  | 'name'
  | 'subjects'
  | 'retention'
  | 'storage'
  | 'discard'
  | 'num_replicas'
  | 'max_msgs'
  | 'max_bytes'
  | 'max_age'
  | 'max_msg_size'
  | 'metadata'
>;

const STORAGE = { file: StorageType.File } as const satisfies Record<StreamLimits['storage'], StorageType>;
const DISCARD = { old: DiscardPolicy.Old } as const satisfies Record<StreamLimits['discard'], DiscardPolicy>;

export function desiredStreamConfig(scope: TenantScope, kind: StreamKind): OwnedStreamConfig {
  const limits = STREAM_LIMITS_BY_TIER[scope.tenant.spec.tier];
  return {
    name: streamName(scope.code, kind),
    subjects: [streamSubject(scope.code, kind)],
    retention: RetentionPolicy.Limits,
    storage: STORAGE[limits.storage],
    discard: DISCARD[limits.discard],
    num_replicas: limits.replicas,
    max_msgs: limits.maxMsgs,
    max_bytes: limits.maxBytes,
    max_age: nanos(limits.maxAgeSeconds * 1000),
    max_msg_size: limits.maxMsgSize,
    metadata: ownerMetadata(scope),
  };
}

const COMPARED = [
  'subjects',
  'retention',
  'storage',
  'discard',
  'num_replicas',
  'max_msgs',
  'max_bytes',
  'max_age',
  'max_msg_size',
] as const;
/** Fields the server refuses to change on update: drift here needs a human. */
const IMMUTABLE: ReadonlySet<string> = new Set(['retention', 'storage']);

/** Owned fields whose actual value differs from the desired one (subjects compared as a set). */
export function streamDrift(actual: StreamConfig, desired: OwnedStreamConfig): string[] {
  const drift: string[] = COMPARED.filter((field) => {
    if (field === 'subjects') return JSON.stringify([...actual.subjects].sort()) !== JSON.stringify([...desired.subjects].sort());
    return JSON.stringify(actual[field]) !== JSON.stringify(desired[field]);
  });
  // Only our metadata keys count: servers add their own (_nats.*) to every stream. Retained marks
  // on a stream in use again are drift too.
  const ours = Object.entries(desired.metadata ?? {});
  if (ours.some(([key, value]) => actual.metadata?.[key] !== value) || hasRetainedMarks(actual.metadata)) drift.push('metadata');
  return drift;
}

/** Creates the stream, or brings an existing one to the desired configuration. */
async function ensureStream(scope: TenantScope, deps: NatsStepDeps, session: NatsSession, custody: Custody, kind: StreamKind): Promise<void> {
  const desired = desiredStreamConfig(scope, kind);
  await copyMovedStream(scope, deps.nats, session, custody, desired.name);
  // Looked up first: an add of an existing stream still asks for its reservation, which a full account refuses.
  const actual = (await info(session, desired.name)) ?? (await add(session, desired));
  await reconcile(scope, session, custody, actual.config, desired);
}

/** The stream as created now, or as a concurrent writer created it (add answers 10058 when its config differs). */
async function add(session: NatsSession, desired: OwnedStreamConfig): Promise<StreamInfo> {
  try {
    return await session.jsm.streams.add(desired);
  } catch (err) {
    const code = jsErrCode(err);
    if (code === JS_ERR.subjectsOverlap) throw overlap(desired, err);
    if (code === JS_ERR.insufficientStorage) throw noStorage(desired, err);
    if (code !== JS_ERR.streamNameInUse) throw err;
  }
  const actual = await info(session, desired.name);
  if (!actual) throw new Error(`stream ${desired.name} was deleted while being ensured`);
  return actual;
}

async function reconcile(
  scope: TenantScope,
  session: NatsSession,
  custody: Custody,
  actual: StreamConfig,
  desired: OwnedStreamConfig,
): Promise<void> {
  const owner = ownerOf(actual.metadata);
  // Stamped with the uid this tenant's keys record restored from: taken over, re-stamped below.
  if (!mayActOn(scope, custody, owner)) throw codeInUse(scope, `stream ${desired.name}`, owner ?? '');
  const drift = streamDrift(actual, desired);
  if (drift.length === 0) return;
  const frozen = drift.filter((field) => IMMUTABLE.has(field));
  if (frozen.length > 0) {
    throw new InputError(
      Reason.StreamConflict,
      `stream ${desired.name} exists with a different ${frozen.join(', ')}, which cannot be changed in place`,
    );
  }
  const metadata = { ...withoutRetainedMarks(actual.metadata), ...desired.metadata };
  try {
    await session.jsm.streams.update(desired.name, { ...actual, ...desired, metadata });
  } catch (err) {
    throw jsErrCode(err) === JS_ERR.insufficientStorage ? noStorage(desired, err) : err;
  }
  scope.log.info({ step: 'streams', stream: desired.name, drift }, 'stream configuration updated');
}

function overlap(desired: OwnedStreamConfig, err: unknown): InputError {
  return new InputError(
    Reason.StreamSubjectsOverlap,
    `another stream already captures ${desired.subjects.join(', ')}, so ${desired.name} cannot be created`,
    { cause: err },
  );
}

/** JetStream reserves max_bytes up front: a full account (or server) refuses new or grown streams. */
function noStorage(desired: OwnedStreamConfig, err: unknown): DependencyError {
  return new DependencyError(
    Reason.NatsStorageExhausted,
    `NATS cannot reserve ${desired.max_bytes} bytes for stream ${desired.name}: the tenant account's JetStream storage is fully reserved`,
    { cause: err },
  );
}

async function ensureStreams(scope: TenantScope, deps: NatsStepDeps): Promise<Verdict> {
  await deps.nats.runInTenant(scope, async (session, custody) => {
    for (const kind of STREAM_KINDS) await ensureStream(scope, deps, session, custody, kind);
  });
  return READY;
}

async function verifyStreams(scope: TenantScope, deps: NatsStepDeps): Promise<Verdict> {
  return deps.nats.runInTenant(scope, async (session) => {
    for (const kind of STREAM_KINDS) {
      const desired = desiredStreamConfig(scope, kind);
      const actual = await info(session, desired.name);
      if (!actual) return notReady(Reason.StreamMissing, `stream ${desired.name} does not exist`);
      const drift = streamDrift(actual.config, desired);
      if (drift.length > 0) return notReady(Reason.StreamDrifted, `stream ${desired.name} differs in ${drift.join(', ')}`);
    }
    return READY;
  });
}

async function removeStreams(scope: TenantScope, deps: NatsStepDeps): Promise<void> {
  await deps.nats.runInTenantIfAny(scope, async (session, custody) => {
    for (const kind of STREAM_KINDS) {
      const name = streamName(scope.code, kind);
      const actual = await info(session, name);
      if (!actual || !mayActOn(scope, custody, ownerOf(actual.config.metadata))) continue;
      await deleteIfPresent(session, name);
    }
  });
}

async function deleteIfPresent(session: NatsSession, name: string): Promise<void> {
  try {
    await session.jsm.streams.delete(name);
  } catch (err) {
    if (jsErrCode(err) !== JS_ERR.streamNotFound) throw err;
  }
}

async function verifyStreamsRemoved(scope: TenantScope, deps: NatsStepDeps): Promise<Verdict> {
  const verdict = await deps.nats.runInTenantIfAny(scope, async (session, custody) => {
    for (const kind of STREAM_KINDS) {
      const actual = await info(session, streamName(scope.code, kind));
      if (actual && mayActOn(scope, custody, ownerOf(actual.config.metadata))) {
        return notReady(Reason.StreamPresent, `stream ${actual.config.name} still exists`);
      }
    }
    return READY;
  });
  return verdict ?? READY;
}

// ---- decommissioned with its data retained (spec.dataRetention Retain) --------------------------------

/**
 * Marks one of the tenant's streams (or its seed bucket's) retained: stamped with this tenant's uid
 * (one it restored from included) and the retained marks, the first mark's time kept on a repeat.
 * A stream that is not the tenant's is left alone.
 */
export async function markRetained(scope: TenantScope, session: NatsSession, custody: Custody, name: string): Promise<void> {
  const actual = await info(session, name);
  if (!actual || !mayActOn(scope, custody, ownerOf(actual.config.metadata)) || isRetainedBy(scope, actual.config.metadata)) return;
  const metadata = { ...actual.config.metadata, ...ownerMetadata(scope), ...retainedMetadata(retentionOf(scope, new Date().toISOString())) };
  await session.jsm.streams.update(name, { ...actual.config, metadata });
  scope.log.info({ stream: name }, 'stream marked retained');
}

/** Why one of the tenant's streams is not marked retained yet, or undefined when it is (or is not the tenant's). */
export async function notMarkedRetained(scope: TenantScope, session: NatsSession, custody: Custody, name: string): Promise<string | undefined> {
  const actual = await info(session, name);
  if (!actual || !mayActOn(scope, custody, ownerOf(actual.config.metadata)) || isRetainedBy(scope, actual.config.metadata)) return undefined;
  return `stream ${name} is not marked retained yet`;
}

async function retainStreams(scope: TenantScope, deps: NatsStepDeps): Promise<void> {
  await deps.nats.runInTenantIfAny(scope, async (session, custody) => {
    for (const kind of STREAM_KINDS) await markRetained(scope, session, custody, streamName(scope.code, kind));
  });
}

async function verifyStreamsRetained(scope: TenantScope, deps: NatsStepDeps): Promise<Verdict> {
  const problem = await deps.nats.runInTenantIfAny(scope, async (session, custody) => {
    for (const kind of STREAM_KINDS) {
      const why = await notMarkedRetained(scope, session, custody, streamName(scope.code, kind));
      if (why !== undefined) return why;
    }
    return undefined;
  });
  return problem === undefined ? READY : notReady(Reason.RetentionPending, problem);
}

/** The streams step's remove and verifyRemoved when the tenant's data is retained. */
export const retainedStreams: Pick<Step<NatsStepDeps>, 'remove' | 'verifyRemoved'> = { remove: retainStreams, verifyRemoved: verifyStreamsRetained };

export const streamsStep: Step<NatsStepDeps> = {
  name: 'streams',
  ensure: ensureStreams,
  verify: verifyStreams,
  remove: removeStreams,
  verifyRemoved: verifyStreamsRemoved,
};
