import { describe, expect, it } from 'vitest';
import { Reason } from '../api/reasons.ts';
import type { SagaView } from '../saga/view.ts';
import { desiredConditions, mergeConditions, phaseOf } from './conditions.ts';
import { summarize } from './summarize.ts';
import { sagaConditions } from './tenant-status.ts';

const statuses = (view: SagaView): string =>
  Object.values(desiredConditions(view)).map((c) => c.status[0]).join('');

describe('conditions from the saga view', () => {
  it.each<[string, SagaView, string, string]>([
    ['requested', { stage: 'requested', wasActive: false }, 'UUUUU', 'Requested'],
    ['running namespace', { stage: 'provisioning', currentStep: 'namespace', wasActive: false }, 'UUUUU', 'Provisioning'],
    ['running quotas (same group)', { stage: 'provisioning', currentStep: 'quotas', wasActive: false }, 'UUUUU', 'Provisioning'],
    ['running streams', { stage: 'provisioning', currentStep: 'streams', wasActive: false }, 'TUUUU', 'Provisioning'],
    ['running modules', { stage: 'provisioning', currentStep: 'modules', wasActive: false }, 'TTTUU', 'Provisioning'],
    ['waiting on modules', { stage: 'waiting', wasActive: false, problem: { step: 'modules', reason: Reason.DeploymentUnavailable, message: 'x', needsUser: false } }, 'TTTFU', 'Provisioning'],
    ['failed seed (user)', { stage: 'failed', wasActive: false, problem: { step: 'seed', reason: Reason.UnknownSeedsVersion, message: 'x', needsUser: true } }, 'TTFUU', 'Failed'],
    ['failed streams (dependency)', { stage: 'failed', wasActive: false, problem: { step: 'streams', reason: Reason.NatsUnavailable, message: 'x', needsUser: false } }, 'TFUUU', 'Provisioning'],
    ['interrupted before alerts (graceful stop)', { stage: 'interrupted', currentStep: 'alerts', wasActive: false }, 'TUUUU', 'Provisioning'],
    ['interrupted before modules (graceful stop)', { stage: 'interrupted', currentStep: 'modules', wasActive: false }, 'TTTUU', 'Provisioning'],
    ['retrying a step that needs the user', { stage: 'provisioning', currentStep: 'seed', wasActive: false, problem: { step: 'seed', reason: Reason.UnknownSeedsVersion, message: 'x', needsUser: true } }, 'TTFUU', 'Failed'],
    ['active', { stage: 'active', wasActive: true }, 'TTTTT', 'Active'],
    ['applying a spec change once active', { stage: 'waiting', wasActive: true, updating: true, problem: { step: 'modules', reason: 'DeploymentProgressing', message: 'x', needsUser: false } }, 'TTTFT', 'Provisioning'],
    ['a spec change that failed once active', { stage: 'failed', wasActive: true, updating: true, problem: { step: 'modules', reason: 'ChartRenderFailed', message: 'x', needsUser: true } }, 'TTTFT', 'Degraded'],
    ['checking', { stage: 'checking', wasActive: true }, 'TTTTT', 'Active'],
    ['degraded streams', { stage: 'degraded', wasActive: true, problem: { step: 'streams', reason: Reason.NatsUnavailable, message: 'x', needsUser: false } }, 'TFTTT', 'Degraded'],
    ['repairing quotas after drift', { stage: 'provisioning', currentStep: 'quotas', wasActive: true, problem: { step: 'quotas', reason: 'QuotaDrifted', message: 'x', needsUser: false } }, 'FTTTT', 'Degraded'],
    ['repair failed (user) once active', { stage: 'failed', wasActive: true, problem: { step: 'modules', reason: 'ChartRenderFailed', message: 'x', needsUser: true } }, 'TTTFT', 'Degraded'],
  ])('%s', (_label, view, expected, phase) => {
    expect(statuses(view)).toBe(expected);
    expect(phaseOf(view)).toBe(phase);
  });

  it('puts the problem reason and message on the failing condition', () => {
    const conditions = desiredConditions({ stage: 'failed', wasActive: false, problem: { step: 'seed', reason: Reason.UnknownSeedsVersion, message: 'seedsVersion "9" is not bundled', needsUser: true } });
    expect(conditions.SeedLoaded).toEqual({ status: 'False', reason: Reason.UnknownSeedsVersion, message: 'seed: seedsVersion "9" is not bundled' });
  });

  it('summarises Ready from the five', () => {
    expect(sagaConditions({ stage: 'active', wasActive: true }, false)['Ready']?.status).toBe('True');
    const ready = summarize({ kind: 'provisioning', conditions: desiredConditions({ stage: 'waiting', wasActive: false, problem: { step: 'modules', reason: Reason.DeploymentUnavailable, message: 'orbit-crm 0/1', needsUser: false } }) })['Ready'];
    expect(ready).toMatchObject({ status: 'False', reason: Reason.DeploymentUnavailable });
    expect(ready?.message).toContain('ModulesDeployed, IngressReady not True');
  });
});

describe('mergeConditions', () => {
  const before = [{ type: 'NamespaceReady', status: 'True' as const, reason: 'NamespaceActive', message: 'm', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 1 }];

  it('keeps lastTransitionTime when the status is unchanged', () => {
    const merged = mergeConditions(before, { NamespaceReady: { status: 'True', reason: 'NamespaceActive', message: 'm2' } }, '2026-02-02T00:00:00Z', 2);
    expect(merged[0]).toMatchObject({ lastTransitionTime: '2026-01-01T00:00:00Z', message: 'm2', observedGeneration: 2 });
  });

  it('moves lastTransitionTime when the status changes', () => {
    const merged = mergeConditions(before, { NamespaceReady: { status: 'False', reason: Reason.NamespaceMissing, message: 'm' } }, '2026-02-02T00:00:00Z', 2);
    expect(merged[0]?.lastTransitionTime).toBe('2026-02-02T00:00:00Z');
  });
});

describe('kstatus summary (Reconciling, Stalled)', () => {
  const kinds = (view: SagaView): string => {
    const all = sagaConditions(view, false);
    return ['Reconciling', 'Stalled'].filter((t) => all[t]?.status === 'True').join(',') || 'none';
  };
  it.each<[string, SagaView, string]>([
    ['requested', { stage: 'requested', wasActive: false }, 'Reconciling'],
    ['provisioning', { stage: 'provisioning', currentStep: 'modules', wasActive: false }, 'Reconciling'],
    ['waiting on a dependency', { stage: 'waiting', wasActive: false, problem: { step: 'modules', reason: Reason.DeploymentUnavailable, message: 'x', needsUser: false } }, 'Reconciling'],
    ['failed on bad input', { stage: 'failed', wasActive: false, problem: { step: 'seed', reason: Reason.UnknownSeedsVersion, message: 'x', needsUser: true } }, 'Stalled'],
    ['retrying bad input', { stage: 'provisioning', currentStep: 'seed', wasActive: false, problem: { step: 'seed', reason: Reason.UnknownSeedsVersion, message: 'x', needsUser: true } }, 'Stalled'],
    ['a rejected change once active', { stage: 'failed', wasActive: true, updating: true, problem: { step: 'modules', reason: Reason.ChartRenderFailed, message: 'x', needsUser: true } }, 'Stalled'],
    ['degraded, retrying', { stage: 'degraded', wasActive: true, problem: { step: 'streams', reason: Reason.NatsUnavailable, message: 'x', needsUser: false } }, 'Reconciling'],
    ['active', { stage: 'active', wasActive: true }, 'none'],
  ])('%s: %s', (_label, view, expected) => {
    expect(kinds(view)).toBe(expected);
  });

  it('names the input to fix on Stalled', () => {
    const stalled = sagaConditions({ stage: 'failed', wasActive: false, problem: { step: 'seed', reason: Reason.UnknownSeedsVersion, message: 'seedsVersion "9" is not bundled', needsUser: true } }, false)['Stalled'];
    expect(stalled).toMatchObject({ status: 'True', reason: Reason.UnknownSeedsVersion });
    expect(stalled?.message).toContain('seedsVersion "9" is not bundled');
  });
});
