/**
 * Step 'alerts': the tenant's queue-depth alert, one rule per stream, firing when a stream has held
 * more than 80% of its tier's max messages for 5 minutes (at 100% JetStream silently discards the
 * oldest messages, so this is the last warning before data loss). The rules watch capsule_queue_depth,
 * which the operator exports (see queue-depth.ts).
 *
 * Where the Prometheus Operator is installed (its PrometheusRule CRD exists) the rules are a
 * PrometheusRule; elsewhere they are a ConfigMap labelled for a rule-file sidecar to pick up. Both
 * have the same name in the tenant namespace, and only one of them exists once ensure has run.
 */
import { Reason } from '../api/reasons.ts';
import { canonicalJson } from '../canonical-json.ts';
import type { KubernetesObject, V1ConfigMap, V1CustomResourceDefinition } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { deleteIgnoringNotFound, httpStatusOf, type Kube, readOptional } from '../adapters/kube.ts';
import type { KubeReads } from '../adapters/tenant-objects.ts';
import { GROUP, LABELS, MANAGED_BY } from '../api/constants.ts';
import { STREAM_LIMITS_BY_TIER } from '../api/tiers.ts';
import type { Logger } from '../log.ts';
import { notReady, READY, type Step, type Verdict } from './step.ts';
import { parseTenantYaml } from './tenant-yaml.ts';
import type { TenantScope } from '../tenancy/scope.ts';
import { STREAM_KINDS, streamName } from '../tenancy/names.ts';

export interface AlertStepDeps {
  readonly kube: Kube;
  readonly reads: KubeReads;
}

export const PROMETHEUS_RULE = {
  group: 'monitoring.coreos.com',
  version: 'v1',
  kind: 'PrometheusRule',
  plural: 'prometheusrules',
  crd: 'prometheusrules.monitoring.coreos.com',
} as const;

/** Marks rule ConfigMaps (and PrometheusRules) for whatever loads rule files into Prometheus. */
export const ALERT_RULES_LABEL = `${GROUP}/alert-rules`;
const QUEUE_DEPTH_ALERT = 'CapsuleQueueDepthHigh';

export const alertRulesName = (code: string): string => `eva-${code.toLowerCase()}-queue-depth`;
export const alertRulesFileKey = (code: string): string => `eva-${code}-queue-depth.yaml`;

/** 80% of the tier's max messages per stream, in integer arithmetic (0.8 is not exact in binary). */
function queueDepthThreshold(scope: TenantScope): number {
  return Math.floor((STREAM_LIMITS_BY_TIER[scope.tenant.spec.tier].maxMsgs * 4) / 5);
}

export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface RuleGroup {
  name: string;
  rules: AlertRule[];
}

function desiredRuleGroup(scope: TenantScope): RuleGroup {
  const { code } = scope;
  const threshold = queueDepthThreshold(scope);
  const max = STREAM_LIMITS_BY_TIER[scope.tenant.spec.tier].maxMsgs;
  const rules = STREAM_KINDS.map((kind): AlertRule => {
    const stream = streamName(code, kind);
    return {
      alert: QUEUE_DEPTH_ALERT,
      expr: `capsule_queue_depth{capsule="${code}",stream="${stream}"} > ${threshold}`,
      for: '5m',
      labels: { severity: 'warning', capsule: code },
      annotations: {
        summary: `Capsule ${code}: stream ${stream} is above 80% of its message limit`,
        description:
          `Stream ${stream} of capsule ${code} (tier ${scope.tenant.spec.tier}) has held more than ${threshold} ` +
          `of its ${max} messages for 5 minutes (now {{ $value }}); at the limit JetStream discards the oldest messages.`,
      },
    };
  });
  return { name: `eva-${code}-queue-depth`, rules };
}

/** The rule group as a Prometheus rule file. */
function ruleFileYaml(scope: TenantScope): string {
  // lineWidth 0: no folding, so the file reads like the rule (and diffs stay one line per field).
  return stringify({ groups: [desiredRuleGroup(scope)] }, { lineWidth: 0 });
}

function labels(scope: TenantScope): Record<string, string> {
  return {
    [LABELS.capsuleCode]: scope.code,
    [LABELS.tier]: scope.tenant.spec.tier,
    [LABELS.managedBy]: MANAGED_BY,
    [ALERT_RULES_LABEL]: 'true',
  };
}

interface PrometheusRuleObject extends KubernetesObject {
  spec: { groups: RuleGroup[] };
}

function desiredPrometheusRule(scope: TenantScope): PrometheusRuleObject {
  return {
    apiVersion: `${PROMETHEUS_RULE.group}/${PROMETHEUS_RULE.version}`,
    kind: PROMETHEUS_RULE.kind,
    metadata: { name: alertRulesName(scope.code), namespace: scope.namespace, labels: labels(scope) },
    spec: { groups: [desiredRuleGroup(scope)] },
  };
}

function desiredConfigMap(scope: TenantScope): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: alertRulesName(scope.code), namespace: scope.namespace, labels: labels(scope) },
    data: { [alertRulesFileKey(scope.code)]: ruleFileYaml(scope) },
  };
}

// ---- Is the Prometheus Operator there? ----

const SUPPORT_CACHE_MS = 60_000;
interface SupportAnswer {
  readonly supported: boolean;
  readonly at: number;
}
/**
 * Per cluster connection (its KubeConfig, which a Kube reading from caches shares): a CRD lookup per
 * tenant per drift check would be wasteful.
 */
const supportCache = new WeakMap<Kube['config'], SupportAnswer>();

/** Usable means: established, serving v1 and not being deleted (creating objects would fail otherwise). */
function usable(crd: V1CustomResourceDefinition): boolean {
  const established = crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
  const servesV1 = crd.spec.versions.some((v) => v.name === PROMETHEUS_RULE.version && v.served);
  return established && servesV1 && !crd.metadata?.deletionTimestamp;
}

async function lookUpSupport(kube: Kube, log: Logger): Promise<boolean> {
  try {
    const crd = await readOptional(() => kube.apiextensions.readCustomResourceDefinition({ name: PROMETHEUS_RULE.crd }));
    return crd !== undefined && usable(crd);
  } catch (err) {
    // Without RBAC to read CRDs the answer is unknowable; the ConfigMap works everywhere.
    if (httpStatusOf(err) !== 403) throw err;
    log.warn({ crd: PROMETHEUS_RULE.crd }, 'not allowed to read CRDs: writing alert rules as a ConfigMap');
    return false;
  }
}

/** Whether PrometheusRule objects can be created; the answer is reused for 60 s. */
export async function prometheusRulesSupported(kube: Kube, log: Logger): Promise<boolean> {
  const cached = supportCache.get(kube.config);
  if (cached && Date.now() - cached.at < SUPPORT_CACHE_MS) return cached.supported;
  const supported = await lookUpSupport(kube, log);
  supportCache.set(kube.config, { supported, at: Date.now() });
  return supported;
}

// ---- Reading and comparing ----

const customRef = (scope: TenantScope): { group: string; version: string; plural: string; namespace: string; name: string } => ({
  group: PROMETHEUS_RULE.group,
  version: PROMETHEUS_RULE.version,
  plural: PROMETHEUS_RULE.plural,
  namespace: scope.namespace,
  name: alertRulesName(scope.code),
});

/**
 * The PrometheusRule as stored; also undefined when the CRD itself is absent (the API answers 404).
 * Read from the API, not `reads`: no watch cache holds a kind whose CRD may not be installed.
 */
function readPrometheusRule(kube: Kube, scope: TenantScope): Promise<unknown> {
  return readOptional(() => kube.custom.getNamespacedCustomObject(customRef(scope)));
}

function readConfigMap(reads: KubeReads, scope: TenantScope): Promise<V1ConfigMap | undefined> {
  return reads.get('ConfigMap', scope.namespace, alertRulesName(scope.code));
}

/** Key order aside: the API server re-encodes custom objects with its own key order. */
const sameJson = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

function hasLabels(actual: Record<string, string> | undefined, desired: Record<string, string>): boolean {
  return Object.entries(desired).every(([k, v]) => actual?.[k] === v);
}

function prometheusRuleMatches(actual: unknown, scope: TenantScope): boolean {
  const object = actual as Partial<PrometheusRuleObject> | undefined;
  return hasLabels(object?.metadata?.labels, labels(scope)) && sameJson(object?.spec?.groups, [desiredRuleGroup(scope)]);
}

/** The ConfigMap lives in the tenant's namespace, so its text is read as tenant input; unreadable is drift. */
function parseYaml(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  const read = parseTenantYaml(text);
  return read.ok ? read.value : undefined;
}

/** Compares the parsed rule file, not its text: a different YAML layout of the same rules is no drift. */
function configMapMatches(actual: V1ConfigMap | undefined, scope: TenantScope): boolean {
  const file = parseYaml(actual?.data?.[alertRulesFileKey(scope.code)]);
  return hasLabels(actual?.metadata?.labels, labels(scope)) && sameJson(file, { groups: [desiredRuleGroup(scope)] });
}

// ---- The step ----

const deleteConfigMap = (kube: Kube, scope: TenantScope): Promise<void> =>
  deleteIgnoringNotFound(() => kube.core.deleteNamespacedConfigMap({ name: alertRulesName(scope.code), namespace: scope.namespace }));

async function ensure(scope: TenantScope, { kube, reads }: AlertStepDeps): Promise<Verdict> {
  if (await prometheusRulesSupported(kube, scope.log)) {
    if (!prometheusRuleMatches(await readPrometheusRule(kube, scope), scope)) await kube.apply(desiredPrometheusRule(scope));
    // The Prometheus Operator arrived after the ConfigMap was written: one source of rules, not two.
    await deleteConfigMap(kube, scope);
    return READY;
  }
  if (!configMapMatches(await readConfigMap(reads, scope), scope)) await kube.apply(desiredConfigMap(scope));
  return READY;
}

async function verify(scope: TenantScope, { kube, reads }: AlertStepDeps): Promise<Verdict> {
  const name = alertRulesName(scope.code);
  if (await prometheusRulesSupported(kube, scope.log)) {
    const rule = await readPrometheusRule(kube, scope);
    if (!rule) return notReady(Reason.AlertRulesMissing, `PrometheusRule ${name} is missing`);
    if (!prometheusRuleMatches(rule, scope)) return notReady(Reason.AlertRulesDrifted, `PrometheusRule ${name} differs from the ${scope.tenant.spec.tier} tier`);
    if (await readConfigMap(reads, scope)) return notReady(Reason.AlertRulesDuplicated, `ConfigMap ${name} is left over next to PrometheusRule ${name}`);
    return READY;
  }
  const configMap = await readConfigMap(reads, scope);
  if (!configMap) return notReady(Reason.AlertRulesMissing, `ConfigMap ${name} is missing`);
  if (!configMapMatches(configMap, scope)) return notReady(Reason.AlertRulesDrifted, `ConfigMap ${name} differs from the ${scope.tenant.spec.tier} tier`);
  return READY;
}

/** Deletes whichever exists; needs no CRD lookup, since a missing CRD answers 404 like a missing object. */
async function remove(scope: TenantScope, { kube }: AlertStepDeps): Promise<void> {
  await deleteIgnoringNotFound(() => kube.custom.deleteNamespacedCustomObject(customRef(scope)));
  await deleteConfigMap(kube, scope);
}

async function verifyRemoved(scope: TenantScope, { kube, reads }: AlertStepDeps): Promise<Verdict> {
  const name = alertRulesName(scope.code);
  if (await readPrometheusRule(kube, scope)) return notReady(Reason.AlertRulesPresent, `PrometheusRule ${name} still exists`);
  if (await readConfigMap(reads, scope)) return notReady(Reason.AlertRulesPresent, `ConfigMap ${name} still exists`);
  return READY;
}

export const alertsStep: Step<AlertStepDeps> = { name: 'alerts', ensure, verify, remove, verifyRemoved };
