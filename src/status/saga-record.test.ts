import { createActor, fromPromise, waitFor } from 'xstate';
import { describe, expect, it } from 'vitest';
import type { StepName, StepOutcome } from '../steps/step.ts';
import { tenantSagaMachine } from '../saga/provisioning-machine.ts';
import { sagaRecord, sagaRecordOf } from './saga-record.ts';

/** A machine whose steps finish, or wait at `waitAt`. */
const machineWaitingAt = (waitAt?: StepName) =>
  tenantSagaMachine.provide({
    actors: {
      runStep: fromPromise<StepOutcome, { step: StepName }>(({ input }) =>
        Promise.resolve(input.step === waitAt ? ({ kind: 'pending', reason: 'WaitingForAddress', message: 'no address yet' }) : ({ kind: 'done' }))),
    },
  });

async function restingSnapshot(waitAt?: StepName): Promise<unknown> {
  const actor = createActor(machineWaitingAt(waitAt)).start();
  actor.send({ type: 'RECONCILE' });
  await waitFor(actor, (s) => s.hasTag('rest'), { timeout: 5_000 });
  return actor.getPersistedSnapshot();
}

describe('status.saga', () => {
  it('is compact for kubectl describe: state, the step to resume at, the context, the digest; no XState internals', async () => {
    const record = sagaRecord(await restingSnapshot(), 'sha256:abc');
    expect(record).toEqual({ state: 'active', resumeAt: 'ingress', context: { wasActive: true, updating: false }, specDigest: 'sha256:abc' });
  });

  it('reads back as the snapshot XState persisted, resting or waiting at a step', async () => {
    for (const waitAt of [undefined, 'modules'] as const) {
      const snapshot = await restingSnapshot(waitAt);
      const back = sagaRecordOf({ saga: JSON.parse(JSON.stringify(sagaRecord(snapshot, 'd'))) as Record<string, unknown> });
      expect(back).toEqual({ snapshot: JSON.parse(JSON.stringify(snapshot)) as unknown, specDigest: 'd' });
    }
  });

  it('resumes a restored saga at the remembered step', async () => {
    const stored = sagaRecord(await restingSnapshot('modules'), 'd');
    expect(stored).toMatchObject({ state: 'waiting', resumeAt: 'modules' });
    const restored = createActor(machineWaitingAt(), { snapshot: sagaRecordOf({ saga: stored }).snapshot as never }).start();
    const started: string[] = [];
    restored.subscribe((s) => started.push(JSON.stringify(s.value)));
    restored.send({ type: 'RECONCILE' });
    await waitFor(restored, (s) => s.matches('active'), { timeout: 5_000 });
    expect(started[0]).toBe(JSON.stringify({ provisioning: 'modules' }));
  });

  it('still reads the whole snapshot an older operator stored, and keeps one it cannot make compact whole', () => {
    expect(sagaRecordOf({ saga: { snapshot: { any: 1 }, specDigest: 'd' } })).toEqual({ snapshot: { any: 1 }, specDigest: 'd' });
    expect(sagaRecord({ status: 'done', value: 'x', context: {} }, 'd')).toEqual({ snapshot: { status: 'done', value: 'x', context: {} }, specDigest: 'd' });
    expect(sagaRecordOf({ saga: { state: 3 } })).toEqual({ snapshot: undefined, specDigest: undefined });
  });
});
