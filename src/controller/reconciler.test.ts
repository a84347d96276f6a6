/**
 * The reconciler and its status writer against an in-memory TenantStore (with the API server's
 * resourceVersion rules) and steps that succeed, wait or fail on cue; a failing store shows what a
 * refused write does. The same reconciler against the real API server runs in e2e/.
 */
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { FINALIZER, OWNER_ANNOTATION } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import { DependencyError, InputError } from '../errors.ts';
import { createLogger } from '../log.ts';
import { conditionOf as conditionOfStep } from '../steps/registry.ts';
import { STEP_NAMES, type StepName, type StepOutcome } from '../steps/step.ts';
import { testTenant } from '../../test/support/fixtures.ts';
import { FailingTenantStore, MemoryTenantStore } from '../../test/support/tenant-store.ts';
import { USER_ERROR_RECHECK_MS } from './actions.ts';
import { TenantReconciler } from './reconciler.ts';
import type { TenantSteps } from '../saga/tenant-steps.ts';
import type { TenantStore } from '../adapters/tenant-store.ts';
import type { TenantScope } from '../tenancy/scope.ts';

const VERSION = '1.0.0';
const signal = new AbortController().signal;

interface FakeSteps extends TenantSteps {
  readonly ran: StepName[];
  decommissioned: number;
}

/** Steps that are done at once, unless `outcome` says otherwise for a step. */
function fakeSteps(outcome: (step: StepName) => StepOutcome | Error = () => ({ kind: 'done' }), decommissionComplete = true): FakeSteps {
  const steps: FakeSteps = {
    ran: [],
    decommissioned: 0,
    runStep: (step) => {
      steps.ran.push(step);
      const result = outcome(step);
      return result instanceof Error ? Promise.reject(result) : Promise.resolve(result);
    },
    checkDrift: () => Promise.resolve({ inSync: true }),
    decommission: () => {
      steps.decommissioned += 1;
      return Promise.resolve({ states: { namespace: decommissionComplete ? 'Removed' : 'NamespaceTerminating: still there' }, complete: decommissionComplete, forced: {}, namespaceOfAnother: false });
    },
    afterActive: () => Promise.resolve(),
    isWatched: () => false,
    // Not observed here: the writer keeps what status had (tested in e2e/hibernation.test.ts).
    observe: () => Promise.reject(new Error('no observation in these tests')),
  };
  return steps;
}

/** `steps` with `step` taking `ms` of real time before it is done (the status cadence runs on real timers). */
function delayed(steps: FakeSteps, step: StepName, ms: number): FakeSteps {
  return {
    ...steps,
    runStep: async (name, scope) => {
      if (name === step) await new Promise((resolve) => setTimeout(resolve, ms));
      return steps.runStep(name, scope);
    },
  };
}

/** `statusProgressIntervalMs` 0: every condition's progress is written (the cadence's own tests use the default). */
function reconciler(tenants: TenantStore, steps: TenantSteps, statusProgressIntervalMs?: number): TenantReconciler {
  return new TenantReconciler({
    tenants,
    steps,
    config: { operatorVersion: VERSION, maxWave: 3, driftIntervalSeconds: 300 },
    log: createLogger('silent'),
    metrics: { observeTimeToActive: () => undefined, forgetTenant: () => undefined },
    ...(statusProgressIntervalMs === undefined ? {} : { statusProgressIntervalMs }),
  });
}

const statusWrites = (store: MemoryTenantStore): string[] => store.writes.filter((w) => w.startsWith('writeStatus'));

const conditionOf = (store: MemoryTenantStore, name: string, type: string) => store.peek(name)?.status?.conditions?.find((c) => c.type === type);

describe('TenantReconciler', () => {
  it('a new tenant: finalizer and owner first (one write, before any step), then status when work starts and when it rests', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'NEWONE' }));
    const steps = fakeSteps();
    const action = await reconciler(store, steps).reconcile('newone', signal);
    expect(steps.ran).toEqual([...STEP_NAMES]);
    expect(store.writes[0]).toBe('patchMetadata');
    // Provisioning (Reconciling, at once: a new phase), then Active; the conditions in between came sooner than the cadence.
    expect(statusWrites(store)).toEqual(['writeStatus:Provisioning', 'writeStatus:Active']);
    const tenant = store.peek('newone');
    expect(tenant?.metadata.finalizers).toEqual([FINALIZER]);
    expect(tenant?.metadata.annotations?.[OWNER_ANNOTATION]).toBe(VERSION);
    expect(tenant?.status?.phase).toBe('Active');
    // The steps are in the conditions; the Events tell the story: started, then Active and how long it took.
    expect(store.events.map((e) => e.reason)).toEqual(['ProvisioningStarted', 'ProvisioningComplete']);
    expect(store.events[1]?.message).toMatch(/^all five conditions are True; the tenant is Active \d+\.\d s after provisioning started$/);
    expect(action.kind).toBe('requeue');
  });

  it('an Active tenant whose drift is repaired: the steps redone are Events (news), without a second ProvisioningComplete', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'REPAIR' }));
    await reconciler(store, fakeSteps()).reconcile('repair', signal);
    const before = store.events.length;
    const drifted = { ...fakeSteps(), checkDrift: () => Promise.resolve({ inSync: false as const, step: 'ingress' as const, reason: Reason.IngressMissing, message: 'm', unavailable: false }) };
    await reconciler(store, drifted).reconcile('repair', signal);
    expect(store.peek('repair')?.status?.phase).toBe('Active');
    const repaired = store.events.slice(before).map((e) => e.reason);
    expect(repaired).toContain('IngressProvisioned');
    expect(repaired).not.toContain('ProvisioningComplete');
  });

  it('status cadence 0: every condition is written as its first step starts', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'EVERYC' }));
    await reconciler(store, fakeSteps(), 0).reconcile('everyc', signal);
    expect(statusWrites(store)).toEqual([...Array<string>(5).fill('writeStatus:Provisioning'), 'writeStatus:Active']);
  });

  it('a step that runs longer than the cadence: its condition is written while it runs (trailing), and nothing held back outlives the rest', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'SLOWAC' }));
    const seenDuringAccount: unknown[] = [];
    const slowAccount = delayed(fakeSteps(), 'account', 300);
    const slow: FakeSteps = {
      ...slowAccount,
      runStep: async (step, scope) => {
        const outcome = await slowAccount.runStep(step, scope);
        if (step === 'account') seenDuringAccount.push(conditionOf(store, 'slowac', 'Provisioned')?.reason);
        return outcome;
      },
    };
    await reconciler(store, slow, 50).reconcile('slowac', signal);
    expect(seenDuringAccount, 'the running condition was written while its step ran').toEqual([Reason.Progressing]);
    const writes = statusWrites(store).length;
    expect(writes).toBeLessThan(6);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(statusWrites(store), 'no progress written after the rest').toHaveLength(writes);
    expect(store.peek('slowac')?.status?.phase).toBe('Active');
  });

  it('progress while the saga moves: none within three intervals (steps of 40 ms, cadence 300 ms), then one (70 ms per condition, about 350 ms, cadence 100 ms; a stalled step may add one)', async () => {
    const slowed = (steps: readonly StepName[], ms: number): FakeSteps => steps.reduce((all: FakeSteps, step) => delayed(all, step, ms), fakeSteps());
    const run = (steps: FakeSteps, cadenceMs: number, store = new MemoryTenantStore()): Promise<string[]> =>
      reconciler(store, steps, cadenceMs).reconcile(store.put(testTenant({ code: 'MOVING' })).metadata.name, signal).then(() => statusWrites(store));
    expect(await run(slowed(STEP_NAMES, 40), 300)).toEqual(['writeStatus:Provisioning', 'writeStatus:Active']);
    const firstOfCondition = STEP_NAMES.filter((step, i) => i === 0 || conditionOfStep(step) !== conditionOfStep(STEP_NAMES[i - 1] ?? step));
    expect((await run(slowed(firstOfCondition, 70), 100)).length).toBeGreaterThanOrEqual(3);
  });

  it('a condition reached while its write was held back keeps the time the saga reached it, not the time it was written', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'TIMING' }));
    const slowModules = delayed(fakeSteps(), 'modules', 300);
    await reconciler(store, slowModules, 1_000).reconcile('timing', signal);
    // One write after the first: Active. NamespaceReady was True at once, ModulesDeployed after the 300 ms step.
    expect(statusWrites(store)).toEqual(['writeStatus:Provisioning', 'writeStatus:Active']);
    const elapsed = store.peek('timing')?.status?.elapsedSeconds ?? {};
    // The 300 ms step lies between the two, however slow the machine; written at once, they would be equal.
    expect((elapsed['ModulesDeployed'] ?? 0) - (elapsed['NamespaceReady'] ?? 0)).toBeGreaterThanOrEqual(0.29);
  });

  it('a held-back progress write refused (409): no further step starts, the reconcile fails and is retried', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'DEFERF' }));
    // Write 1: Provisioning (news, at once); write 2: Provisioned held back and written by its timer while account runs.
    const failing = new FailingTenantStore(store).failOn('writeStatus', 2);
    const steps = fakeSteps();
    const slow = delayed(steps, 'account', 200);
    await expect(reconciler(failing, slow, 50).reconcile('deferf', signal)).rejects.toBeInstanceOf(ApiException);
    expect(steps.ran.at(-1), 'a step after the refused write started').toBe('account');
  });

  it('a status write refused (409) stops the saga before the next condition starts; the retry resumes and converges', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'FLAKYS' }));
    // Every condition written: NamespaceReady (namespace, quotas, network), Provisioned (refused: account must not run).
    const failing = new FailingTenantStore(store).failOn('writeStatus', 2);
    const first = fakeSteps();
    await expect(reconciler(failing, first, 0).reconcile('flakys', signal)).rejects.toBeInstanceOf(ApiException);
    expect(first.ran).toEqual(['namespace', 'quotas', 'network']);
    // The saga rested "interrupted before account", and the next write recorded that.
    expect(store.peek('flakys')?.status?.phase).toBe('Provisioning');
    expect(conditionOf(store, 'flakys', 'Provisioned')).toMatchObject({ status: 'Unknown', reason: 'Interrupted' });
    const retry = fakeSteps();
    await reconciler(store, retry).reconcile('flakys', signal);
    expect(retry.ran).toEqual(STEP_NAMES.slice(STEP_NAMES.indexOf('account')));
    expect(store.peek('flakys')?.status?.phase).toBe('Active');
  });

  it('a refused metadata write (a concurrent writer) starts no step', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'RACERS' }));
    const steps = fakeSteps();
    await expect(reconciler(new FailingTenantStore(store).failOn('patchMetadata', 1), steps).reconcile('racers', signal)).rejects.toBeInstanceOf(ApiException);
    expect(steps.ran).toEqual([]);
    expect(store.writes).toEqual([]);
  });

  it('a step that needs the user: Failed, its condition False with the reason, re-checked slowly, other steps not run', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'BADSEE' }));
    const steps = fakeSteps((step) => (step === 'seed' ? new InputError(Reason.UnknownSeedsVersion, 'no 9.9.9') : { kind: 'done' }));
    const action = await reconciler(store, steps).reconcile('badsee', signal);
    expect(steps.ran.at(-1)).toBe('seed');
    expect(store.peek('badsee')?.status?.phase).toBe('Failed');
    expect(conditionOf(store, 'badsee', 'SeedLoaded')).toMatchObject({ status: 'False', reason: 'UnknownSeedsVersion', message: 'seed: no 9.9.9' });
    expect(store.events.filter((e) => e.type === 'Warning').map((e) => e.reason)).toEqual(['UnknownSeedsVersion']);
    expect(action).toEqual({ kind: 'requeue', failed: Reason.UnknownSeedsVersion, afterMs: USER_ERROR_RECHECK_MS });
  });

  it('a step that fails the same way on every retry: no status write after the first (nothing changed)', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'RETRYS' }));
    const failing = (step: StepName): StepOutcome | Error => (step === 'seed' ? new DependencyError(Reason.HelmFailed, 'the seed store is down') : { kind: 'done' });
    await reconciler(store, fakeSteps(failing)).reconcile('retrys', signal);
    expect(conditionOf(store, 'retrys', 'SeedLoaded')).toMatchObject({ status: 'False', reason: Reason.HelmFailed });
    const writes = store.writes.length;
    const retry = fakeSteps(failing);
    await reconciler(store, retry).reconcile('retrys', signal);
    await reconciler(store, retry).reconcile('retrys', signal);
    expect(retry.ran).toEqual(['seed', 'seed']);
    expect(store.writes, 'retries that change nothing write nothing').toHaveLength(writes);
    // Positive control: a retry that gets further is written.
    await reconciler(store, fakeSteps()).reconcile('retrys', signal);
    expect(store.writes.length).toBeGreaterThan(writes);
    expect(store.peek('retrys')?.status?.phase).toBe('Active');
  });

  it('a wait taken up again: the rest of its condition is not written, the next condition and Active are', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'WAITED' }));
    await reconciler(store, fakeSteps((step) => (step === 'modules' ? { kind: 'pending', reason: Reason.DeploymentUnavailable, message: 'orbit-crm: not available yet' } : { kind: 'done' }))).reconcile('waited', signal);
    expect(conditionOf(store, 'waited', 'ModulesDeployed')).toMatchObject({ status: 'False', reason: Reason.DeploymentUnavailable });
    const writes = store.writes.length;
    const resumed = fakeSteps();
    await reconciler(store, resumed, 0).reconcile('waited', signal);
    expect(resumed.ran).toEqual(['modules', 'revoke', 'ingress']);
    // ingress (ModulesDeployed True, IngressReady under way), then Active; not revoke's "ModulesDeployed under way again".
    expect(store.writes.slice(writes)).toEqual(['writeStatus:Provisioning', 'writeStatus:Active']);
    expect(conditionOf(store, 'waited', 'ModulesDeployed')?.status).toBe('True');
  });

  it('a rollout’s waits are progress, not Warning events; a wait that needs a look, or the same wait on an Active tenant (drift), is one', async () => {
    const waitAt = (reason: Reason) => (step: StepName): StepOutcome => (step === 'modules' ? { kind: 'pending', reason, message: 'm' } : { kind: 'done' });
    const warnings = (store: MemoryTenantStore): string[] => store.events.filter((e) => e.type === 'Warning').map((e) => e.reason);
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'ROLLIN' }));
    await reconciler(store, fakeSteps(waitAt(Reason.DeploymentUnavailable))).reconcile('rollin', signal);
    await reconciler(store, fakeSteps(waitAt(Reason.DeploymentProgressing))).reconcile('rollin', signal);
    expect(warnings(store), 'a new tenant waiting on its Deployments').toEqual([]);
    await reconciler(store, fakeSteps(waitAt(Reason.ImagePullFailed))).reconcile('rollin', signal);
    expect(warnings(store)).toEqual([Reason.ImagePullFailed]);
    await reconciler(store, fakeSteps()).reconcile('rollin', signal);
    expect(store.peek('rollin')?.status?.phase).toBe('Active');
    const drifted = { ...fakeSteps(waitAt(Reason.DeploymentUnavailable)), checkDrift: () => Promise.resolve({ inSync: false as const, step: 'modules' as const, reason: Reason.DeploymentUnavailable, message: 'm', unavailable: false }) };
    await reconciler(store, drifted).reconcile('rollin', signal);
    expect(warnings(store), 'an Active tenant whose Deployment became unavailable').toEqual([Reason.ImagePullFailed, Reason.DeploymentUnavailable]);
  });

  it('a waiting tenant is observed from the caches once they show every release and Deployment; otherwise, and at the end of a run, from the API', async () => {
    const observed = (helmSeen: boolean) => (scope: TenantScope) => ({
      modules: Object.fromEntries(scope.modules.map((m) => [m, { readyReplicas: 0, replicas: 1, message: 'not available yet', ...(helmSeen ? { valuesDigest: 'd', chartVersion: '1.0.0' } : {}) }])),
    });
    const waitAtModules = (step: StepName): StepOutcome => (step === 'modules' ? { kind: 'pending', reason: Reason.DeploymentUnavailable, message: 'm' } : { kind: 'done' });
    const run = async (code: string, cachesSeeHelm: boolean): Promise<boolean[]> => {
      const store = new MemoryTenantStore();
      store.put(testTenant({ code }));
      const fresh: boolean[] = [];
      const steps: FakeSteps = { ...fakeSteps(waitAtModules), observe: (scope, isFresh) => Promise.resolve(observed(isFresh || cachesSeeHelm)(scope)).finally(() => fresh.push(isFresh)) };
      await reconciler(store, steps).reconcile(code.toLowerCase(), signal);
      expect(store.peek(code.toLowerCase())?.status?.modules?.['orbit-crm']?.valuesDigest).toBe('d');
      await reconciler(store, { ...steps, runStep: () => Promise.resolve({ kind: 'done' }) }).reconcile(code.toLowerCase(), signal);
      return fresh;
    };
    // Waiting, Active.
    expect(await run('CACHED', true), 'waiting: the caches; Active: the API').toEqual([false, true]);
    expect(await run('BEHIND', false), 'waiting, caches behind helm: the API too').toEqual([false, true, true]);
  });

  it('a failed event write is no failure: the tenant still becomes Active', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'EVENTS' }));
    const failing = new FailingTenantStore(store).failOn('recordEvent', 1, new Error('events are down')).failOn('recordEvent', 2, new Error('still down'));
    await reconciler(failing, fakeSteps()).reconcile('events', signal);
    expect(store.peek('events')?.status?.phase).toBe('Active');
    expect(store.events.map((e) => e.reason)).not.toContain('ProvisioningStarted');
  });

  it('an unchanged Active tenant: the drift check writes nothing', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'STEADY' }));
    await reconciler(store, fakeSteps()).reconcile('steady', signal);
    const writes = store.writes.length;
    const steps = fakeSteps();
    await reconciler(store, steps).reconcile('steady', signal);
    expect(steps.ran).toEqual([]);
    expect(store.writes).toHaveLength(writes);
  });

  it('leaves a tenant owned by another version alone, and hands one pinned elsewhere over (owner removed, finalizer kept)', async () => {
    const store = new MemoryTenantStore();
    store.put({ ...testTenant({ code: 'OTHERS', annotations: { [OWNER_ANNOTATION]: '2.0.0' } }) });
    const steps = fakeSteps();
    expect(await reconciler(store, steps).reconcile('others', signal)).toEqual({ kind: 'done' });
    expect(store.writes).toEqual([]);
    const mine = testTenant({ code: 'PINNED', annotations: { [OWNER_ANNOTATION]: VERSION } });
    store.put({ ...mine, metadata: { ...mine.metadata, finalizers: [FINALIZER] }, spec: { ...mine.spec, operatorVersion: '2.0.0' } });
    expect(await reconciler(store, steps).reconcile('pinned', signal)).toEqual({ kind: 'done' });
    expect(store.peek('pinned')?.metadata.annotations?.[OWNER_ANNOTATION]).toBeUndefined();
    expect(store.peek('pinned')?.metadata.finalizers).toEqual([FINALIZER]);
    expect(steps.ran).toEqual([]);
  });

  it('deleted: the finalizer stays while decommissioning is incomplete and comes off (test + remove) once it is complete', async () => {
    const store = new MemoryTenantStore();
    const base = testTenant({ code: 'GOINGS', annotations: { [OWNER_ANNOTATION]: VERSION } });
    store.put({ ...base, metadata: { ...base.metadata, finalizers: ['other.example/keep', FINALIZER], deletionTimestamp: new Date().toISOString() } });
    expect(await reconciler(store, fakeSteps(undefined, false)).reconcile('goings', signal)).toEqual({ kind: 'backoff' });
    expect(store.peek('goings')?.status?.phase).toBe('Decommissioning');
    expect(store.peek('goings')?.metadata.finalizers).toEqual(['other.example/keep', FINALIZER]);
    await reconciler(store, fakeSteps()).reconcile('goings', signal);
    expect(store.peek('goings')?.metadata.finalizers).toEqual(['other.example/keep']);
    expect(store.events.map((e) => e.reason)).toEqual(['DeprovisionStarted', 'DeprovisionComplete']);
  });

  it('suspended: no step, no metadata write, no decommission even when deleted; one status write showing the drift, none when nothing changed', async () => {
    const store = new MemoryTenantStore();
    const base = testTenant({ code: 'PAUSED', generation: 2, spec: { suspend: true } });
    store.put({ ...base, metadata: { ...base.metadata, deletionTimestamp: new Date().toISOString() } });
    const steps: FakeSteps = { ...fakeSteps(), checkDrift: () => Promise.resolve({ inSync: false, step: 'quotas', reason: Reason.QuotaMissing, message: 'ResourceQuota eva-tier-quota is missing', unavailable: false }) };
    const action = await reconciler(store, steps).reconcile('paused', signal);
    expect(action.kind).toBe('requeue');
    expect(await reconciler(store, steps).reconcile('paused', signal)).toMatchObject({ kind: 'requeue' });
    expect(store.writes).toEqual(['writeStatus:?']);
    expect(steps.ran).toEqual([]);
    expect(steps.decommissioned).toBe(0);
    const suspended = conditionOf(store, 'paused', 'Suspended');
    expect(suspended).toMatchObject({ status: 'True', reason: Reason.ReconciliationSuspended, observedGeneration: 2 });
    expect(suspended?.message).toContain('drift observed, not repaired: quotas: QuotaMissing');
    expect(suspended?.message).toContain('the deletion waits');
    expect(store.peek('paused')?.status?.observedGeneration).toBe(2);
    expect(store.peek('paused')?.metadata.finalizers).toBeUndefined();
  });

  it('decommission statuses carry Ready (False while removing, True once Decommissioned) and Reconciling while removing', async () => {
    const store = new MemoryTenantStore();
    store.put(testTenant({ code: 'LEAVES', generation: 3, annotations: { [OWNER_ANNOTATION]: VERSION }, finalizers: [FINALIZER], spec: { lifecycle: 'Decommissioned' } }));
    await reconciler(store, fakeSteps(undefined, false)).reconcile('leaves', signal);
    expect(conditionOf(store, 'leaves', 'Ready')).toMatchObject({ status: 'False', reason: Reason.Decommissioning, observedGeneration: 3 });
    expect(conditionOf(store, 'leaves', 'Reconciling')?.status).toBe('True');
    await reconciler(store, fakeSteps()).reconcile('leaves', signal);
    expect(store.peek('leaves')?.status?.phase).toBe('Decommissioned');
    expect(conditionOf(store, 'leaves', 'Ready')).toMatchObject({ status: 'True', reason: Reason.Decommissioned });
    expect(conditionOf(store, 'leaves', 'Reconciling')).toBeUndefined();
  });
});
