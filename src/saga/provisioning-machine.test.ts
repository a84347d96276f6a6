import { describe, expect, it } from 'vitest';
import { Reason } from '../api/reasons.ts';
import { createActor, fromPromise, waitFor, type SnapshotFrom } from 'xstate';
import { DependencyError, InputError } from '../errors.ts';
import type { StepName } from '../steps/step.ts';
import { REST_TAG, tenantSagaMachine } from './provisioning-machine.ts';
import { ShutdownError } from '../errors.ts';
import { type DriftReport, STEP_NAMES, type StepOutcome } from '../steps/step.ts';

type Behaviour = (step: StepName, call: number) => StepOutcome | Error;

function harness(behaviour: Behaviour = () => ({ kind: 'done' }), drift: () => DriftReport = () => ({ inSync: true })) {
  const calls: StepName[] = [];
  const counts = new Map<StepName, number>();
  const machine = tenantSagaMachine.provide({
    actors: {
      runStep: fromPromise<StepOutcome, { step: StepName }>(({ input }) => {
        const call = (counts.get(input.step) ?? 0) + 1;
        counts.set(input.step, call);
        calls.push(input.step);
        const result = behaviour(input.step, call);
        return result instanceof Error ? Promise.reject(result) : Promise.resolve(result);
      }),
      checkDrift: fromPromise<DriftReport>(() => Promise.resolve(drift())),
    },
  });
  return { machine, calls };
}

async function settle(actor: ReturnType<typeof createActor<typeof tenantSagaMachine>>): Promise<SnapshotFrom<typeof tenantSagaMachine>> {
  return waitFor(actor, (s) => s.hasTag(REST_TAG), { timeout: 2000 });
}

describe('tenant saga machine', () => {
  it('runs every step in order, emits events and rests in active', async () => {
    const { machine, calls } = harness();
    const actor = createActor(machine);
    const emitted: string[] = [];
    actor.on('*', (e) => emitted.push(e.type === 'StepCompleted' ? `done:${e.step}` : e.type));
    actor.start();
    expect(actor.getSnapshot().value).toBe('requested');
    actor.send({ type: 'RECONCILE' });
    const snap = await settle(actor);
    expect(snap.value).toBe('active');
    expect(calls).toEqual(['namespace', 'quotas', 'network', 'account', 'streams', 'alerts', 'record', 'seed', 'credentials', 'modules', 'revoke', 'ingress']);
    expect(emitted).toEqual([
      'ProvisioningStarted', 'done:namespace', 'done:quotas', 'done:network', 'done:account', 'done:streams', 'done:alerts', 'done:record', 'done:seed',
      'done:credentials', 'ModuleDeployStarted', 'done:modules', 'done:revoke', 'done:ingress', 'ProvisioningComplete',
    ]);
    expect(snap.context.wasActive).toBe(true);
  });

  it('waits on a pending step and resumes exactly there', async () => {
    const { machine, calls } = harness((step, call) =>
      step === 'modules' && call === 1 ? { kind: 'pending', reason: Reason.DeploymentUnavailable, message: 'orbit-crm 0/1' } : { kind: 'done' },
    );
    const actor = createActor(machine).start();
    actor.send({ type: 'RECONCILE' });
    const waiting = await settle(actor);
    expect(waiting.value).toBe('waiting');
    expect(waiting.context.problem).toMatchObject({ step: 'modules', reason: Reason.DeploymentUnavailable, needsUser: false });
    actor.send({ type: 'RECONCILE' });
    expect((await settle(actor)).value).toBe('active');
    expect(calls.slice(STEP_NAMES.indexOf('modules'))).toEqual(['modules', 'modules', 'revoke', 'ingress']);
  });

  it('marks input errors as needing the user, dependency errors as retryable', async () => {
    const { machine } = harness((step) => (step === 'seed' ? new InputError('UnknownSeedsVersion', 'no 9.9.9') : step === 'streams' ? new DependencyError('NatsUnavailable', 'down') : { kind: 'done' }));
    const actor = createActor(machine).start();
    actor.send({ type: 'RECONCILE' });
    const failed = await settle(actor);
    expect(failed.value).toBe('failed');
    expect(failed.context.problem).toEqual({ step: 'streams', reason: 'NatsUnavailable', message: 'down', needsUser: false });
  });

  it('restores from a persisted snapshot and resumes at the remembered step', async () => {
    let failSeed = true;
    const { machine, calls } = harness((step) => (step === 'seed' && failSeed ? new InputError('UnknownSeedsVersion', 'x') : { kind: 'done' }));
    const first = createActor(machine).start();
    first.send({ type: 'RECONCILE' });
    await settle(first);
    const persisted = JSON.parse(JSON.stringify(first.getPersistedSnapshot())) as unknown;
    first.stop();
    failSeed = false;
    calls.length = 0;

    const restored = createActor(machine, { snapshot: persisted as never }).start();
    expect(restored.getSnapshot().value).toBe('failed');
    restored.send({ type: 'RECONCILE' });
    expect((await settle(restored)).value).toBe('active');
    expect(calls).toEqual(['seed', 'credentials', 'modules', 'revoke', 'ingress']);
  });

  it('stops before a step when shutting down, and resumes that step later', async () => {
    let shutting = true;
    const { machine, calls } = harness((step) => (step === 'record' && shutting ? new ShutdownError('stop') : { kind: 'done' }));
    const actor = createActor(machine).start();
    actor.send({ type: 'RECONCILE' });
    expect((await settle(actor)).value).toBe('interrupted');
    shutting = false;
    actor.send({ type: 'RECONCILE' });
    expect((await settle(actor)).value).toBe('active');
    expect(calls.filter((c) => c === 'record')).toHaveLength(2);
  });

  it('drift check: in sync stays active without running steps', async () => {
    const { machine, calls } = harness();
    const actor = createActor(machine).start();
    actor.send({ type: 'RECONCILE' });
    await settle(actor);
    calls.length = 0;
    actor.send({ type: 'RECONCILE' });
    expect((await settle(actor)).value).toBe('active');
    expect(calls).toEqual([]);
  });

  it('drift check: drift repairs through provisioning, an unavailable check degrades', async () => {
    let report: DriftReport = { inSync: false, step: 'quotas', reason: 'QuotaDrifted', message: 'pods 20 != 5', unavailable: false };
    const { machine, calls } = harness(() => ({ kind: 'done' }), () => report);
    const actor = createActor(machine).start();
    const emitted: string[] = [];
    actor.on('ProvisioningComplete', (e) => emitted.push(e.type));
    actor.send({ type: 'RECONCILE' });
    await settle(actor);
    calls.length = 0;
    actor.send({ type: 'RECONCILE' });
    expect((await settle(actor)).value).toBe('active');
    expect(calls).toHaveLength(STEP_NAMES.length);
    expect(emitted).toEqual(['ProvisioningComplete']);

    report = { inSync: false, step: 'streams', reason: 'NatsUnavailable', message: 'down', unavailable: true };
    actor.send({ type: 'RECONCILE' });
    const degraded = await settle(actor);
    expect(degraded.value).toBe('degraded');
    expect(degraded.context.problem?.reason).toBe('NatsUnavailable');
    report = { inSync: true };
    actor.send({ type: 'RECONCILE' });
    expect((await settle(actor)).value).toBe('active');
  });

  it('a spec change re-runs provisioning from the first step', async () => {
    const { machine, calls } = harness();
    const actor = createActor(machine).start();
    actor.send({ type: 'RECONCILE' });
    await settle(actor);
    calls.length = 0;
    actor.send({ type: 'SPEC_CHANGED' });
    expect((await settle(actor)).value).toBe('active');
    expect(calls[0]).toBe('namespace');
    expect(calls).toHaveLength(STEP_NAMES.length);
  });
});

describe('spec changes once active', () => {
  it('are marked as updating until the tenant is active again', async () => {
    let pending = false;
    const { machine } = harness((step) => (step === 'modules' && pending ? { kind: 'pending', reason: 'DeploymentProgressing', message: 'rolling' } : { kind: 'done' }));
    const actor = createActor(machine).start();
    actor.send({ type: 'RECONCILE' });
    await settle(actor);
    pending = true;
    actor.send({ type: 'SPEC_CHANGED' });
    const waiting = await settle(actor);
    expect(waiting.value).toBe('waiting');
    expect(waiting.context.updating).toBe(true);
    pending = false;
    actor.send({ type: 'RECONCILE' });
    const active = await settle(actor);
    expect(active.value).toBe('active');
    expect(active.context.updating).toBe(false);
  });
});
