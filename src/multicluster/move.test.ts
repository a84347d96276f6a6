import { describe, expect, it } from 'vitest';
import { RESTORE_FROM_ANNOTATION, RESTORE_FROM_NATS_ANNOTATION, RETAINED_MARKS } from '../api/constants.ts';
import { type ManifestWork, type TenantManifest, tenantWork } from './manifest-work.ts';
import { decideMove, figures, type MoveProgress, progressAfter, worksOf, type KeysCustody, type MemberTenant, type MoveRecord, type MoveStep, type MoveWorld, movedKeysMarks, restoringWork, settledWork, suspendedManifest } from './move.ts';

const EXECUTOR = { namespace: 'eva-system', name: 'eva-hub-executor' };
const SOURCE_UID = 'uid-on-eu';
const manifest: TenantManifest = { apiVersion: 'eva.aidonow.com/v1alpha1', kind: 'EvaTenant', metadata: { name: 'acme' }, spec: { capsuleCode: 'ACMECO', tier: 'Starter' } };
const NOW = '2026-12-06T20:00:00.000Z';

const seen = <T>(value: T) => ({ lost: false as const, value });
const active = (uid: string): MemberTenant => ({ uid, phase: 'Active', deleting: false, restoring: false, ready: 'True' });

/** A small world the decisions act on: what each step would leave once the members did their part. */
interface Sim {
  works: ManifestWork[];
  record?: MoveRecord;
  source?: MemberTenant;
  sourceKeys?: KeysCustody;
  destination?: MemberTenant;
  destinationKeys?: KeysCustody;
}

const worldOf = (sim: Sim): MoveWorld => ({
  tenant: 'acme',
  decided: 'member-us',
  works: sim.works,
  ...(sim.record === undefined ? {} : { record: sim.record }),
  source: seen(sim.source),
  sourceKeys: seen(sim.sourceKeys),
  destination: seen(sim.destination),
  destinationKeys: seen(sim.destinationKeys),
});

/** What the step's write leads to, the member's operators and the engine included. */
function apply(sim: Sim, step: MoveStep): void {
  const record = sim.record;
  const others = (cluster: string): ManifestWork[] => sim.works.filter((w) => w.metadata.namespace !== cluster);
  switch (step.do) {
    case 'start':
      sim.record = step.record;
      return;
    case 'suspend-source':
      sim.works = [...others('member-eu'), tenantWork(suspendedManifest(manifest), 'member-eu', EXECUTOR)];
      sim.source = { ...active(SOURCE_UID), phase: 'Suspended' };
      return;
    case 'copy-keys':
      sim.destinationKeys = { owner: SOURCE_UID, account: 'AACC', retainedBy: SOURCE_UID };
      return;
    case 'place-destination':
      if (record === undefined) throw new Error('no record');
      sim.works = [...sim.works, restoringWork(record, 'nats://127.0.0.1:4222')];
      sim.destination = { ...active('uid-on-us'), restoring: true };
      sim.destinationKeys = { owner: 'uid-on-us', account: 'AACC', restoredFrom: SOURCE_UID };
      return;
    case 'remove-source':
      sim.works = others('member-eu');
      delete sim.source;
      delete sim.sourceKeys;
      return;
    case 'unannotate-destination':
    case 'settle-destination':
      if (record === undefined) throw new Error('no record');
      sim.works = [...others('member-us'), settledWork(record, step.do === 'settle-destination')];
      if (sim.destination !== undefined) sim.destination = { ...sim.destination, restoring: false };
      return;
    default:
      throw new Error(`unexpected step ${step.do}`);
  }
}

describe('a move decided from what the hub and the members show (pure)', () => {
  const placed = (): Sim => ({ works: [tenantWork(manifest, 'member-eu', EXECUTOR)], source: active(SOURCE_UID), sourceKeys: { owner: SOURCE_UID, account: 'AACC' } });

  it('starts only when the engine decided another member than the one holding the work, after reading it', () => {
    const unread: MoveWorld = { tenant: 'acme', decided: 'member-us', works: placed().works };
    expect(decideMove(unread, NOW)).toEqual({ do: 'look', from: 'member-eu', to: 'member-us' });
    expect(decideMove({ ...unread, decided: 'member-eu' }, NOW)).toEqual({ do: 'nothing' });
    expect(decideMove({ ...unread, works: [] }, NOW)).toEqual({ do: 'nothing' });
    const step = decideMove(worldOf(placed()), NOW);
    expect(step).toEqual({ do: 'start', record: { tenant: 'acme', from: 'member-eu', to: 'member-us', fromUid: SOURCE_UID, manifest, executor: EXECUTOR, startedAt: NOW } });
    // A source that does not answer: nothing starts.
    expect(decideMove({ ...worldOf(placed()), source: { lost: true, why: 'connection refused' } }, NOW)).toMatchObject({ do: 'wait', reason: 'MemberNotReporting' });
  });

  it('runs suspend, keys, restore, then removes the source only once the destination is Active, and gives the work back as its author wrote it', () => {
    const sim = placed();
    const steps: string[] = [];
    for (let i = 0; i < 12; i += 1) {
      const step = decideMove(worldOf(sim), NOW);
      steps.push(step.do);
      if (step.do === 'finish' || step.do === 'wait') break;
      apply(sim, step);
      // Exactly one member serves the tenant at every point: never the source and the destination both Active.
      expect(sim.source?.phase === 'Active' && sim.destination?.phase === 'Active').toBe(false);
    }
    expect(steps).toEqual(['start', 'suspend-source', 'copy-keys', 'place-destination', 'remove-source', 'unannotate-destination', 'settle-destination', 'finish']);
    expect(sim.works).toEqual([tenantWork(manifest, 'member-us', EXECUTOR)]);
  });

  it('waits while the source suspends and while the destination restores, and says why it is stalled', () => {
    const sim = placed();
    apply(sim, decideMove(worldOf(sim), NOW));
    apply(sim, { do: 'suspend-source' });
    sim.source = { ...active(SOURCE_UID), phase: 'Provisioning' };
    expect(decideMove(worldOf(sim), NOW)).toMatchObject({ do: 'wait', reason: 'SourceSuspending' });
    sim.source = { ...active(SOURCE_UID), phase: 'Suspended' };
    apply(sim, { do: 'copy-keys' });
    apply(sim, { do: 'place-destination' });
    sim.destination = { uid: 'uid-on-us', phase: 'Failed', deleting: false, restoring: true, ready: 'False', stalled: { reason: 'RestoreRefused', message: 'not marked retained' } };
    expect(decideMove(worldOf(sim), NOW)).toMatchObject({ do: 'wait', reason: 'DestinationStalled', message: expect.stringContaining('RestoreRefused') as string });
  });

  it('never removes the source for an Active tenant of that name the keys do not prove restored from it', () => {
    const sim = placed();
    apply(sim, decideMove(worldOf(sim), NOW));
    apply(sim, { do: 'suspend-source' });
    sim.destination = active('someone-else');
    sim.destinationKeys = { owner: 'someone-else', account: 'AOTHER' };
    expect(decideMove(worldOf(sim), NOW)).toMatchObject({ do: 'wait', reason: 'CodeInUseOnDestination' });
    // Same account copied, but taken over by another restore: still not this move's.
    sim.destinationKeys = { owner: 'someone-else', account: 'AACC', restoredFrom: 'another-uid' };
    expect(decideMove(worldOf(sim), NOW)).toMatchObject({ do: 'wait', reason: 'CodeInUseOnDestination' });
  });

  it('halts when a member is lost mid-move, when the source was replaced, or left before the destination restored it', () => {
    const sim = placed();
    apply(sim, decideMove(worldOf(sim), NOW));
    apply(sim, { do: 'suspend-source' });
    expect(decideMove({ ...worldOf(sim), destination: { lost: true, why: 'timeout' } }, NOW)).toMatchObject({ do: 'wait', reason: 'MemberNotReporting', message: expect.stringContaining('member-us') as string });
    expect(decideMove({ ...worldOf(sim), source: seen({ ...active('a-new-uid'), phase: 'Suspended' }) }, NOW)).toMatchObject({ do: 'wait', reason: 'SourceReplaced' });
    expect(decideMove({ ...worldOf(sim), source: seen(undefined) }, NOW)).toMatchObject({ do: 'wait', reason: 'SourceLost' });
  });

  it('writes the destination restoring from the source uid and NATS with the agent\'s rights, and the keys marked retained by the source', () => {
    const record = (decideMove(worldOf(placed()), NOW) as { record: MoveRecord }).record;
    const work = restoringWork(record, 'nats://nats.eu.example:4222');
    expect(work.metadata.namespace).toBe('member-us');
    expect(work.spec.executor).toBeUndefined();
    expect(work.spec.workload.manifests[0]?.metadata.annotations).toEqual({ [RESTORE_FROM_ANNOTATION]: SOURCE_UID, [RESTORE_FROM_NATS_ANNOTATION]: 'nats://nats.eu.example:4222' });
    expect(movedKeysMarks(record, 'ACMECO', NOW)).toEqual({ [RETAINED_MARKS.fromUid]: SOURCE_UID, [RETAINED_MARKS.code]: 'ACMECO', [RETAINED_MARKS.at]: NOW });
    expect(suspendedManifest(manifest).spec).toMatchObject({ lifecycle: 'Suspended', dataRetention: 'Delete', capsuleCode: 'ACMECO' });
  });

  it("counts as a tenant's work only one labelled with its name that carries its EvaTenant", () => {
    const own = tenantWork(manifest, 'member-eu', EXECUTOR);
    const mislabelled = { ...tenantWork({ ...manifest, metadata: { name: 'other' } }, 'member-us', EXECUTOR), metadata: { ...own.metadata, namespace: 'member-us' } };
    expect(worksOf([own, mislabelled], 'acme')).toEqual([own]);
    expect(worksOf([own], 'other')).toEqual([]);
  });

  it('records each time once: the downtime runs from the suspend to the first step after the destination is Active', () => {
    const steps = ['suspend-source', 'copy-keys', 'place-destination', 'remove-source', 'settle-destination', 'finish'] as const;
    let progress: MoveProgress = { step: 'start' };
    steps.forEach((step, i) => {
      progress = progressAfter({ ...progress, reason: 'DestinationRestoring', message: 'waiting' }, step, `2026-12-06T20:00:${String(10 + 8 * i)}.000Z`);
    });
    expect(progress).toEqual({ step: 'finished', suspendedAt: '2026-12-06T20:00:10.000Z', activeAt: '2026-12-06T20:00:34.000Z', finishedAt: '2026-12-06T20:00:50.000Z' });
    const record = { startedAt: '2026-12-06T20:00:00.000Z' } as MoveRecord;
    expect(figures(progress, record, '2026-12-06T20:01:00.000Z')).toEqual({ seconds: 60, downtimeSeconds: 24 });
    expect(figures({ step: 'finished' }, record, '2026-12-06T20:01:00.000Z')).toEqual({ seconds: 60 });
  });

  it('never removes a source whose work was set back from the suspension once the copy began (what it took since is only there)', () => {
    const sim = placed();
    for (const step of ['start', 'suspend-source', 'copy-keys', 'place-destination'] as const) apply(sim, step === 'start' ? decideMove(worldOf(sim), NOW) : { do: step });
    // A portal (GitOps) re-applies its own work: lifecycle Active again.
    const resumedWorks = (): ManifestWork[] => [...sim.works.filter((w) => w.metadata.namespace !== 'member-eu'), tenantWork(manifest, 'member-eu', EXECUTOR)];
    sim.works = resumedWorks();
    expect(decideMove(worldOf(sim), NOW)).toMatchObject({ do: 'wait', reason: 'SourceResumed' });
    sim.destination = { ...active('uid-on-us'), restoring: true };
    expect(decideMove(worldOf(sim), NOW)).toMatchObject({ do: 'wait', reason: 'SourceResumed' });
    // The control: suspended as the move left it, the same Active destination removes the source.
    apply(sim, { do: 'suspend-source' });
    sim.destination = { ...active('uid-on-us'), restoring: true };
    expect(decideMove(worldOf(sim), NOW)).toEqual({ do: 'remove-source' });
    // Before the copy began, a resumed source is simply suspended again.
    const early = placed();
    apply(early, decideMove(worldOf(early), NOW));
    expect(decideMove(worldOf(early), NOW)).toEqual({ do: 'suspend-source' });
  });
});
