/**
 * TLS of the tenant Ingress (part of step ingress): which annotations and `tls` section the Ingress
 * carries, the copy of the platform's wildcard certificate (INGRESS_TLS_SECRET) into the tenant
 * namespace, and the verdict on the certificate the Ingress names (present, not expired, for the host).
 * A TLS problem never takes the routes away: the Ingress is applied first and keeps serving.
 */
import { X509Certificate } from 'node:crypto';
import type { V1IngressTLS, V1Secret } from '@kubernetes/client-node';
import { LABELS, MANAGED_BY } from '../../api/constants.ts';
import { Reason } from '../../api/reasons.ts';
import { type IngressSettings, ISSUER_ANNOTATION } from '../../config.ts';
import { deleteIgnoringNotFound, type Kube, readOptional } from '../../adapters/kube.ts';
import { notReady, READY, type Verdict } from '../step.ts';
import { type TenantScope } from '../../tenancy/scope.ts';

/** The Secret the tenant Ingress names: cert-manager's (issuer) or the operator's copy (secret). */
export const TLS_SECRET_NAME = 'eva-tenant-tls';

export function ingressAnnotations(settings: IngressSettings): Record<string, string> | undefined {
  const annotations: Record<string, string> = { ...settings.annotations };
  if (settings.tls.mode === 'issuer') annotations[ISSUER_ANNOTATION] = settings.tls.clusterIssuer;
  return Object.keys(annotations).length > 0 ? annotations : undefined;
}

export function ingressTls(settings: IngressSettings, host: string): V1IngressTLS[] | undefined {
  return settings.tls.mode === 'none' ? undefined : [{ hosts: [host], secretName: TLS_SECRET_NAME }];
}

// Secrets are read straight from the API: cert-manager's carry none of the operator's labels, so the
// watch caches (managed objects only) never hold them.
const readSecret = (kube: Kube, namespace: string, name: string): Promise<V1Secret | undefined> =>
  readOptional(() => kube.core.readNamespacedSecret({ name, namespace }));

type CopyState = { verdict: Verdict } | { wanted: V1Secret; upToDate: boolean };

/** INGRESS_TLS_SECRET: the copy the tenant namespace should hold, and whether it does (reads only). */
async function copyState(scope: TenantScope, kube: Kube, source: { namespace: string; name: string }): Promise<CopyState> {
  const platform = await readSecret(kube, source.namespace, source.name);
  const crt = platform?.data?.['tls.crt'];
  const key = platform?.data?.['tls.key'];
  if (crt === undefined || key === undefined) {
    return { verdict: notReady(Reason.TlsSecretMissing, `Secret ${source.namespace}/${source.name} (INGRESS_TLS_SECRET) does not exist or has no tls.crt and tls.key`) };
  }
  const copy = await readSecret(kube, scope.namespace, TLS_SECRET_NAME);
  const wanted: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name: TLS_SECRET_NAME, namespace: scope.namespace, labels: { [LABELS.capsuleCode]: scope.code, [LABELS.managedBy]: MANAGED_BY } },
    data: { 'tls.crt': crt, 'tls.key': key },
  };
  return { wanted, upToDate: copy?.data?.['tls.crt'] === crt && copy.data['tls.key'] === key };
}

/** Copies the platform's certificate into the tenant namespace when the copy is missing or stale (rotated). */
export async function syncTlsCopy(scope: TenantScope, kube: Kube, settings: IngressSettings): Promise<Verdict> {
  if (settings.tls.mode !== 'secret') return READY;
  const state = await copyState(scope, kube, settings.tls.source);
  if ('verdict' in state) return state.verdict;
  if (!state.upToDate) await kube.apply(state.wanted);
  return READY;
}

/** The drift check's side of syncTlsCopy: reads only. */
export async function judgeTlsCopy(scope: TenantScope, kube: Kube, settings: IngressSettings): Promise<Verdict> {
  if (settings.tls.mode !== 'secret') return READY;
  const state = await copyState(scope, kube, settings.tls.source);
  if ('verdict' in state) return state.verdict;
  const { namespace, name } = settings.tls.source;
  return state.upToDate ? READY : notReady(Reason.TlsSecretMissing, `Secret ${scope.namespace}/${TLS_SECRET_NAME} is not the current copy of ${namespace}/${name} (INGRESS_TLS_SECRET)`);
}

/** The certificate in the Secret the Ingress names: there, readable, not expired, for the tenant's host. */
export async function judgeTls(scope: TenantScope, kube: Kube, settings: IngressSettings, host: string, now = new Date()): Promise<Verdict> {
  if (settings.tls.mode === 'none') return READY;
  const where = `Secret ${scope.namespace}/${TLS_SECRET_NAME}`;
  const secret = await readSecret(kube, scope.namespace, TLS_SECRET_NAME);
  const pem = secret?.data?.['tls.crt'];
  if (pem === undefined) {
    const by = settings.tls.mode === 'issuer' ? `cert-manager (ClusterIssuer ${settings.tls.clusterIssuer}) has not issued it yet` : 'the copy of INGRESS_TLS_SECRET is not there yet';
    return notReady(Reason.TlsSecretMissing, `${where} (TLS of ${host}) does not exist: ${by}`);
  }
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(Buffer.from(pem, 'base64'));
  } catch {
    return notReady(Reason.TlsCertificateInvalid, `${where} (TLS of ${host}) holds no readable certificate in tls.crt`);
  }
  if (new Date(certificate.validTo) <= now) {
    return notReady(Reason.TlsCertificateExpired, `${where} (TLS of ${host}): the certificate expired at ${new Date(certificate.validTo).toISOString()}`);
  }
  if (certificate.checkHost(host) === undefined) {
    return notReady(Reason.TlsCertificateInvalid, `${where}: the certificate is not valid for ${host}`);
  }
  return READY;
}

/** The operator's copy goes with the tenant (cert-manager's Secret goes with the namespace). */
export async function removeTlsCopy(scope: TenantScope, kube: Kube): Promise<void> {
  const copy = await readSecret(kube, scope.namespace, TLS_SECRET_NAME);
  if (copy?.metadata?.labels?.[LABELS.managedBy] !== MANAGED_BY) return;
  await deleteIgnoringNotFound(() => kube.core.deleteNamespacedSecret({ name: TLS_SECRET_NAME, namespace: scope.namespace }));
}
