import { describe, expect, it } from 'vitest';
import { Reason } from '../api/reasons.ts';
import type { StepName } from '../steps/step.ts';
import type { SagaView } from './view.ts';
import { createActor } from 'xstate';
import { runSaga, type SagaIo, viewOf } from './provisioning-driver.ts';
import { type SagaEmitted, tenantSagaMachine } from './provisioning-machine.ts';
import { ShutdownError } from '../errors.ts';
import type { StepOutcome } from '../steps/step.ts';

function io(outcome: (step: StepName) => StepOutcome = () => ({ kind: 'done' })) {
  const progress: SagaView[] = [];
  const emitted: SagaEmitted[] = [];
  const steps: StepName[] = [];
  const sagaIo: SagaIo = {
    runStep: (step) => {
      steps.push(step);
      return Promise.resolve(outcome(step));
    },
    checkDrift: () => Promise.resolve({ inSync: true }),
    onProgress: (view) => {
      progress.push(view);
      return Promise.resolve();
    },
    onEmitted: (e) => emitted.push(e),
  };
  return { sagaIo, progress, emitted, steps };
}

describe('runSaga', () => {
  it('reports progress when the condition being worked on changes, and rests in active', async () => {
    const t = io();
    const result = await runSaga(undefined, { type: 'RECONCILE' }, t.sagaIo);
    expect(result.view).toEqual({ stage: 'active', wasActive: true });
    expect(t.progress.map((v) => v.currentStep ?? v.stage)).toEqual([
      // Once per condition: quotas and network (NamespaceReady), streams, alerts and record (Provisioned),
      // modules and revoke (ModulesDeployed) run under the report of their condition's first step. The
      // state the saga starts in ('requested') is no progress: the event sent next moves it on at once.
      'namespace', 'account', 'seed', 'credentials', 'ingress', 'active',
    ]);
    expect(t.steps).toEqual(['namespace', 'quotas', 'network', 'account', 'streams', 'alerts', 'record', 'seed', 'credentials', 'modules', 'revoke', 'ingress']);
    expect(t.emitted.at(-1)?.type).toBe('ProvisioningComplete');
  });

  it('resumes from the persisted snapshot of an earlier run (JSON round trip, as in status)', async () => {
    const first = io((step) => (step === 'modules' ? { kind: 'pending', reason: Reason.DeploymentUnavailable, message: 'm' } : { kind: 'done' }));
    const waiting = await runSaga(undefined, { type: 'RECONCILE' }, first.sagaIo);
    expect(waiting.view.stage).toBe('waiting');
    const stored = JSON.parse(JSON.stringify(waiting.persisted)) as unknown;

    const second = io();
    const done = await runSaga(stored, { type: 'RECONCILE' }, second.sagaIo);
    expect(done.view.stage).toBe('active');
    expect(second.steps).toEqual(['modules', 'revoke', 'ingress']);
    // Taking the waited-on step up again is not reported (the stored status already says it waits there).
    expect(second.progress.map((v) => v.currentStep ?? v.stage)).toEqual(['revoke', 'ingress', 'active']);
  });

  it('reports a step it waits on again when it still waits (a new reason is news)', async () => {
    const pending = (reason: Reason) => (step: StepName): StepOutcome => (step === 'modules' ? { kind: 'pending', reason, message: 'm' } : { kind: 'done' });
    const first = io(pending(Reason.DeploymentUnavailable));
    const stored = JSON.parse(JSON.stringify((await runSaga(undefined, { type: 'RECONCILE' }, first.sagaIo)).persisted)) as unknown;
    const second = io(pending(Reason.QuotaExceeded));
    const still = await runSaga(stored, { type: 'RECONCILE' }, second.sagaIo);
    expect(still.view.stage).toBe('waiting');
    expect(second.progress.map((v) => `${v.stage}:${v.problem?.reason ?? ''}`)).toEqual(['waiting:QuotaExceeded']);
  });

  it('never reports the restored snapshot: a spec change on an Active tenant is not Active before the saga ran', async () => {
    const first = io();
    const active = await runSaga(undefined, { type: 'RECONCILE' }, first.sagaIo);
    const stored = JSON.parse(JSON.stringify(active.persisted)) as unknown;

    const second = io();
    const done = await runSaga(stored, { type: 'SPEC_CHANGED' }, second.sagaIo);
    expect(done.view.stage).toBe('active');
    // The status writer stamps the current generation on every report: the first must not be 'active'.
    expect(second.progress.map((v) => v.currentStep ?? v.stage)).toEqual([
      'namespace', 'account', 'seed', 'credentials', 'ingress', 'active',
    ]);
  });

  it('an interrupted saga names the step it resumes at, live and after a JSON round trip', async () => {
    const first = io();
    first.sagaIo.runStep = (step) => (step === 'alerts' ? Promise.reject(new ShutdownError('stop')) : Promise.resolve({ kind: 'done' }));
    const interrupted = await runSaga(undefined, { type: 'RECONCILE' }, first.sagaIo);
    expect(interrupted.view).toEqual({ stage: 'interrupted', currentStep: 'alerts', wasActive: false });
    expect(first.progress.at(-1)).toEqual({ stage: 'interrupted', currentStep: 'alerts', wasActive: false });
    const stored = JSON.parse(JSON.stringify(interrupted.persisted)) as unknown;
    const restored = createActor(tenantSagaMachine, { snapshot: stored as never });
    expect(viewOf(restored.getSnapshot())).toEqual({ stage: 'interrupted', currentStep: 'alerts', wasActive: false });
  });

  it('starts over when the persisted snapshot is unreadable', async () => {
    const t = io();
    const result = await runSaga({ value: { nonsense: true }, status: 'weird' }, { type: 'RECONCILE' }, t.sagaIo);
    expect(result.view.stage).toBe('active');
    expect(t.steps[0]).toBe('namespace');
  });

  it('propagates a failed status write so the reconcile is retried', async () => {
    const t = io();
    let writes = 0;
    t.sagaIo.onProgress = () => (++writes === 2 ? Promise.reject(new Error('conflict')) : Promise.resolve());
    await expect(runSaga(undefined, { type: 'RECONCILE' }, t.sagaIo)).rejects.toThrow('conflict');
    // Writes: namespace (runs quotas and network too), account (fails): the account step
    // must not start unannounced, since a crash would then resume before it.
    expect(t.steps).toEqual(['namespace', 'quotas', 'network']);
  });
});
