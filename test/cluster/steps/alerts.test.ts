/**
 * The alerts step against the real local control plane: a rule ConfigMap while the Prometheus
 * Operator is absent, a PrometheusRule once its CRD exists (installed here, minimal, when the
 * cluster has none), tier changes, drift repair and removal of whichever exists.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import type { Tier } from '../../../src/api/constants.ts';
import { STREAM_LIMITS_BY_TIER } from '../../../src/api/tiers.ts';
import { createLogger } from '../../../src/log.ts';
import {
  ALERT_RULES_LABEL,
  alertRulesFileKey,
  alertRulesName,
  alertsStep,
  PROMETHEUS_RULE,
  prometheusRulesSupported,
  type RuleGroup,
} from '../../../src/steps/alerts.ts';
import { READY } from '../../../src/steps/step.ts';
import type { TenantScope } from '../../../src/tenancy/scope.ts';
import { eventually, kubectl, kubectlOk } from '../../support/kubectl.ts';
import { testScope } from '../../support/fixtures.ts';
import { apiKube } from '../../support/api-reads.ts';

const CRD = PROMETHEUS_RULE.crd;
/** Marks the CRD this test installs, so a later run can tell its own leftover from a real install. */
const TEST_LABEL = 'eva-test';
const runId = Date.now().toString(36).slice(-4);
const log = createLogger('silent');
const namespaces: string[] = [];
let kube: Kube;
let installedCrd = false;

const CRD_MANIFEST = JSON.stringify({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: CRD, labels: { [TEST_LABEL]: 'alerts' } },
  spec: {
    group: PROMETHEUS_RULE.group,
    scope: 'Namespaced',
    names: { kind: 'PrometheusRule', listKind: 'PrometheusRuleList', plural: 'prometheusrules', singular: 'prometheusrule' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
});

/** The CRD's test label, '' when installed by someone else, undefined when absent. */
function crdOwner(): string | undefined {
  const result = kubectl(['get', 'crd', CRD, '-o', `jsonpath={.metadata.labels.${TEST_LABEL}}`]);
  return result.status === 0 ? result.stdout : undefined;
}

function deleteCrd(): void {
  kubectlOk(['delete', 'crd', CRD, '--ignore-not-found', '--wait=true', '--timeout=60s']);
}

function installCrd(): void {
  kubectlOk(['apply', '-f', '-'], CRD_MANIFEST);
  kubectlOk(['wait', '--for=condition=Established', `crd/${CRD}`, '--timeout=60s']);
  installedCrd = true;
}

let codeCounter = 0;
/** A fresh six-letter code per tenant, so runs and tests never share a namespace. */
function nextCode(): string {
  codeCounter += 1;
  const n = (Number.parseInt(runId, 36) * 100 + codeCounter + 5_000) % 26 ** 6;
  return Array.from({ length: 6 }, (_, i) => String.fromCharCode(65 + (Math.floor(n / 26 ** i) % 26))).join('');
}

function scopeWith(code: string, tier: Tier): TenantScope {
  return testScope({ code, tier, log });
}

async function newTenant(tier: Tier): Promise<TenantScope> {
  const scope = scopeWith(nextCode(), tier);
  await kube.core.createNamespace({ body: { metadata: { name: scope.namespace, labels: { [TEST_LABEL]: 'alerts' } } } });
  namespaces.push(scope.namespace);
  return scope;
}

interface StoredObject {
  metadata: { labels?: Record<string, string>; resourceVersion: string };
  data?: Record<string, string>;
  spec?: { groups: RuleGroup[] };
}

function getObject(kind: 'configmap' | 'prometheusrule', scope: TenantScope): StoredObject | undefined {
  const result = kubectl(['get', kind, alertRulesName(scope.code), '-n', scope.namespace, '-o', 'json']);
  // Without the CRD there is no such resource type: no object either.
  if (result.status !== 0 && /NotFound|doesn't have a resource type/.test(result.stderr)) return undefined;
  if (result.status !== 0) throw new Error(result.stderr);
  return JSON.parse(result.stdout) as StoredObject;
}

/** The rule group in the tenant's ConfigMap, parsed from its rule file. */
function configMapGroup(scope: TenantScope): RuleGroup | undefined {
  const text = getObject('configmap', scope)?.data?.[alertRulesFileKey(scope.code)];
  if (text === undefined) return undefined;
  const file = parse(text) as { groups: RuleGroup[] };
  expect(file.groups).toHaveLength(1);
  return file.groups[0];
}

const expressions = (group: RuleGroup | undefined): string[] => group?.rules.map((r) => r.expr) ?? [];

function expectedExpressions(scope: TenantScope, threshold: number): string[] {
  return ['events', 'commands'].map((kind) => `capsule_queue_depth{capsule="${scope.code}",stream="eva-${scope.code}-${kind}"} > ${threshold}`);
}

const withTier = (scope: TenantScope, tier: Tier): TenantScope => scopeWith(scope.code, tier);

beforeAll(() => {
  kube = new Kube(loadKubeConfig());
  // A CRD left by a crashed earlier run of this test is ours to remove; a real install is left alone.
  if (crdOwner() === 'alerts') deleteCrd();
});

afterAll(() => {
  for (const namespace of namespaces) kubectl(['delete', 'namespace', namespace, '--wait=false', '--ignore-not-found']);
  if (installedCrd) deleteCrd();
});

describe('alerts step without the Prometheus Operator', () => {
  let scope: TenantScope;
  beforeAll(async () => {
    expect(crdOwner(), `${CRD} is installed in this cluster, so the ConfigMap path cannot be tested`).toBeUndefined();
    scope = await newTenant('Starter');
  });

  it('writes a rule ConfigMap with the Starter threshold; a repeat changes nothing', async () => {
    expect(await prometheusRulesSupported(kube, log)).toBe(false);
    expect(await alertsStep.verify(scope, apiKube(kube))).toMatchObject({ ready: false, reason: 'AlertRulesMissing' });

    await alertsStep.ensure(scope, apiKube(kube));
    const threshold = 0.8 * STREAM_LIMITS_BY_TIER.Starter.maxMsgs;
    expect(threshold).toBe(80_000);
    const group = configMapGroup(scope);
    expect(expressions(group)).toEqual(expectedExpressions(scope, threshold));
    for (const rule of group?.rules ?? []) {
      expect(rule).toMatchObject({ alert: 'CapsuleQueueDepthHigh', for: '5m', labels: { severity: 'warning', capsule: scope.code } });
      expect(rule.annotations['summary']).toContain(scope.code);
      expect(rule.annotations['description']).toContain(String(threshold));
    }
    const stored = getObject('configmap', scope);
    expect(stored?.metadata.labels).toMatchObject({ [ALERT_RULES_LABEL]: 'true', 'eva.aidonow.com/capsule-code': scope.code, 'eva.aidonow.com/tier': 'Starter' });
    expect(Object.keys(stored?.data ?? {})).toEqual([`eva-${scope.code}-queue-depth.yaml`]);
    expect(await alertsStep.verify(scope, apiKube(kube))).toEqual(READY);

    await alertsStep.ensure(scope, apiKube(kube));
    expect(getObject('configmap', scope)?.metadata.resourceVersion).toBe(stored?.metadata.resourceVersion);
    expect(getObject('prometheusrule', scope)).toBeUndefined();
  });

  it('follows a tier change', async () => {
    const customer = withTier(scope, 'Customer');
    expect(await alertsStep.verify(customer, apiKube(kube))).toMatchObject({ ready: false, reason: 'AlertRulesDrifted' });
    await alertsStep.ensure(customer, apiKube(kube));
    expect(expressions(configMapGroup(scope))).toEqual(expectedExpressions(scope, 0.8 * STREAM_LIMITS_BY_TIER.Customer.maxMsgs));
    expect(getObject('configmap', scope)?.metadata.labels?.['eva.aidonow.com/tier']).toBe('Customer');
    expect(await alertsStep.verify(customer, apiKube(kube))).toEqual(READY);
    expect(await alertsStep.verify(scope, apiKube(kube))).toMatchObject({ ready: false, reason: 'AlertRulesDrifted' });
  });

  it('sees a hand-edited rule file as drift and repairs it', async () => {
    const customer = withTier(scope, 'Customer');
    const patch = JSON.stringify({ data: { [alertRulesFileKey(scope.code)]: 'groups: []\n' } });
    kubectlOk(['patch', 'configmap', alertRulesName(scope.code), '-n', scope.namespace, '--type=merge', '-p', patch]);
    expect(await alertsStep.verify(customer, apiKube(kube))).toMatchObject({ ready: false, reason: 'AlertRulesDrifted' });
    await alertsStep.ensure(customer, apiKube(kube));
    expect(await alertsStep.verify(customer, apiKube(kube))).toEqual(READY);
  });

  it('removes the ConfigMap; removing again is fine', async () => {
    await alertsStep.remove(scope, apiKube(kube));
    expect(getObject('configmap', scope)).toBeUndefined();
    await alertsStep.remove(scope, apiKube(kube));
    expect(await alertsStep.verifyRemoved(scope, apiKube(kube))).toEqual(READY);
  });
});

describe('alerts step with the PrometheusRule CRD', () => {
  let scope: TenantScope;
  let before: Kube;
  beforeAll(async () => {
    scope = await newTenant('Starter');
    // A client that asked before the CRD existed keeps that answer for 60 s.
    before = new Kube(loadKubeConfig());
    expect(await prometheusRulesSupported(before, log)).toBe(crdOwner() !== undefined);
    await alertsStep.ensure(scope, apiKube(before));
    if (crdOwner() === undefined) installCrd();
    kube = new Kube(loadKubeConfig());
  });

  it('reuses the CRD answer for a while', async () => {
    if (!installedCrd) return;
    expect(await prometheusRulesSupported(before, log)).toBe(false);
    expect(await prometheusRulesSupported(kube, log)).toBe(true);
  });

  it('writes a PrometheusRule instead and removes the ConfigMap', async () => {
    expect(await alertsStep.verify(scope, apiKube(kube))).toMatchObject({ ready: false, reason: 'AlertRulesMissing' });
    await alertsStep.ensure(scope, apiKube(kube));
    const rule = getObject('prometheusrule', scope);
    expect(rule?.metadata.labels).toMatchObject({ [ALERT_RULES_LABEL]: 'true', 'eva.aidonow.com/capsule-code': scope.code });
    expect(rule?.spec?.groups).toHaveLength(1);
    expect(expressions(rule?.spec?.groups[0])).toEqual(expectedExpressions(scope, 80_000));
    expect(rule?.spec?.groups[0]?.rules[0]).toMatchObject({ for: '5m', labels: { severity: 'warning', capsule: scope.code } });
    expect(getObject('configmap', scope)).toBeUndefined();
    expect(await alertsStep.verify(scope, apiKube(kube))).toEqual(READY);

    await alertsStep.ensure(scope, apiKube(kube));
    expect(getObject('prometheusrule', scope)?.metadata.resourceVersion).toBe(rule?.metadata.resourceVersion);
  });

  it('follows a tier change', async () => {
    const enterprise = withTier(scope, 'Enterprise');
    expect(await alertsStep.verify(enterprise, apiKube(kube))).toMatchObject({ ready: false, reason: 'AlertRulesDrifted' });
    await alertsStep.ensure(enterprise, apiKube(kube));
    const groups = getObject('prometheusrule', scope)?.spec?.groups;
    expect(expressions(groups?.[0])).toEqual(expectedExpressions(scope, 0.8 * STREAM_LIMITS_BY_TIER.Enterprise.maxMsgs));
    expect(await alertsStep.verify(enterprise, apiKube(kube))).toEqual(READY);
  });

  it('flags a leftover ConfigMap next to the PrometheusRule and deletes it', async () => {
    const enterprise = withTier(scope, 'Enterprise');
    kubectlOk(['create', 'configmap', alertRulesName(scope.code), '-n', scope.namespace, '--from-literal=x=y']);
    expect(await alertsStep.verify(enterprise, apiKube(kube))).toMatchObject({ ready: false, reason: 'AlertRulesDuplicated' });
    await alertsStep.ensure(enterprise, apiKube(kube));
    expect(getObject('configmap', scope)).toBeUndefined();
    expect(await alertsStep.verify(enterprise, apiKube(kube))).toEqual(READY);
  });

  it('removes both the PrometheusRule and a ConfigMap', async () => {
    kubectlOk(['create', 'configmap', alertRulesName(scope.code), '-n', scope.namespace, '--from-literal=x=y']);
    expect(await alertsStep.verifyRemoved(scope, apiKube(kube))).toMatchObject({ ready: false, reason: 'AlertRulesPresent' });
    await alertsStep.remove(scope, apiKube(kube));
    expect(getObject('prometheusrule', scope)).toBeUndefined();
    expect(getObject('configmap', scope)).toBeUndefined();
    expect(await alertsStep.verifyRemoved(scope, apiKube(kube))).toEqual(READY);
    await alertsStep.remove(scope, apiKube(kube));
  });

  it('works again without the CRD once it is gone', async () => {
    if (!installedCrd) return;
    const other = await newTenant('Starter');
    await alertsStep.ensure(other, apiKube(kube));
    expect(getObject('prometheusrule', other)).toBeDefined();
    deleteCrd();
    installedCrd = false;
    expect(await eventually(() => kubectl(['get', 'crd', CRD]).status !== 0, 30_000)).toBe(true);
    kube = new Kube(loadKubeConfig());
    expect(await prometheusRulesSupported(kube, log)).toBe(false);
    expect(await alertsStep.verifyRemoved(other, apiKube(kube))).toEqual(READY);
    await alertsStep.remove(other, apiKube(kube));
    await alertsStep.ensure(other, apiKube(kube));
    expect(expressions(configMapGroup(other))).toEqual(expectedExpressions(other, 80_000));
    await alertsStep.remove(other, apiKube(kube));
    expect(await alertsStep.verifyRemoved(other, apiKube(kube))).toEqual(READY);
  });
});
