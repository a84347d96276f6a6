import { describe, expect, it } from 'vitest';
import { Reason } from '../api/reasons.ts';
import { DECOMMISSION_ORDER } from '../saga/decommission.ts';
import { conditionOf } from './registry.ts';
import { namespaceStep } from './namespace.ts';
import { STEP_DESCRIPTORS, type StepDescriptor, type StepDescriptors } from './registry.ts';
import { STEP_NAMES } from './step.ts';

describe('step descriptors', () => {
  it('each descriptor holds the step of its name', () => {
    expect(STEP_NAMES.filter((name) => STEP_DESCRIPTORS[name].step.name !== name)).toEqual([]);
  });

  it('the saga reports each step on the condition its descriptor names', () => {
    expect(STEP_NAMES.map((name) => `${name}:${conditionOf(name)}`)).toEqual([
      'namespace:NamespaceReady', 'quotas:NamespaceReady', 'network:NamespaceReady',
      'account:Provisioned', 'streams:Provisioned', 'alerts:Provisioned', 'record:Provisioned',
      'seed:SeedLoaded', 'credentials:ModulesDeployed', 'modules:ModulesDeployed', 'revoke:ModulesDeployed', 'ingress:IngressReady',
    ]);
  });

  it('four steps announce their completion, each with a reason from the catalogue', () => {
    const announced = STEP_NAMES.flatMap((name) => STEP_DESCRIPTORS[name].completedEvent ?? []);
    expect(announced).toEqual([Reason.NamespaceCreated, Reason.SeedLoaded, Reason.ModuleDeployComplete, Reason.IngressProvisioned]);
    expect(announced.every((reason) => Object.values(Reason).includes(reason))).toBe(true);
  });

  it('one step announces its start: modules, with a reason from the catalogue', () => {
    expect(STEP_NAMES.flatMap((name) => {
      const started = STEP_DESCRIPTORS[name].startedEvent;
      return started === null ? [] : [`${name}:${started}`];
    })).toEqual([`modules:${Reason.ModuleDeployStarted}`]);
  });

  it('decommission removes traffic first, streams before the record and the account, the namespace last; revoke has nothing of its own', () => {
    expect(DECOMMISSION_ORDER).toEqual(['ingress', 'modules', 'credentials', 'seed', 'streams', 'record', 'alerts', 'account', 'network', 'quotas', 'namespace']);
    const orders = STEP_NAMES.flatMap((name) => STEP_DESCRIPTORS[name].decommission?.order ?? []);
    expect(new Set(orders).size).toBe(orders.length);
  });

  it('the steps whose objects live in the tenant namespace under fixed names', () => {
    expect(STEP_NAMES.filter((name) => STEP_DESCRIPTORS[name].decommission?.inTenantNamespace === true)).toEqual(['quotas', 'network', 'alerts', 'credentials', 'modules', 'ingress']);
  });
});

/*
 * Compile-time checks (npm run typecheck fails when a directive below has no error to expect): a step
 * without a descriptor, or a descriptor without one of its fields, does not compile.
 */
const allButIngress = (all: StepDescriptors): Omit<StepDescriptors, 'ingress'> => all;
// @ts-expect-error a step name without a descriptor: 'ingress' is missing
export const withoutIngress: StepDescriptors = allButIngress(STEP_DESCRIPTORS);

// @ts-expect-error a descriptor that does not name its condition
export const withoutCondition: StepDescriptor = { step: namespaceStep, startedEvent: null, completedEvent: null, decommission: null };

// @ts-expect-error a descriptor that does not say whether its start is announced (null: it is not)
export const withoutStartedEvent: StepDescriptor = { step: namespaceStep, condition: 'NamespaceReady', completedEvent: null, decommission: null };

// @ts-expect-error a descriptor that does not say whether its completion is announced (null: it is not)
export const withoutEvent: StepDescriptor = { step: namespaceStep, condition: 'NamespaceReady', startedEvent: null, decommission: null };

// @ts-expect-error a descriptor that does not say how it is decommissioned (null: nothing of its own)
export const withoutDecommission: StepDescriptor = { step: namespaceStep, condition: 'NamespaceReady', startedEvent: null, completedEvent: null };

export const withoutNamespaceScope: StepDescriptor = {
  step: namespaceStep,
  condition: 'NamespaceReady',
  startedEvent: null,
  completedEvent: null,
  // @ts-expect-error a decommission part that does not say whether it lives in the tenant namespace
  decommission: { order: 5 },
};

// @ts-expect-error an Event reason outside the catalogue
export const inventedReason: StepDescriptor = { step: namespaceStep, condition: 'NamespaceReady', startedEvent: null, completedEvent: 'NamespaceMade', decommission: null };

// @ts-expect-error a start Event that is not one a step may announce as it starts
export const completionAsStart: StepDescriptor = { step: namespaceStep, condition: 'NamespaceReady', startedEvent: Reason.NamespaceCreated, completedEvent: null, decommission: null };
