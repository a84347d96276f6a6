/**
 * IngressReady: one Ingress per tenant, host `<code>.<EVA_BASE_DOMAIN>`, one path per installed
 * module (to the module's Service, named after its release). Ready once the ingress controller gave
 * it an address, or, with INGRESS_READY_ON_CREATE, as soon as it exists; with TLS (ingress-tls.ts)
 * also once the certificate it names is there, unexpired and for the host.
 */
import { LABELS, MANAGED_BY } from '../../api/constants.ts';
import { Reason } from '../../api/reasons.ts';
import type { V1Ingress, V1IngressSpec } from '@kubernetes/client-node';
import type { OperatorConfig } from '../../config.ts';
import { deleteIgnoringNotFound, type Kube } from '../../adapters/kube.ts';
import type { KubeReads } from '../../adapters/tenant-objects.ts';
import { ingressAnnotations, ingressTls, judgeTls, judgeTlsCopy, removeTlsCopy, syncTlsCopy } from './ingress-tls.ts';
import { notReady, READY, type Step, type Verdict, wakeOn } from '../step.ts';
import type { TenantScope } from '../../tenancy/scope.ts';

export const INGRESS_NAME = 'eva-tenant';
const MODULE_PORT = 8080;

export interface IngressStepDeps {
  kube: Kube;
  reads: KubeReads;
  config: Pick<OperatorConfig, 'baseDomain' | 'ingressClass' | 'ingressReadyOnCreate' | 'ingress'>;
}

const tenantHost = (code: string, baseDomain: string): string => `${code.toLowerCase()}.${baseDomain}`;

function desiredIngressSpec(scope: TenantScope, config: IngressStepDeps['config']): V1IngressSpec {
  const spec: V1IngressSpec = {
    rules: [
      {
        host: tenantHost(scope.code, config.baseDomain),
        http: {
          paths: scope.modules.map((module) => ({
            path: `/${module}`,
            pathType: 'Prefix',
            backend: { service: { name: module, port: { number: MODULE_PORT } } },
          })),
        },
      },
    ],
  };
  if (config.ingressClass) spec.ingressClassName = config.ingressClass;
  const tls = ingressTls(config.ingress, tenantHost(scope.code, config.baseDomain));
  if (tls) spec.tls = tls;
  return spec;
}

function desiredIngress(scope: TenantScope, config: IngressStepDeps['config']): V1Ingress {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name: INGRESS_NAME,
      namespace: scope.namespace,
      labels: { [LABELS.capsuleCode]: scope.code, [LABELS.managedBy]: MANAGED_BY },
      ...withAnnotations(ingressAnnotations(config.ingress)),
    },
    spec: desiredIngressSpec(scope, config),
  };
}

const withAnnotations = (annotations: Record<string, string> | undefined): { annotations?: Record<string, string> } => (annotations ? { annotations } : {});

/**
 * The parts of the spec this operator owns, in a comparable form. The class counts only when the
 * operator sets one (INGRESS_CLASS): otherwise the API server's DefaultIngressClass admission fills
 * in the cluster's default class, and that is not drift.
 */
function routes(spec: V1IngressSpec | undefined, withClass: boolean): string {
  const rules = (spec?.rules ?? []).map((r) => ({
    host: r.host,
    paths: (r.http?.paths ?? []).map((p) => [p.path, p.pathType, p.backend.service?.name, p.backend.service?.port?.number]),
  }));
  const tls = (spec?.tls ?? []).map((t) => [t.hosts ?? [], t.secretName ?? null]);
  return JSON.stringify({ cls: withClass ? (spec?.ingressClassName ?? null) : null, rules, tls });
}

/** The annotations the operator sets (others, e.g. a controller's, are not its business). */
function ownAnnotationsMatch(current: V1Ingress, desired: V1Ingress): boolean {
  const actual = current.metadata?.annotations ?? {};
  return Object.entries(desired.metadata?.annotations ?? {}).every(([key, value]) => actual[key] === value);
}

const readIngress = (reads: KubeReads, namespace: string): Promise<V1Ingress | undefined> => reads.get('Ingress', namespace, INGRESS_NAME);

/** What verify says of the Ingress as read (or as the apply returned it) against the desired one. */
function judgeRoutes(current: V1Ingress | undefined, desired: V1Ingress, config: IngressStepDeps['config']): Verdict {
  if (!current) return notReady(Reason.IngressMissing, `Ingress ${INGRESS_NAME} does not exist`);
  if (!routesMatch(current, desired, config)) {
    return notReady(Reason.IngressDrifted, `Ingress ${INGRESS_NAME} does not route to exactly the tenant's modules (or its TLS or annotations differ)`);
  }
  if (config.ingressReadyOnCreate) return READY;
  const addresses = current.status?.loadBalancer?.ingress ?? [];
  if (addresses.length === 0) return notReady(Reason.WaitingForAddress, `Ingress ${INGRESS_NAME} has no load-balancer address yet`);
  return READY;
}

const routesMatch = (current: V1Ingress, desired: V1Ingress, config: IngressStepDeps['config']): boolean => {
  const withClass = config.ingressClass !== undefined;
  return routes(current.spec, withClass) === routes(desired.spec, withClass) && ownAnnotationsMatch(current, desired);
};

/** Routes first (a TLS problem is reported, the routes keep serving), then the certificate. */
async function judge(scope: TenantScope, current: V1Ingress | undefined, desired: V1Ingress, { kube, config }: IngressStepDeps): Promise<Verdict> {
  const routesVerdict = judgeRoutes(current, desired, config);
  if (!routesVerdict.ready) return routesVerdict;
  return judgeTls(scope, kube, config.ingress, tenantHost(scope.code, config.baseDomain));
}

/** The address is the ingress controller's to set: judged from what was just read or applied, no second read. */
async function ensure(scope: TenantScope, deps: IngressStepDeps): Promise<Verdict> {
  const { kube, reads, config } = deps;
  const current = await readIngress(reads, scope.namespace);
  const desired = desiredIngress(scope, config);
  const applied = current && routesMatch(current, desired, config) ? current : await kube.apply(desired);
  const copied = await syncTlsCopy(scope, kube, config.ingress);
  return copied.ready ? judge(scope, applied, desired, deps) : copied;
}

async function verify(scope: TenantScope, deps: IngressStepDeps): Promise<Verdict> {
  const desired = desiredIngress(scope, deps.config);
  const verdict = await judge(scope, await readIngress(deps.reads, scope.namespace), desired, deps);
  // The platform's certificate rotated: the copy is stale (ensure copies it again).
  return verdict.ready ? judgeTlsCopy(scope, deps.kube, deps.config.ingress) : verdict;
}

async function remove(scope: TenantScope, { kube }: IngressStepDeps): Promise<void> {
  await deleteIgnoringNotFound(() => kube.networking.deleteNamespacedIngress({ name: INGRESS_NAME, namespace: scope.namespace }));
  await removeTlsCopy(scope, kube);
}

async function verifyRemoved(scope: TenantScope, { reads }: IngressStepDeps): Promise<Verdict> {
  return (await readIngress(reads, scope.namespace)) ? notReady(Reason.IngressPresent, `Ingress ${INGRESS_NAME} still exists`) : READY;
}

/** The ingress controller setting the address, or someone changing or deleting the Ingress. */
const ingressState = wakeOn('Ingress', (ingress) => JSON.stringify([routes(ingress.spec, true), ingress.status?.loadBalancer?.ingress ?? []]));

export const ingressStep: Step<IngressStepDeps> = { name: 'ingress', ensure, verify, remove, verifyRemoved, wakeOn: ingressState };
