/**
 * The preflight's one observer: reads the cluster (as the current kubeconfig or the pod's
 * ServiceAccount) and NATS (as the system user), each probe bounded by a timeout, and returns what it
 * saw as facts (facts.ts). It decides nothing; a probe that fails or times out is recorded with its
 * reason. Credentials are read from their file and never leave this module.
 */
import { readFileSync } from 'node:fs';
import type { PreflightSettings } from '../config.ts';
import { describeApiError, type Kube, readOptional } from '../adapters/kube.ts';
import { valueAt } from '../script-commands/manifests.ts';
import { type AdmissionFacts, type IngressClassFact, type IngressNamespaceFact, type KubernetesFacts, type Observations, type Seen, seen, type TlsFacts, unseen } from './facts.ts';
import { ADMISSION_API, ADMISSION_KINDS } from './kubernetes-checks.ts';
import { observeNats } from './observe-nats.ts';

/** Runs `probe`, bounded by `timeoutMs`: its value, or why it gave none. */
export async function within<T>(timeoutMs: number, probe: () => Promise<T>): Promise<Seen<T>> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Seen<T>>((resolve) => {
    timer = setTimeout(() => {
      resolve(unseen(`no answer within ${String(timeoutMs / 1000)} s`));
    }, timeoutMs);
  });
  // An async wrapper, so a probe that throws before its first await is caught as well.
  const attempt = (async () => probe())().then(seen, (err: unknown) => unseen(describeApiError(err)));
  try {
    return await Promise.race([attempt, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function kubernetes(kube: Kube, chartFile: string): Promise<KubernetesFacts> {
  const floor = valueAt(readFileSync(chartFile, 'utf8'), ['kubeVersion']);
  if (floor === undefined) throw new Error(`${chartFile} has no kubeVersion`);
  return { gitVersion: (await kube.version.getCode()).gitVersion, floor };
}

async function admission(kube: Kube): Promise<AdmissionFacts> {
  const served = await Promise.all(ADMISSION_KINDS.map(async (kind) => ((await kube.discovery.served(ADMISSION_API, kind)) ? [kind] : [])));
  return served.flat();
}

const DEFAULT_CLASS = 'ingressclass.kubernetes.io/is-default-class';

async function ingressClasses(kube: Kube): Promise<IngressClassFact[]> {
  const list = await kube.networking.listIngressClass();
  return list.items.map((c) => ({ name: c.metadata?.name ?? '?', controller: c.spec?.controller ?? '?', isDefault: c.metadata?.annotations?.[DEFAULT_CLASS] === 'true' }));
}

async function ingressNamespaces(kube: Kube, selector: Readonly<Record<string, string>>): Promise<IngressNamespaceFact[]> {
  const labelSelector = Object.entries(selector).map(([key, value]) => `${key}=${value}`).join(',');
  const namespaces = (await kube.core.listNamespace({ labelSelector })).items.map((ns) => ns.metadata?.name ?? '?');
  return Promise.all(
    namespaces.map(async (name) => {
      const pods = await kube.core.listNamespacedPod({ namespace: name, fieldSelector: 'status.phase=Running', limit: 1 });
      return { name, runningPod: pods.items[0]?.metadata?.name };
    }),
  );
}

/** A ClusterIssuer's Ready condition, parsed here (custom objects come untyped). */
function issuerReadiness(object: unknown): { ready: string; message: string } {
  const conditions = (object as { status?: { conditions?: unknown } } | null)?.status?.conditions;
  const ready = (Array.isArray(conditions) ? (conditions as unknown[]) : []).find((c) => (c as { type?: unknown } | null)?.type === 'Ready') as
    | { status?: unknown; message?: unknown }
    | undefined;
  return { ready: typeof ready?.status === 'string' ? ready.status : 'no Ready condition', message: typeof ready?.message === 'string' ? ready.message : '' };
}

/** `kube` is called only when there is something to read: no TLS needs no cluster. */
async function tls(kube: () => Kube, settings: PreflightSettings['tls']): Promise<TlsFacts> {
  if (settings.mode === 'none') return { mode: 'none' };
  if (settings.mode === 'issuer') {
    const name = settings.clusterIssuer;
    const object: unknown = await readOptional<unknown>(() => kube().custom.getClusterCustomObject({ group: 'cert-manager.io', version: 'v1', plural: 'clusterissuers', name }));
    return { mode: 'issuer', name, issuer: object === undefined ? undefined : issuerReadiness(object) };
  }
  const { namespace, name } = settings.source;
  const secret = await readOptional(() => kube().core.readNamespacedSecret({ namespace, name }));
  // Only the type and the key names are kept: the certificate and key never leave this function.
  const keys = Object.keys(secret?.data ?? {});
  return {
    mode: 'secret',
    ref: `${namespace}/${name}`,
    secret: secret === undefined ? undefined : { type: secret.type ?? 'Opaque', hasCrt: keys.includes('tls.crt'), hasKey: keys.includes('tls.key') },
  };
}

/**
 * `kube` builds the client on first use and throws if the kubeconfig cannot be loaded: each Kubernetes
 * check then fails with that reason, and the NATS checks still run.
 */
export async function observe(settings: PreflightSettings, kube: () => Kube, timeoutMs: number): Promise<Observations> {
  const { networkPolicy } = settings;
  const [kubeFacts, admissionFacts, classes, namespaces, tlsFacts, nats] = await Promise.all([
    within(timeoutMs, () => kubernetes(kube(), settings.operatorChartFile)),
    within(timeoutMs, () => admission(kube())),
    within(timeoutMs, () => ingressClasses(kube())),
    networkPolicy.enabled ? within(timeoutMs, () => ingressNamespaces(kube(), networkPolicy.ingressNamespaces)) : Promise.resolve(undefined),
    within(timeoutMs, () => tls(kube, settings.tls)),
    observeNats(settings.nats, timeoutMs),
  ]);
  return { kubernetes: kubeFacts, admission: admissionFacts, ingressClasses: classes, ingressNamespaces: namespaces, tls: tlsFacts, nats };
}
