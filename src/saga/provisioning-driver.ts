/**
 * Runs the saga for one reconcile: restores the machine from the snapshot persisted in the tenant's
 * status, sends it one event, lets it run until it rests, and reports progress when the condition
 * being worked on changes; the next step starts once that report is handled (written, or held back by
 * the status writer's cadence), and never after a refused write. A crash at any point resumes at the
 * last persisted step, which is safe because every step is idempotent.
 */
import { type AnyMachineSnapshot, createActor, fromPromise, waitFor } from 'xstate';
import { ShutdownError } from '../errors.ts';
import { type DriftReport, STEP_NAMES, type StepName, type StepOutcome } from '../steps/step.ts';
import { conditionOf } from '../steps/registry.ts';
import type { SagaStage, SagaView } from './view.ts';
import { REST_TAG, type SagaEmitted, type SagaEvent, tenantSagaMachine } from './provisioning-machine.ts';

export interface SagaIo {
  runStep(step: StepName): Promise<StepOutcome>;
  checkDrift(): Promise<DriftReport>;
  /** Called (serially, awaited before the saga rests) whenever the saga moved to another state. */
  onProgress(view: SagaView, persisted: unknown): Promise<void>;
  onEmitted(event: SagaEmitted): void;
}

export interface SagaResult {
  view: SagaView;
  persisted: unknown;
}

const STAGES: readonly SagaStage[] = ['requested', 'provisioning', 'waiting', 'failed', 'interrupted', 'active', 'checking', 'degraded'];

function isStage(value: string): value is SagaStage {
  return (STAGES as readonly string[]).includes(value);
}

/** The provisioning history state: the step a RECONCILE resumes at. */
const RESUME_STATE_ID = 'tenant.provisioning.resume';

/** The step an interrupted saga resumes at, from its history value (state nodes live, `{ id }` restored). */
function resumeStepOf(snapshot: AnyMachineSnapshot): StepName | undefined {
  const history = snapshot.historyValue as Readonly<Record<string, readonly { id: string }[] | undefined>>;
  const step = history[RESUME_STATE_ID]?.[0]?.id.split('.').pop();
  return STEP_NAMES.find((name) => name === step);
}

export function viewOf(snapshot: AnyMachineSnapshot): SagaView {
  const value: unknown = snapshot.value;
  const context = snapshot.context as { problem?: SagaView['problem']; wasActive?: boolean; updating?: boolean };
  const view: SagaView = { stage: 'requested', wasActive: context.wasActive === true };
  if (context.updating === true) view.updating = true;
  if (context.problem) view.problem = context.problem;
  if (typeof value === 'string' && isStage(value)) view.stage = value;
  if (view.stage === 'interrupted') {
    const step = resumeStepOf(snapshot);
    if (step !== undefined) view.currentStep = step;
  }
  if (typeof value === 'object' && value !== null && 'provisioning' in value) {
    view.stage = 'provisioning';
    view.currentStep = value.provisioning as StepName;
  }
  return view;
}

/** Both views are running steps of one condition (e.g. account then streams, both Provisioned). */
function sameCondition(before: SagaView | undefined, after: SagaView): boolean {
  if (before?.stage !== 'provisioning' || after.stage !== 'provisioning') return false;
  if (before.currentStep === undefined || after.currentStep === undefined) return false;
  return conditionOf(before.currentStep) === conditionOf(after.currentStep);
}

/** The step a restored saga rests waiting on, if it is waiting. */
function waitingStepOf(snapshot: AnyMachineSnapshot): StepName | undefined {
  const view = viewOf(snapshot);
  return view.stage === 'waiting' ? view.problem?.step : undefined;
}

function machineFor(io: SagaIo): typeof tenantSagaMachine {
  return tenantSagaMachine.provide({
    actors: {
      runStep: fromPromise<StepOutcome, { step: StepName }>(({ input }) => io.runStep(input.step)),
      checkDrift: fromPromise<DriftReport>(() => io.checkDrift()),
    },
  });
}

/**
 * Restores an actor from a persisted snapshot. A snapshot this machine cannot read (e.g. written
 * by another operator version) is dropped: the saga starts over, which idempotent steps make safe.
 */
function restore(machine: typeof tenantSagaMachine, persisted: unknown): ReturnType<typeof createActor<typeof tenantSagaMachine>> {
  if (persisted !== undefined && persisted !== null) {
    try {
      const actor = createActor(machine, { snapshot: persisted as never });
      const value: unknown = actor.getSnapshot().value;
      if (value !== undefined) return actor;
    } catch {
      // fall through to a fresh start
    }
  }
  return createActor(machine);
}

export async function runSaga(persisted: unknown, event: SagaEvent, io: SagaIo): Promise<SagaResult> {
  // Every step waits until the report announcing it is handled (written, or held back by the cadence):
  // the subscription below queues the report in the same transition.
  const persistedFirst = async (): Promise<void> => {
    await new Promise((resolve) => setImmediate(resolve));
    await progress;
    if (writeFailure !== undefined) throw new ShutdownError('status could not be persisted');
  };
  const gated: SagaIo = {
    ...io,
    runStep: async (step) => {
      await persistedFirst();
      return io.runStep(step);
    },
  };
  const actor = restore(machineFor(gated), persisted);
  actor.on('*', (emitted) => {
    io.onEmitted(emitted);
  });
  let progress: Promise<void> = Promise.resolve();
  let writeFailure: Error | undefined;
  // The state the saga starts in is not progress. Restored from status, it is persisted there already;
  // reported again, it would stamp the current generation on it: Active (Ready) on a changed spec the
  // saga never ran. Fresh ('requested'), the event sent next moves the saga on at once.
  let lastValue = JSON.stringify(actor.getSnapshot().value);
  let resumingWaitAt = waitingStepOf(actor.getSnapshot());
  let lastReported: SagaView | undefined;
  actor.subscribe((snapshot) => {
    const value = JSON.stringify(snapshot.value);
    if (value === lastValue) return;
    lastValue = value;
    const view = viewOf(snapshot);
    // Taking up again the step the tenant was waiting on is no news: the stored status already says
    // where it stands and why, and a crash resumes at that step either way. Written, it would only
    // flip the condition to Progressing and back on every wake-up.
    const resumesWait = view.stage === 'provisioning' && view.currentStep === resumingWaitAt;
    resumingWaitAt = undefined;
    if (resumesWait) return;
    // The next step of the condition being worked on changes no condition: not written. A crash
    // resumes at the first step of the condition instead, which idempotent steps make safe.
    if (sameCondition(lastReported, view)) return;
    lastReported = view;
    const saved: unknown = actor.getPersistedSnapshot();
    progress = progress
      .then(() => io.onProgress(view, saved))
      .catch((err: unknown) => {
        // Without persisted progress no further side effect may start: the next step refuses to
        // run (the saga rests as interrupted) and the reconcile is retried.
        writeFailure ??= err instanceof Error ? err : new Error('status write failed', { cause: err });
      });
  });
  actor.start();
  actor.send(event);
  try {
    const rested = await waitFor(actor, (s) => s.hasTag(REST_TAG) || s.status !== 'active', { timeout: Infinity });
    await progress;
    if (writeFailure !== undefined) throw writeFailure;
    return { view: viewOf(rested), persisted: actor.getPersistedSnapshot() };
  } finally {
    actor.stop();
  }
}
