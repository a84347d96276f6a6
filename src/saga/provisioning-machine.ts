/**
 * The tenant saga: one XState machine that owns the ORDER of provisioning and nothing else. Side
 * effects live in src/steps; the driver (provisioning-driver.ts) provides the actors and persists snapshots.
 *
 *   requested -> provisioning(one state per step, in STEP_NAMES order: namespace ... ingress) -> active
 *   active --RECONCILE--> checking --in sync--> active
 *                                  --drifted--> provisioning (repair)   --check failed--> degraded
 *   a step that is not done yet -> waiting; a step that failed -> failed; shutdown -> interrupted
 *   (resting states: the driver persists, then requeues; RECONCILE resumes at the remembered step)
 */
import { assign, emit, enqueueActions, fromPromise, setup } from 'xstate';
import { type DriftReport, STEP_NAMES, type StepName, type StepOutcome } from '../steps/step.ts';
import { STEP_DESCRIPTORS, type StepStartedEvent } from '../steps/registry.ts';
import { problemOf, ShutdownError } from '../errors.ts';
import type { Reason } from '../api/reasons.ts';

export interface StepProblem {
  step: StepName;
  reason: Reason;
  message: string;
  /** InputError: a human must change something; otherwise it is retried with backoff. */
  needsUser: boolean;
}

export interface SagaContext {
  /** Set while a step waits or failed, or the drift check found a problem; cleared on progress. */
  problem?: StepProblem;
  /** Whether the tenant ever reached Active (a later failure is Degraded, not Provisioning). */
  wasActive: boolean;
  /** Applying a spec change the user asked for (not repairing drift): shown as Provisioning. */
  updating?: boolean;
}

export type SagaEvent = { type: 'RECONCILE' } | { type: 'SPEC_CHANGED' };

/** A step's own events say whether the tenant had been Active (a change or a repair) or is new. */
export type SagaEmitted =
  | { type: 'ProvisioningStarted' }
  | { type: 'StepCompleted'; step: StepName; wasActive: boolean }
  | { type: StepStartedEvent; wasActive: boolean }
  | { type: 'ProvisioningComplete' };

export const REST_TAG = 'rest';

interface DoneEvent {
  output: StepOutcome;
}
interface ErrorEvent {
  error: unknown;
}

function problemFromError(step: StepName, error: unknown): StepProblem {
  return { step, ...problemOf(error) };
}

function driftProblem(report: DriftReport): StepProblem | undefined {
  return report.inSync ? undefined : { step: report.step, reason: report.reason, message: report.message, needsUser: false };
}

const saga = setup({
  types: {
    context: {} as SagaContext,
    events: {} as SagaEvent,
    emitted: {} as SagaEmitted,
    tags: {} as typeof REST_TAG,
  },
  actors: {
    // Placeholders: the driver provides the real ones with machine.provide().
    runStep: fromPromise<StepOutcome, { step: StepName }>(() => Promise.reject(new Error('runStep not provided'))),
    checkDrift: fromPromise<DriftReport>(() => Promise.reject(new Error('checkDrift not provided'))),
  },
  actions: {
    markUpdating: assign({ updating: true }),
  },
  guards: {
    stepPending: (_, params: DoneEvent) => params.output.kind === 'pending',
    shuttingDown: (_, params: ErrorEvent) => params.error instanceof ShutdownError,
    inSync: (_, params: { output: DriftReport }) => params.output.inSync,
    checkUnavailable: (_, params: { output: DriftReport }) => !params.output.inSync && params.output.unavailable,
  },
});

/** A state node of this machine: XState checks it against the actors, guards, events and tags above. */
type SagaStateConfig = Parameters<typeof saga.createStateConfig>[0];

function stepState(step: StepName, next: string): SagaStateConfig {
  const started = STEP_DESCRIPTORS[step].startedEvent;
  return saga.createStateConfig({
    entry: started === null ? [] : emit(({ context }) => ({ type: started, wasActive: context.wasActive })),
    invoke: {
      src: 'runStep',
      input: { step },
      onDone: [
        {
          guard: { type: 'stepPending', params: ({ event }) => ({ output: event.output }) },
          target: '#tenant.waiting',
          actions: assign({
            problem: ({ event }) =>
              event.output.kind === 'pending'
                ? { step, reason: event.output.reason, message: event.output.message, needsUser: false }
                : undefined,
          }),
        },
        {
          target: next,
          actions: [assign({ problem: undefined }), emit(({ context }) => ({ type: 'StepCompleted' as const, step, wasActive: context.wasActive }))],
        },
      ],
      onError: [
        {
          guard: { type: 'shuttingDown', params: ({ event }) => ({ error: event.error }) },
          target: '#tenant.interrupted',
        },
        {
          target: '#tenant.failed',
          actions: assign({ problem: ({ event }) => problemFromError(step, event.error) }),
        },
      ],
    },
  });
}

function provisioningStates(): Record<string, SagaStateConfig> {
  const states: Record<string, SagaStateConfig> = { resume: { type: 'history' } };
  STEP_NAMES.forEach((step, index) => {
    const next = STEP_NAMES[index + 1];
    states[step] = stepState(step, next ?? '#tenant.active');
  });
  return states;
}

const applySpecChange = { target: '#tenant.provisioning', actions: 'markUpdating' as const };
const resumeProvisioning = { RECONCILE: '#tenant.provisioning.resume', SPEC_CHANGED: applySpecChange };

export const tenantSagaMachine = saga.createMachine({
  id: 'tenant',
  initial: 'requested',
  context: { wasActive: false },
  states: {
    requested: {
      tags: [REST_TAG],
      on: { RECONCILE: 'provisioning', SPEC_CHANGED: 'provisioning' },
      exit: emit({ type: 'ProvisioningStarted' as const }),
    },
    provisioning: { initial: STEP_NAMES[0], states: provisioningStates() },
    waiting: { tags: [REST_TAG], on: resumeProvisioning },
    failed: { tags: [REST_TAG], on: resumeProvisioning },
    interrupted: { tags: [REST_TAG], on: resumeProvisioning },
    active: {
      tags: [REST_TAG],
      entry: enqueueActions(({ context, enqueue }) => {
        // Only the first arrival is "ProvisioningComplete"; a repair that converges is not news.
        if (!context.wasActive) enqueue.emit({ type: 'ProvisioningComplete' });
        enqueue.assign({ problem: undefined, wasActive: true, updating: false });
      }),
      on: { RECONCILE: 'checking', SPEC_CHANGED: applySpecChange },
    },
    checking: {
      invoke: {
        src: 'checkDrift',
        onDone: [
          { guard: { type: 'inSync', params: ({ event }) => ({ output: event.output }) }, target: 'active' },
          {
            guard: { type: 'checkUnavailable', params: ({ event }) => ({ output: event.output }) },
            target: 'degraded',
            actions: assign({ problem: ({ event }) => driftProblem(event.output) }),
          },
          { target: 'provisioning', actions: assign({ problem: ({ event }) => driftProblem(event.output) }) },
        ],
        onError: [
          { guard: { type: 'shuttingDown', params: ({ event }) => ({ error: event.error }) }, target: 'active' },
          { target: 'degraded', actions: assign({ problem: ({ event }) => problemFromError(STEP_NAMES[0], event.error) }) },
        ],
      },
    },
    degraded: { tags: [REST_TAG], on: { RECONCILE: 'checking', SPEC_CHANGED: applySpecChange } },
  },
});
