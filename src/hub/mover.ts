/**
 * The hub's mover (the hub controller's `--moves`, docs/multi-cluster.md "Moving a tenant"). Placement
 * needs no eva component (the engine places the works), but a move needs what no member sees alone:
 * the source's account keys Secret copied to the destination, and each side's progress before the
 * next write. The engine's
 * agents only apply what the hub writes, so reading keys back through the engine would put them on
 * the hub in a work's status; the mover reads them from the source member and writes them to the
 * destination in memory, nowhere else.
 *
 * Each pass (given the tenants' works and Placements): list the decisions and the move records
 * (ConfigMaps in the mover's namespace, where the portal writes nothing), read the two members of each move, decide
 * (multicluster/move.ts) and make at most one write per tenant. Everything is judged again on the next
 * pass, so a crash of the mover, or of either member's operator, at any line resumes where the world is.
 * Members are reached with kubeconfigs the platform keeps in Secrets of the mover's namespace.
 */
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { KubeConfig } from '@kubernetes/client-node';
import { GROUP, RESTORE_FROM_ANNOTATION, RESTORE_FROM_NATS_ANNOTATION } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { deleteIgnoringNotFound, describeApiError, isConflict, Kube, readOptional } from '../adapters/kube.ts';
import type { Logger } from '../log.ts';
import { accountKeysName, keysFromSecret } from '../nats/account-keys.ts';
import { type ManifestWork, TENANT_WORK_LABEL, workName } from '../multicluster/manifest-work.ts';
import { PLACEMENT_GROUP, PLACEMENT_VERSION, WORK_GROUP, WORK_VERSION } from './hub-objects.ts';
import {
  decideMove,
  type FromMember,
  type KeysCustody,
  type MemberTenant,
  type MoveProgress,
  type MoveRecord,
  type MoveStep,
  figures,
  progressAfter,
  type MoveWorld,
  movedKeysMarks,
  worksOf,
  restoringWork,
  settledWork,
  suspendedManifest,
} from '../multicluster/move.ts';
import { decidedCluster, type Placement, type PlacementDecision, placementName } from '../multicluster/placement.ts';
import { tenantWork } from '../multicluster/manifest-work.ts';

/** On a Secret of the mover's namespace: the member cluster (ManagedCluster name) it gives access to. */
export const MEMBER_LABEL = `${GROUP}/member-cluster`;
/** On the move records. */
export const MOVE_LABEL = `${GROUP}/move`;
const RECORD_KEY = 'move.json';
const PROGRESS_KEY = 'progress.json';

/** How the mover reaches one member: its API server, and its NATS as the other members reach it. */
export interface MemberAccess {
  readonly cluster: string;
  readonly kube: Kube;
  readonly natsUrl: string;
  /** Where the member's operator keeps the account keys Secrets (its release namespace). */
  readonly operatorNamespace: string;
}

/** A move's record and progress as its ConfigMap holds them. */
export const moveOfConfigMap = (configMap: V1ConfigMap): StoredMove => ({
  record: JSON.parse(configMap.data?.[RECORD_KEY] ?? '{}') as MoveRecord,
  progress: JSON.parse(configMap.data?.[PROGRESS_KEY] ?? '{}') as MoveProgress,
});

export interface StoredMove {
  readonly record: MoveRecord;
  readonly progress: MoveProgress;
}

export interface MoverOptions {
  readonly hub: Kube;
  /** The mover's own namespace: member Secrets and move records. */
  readonly namespace: string;
  /** Where the portal writes the tenants' Placements. */
  readonly tenantsNamespace: string;
  readonly log: Logger;
  readonly now?: () => Date;
}

const moveRecordName = (tenant: string): string => `eva-move-${tenant}`;

async function fromMember<T>(read: () => Promise<T>): Promise<FromMember<T>> {
  try {
    return { lost: false, value: await read() };
  } catch (err) {
    return { lost: true, why: describeApiError(err) };
  }
}

function memberTenant(tenant: EvaTenant | undefined): MemberTenant | undefined {
  if (tenant === undefined) return undefined;
  const condition = (type: string): { status: string; reason: string; message: string } | undefined => tenant.status?.conditions?.find((c) => c.type === type);
  const stalled = condition('Stalled');
  const annotations = tenant.metadata.annotations ?? {};
  return {
    uid: tenant.metadata.uid ?? '',
    ...(tenant.status?.phase === undefined ? {} : { phase: tenant.status.phase }),
    deleting: tenant.metadata.deletionTimestamp !== undefined,
    restoring: annotations[RESTORE_FROM_ANNOTATION] !== undefined || annotations[RESTORE_FROM_NATS_ANNOTATION] !== undefined,
    ...(condition('Ready')?.status === undefined ? {} : { ready: condition('Ready')?.status }),
    ...(stalled?.status === 'True' ? { stalled: { reason: stalled.reason, message: stalled.message } } : {}),
  };
}

function custodyOf(secret: V1Secret | undefined): KeysCustody | undefined {
  if (secret === undefined) return undefined;
  const stored = keysFromSecret(secret);
  return {
    owner: stored.owner,
    account: stored.keys.account,
    ...(stored.retained === undefined ? {} : { retainedBy: stored.retained.uid }),
    ...(stored.restoredFrom === undefined ? {} : { restoredFrom: stored.restoredFrom }),
  };
}

export class Mover {
  private readonly options: MoverOptions;
  private readonly now: () => Date;
  /** Member clients by their Secret's uid and resourceVersion: rebuilt only when the platform changes the Secret. */
  private readonly clients = new Map<string, MemberAccess>();

  constructor(options: MoverOptions) {
    this.options = options;
    this.now = options.now ?? (() => new Date());
  }

  /** One pass over every tenant placed from the hub (its works and Placements as just listed); a failing tenant is logged, the others go on. */
  async pass(works: readonly ManifestWork[], placements: readonly Placement[]): Promise<void> {
    const [members, moves, decided] = await Promise.all([this.members(), this.moves(), this.decisions(placements)]);
    const tenants = new Set([...moves.keys(), ...decided.keys()]);
    for (const tenant of tenants) {
      try {
        await this.reconcile(tenant, { members, move: moves.get(tenant), decided: decided.get(tenant), works: worksOf(works, tenant) });
      } catch (err) {
        this.options.log.error({ tenant, err: describeApiError(err) }, 'move pass failed for this tenant; retried on the next pass');
      }
    }
  }

  private async reconcile(tenant: string, seen: { members: Map<string, MemberAccess>; move: StoredMove | undefined; decided: string | undefined; works: ManifestWork[] }): Promise<void> {
    const base: MoveWorld = { tenant, ...(seen.move === undefined ? {} : { record: seen.move.record }), ...(seen.decided === undefined ? {} : { decided: seen.decided }), works: seen.works };
    let step = seen.move === undefined ? decideMove(base, this.now().toISOString()) : { do: 'look' as const, from: seen.move.record.from, to: seen.move.record.to };
    if (step.do === 'look') step = decideMove({ ...base, ...(await this.readMembers(tenant, seen.members, step.from, step.to, base)) }, this.now().toISOString());
    if (step.do === 'nothing' || step.do === 'look') return;
    await this.act(step, tenant, seen.move, seen.members);
  }

  private async readMembers(tenant: string, members: Map<string, MemberAccess>, from: string, to: string, world: MoveWorld): Promise<Partial<MoveWorld>> {
    const code = (world.record?.manifest ?? world.works[0]?.spec.workload.manifests[0])?.spec.capsuleCode ?? '';
    const side = async (cluster: string): Promise<[FromMember<MemberTenant | undefined>, FromMember<KeysCustody | undefined>]> => {
      const member = members.get(cluster);
      if (member === undefined) {
        const lost = { lost: true as const, why: `no Secret labelled ${MEMBER_LABEL}=${cluster} in namespace ${this.options.namespace} gives the mover access to it` };
        return [lost, lost];
      }
      return Promise.all([
        fromMember(async () => memberTenant(await member.kube.getTenant(tenant))),
        fromMember(async () => custodyOf(await readOptional(() => member.kube.core.readNamespacedSecret({ name: accountKeysName(code), namespace: member.operatorNamespace })))),
      ]);
    };
    const [[source, sourceKeys], [destination, destinationKeys]] = await Promise.all([side(from), side(to)]);
    return { source, sourceKeys, destination, destinationKeys };
  }

  private async act(step: Exclude<MoveStep, { do: 'nothing' | 'look' }>, tenant: string, move: StoredMove | undefined, members: Map<string, MemberAccess>): Promise<void> {
    const log = this.options.log.child({ tenant, step: step.do });
    if (step.do === 'start') {
      await this.writeMove({ record: step.record, progress: { step: 'start' } });
      log.info({ from: step.record.from, to: step.record.to, uid: step.record.fromUid }, 'move started');
      return;
    }
    if (move === undefined) throw new Error(`step ${step.do} without a move record`);
    const at = this.now().toISOString();
    if (step.do === 'wait') {
      // Written when it changes: a move waiting on a member writes nothing each pass.
      if (move.progress.reason === step.reason && move.progress.message === step.message) return;
      await this.writeProgress(move, { ...move.progress, step: 'wait', reason: step.reason, message: step.message });
      log.info({ reason: step.reason }, step.message);
      return;
    }
    const member = (cluster: string): MemberAccess => {
      const found = members.get(cluster);
      if (found === undefined) throw new Error(`no access to member ${cluster}`);
      return found;
    };
    // Recorded before the write: a crash after it repeats the write (each is idempotent), and the
    // downtime is counted from before the source was told to stop.
    const progress = progressAfter(move.progress, step.do, at);
    if (JSON.stringify(progress) !== JSON.stringify(move.progress)) await this.writeProgress(move, progress);
    if (step.do !== 'finish') await this.write(step.do, move.record, member, at);
    log.info({ from: move.record.from, to: move.record.to, ...(step.do === 'finish' ? figures(progress, move.record, at) : {}) }, step.do === 'finish' ? 'move finished' : 'move step done');
  }

  /** The one write of a step (judged again on the next pass whatever happens after it). */
  private async write(step: Exclude<MoveStep['do'], 'nothing' | 'look' | 'start' | 'wait' | 'finish'>, record: MoveRecord, member: (cluster: string) => MemberAccess, at: string): Promise<void> {
    const hub = this.options.hub;
    switch (step) {
      case 'suspend-source':
        await hub.apply(tenantWork(suspendedManifest(record.manifest), record.from, record.executor));
        return;
      case 'copy-keys':
        return this.copyKeys(record, member(record.from), member(record.to), at);
      case 'place-destination':
        await hub.apply(restoringWork(record, member(record.from).natsUrl));
        return;
      case 'remove-source':
        return deleteIgnoringNotFound(() => hub.custom.deleteNamespacedCustomObject({ group: WORK_GROUP, version: WORK_VERSION, plural: 'manifestworks', namespace: record.from, name: workName(record.tenant) }));
      case 'unannotate-destination':
      case 'settle-destination':
        await hub.apply(settledWork(record, step === 'settle-destination'));
        return;
    }
  }

  /** The keys Secret as the source holds it, created on the destination marked retained by the source tenant (data in memory only). */
  private async copyKeys(record: MoveRecord, source: MemberAccess, destination: MemberAccess, at: string): Promise<void> {
    const name = accountKeysName(record.manifest.spec.capsuleCode);
    const held = await source.kube.core.readNamespacedSecret({ name, namespace: source.operatorNamespace });
    const copy: V1Secret = {
      metadata: { name, namespace: destination.operatorNamespace, labels: { ...held.metadata?.labels }, annotations: movedKeysMarks(record, record.manifest.spec.capsuleCode, at) },
      ...(held.type === undefined ? {} : { type: held.type }),
      ...(held.data === undefined ? {} : { data: held.data }),
    };
    try {
      await destination.kube.core.createNamespacedSecret({ namespace: destination.operatorNamespace, body: copy });
    } catch (err) {
      // Created by an earlier pass that crashed before it saw the answer: the next pass judges what is there.
      if (!isConflict(err)) throw err;
    }
  }

  // ---- the hub's objects ------------------------------------------------------------------------------

  private async writeMove(move: StoredMove): Promise<void> {
    const configMap: V1ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: moveRecordName(move.record.tenant), namespace: this.options.namespace, labels: { [MOVE_LABEL]: move.record.tenant } },
      data: { [RECORD_KEY]: JSON.stringify(move.record), [PROGRESS_KEY]: JSON.stringify(move.progress) },
    };
    await this.options.hub.apply(configMap);
  }

  private writeProgress(move: StoredMove, progress: MoveProgress): Promise<void> {
    return this.writeMove({ record: move.record, progress });
  }

  /** The moves under way, by tenant (finished ones are history). */
  private async moves(): Promise<Map<string, StoredMove>> {
    const list = await this.options.hub.core.listNamespacedConfigMap({ namespace: this.options.namespace, labelSelector: MOVE_LABEL });
    const moves = list.items.map(moveOfConfigMap);
    return new Map(moves.filter((m) => m.progress.finishedAt === undefined).map((m) => [m.record.tenant, m]));
  }

  /** Each tenant Placement's decided member, by tenant. */
  private async decisions(placements: readonly Placement[]): Promise<Map<string, string | undefined>> {
    const decisions = (await this.options.hub.custom.listNamespacedCustomObject({ group: PLACEMENT_GROUP, version: PLACEMENT_VERSION, namespace: this.options.tenantsNamespace, plural: 'placementdecisions' })) as { items: PlacementDecision[] };
    return new Map(
      placements.map((p) => {
        const tenant = p.metadata.labels[TENANT_WORK_LABEL] ?? '';
        const mine = decisions.items.filter((d) => d.metadata.labels?.['cluster.open-cluster-management.io/placement'] === placementName(tenant));
        return [tenant, decidedCluster(mine)];
      }),
    );
  }

  /** The members the platform gave the mover access to: Secrets labelled with the member's name (kubeconfig, natsUrl, operatorNamespace). */
  private async members(): Promise<Map<string, MemberAccess>> {
    const list = await this.options.hub.core.listNamespacedSecret({ namespace: this.options.namespace, labelSelector: MEMBER_LABEL });
    const members = new Map<string, MemberAccess>();
    const current = new Set<string>();
    for (const secret of list.items) {
      const access = this.memberAccess(secret);
      if (access === undefined) continue;
      members.set(access.cluster, access);
      current.add(secretVersion(secret));
    }
    // Clients of Secrets changed or deleted since are dropped: a revoked kubeconfig is not kept in memory.
    for (const version of this.clients.keys()) if (!current.has(version)) this.clients.delete(version);
    return members;
  }

  private memberAccess(secret: V1Secret): MemberAccess | undefined {
    const { metadata = {}, data: raw = {} } = secret;
    const cluster = metadata.labels?.[MEMBER_LABEL] ?? '';
    const data = (key: string): string | undefined => decoded(raw[key]);
    const [kubeconfig, natsUrl] = [data('kubeconfig'), data('natsUrl')];
    if (kubeconfig === undefined || natsUrl === undefined) {
      this.options.log.warn({ secret: metadata.name, cluster }, 'member Secret lacks kubeconfig or natsUrl; that member cannot take part in moves');
      return undefined;
    }
    const version = secretVersion(secret);
    const access = this.clients.get(version) ?? memberClient(cluster, kubeconfig, natsUrl, data('operatorNamespace') ?? 'eva-system');
    this.clients.set(version, access);
    return access;
  }
}

const secretVersion = ({ metadata = {} }: V1Secret): string => `${metadata.uid ?? ''}/${metadata.resourceVersion ?? ''}`;

function memberClient(cluster: string, kubeconfig: string, natsUrl: string, operatorNamespace: string): MemberAccess {
  const config = new KubeConfig();
  config.loadFromString(kubeconfig);
  return { cluster, kube: new Kube(config, 'eva-mover'), natsUrl, operatorNamespace };
}

const decoded = (value: string | undefined): string | undefined => (value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8'));
