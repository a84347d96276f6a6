/**
 * Decides the ingress checks: the IngressClass tenant Ingresses name (INGRESS_CLASS, or the cluster's
 * default), and whether the tenant NetworkPolicy's ingress exception (NETWORK_POLICY_INGRESS_NAMESPACES)
 * selects a namespace where something, the ingress controller, runs.
 */
import type { Labels } from '../config.ts';
import type { IngressClassFact, IngressNamespaceFact, Seen } from './facts.ts';
import { type CheckResult, couldNotCheck, fail, ok, warn } from './result.ts';

export const INGRESS_CLASS = 'ingress-class';
export const INGRESS_EXCEPTION = 'ingress-exception';

const names = (classes: readonly IngressClassFact[]): string => (classes.length === 0 ? 'none' : classes.map((c) => c.name).join(', '));

export function decideIngressClass(configured: string | undefined, facts: Seen<readonly IngressClassFact[]>): CheckResult {
  if (!facts.ok) return fail(INGRESS_CLASS, couldNotCheck(facts.error), 'make sure you may list ingressclasses.networking.k8s.io, and run again');
  const classes = facts.value;
  if (configured !== undefined) {
    const found = classes.find((c) => c.name === configured);
    if (found) return ok(INGRESS_CLASS, `IngressClass ${configured} exists (controller ${found.controller})`);
    return fail(
      INGRESS_CLASS,
      `IngressClass ${configured} does not exist (classes: ${names(classes)})`,
      classes.length === 0 ? `install an ingress controller that serves class ${configured}` : `set ingressClass to one of: ${names(classes)} (or install a controller serving ${configured})`,
    );
  }
  const defaults = classes.filter((c) => c.isDefault);
  if (defaults.length === 1) return ok(INGRESS_CLASS, `none set: tenant Ingresses get the default class ${defaults[0]?.name ?? ''}`);
  const why = defaults.length === 0 ? 'the cluster has no default IngressClass' : `the cluster has ${String(defaults.length)} default IngressClasses`;
  return warn(INGRESS_CLASS, `none set and ${why} (classes: ${names(classes)}): tenant Ingresses may be served by no controller; set ingressClass`);
}

const selectorText = (selector: Labels): string =>
  Object.entries(selector)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');

export function decideIngressException(selector: Labels, facts: Seen<readonly IngressNamespaceFact[]> | undefined): CheckResult {
  if (facts === undefined) return warn(INGRESS_EXCEPTION, 'the tenant NetworkPolicy is off (networkPolicy.enabled=false): tenant pods take traffic from any pod');
  const wanted = selectorText(selector);
  const fix = 'set networkPolicy.ingressNamespaces=kubernetes.io/metadata.name=<the namespace of your ingress controller>';
  if (!facts.ok) return fail(INGRESS_EXCEPTION, couldNotCheck(facts.error), 'make sure you may list namespaces and pods, and run again');
  if (facts.value.length === 0) return fail(INGRESS_EXCEPTION, `no namespace matches networkPolicy.ingressNamespaces ${wanted}: tenant modules would be unreachable from the ingress controller`, fix);
  const serving = facts.value.filter((ns) => ns.runningPod !== undefined);
  if (serving.length === 0) {
    return fail(INGRESS_EXCEPTION, `${wanted} selects ${facts.value.map((ns) => ns.name).join(', ')}, where no pod runs: no ingress controller there`, fix);
  }
  return ok(INGRESS_EXCEPTION, `${wanted} selects ${serving.map((ns) => `${ns.name} (pod ${ns.runningPod ?? ''} running)`).join(', ')}`);
}
