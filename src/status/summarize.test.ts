import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from '../../test/support/source-files.ts';
import { PROVISIONING_CONDITIONS, type ProvisioningCondition } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import type { ConditionState } from './conditions.ts';
import { type RolloutStanding, type Standing, summarize, summarizeRollout } from './summarize.ts';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..');

const allTrue = Object.fromEntries(PROVISIONING_CONDITIONS.map((c) => [c, { status: 'True', reason: Reason.NamespaceActive, message: 'ok' }])) as Record<ProvisioningCondition, ConditionState>;
const waitingOnModules = { ...allTrue, ModulesDeployed: { status: 'False', reason: Reason.DeploymentUnavailable, message: 'modules: orbit-crm 0/1' }, IngressReady: { status: 'Unknown', reason: Reason.Pending, message: 'waiting' } } satisfies Record<ProvisioningCondition, ConditionState>;

/** Each summary as `Type=Status/Reason`, sorted. */
const asText = (summary: Record<string, ConditionState>): string =>
  Object.entries(summary).map(([type, c]) => `${type}=${c.status}/${c.reason}`).sort().join(' ');
const shown = (standing: Standing): string => asText(summarize(standing));

describe('summarize: every path a tenant stands on', () => {
  it.each<[string, Standing, string]>([
    ['provisioned', { kind: 'provisioning', conditions: allTrue }, 'Ready=True/Provisioned'],
    ['waiting on a dependency', { kind: 'provisioning', conditions: waitingOnModules }, 'Ready=False/DeploymentUnavailable Reconciling=True/Progressing'],
    ['a step waits for the user', { kind: 'provisioning', conditions: waitingOnModules, needsUser: Reason.ChartRenderFailed }, 'Ready=False/DeploymentUnavailable Stalled=True/ChartRenderFailed'],
    ['hibernated at rest', { kind: 'hibernated' }, 'Ready=True/Suspended'],
    ['suspended (the stored Ready stays)', { kind: 'suspended', message: 'spec.suspend is true' }, 'Suspended=True/ReconciliationSuspended'],
    ['decommissioning', { kind: 'decommissioning', pending: ['modules: releases left'] }, 'Ready=False/Decommissioning Reconciling=True/Progressing'],
    ['decommissioned', { kind: 'decommissioned', dataRetained: false }, 'Ready=True/Decommissioned'],
    ['unserved', { kind: 'unserved', reason: Reason.OperatorVersionAbsent, message: 'spec.operatorVersion 9 is not running' }, 'Ready=False/OperatorVersionAbsent Stalled=True/OperatorVersionAbsent'],
    ['unreported (a hub whose member stopped reporting)', { kind: 'unreported', message: 'member-us is not reporting' }, 'Ready=Unknown/MemberNotReporting Stalled=True/MemberNotReporting'],
    ['applying (a hub: the member behind the work)', { kind: 'applying', message: 'generation 2 not applied yet' }, 'Ready=False/MemberApplying Reconciling=True/Progressing'],
    ['refused by the member (a hub)', { kind: 'refused-by-member', message: 'no EvaTenant CRD' }, 'Ready=False/MemberRefusedTenant Stalled=True/MemberRefusedTenant'],
    ['unplaced (a hub: no member decided)', { kind: 'unplaced', message: 'no member matches' }, 'Ready=False/NoMemberMatches Stalled=True/NoMemberMatches'],
  ])('%s', (_label, standing, expected) => {
    expect(shown(standing)).toBe(expected);
  });

  it('says what is not True, and what retained data a decommission kept', () => {
    expect(summarize({ kind: 'provisioning', conditions: waitingOnModules })['Ready']?.message).toBe('ModulesDeployed, IngressReady not True; ModulesDeployed: modules: orbit-crm 0/1');
    expect(summarize({ kind: 'decommissioned', dataRetained: true })['Ready']?.message).toContain('retained data');
    expect(summarize({ kind: 'decommissioning', pending: [] })['Ready']?.message).toContain('not removed yet: none');
  });
});

/** Production files of src/ (relative) whose code constructs a Ready condition: a `Ready:` key or a `type: 'Ready'`. */
function readySetters(): string[] {
  return sourceFiles(SRC)
    .filter((path) => constructsReady(readFileSync(path, 'utf8')))
    .map((path) => relative(SRC, path));
}

/** A `Ready` key whose value is an object or a name (`Ready: ready,`), not prose (`is Ready: each …`); or a `type: 'Ready'`. */
const constructsReady = (code: string): boolean => /(?<![\w.])['"]?Ready['"]?\s*:\s*(?:\{|[A-Za-z_]\w*\s*[,}])|type:\s*['"]Ready['"]/.test(code);

describe('summarizeRollout: every place a rollout stands', () => {
  it.each<[RolloutStanding['kind'], RolloutStanding, string]>([
    ['moving', { kind: 'moving', message: 'wave 1 batch 1' }, 'Ready=False/RolloutMoving Reconciling=True/RolloutMoving'],
    ['baking', { kind: 'baking', message: 'wave 1 batch 1' }, 'Ready=False/RolloutBaking Reconciling=True/RolloutBaking'],
    ['rollingBack', { kind: 'rollingBack', message: 'TenantsReady failed' }, 'Ready=False/RollingBack Reconciling=True/RollingBack'],
    ['paused', { kind: 'paused', message: 'spec.paused' }, 'Ready=False/RolloutPaused'],
    ['succeeded', { kind: 'succeeded', message: '30 tenants on 1.5.0' }, 'Ready=True/RolloutSucceeded'],
    ['rolledBack', { kind: 'rolledBack', message: 'TenantsReady failed' }, 'Ready=False/RolledBack Stalled=True/RolledBack'],
    ['halted', { kind: 'halted', message: 'Prometheus unreachable' }, 'Ready=False/GateFailed Stalled=True/GateFailed'],
    ['stalled', { kind: 'stalled', reason: Reason.TargetVersionAbsent, message: 'no 1.5.0 runs' }, 'Ready=False/TargetVersionAbsent Stalled=True/TargetVersionAbsent'],
  ])('%s', (_kind, standing, expected) => {
    expect(asText(summarizeRollout(standing))).toBe(expected);
  });
});

describe('Ready is set in one place', () => {
  it('no file of src/ but status/summarize.ts constructs a Ready condition', () => {
    expect(readySetters()).toEqual(['status/summarize.ts']);
  });

  it('the check sees each way of constructing one (positive controls), and not a read of one', () => {
    expect(constructsReady("return { Ready: { status: 'True' } };")).toBe(true);
    expect(constructsReady("const all = { ...five, Ready: ready };")).toBe(true);
    expect(constructsReady("conditions.push({ type: 'Ready', status: 'False' });")).toBe(true);
    expect(constructsReady("const ready = conditions.find((c) => c.type === 'Ready');")).toBe(false);
    expect(constructsReady("expect(all['Ready']?.status).toBe('True');")).toBe(false);
    expect(constructsReady("return ok(TLS, `ClusterIssuer ${name} is Ready: each tenant gets a certificate`);")).toBe(false);
  });
});
