/** INGRESS_TLS_*, INGRESS_ANNOTATIONS: the tenant Ingress's certificate and extra annotations (steps/ingress/ingress.ts). */
import { type EnvReader, LABEL_KEY, type Labels } from './env-reader.ts';

/**
 * TLS of the tenant Ingress: none; a cert-manager ClusterIssuer (annotation, and a per-tenant Secret
 * that cert-manager fills); or one wildcard certificate Secret the platform provides, copied into
 * each tenant namespace (an Ingress can only name a Secret of its own namespace).
 */
export type IngressTls =
  | { mode: 'none' }
  | { mode: 'issuer'; clusterIssuer: string }
  | { mode: 'secret'; source: { namespace: string; name: string } };

export interface IngressSettings {
  tls: IngressTls;
  /** Extra annotations on every tenant Ingress (INGRESS_ANNOTATIONS, a JSON object of strings). */
  annotations: Labels;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** The annotation cert-manager's ingress-shim reads: the operator writes it itself (INGRESS_TLS_ISSUER). */
export const ISSUER_ANNOTATION = 'cert-manager.io/cluster-issuer';

export function readIngressTls(env: EnvReader): IngressTls {
  const issuer = env.optional('INGRESS_TLS_ISSUER');
  const secret = env.optional('INGRESS_TLS_SECRET');
  if (issuer !== undefined && secret !== undefined) {
    env.problems.push('INGRESS_TLS_ISSUER and INGRESS_TLS_SECRET are exclusive: set one (or neither, for no TLS)');
    return { mode: 'none' };
  }
  if (issuer !== undefined) {
    env.matching('INGRESS_TLS_ISSUER', issuer, DNS_SUBDOMAIN, 'the name of a cert-manager ClusterIssuer');
    return { mode: 'issuer', clusterIssuer: issuer };
  }
  if (secret !== undefined) {
    const [namespace = '', name = '', ...rest] = secret.split('/');
    if (rest.length > 0 || !DNS_LABEL.test(namespace) || !DNS_SUBDOMAIN.test(name)) {
      env.problems.push(`INGRESS_TLS_SECRET must be <namespace>/<name> of a kubernetes.io/tls Secret, got "${secret}"`);
      return { mode: 'none' };
    }
    return { mode: 'secret', source: { namespace, name } };
  }
  return { mode: 'none' };
}

export function readIngressAnnotations(env: EnvReader): Labels {
  const raw = env.optional('INGRESS_ANNOTATIONS');
  if (raw === undefined) return {};
  const problem = `INGRESS_ANNOTATIONS must be a JSON object of annotation names to strings, e.g. {"traefik.ingress.kubernetes.io/router.entrypoints":"websecure"}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    env.problems.push(problem);
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    env.problems.push(problem);
    return {};
  }
  const entries = Object.entries(parsed);
  const bad = entries.filter(([key, value]) => typeof value !== 'string' || !LABEL_KEY.test(key)).map(([key]) => key);
  if (bad.length > 0) env.problems.push(`${problem}; not valid: ${bad.join(', ')}`);
  if (ISSUER_ANNOTATION in parsed) env.problems.push(`INGRESS_ANNOTATIONS must not set ${ISSUER_ANNOTATION}: use INGRESS_TLS_ISSUER`);
  return Object.fromEntries(entries.filter(([key]) => !bad.includes(key) && key !== ISSUER_ANNOTATION));
}
