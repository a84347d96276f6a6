/**
 * Decides the TLS check: the cert-manager ClusterIssuer (INGRESS_TLS_ISSUER) exists and is Ready, or
 * the wildcard Secret (INGRESS_TLS_SECRET) exists as kubernetes.io/tls with tls.crt and tls.key (what
 * the operator copies into each tenant namespace); with neither, tenant Ingresses have no `tls` section.
 */
import type { Seen, TlsFacts } from './facts.ts';
import { type CheckResult, couldNotCheck, fail, ok, warn } from './result.ts';

export const TLS = 'tls';

function issuer(facts: Extract<TlsFacts, { mode: 'issuer' }>): CheckResult {
  const fix = `create ClusterIssuer ${facts.name} (cert-manager), or set ingressTls.clusterIssuer to one that exists (kubectl get clusterissuers)`;
  if (facts.issuer === undefined) return fail(TLS, `ClusterIssuer ${facts.name} not found (or cert-manager is not installed)`, fix);
  if (facts.issuer.ready !== 'True') {
    return fail(TLS, `ClusterIssuer ${facts.name} is not Ready (${facts.issuer.ready}${facts.issuer.message ? `: ${facts.issuer.message}` : ''})`, `fix ClusterIssuer ${facts.name}: kubectl describe clusterissuer ${facts.name}`);
  }
  return ok(TLS, `ClusterIssuer ${facts.name} is Ready: each tenant gets a certificate in Secret eva-tenant-tls`);
}

function secret(facts: Extract<TlsFacts, { mode: 'secret' }>): CheckResult {
  const fix = `create ${facts.ref} as a kubernetes.io/tls Secret (kubectl create secret tls), or set ingressTls.secret=<namespace>/<name> of one that exists`;
  if (facts.secret === undefined) return fail(TLS, `Secret ${facts.ref} not found`, fix);
  if (facts.secret.type !== 'kubernetes.io/tls') return fail(TLS, `Secret ${facts.ref} is of type ${facts.secret.type}, not kubernetes.io/tls`, fix);
  if (!facts.secret.hasCrt || !facts.secret.hasKey) return fail(TLS, `Secret ${facts.ref} lacks tls.crt or tls.key`, fix);
  return ok(TLS, `Secret ${facts.ref} (kubernetes.io/tls) is copied into each tenant namespace`);
}

export function decideTls(facts: Seen<TlsFacts>): CheckResult {
  if (!facts.ok) return fail(TLS, couldNotCheck(facts.error), 'make sure the cluster is reachable and you may read the ClusterIssuer or Secret, and run again');
  switch (facts.value.mode) {
    case 'none':
      return warn(TLS, 'no ingressTls.clusterIssuer or ingressTls.secret: tenant Ingresses serve plain HTTP');
    case 'issuer':
      return issuer(facts.value);
    case 'secret':
      return secret(facts.value);
  }
}
