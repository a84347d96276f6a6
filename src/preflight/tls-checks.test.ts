import { describe, expect, it } from 'vitest';
import { seen, unseen } from './facts.ts';
import { decideTls } from './tls-checks.ts';

describe('decideTls', () => {
  it('no TLS configured: a warning that tenants get plain HTTP', () => {
    expect(decideTls(seen({ mode: 'none' }))).toEqual({ check: 'tls', result: 'warn', detail: 'no ingressTls.clusterIssuer or ingressTls.secret: tenant Ingresses serve plain HTTP' });
  });

  it.each([
    ['Ready', { ready: 'True', message: '' }, 'ok'],
    ['not Ready', { ready: 'False', message: 'ACME account not registered' }, 'fail'],
    ['absent (or no cert-manager)', undefined, 'fail'],
  ])('a ClusterIssuer %s', (_name, issuer, result) => {
    expect(decideTls(seen({ mode: 'issuer', name: 'letsencrypt', issuer })).result).toBe(result);
  });

  it('a missing ClusterIssuer says how to fix it', () => {
    expect(decideTls(seen({ mode: 'issuer', name: 'letsencrypt', issuer: undefined }))).toMatchObject({
      detail: 'ClusterIssuer letsencrypt not found (or cert-manager is not installed)',
      fix: 'create ClusterIssuer letsencrypt (cert-manager), or set ingressTls.clusterIssuer to one that exists (kubectl get clusterissuers)',
    });
  });

  const tlsSecret = { type: 'kubernetes.io/tls', hasCrt: true, hasKey: true };
  it.each([
    ['a kubernetes.io/tls Secret', tlsSecret, 'ok', 'Secret eva-system/wildcard (kubernetes.io/tls) is copied into each tenant namespace'],
    ['a missing Secret', undefined, 'fail', 'Secret eva-system/wildcard not found'],
    ['an Opaque Secret', { ...tlsSecret, type: 'Opaque' }, 'fail', 'Secret eva-system/wildcard is of type Opaque, not kubernetes.io/tls'],
    ['a Secret without tls.key', { ...tlsSecret, hasKey: false }, 'fail', 'Secret eva-system/wildcard lacks tls.crt or tls.key'],
  ])('%s', (_name, secret, result, detail) => {
    const decided = decideTls(seen({ mode: 'secret', ref: 'eva-system/wildcard', secret }));
    expect(decided).toMatchObject({ result, detail });
    if (decided.result === 'fail') expect(decided.fix).toContain('kubectl create secret tls');
  });

  it('fails when the cluster could not be read', () => {
    expect(decideTls(unseen('timeout')).result).toBe('fail');
  });
});
