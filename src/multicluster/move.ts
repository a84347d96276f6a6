/**
 * Moving a tenant between member clusters with its data (docs/multi-cluster.md, "Moving a tenant"):
 * what the hub's mover decides from what it sees. Pure: observing and acting are src/hub/.
 *
 * A move starts when the engine decided another member than the one holding the tenant's work (the
 * platform changed the tenant's placement: labels, not the engine's own failover, which the Placement
 * tolerates away). Then, one write per pass, each judged again from what is seen:
 *
 *   suspend the source      its work says lifecycle Suspended (modules stopped, their NATS user refused:
 *                           nothing more is written) and dataRetention Delete (for the end)
 *   copy the keys           the account keys Secret, onto the destination, marked retained by the
 *                           source tenant's uid (what a restore there must find)
 *   place the destination   a work restoring from that uid, copying the streams and bucket from the
 *                           source's NATS (restore-from-uid, restore-from-nats: platform controls)
 *   remove the source       once the destination is Active: its work deleted, so the source's operator
 *                           decommissions it with Delete (nothing left there)
 *   settle the destination  its work as the author wrote it: no restore annotations, its executor back
 *
 * One member owns the tenant at any moment: the source until the destination is Active (the source
 * is only suspended meanwhile, so stopping the move leaves it whole), the destination after. A member
 * that does not answer halts the move where it is; it resumes when the member is back.
 */
import { RESTORE_FROM_ANNOTATION, RESTORE_FROM_NATS_ANNOTATION, RETAINED_MARKS } from '../api/constants.ts';
import type { ManifestWork, TenantManifest, WorkExecutor } from './manifest-work.ts';
import { TENANT_WORK_LABEL, tenantWork } from './manifest-work.ts';

/** The move of one tenant, recorded by the mover on the hub (a ConfigMap in its own namespace). */
export interface MoveRecord {
  readonly tenant: string;
  readonly from: string;
  readonly to: string;
  /** The source EvaTenant's uid: what the destination restores from. */
  readonly fromUid: string;
  /** The tenant as its author wrote it, and the executor its work applied as, before the move touched it. */
  readonly manifest: TenantManifest;
  readonly executor?: WorkExecutor;
  readonly startedAt: string;
}

/** What the mover sees of the tenant on a member (undefined: no EvaTenant of that name there). */
export interface MemberTenant {
  readonly uid: string;
  readonly phase?: string;
  readonly deleting: boolean;
  /** The restore annotations the member's EvaTenant still carries. */
  readonly restoring: boolean;
  /** Ready and Stalled, as the member's operator reports them. */
  readonly ready?: string;
  readonly stalled?: { reason: string; message: string };
}

/** Something read from a member: `lost` when the member did not answer. */
export type FromMember<T> = { readonly lost: true; readonly why: string } | { readonly lost: false; readonly value: T };

/** What the account keys Secret of the tenant's code says on a member (undefined: there is none). */
export interface KeysCustody {
  readonly owner: string;
  readonly account: string;
  readonly retainedBy?: string;
  readonly restoredFrom?: string;
}

export interface MoveWorld {
  readonly tenant: string;
  readonly record?: MoveRecord;
  /** The member the engine decided for the tenant's Placement. */
  readonly decided?: string;
  /** The tenant's works on the hub (one per member namespace holding one), those being deleted included. */
  readonly works: readonly ManifestWork[];
  /** Read only when a move is or may be under way. */
  readonly source?: FromMember<MemberTenant | undefined>;
  readonly sourceKeys?: FromMember<KeysCustody | undefined>;
  readonly destination?: FromMember<MemberTenant | undefined>;
  readonly destinationKeys?: FromMember<KeysCustody | undefined>;
}

export type MoveStep =
  | { readonly do: 'nothing' }
  /** The members to read before deciding whether to start. */
  | { readonly do: 'look'; readonly from: string; readonly to: string }
  | { readonly do: 'start'; readonly record: MoveRecord }
  | { readonly do: 'suspend-source' }
  | { readonly do: 'copy-keys' }
  | { readonly do: 'place-destination' }
  | { readonly do: 'remove-source' }
  /** The destination's work without the restore annotations, applied with the agent's own rights (the executor may not remove them). */
  | { readonly do: 'unannotate-destination' }
  /** The destination's work as its author wrote it, with its executor. */
  | { readonly do: 'settle-destination' }
  | { readonly do: 'finish' }
  | { readonly do: 'wait'; readonly reason: string; readonly message: string };

export const MOVE_REASONS = {
  MemberNotReporting: 'MemberNotReporting',
  SourceSuspending: 'SourceSuspending',
  DestinationRestoring: 'DestinationRestoring',
  DestinationStalled: 'DestinationStalled',
  SourceRemoving: 'SourceRemoving',
  DestinationSettling: 'DestinationSettling',
  CodeInUseOnDestination: 'CodeInUseOnDestination',
  SourceReplaced: 'SourceReplaced',
  SourceLost: 'SourceLost',
  SourceResumed: 'SourceResumed',
} as const;

const wait = (reason: keyof typeof MOVE_REASONS, message: string): MoveStep => ({ do: 'wait', reason, message });

const manifestOf = (work: ManifestWork): TenantManifest | undefined => work.spec.workload.manifests[0];
const workIn = (world: MoveWorld, cluster: string): ManifestWork | undefined => world.works.find((w) => w.metadata.namespace === cluster);

/**
 * The works that place tenant `tenant`: labelled so and carrying the EvaTenant of that name. A work
 * labelled with one tenant's name and carrying another's would have the mover read one member's
 * tenant and move the other's work: it is no work of either.
 */
export const worksOf = (works: readonly ManifestWork[], tenant: string): ManifestWork[] =>
  works.filter((w) => w.metadata.labels?.[TENANT_WORK_LABEL] === tenant && w.spec.workload.manifests.length === 1 && manifestOf(w)?.metadata.name === tenant);

/** The tenant as the source's work must say during the move: suspended, and removed without retaining (its data lives on at the destination). */
export function suspendedManifest(manifest: TenantManifest): TenantManifest {
  return { ...manifest, spec: { ...manifest.spec, lifecycle: 'Suspended', dataRetention: 'Delete' } };
}

const isSuspendedForMove = (manifest: TenantManifest | undefined): boolean => manifest?.spec.lifecycle === 'Suspended' && manifest.spec.dataRetention === 'Delete';

/** The destination's work while it restores: the author's tenant, restoring from the source's uid and NATS, applied with the agent's rights. */
export function restoringWork(record: MoveRecord, sourceNats: string): ManifestWork {
  const annotations = { ...record.manifest.metadata.annotations, [RESTORE_FROM_ANNOTATION]: record.fromUid, [RESTORE_FROM_NATS_ANNOTATION]: sourceNats };
  return tenantWork({ ...record.manifest, metadata: { ...record.manifest.metadata, annotations } }, record.to);
}

/** The destination's work once the move is done: the author's, where the tenant now lives; without its executor while the restore annotations are being removed. */
export const settledWork = (record: MoveRecord, withExecutor: boolean): ManifestWork => tenantWork(record.manifest, record.to, withExecutor ? record.executor : undefined);

/** The annotations of the keys Secret copied to the destination: retained by the source tenant (what the restore there checks). */
export const movedKeysMarks = (record: MoveRecord, code: string, at: string): Record<string, string> => ({
  [RETAINED_MARKS.fromUid]: record.fromUid,
  [RETAINED_MARKS.code]: code,
  [RETAINED_MARKS.at]: at,
});

/** Whether the tenant is to move: the engine decided a member other than the one holding its only work. */
function intendedMove(world: MoveWorld): { from: string; to: string } | undefined {
  const [work, ...others] = world.works;
  if (work === undefined || others.length > 0 || world.decided === undefined || world.decided === work.metadata.namespace) return undefined;
  return { from: work.metadata.namespace, to: world.decided };
}

export function decideMove(world: MoveWorld, now: string): MoveStep {
  return world.record === undefined ? decideStart(world, now) : decideNext(world, world.record);
}

function decideStart(world: MoveWorld, now: string): MoveStep {
  const intended = intendedMove(world);
  if (intended === undefined) return { do: 'nothing' };
  const { source } = world;
  if (source === undefined) return { do: 'look', ...intended };
  if (source.lost) return wait('MemberNotReporting', `member ${intended.from} holds ${world.tenant} and does not answer (${source.why}); the move starts when it does`);
  const work = workIn(world, intended.from);
  const manifest = work === undefined ? undefined : manifestOf(work);
  // Not applied there yet, or going: nothing to carry (a placement change before the tenant exists is no move).
  if (source.value === undefined || source.value.deleting || manifest === undefined) return { do: 'nothing' };
  const executor = work?.spec.executor?.subject.serviceAccount;
  return { do: 'start', record: { tenant: world.tenant, ...intended, fromUid: source.value.uid, manifest, ...(executor === undefined ? {} : { executor }), startedAt: now } };
}

function lostMember(world: MoveWorld, record: MoveRecord): MoveStep | undefined {
  const sides = [
    [record.from, world.source],
    [record.from, world.sourceKeys],
    [record.to, world.destination],
    [record.to, world.destinationKeys],
  ] as const;
  for (const [cluster, seen] of sides) {
    if (seen === undefined) throw new Error(`the mover decided ${record.tenant}'s move without reading member ${cluster}`);
    if (seen.lost) return wait('MemberNotReporting', `member ${cluster} does not answer (${seen.why}); the move of ${record.tenant} halts where it is until it does`);
  }
  return undefined;
}

const valueOf = <T>(seen: FromMember<T> | undefined): T | undefined => (seen === undefined || seen.lost ? undefined : seen.value);

function decideNext(world: MoveWorld, record: MoveRecord): MoveStep {
  const lost = lostMember(world, record);
  if (lost !== undefined) return lost;
  const source = valueOf(world.source);
  const destination = valueOf(world.destination);
  if (restoredActive(world, record)) return afterDestinationActive(world, record, source);
  if (source === undefined) return wait('SourceLost', `the EvaTenant ${record.tenant} left member ${record.from} before member ${record.to} restored it; a platform administrator must look (its data may be retained there)`);
  if (source.uid !== record.fromUid) return wait('SourceReplaced', `member ${record.from} holds another EvaTenant ${record.tenant} (uid ${source.uid}, the move began with ${record.fromUid}); the move halts`);
  return towardsDestination(world, record, source, destination);
}

function towardsDestination(world: MoveWorld, record: MoveRecord, source: MemberTenant, destination: MemberTenant | undefined): MoveStep {
  const sourceWork = workIn(world, record.from);
  if (sourceWork !== undefined && !isSuspendedForMove(manifestOf(sourceWork))) return workIn(world, record.to) === undefined ? { do: 'suspend-source' } : resumed(record);
  if (source.phase !== 'Suspended') return wait('SourceSuspending', `member ${record.from} is suspending ${record.tenant} (phase ${source.phase ?? 'unknown'}): nothing is written there from now on`);
  const keys = keysStep(world, record);
  if (keys !== undefined) return keys;
  if (workIn(world, record.to) === undefined) return { do: 'place-destination' };
  if (destination?.stalled !== undefined) return wait('DestinationStalled', `member ${record.to} cannot restore ${record.tenant}: ${destination.stalled.reason}: ${destination.stalled.message}`);
  return wait('DestinationRestoring', `member ${record.to} is restoring ${record.tenant} (phase ${destination?.phase ?? 'not applied yet'}); member ${record.from} holds it, suspended`);
}

/** The keys on the destination: copied if absent; another tenant's there halt the move. */
function keysStep(world: MoveWorld, record: MoveRecord): MoveStep | undefined {
  const keys = valueOf(world.destinationKeys);
  if (keys === undefined) return { do: 'copy-keys' };
  const ours = keys.account === valueOf(world.sourceKeys)?.account && (keys.owner === record.fromUid || keys.restoredFrom === record.fromUid);
  return ours ? undefined : wait('CodeInUseOnDestination', `member ${record.to} holds other NATS data under ${record.tenant}'s capsule code (account ${keys.account}); the move halts`);
}

/**
 * The destination holds the tenant: its EvaTenant is Active, and its keys record proves it took over
 * the source's uid (an unrelated tenant of the same name there proves nothing).
 */
function restoredActive(world: MoveWorld, record: MoveRecord): boolean {
  const destination = valueOf(world.destination);
  const keys = valueOf(world.destinationKeys);
  return destination?.phase === 'Active' && destination.ready === 'True' && keys?.owner === destination.uid && keys.restoredFrom === record.fromUid;
}

/**
 * The source's work was set back from the move's suspension after the copy began: what the tenant
 * wrote since is only on the source, so nothing is removed and a platform administrator decides.
 */
const resumed = (record: MoveRecord): MoveStep =>
  wait('SourceResumed', `the work of ${record.tenant} on member ${record.from} was changed from the move's suspension after member ${record.to} began copying; the source is not removed (what it took since would be lost): suspend it again to go on, or delete this move's record and the destination's work to stay`);

function afterDestinationActive(world: MoveWorld, record: MoveRecord, source: MemberTenant | undefined): MoveStep {
  const sourceWork = workIn(world, record.from);
  if (sourceWork !== undefined) return isSuspendedForMove(manifestOf(sourceWork)) ? { do: 'remove-source' } : resumed(record);
  if (source !== undefined || valueOf(world.sourceKeys) !== undefined) return wait('SourceRemoving', `member ${record.from} is removing ${record.tenant}'s copy`);
  return settling(world, record);
}

/** The restore annotations off the destination (with the agent's rights), then the author's work with its executor. */
function settling(world: MoveWorld, record: MoveRecord): MoveStep {
  const work = workIn(world, record.to);
  const executor = work?.spec.executor?.subject.serviceAccount;
  if (valueOf(world.destination)?.restoring === true) {
    const unannotated = executor === undefined && !hasRestoreAnnotations(work);
    return unannotated ? wait('DestinationSettling', `member ${record.to} is removing the restore annotations of ${record.tenant}`) : { do: 'unannotate-destination' };
  }
  return hasRestoreAnnotations(work) || !sameExecutor(executor, record.executor) ? { do: 'settle-destination' } : { do: 'finish' };
}

const sameExecutor = (a: WorkExecutor | undefined, b: WorkExecutor | undefined): boolean => a?.name === b?.name && a?.namespace === b?.namespace;

function hasRestoreAnnotations(work: ManifestWork | undefined): boolean {
  const annotations = work === undefined ? undefined : manifestOf(work)?.metadata.annotations;
  return annotations?.[RESTORE_FROM_ANNOTATION] !== undefined || annotations?.[RESTORE_FROM_NATS_ANNOTATION] !== undefined;
}

// ---- the record of a move's progress -------------------------------------------------------------

/** What the record says of the move's progress: the figures a move is judged by, and where it waits. */
export interface MoveProgress {
  readonly step: string;
  readonly reason?: string;
  readonly message?: string;
  /** When the source was suspended: the tenant serves nothing from then on. */
  readonly suspendedAt?: string;
  /** When the destination was first seen Active (the downtime ends). */
  readonly activeAt?: string;
  readonly finishedAt?: string;
}

/** The record after a step: its name, and the times the figures are read from (each set once). */
export function progressAfter(previous: MoveProgress, step: Exclude<MoveStep['do'], 'nothing' | 'look' | 'start' | 'wait'>, at: string): MoveProgress {
  const { suspendedAt, activeAt } = previous;
  return {
    step: step === 'finish' ? 'finished' : step,
    ...(suspendedAt !== undefined || step === 'suspend-source' ? { suspendedAt: suspendedAt ?? at } : {}),
    // The first step after the destination is Active is the source's removal.
    ...(activeAt !== undefined || step === 'remove-source' ? { activeAt: activeAt ?? at } : {}),
    ...(step === 'finish' ? { finishedAt: at } : {}),
  };
}

/** A finished move's figures, in seconds: how long it took, and how long the tenant served nothing. */
export function figures(progress: MoveProgress, record: MoveRecord, finishedAt: string): { seconds: number; downtimeSeconds?: number } {
  const seconds = (from: string, to: string): number => (Date.parse(to) - Date.parse(from)) / 1000;
  const downtime = progress.suspendedAt !== undefined && progress.activeAt !== undefined ? { downtimeSeconds: seconds(progress.suspendedAt, progress.activeAt) } : {};
  return { seconds: seconds(record.startedAt, finishedAt), ...downtime };
}
