/**
 * The objects the operator makes in tenant namespaces, read two ways behind one interface:
 * `apiReads` asks the API server (what provisioning uses: it must see its own writes at once), and
 * `TenantObjectCache` answers from watch caches (controller-runtime's cache), which is what the drift
 * check reads, so a thousand Active tenants cost the API server watches, not a dozen GETs each per
 * drift interval. Both are passed explicitly, side by side with the Kube clients (as Flux passes its
 * cached client.Client and its APIReader): whoever runs a step chooses which one it reads through.
 * What no cache holds (Pods, Secrets that are not the operator's, PrometheusRules) is read with the
 * Kube clients directly. One informer per kind across namespaces, selected by the operator's labels;
 * cached objects are trimmed to what the steps read (never managedFields, release Secrets without
 * their payload, Deployments without their pod template), so the caches stay small.
 */
import type {
  KubernetesListObject,
  KubernetesObject,
  V1ConfigMap,
  V1Deployment,
  V1Ingress,
  V1LimitRange,
  V1Namespace,
  V1NetworkPolicy,
  V1ResourceQuota,
  V1Secret,
  V1SecretList,
} from '@kubernetes/client-node';
import { LABELS, MANAGED_BY, MODULE_LABEL } from '../api/constants.ts';
import type { Logger } from '../log.ts';
import { type CachingInformer, InformerSet, restartingInformer } from '../runtime/informers.ts';
import { type Kube, METADATA_ONLY, readOptional } from './kube.ts';

export interface TenantObjects {
  Namespace: V1Namespace;
  ResourceQuota: V1ResourceQuota;
  LimitRange: V1LimitRange;
  NetworkPolicy: V1NetworkPolicy;
  ConfigMap: V1ConfigMap;
  /** The operator's own Secrets (credentials), not helm's. */
  Secret: V1Secret;
  Ingress: V1Ingress;
  /** Module Deployments (labelled with their module). */
  Deployment: V1Deployment;
  /** helm's storage Secrets of the operator's releases, metadata only (no `data`). */
  HelmRelease: V1Secret;
}
export type TenantKind = keyof TenantObjects;
/** Kinds read as "every one in the namespace" rather than by name. */
export type ListedKind = 'Deployment' | 'HelmRelease' | 'NetworkPolicy';

export interface KubeReads {
  /** undefined when absent. `namespace` is '' for a Namespace. */
  get<K extends TenantKind>(kind: K, namespace: string, name: string): Promise<TenantObjects[K] | undefined>;
  /** The kind's objects in the namespace that carry its label. */
  list<K extends ListedKind>(kind: K, namespace: string): Promise<TenantObjects[K][]>;
  /** This pass created `namespace` (201): until `handOver`, only the pass writes there (pass-reads.ts). */
  namespaceCreated?(namespace: string): void;
  /**
   * Another writer (helm) is let into `namespace`: its reads go to the API server again. True when
   * this pass created the namespace (nothing of helm's can be there: the pass's reads said so).
   */
  handOver?(namespace: string): boolean;
}

const MANAGED = `${LABELS.managedBy}=${MANAGED_BY}`;

interface KindSource<T extends KubernetesObject> {
  /** The collection across namespaces, for the watch. */
  readonly path: string;
  readonly labelSelector: string;
  /** Every object across namespaces that carries `labelSelector` (the informer's list). */
  readonly listAll: (kube: Kube, labelSelector: string) => Promise<KubernetesListObject<T>>;
  readonly read: (kube: Kube, namespace: string, name: string) => Promise<T>;
  readonly listIn?: (kube: Kube, namespace: string) => Promise<KubernetesListObject<T>>;
  /** Drops what no step reads, from the cached copy only. */
  readonly trim?: (obj: T) => void;
}

/** A PartialObjectMetadataList with no items carries `items: null`, whatever the client's types say. */
function itemsOf(list: V1SecretList): V1SecretList {
  const items = list.items as typeof list.items | null;
  list.items = items ?? [];
  return list;
}

const SOURCES: { readonly [K in TenantKind]: KindSource<TenantObjects[K]> } = {
  Namespace: {
    path: '/api/v1/namespaces',
    labelSelector: MANAGED,
    listAll: (kube, labelSelector) => kube.core.listNamespace({ labelSelector }),
    read: (kube, _namespace, name) => kube.core.readNamespace({ name }),
  },
  ResourceQuota: {
    path: '/api/v1/resourcequotas',
    labelSelector: MANAGED,
    listAll: (kube, labelSelector) => kube.core.listResourceQuotaForAllNamespaces({ labelSelector }),
    read: (kube, namespace, name) => kube.core.readNamespacedResourceQuota({ name, namespace }),
    trim: (quota) => {
      delete quota.status;
    },
  },
  LimitRange: {
    path: '/api/v1/limitranges',
    labelSelector: MANAGED,
    listAll: (kube, labelSelector) => kube.core.listLimitRangeForAllNamespaces({ labelSelector }),
    read: (kube, namespace, name) => kube.core.readNamespacedLimitRange({ name, namespace }),
    trim: (limitRange) => {
      // A watch event is wire JSON (`default`); the list, like every read, the client's model (`_default`).
      for (const limit of limitRange.spec?.limits ?? []) {
        const wire = limit as { default?: Record<string, string> };
        if (wire.default !== undefined) [limit._default, wire.default] = [wire.default, undefined];
      }
    },
  },
  NetworkPolicy: {
    path: '/apis/networking.k8s.io/v1/networkpolicies',
    // Every policy, not only the operator's: one it did not write in a tenant namespace is reported
    // (policies add up, so any other one may widen the tenant's isolation).
    labelSelector: '',
    listAll: (kube, labelSelector) => kube.networking.listNetworkPolicyForAllNamespaces({ labelSelector }),
    read: (kube, namespace, name) => kube.networking.readNamespacedNetworkPolicy({ name, namespace }),
    listIn: (kube, namespace) => kube.networking.listNamespacedNetworkPolicy({ namespace }),
  },
  ConfigMap: {
    path: '/api/v1/configmaps',
    labelSelector: MANAGED,
    listAll: (kube, labelSelector) => kube.core.listConfigMapForAllNamespaces({ labelSelector }),
    read: (kube, namespace, name) => kube.core.readNamespacedConfigMap({ name, namespace }),
  },
  Secret: {
    path: '/api/v1/secrets',
    // helm's release Secrets carry the release labels too (managed-by among them): they are HelmRelease.
    labelSelector: `${MANAGED},owner!=helm`,
    listAll: (kube, labelSelector) => kube.core.listSecretForAllNamespaces({ labelSelector }),
    read: (kube, namespace, name) => kube.core.readNamespacedSecret({ name, namespace }),
  },
  Ingress: {
    path: '/apis/networking.k8s.io/v1/ingresses',
    labelSelector: MANAGED,
    listAll: (kube, labelSelector) => kube.networking.listIngressForAllNamespaces({ labelSelector }),
    read: (kube, namespace, name) => kube.networking.readNamespacedIngress({ name, namespace }),
  },
  Deployment: {
    path: '/apis/apps/v1/deployments',
    labelSelector: MODULE_LABEL,
    listAll: (kube, labelSelector) => kube.apps.listDeploymentForAllNamespaces({ labelSelector }),
    read: (kube, namespace, name) => kube.apps.readNamespacedDeployment({ name, namespace }),
    listIn: (kube, namespace) => kube.apps.listNamespacedDeployment({ namespace, labelSelector: MODULE_LABEL }),
    trim: (deployment) => {
      // Readiness is judged from metadata, spec.replicas and status; the pod template is the bulk.
      if (deployment.spec) deployment.spec.template = {};
    },
  },
  HelmRelease: {
    path: '/api/v1/secrets',
    labelSelector: `owner=helm,${MANAGED}`,
    listAll: async (kube, labelSelector) => itemsOf(await kube.core.listSecretForAllNamespaces({ labelSelector }, METADATA_ONLY)),
    read: (kube, namespace, name) => kube.core.readNamespacedSecret({ name, namespace }),
    // Every helm release in the namespace (also those of others), as `helm list` would see them.
    listIn: async (kube, namespace) => itemsOf(await kube.core.listNamespacedSecret({ namespace, labelSelector: 'owner=helm' }, METADATA_ONLY)),
    trim: (release) => {
      // A watch event carries the whole Secret: keep its metadata only.
      delete release.data;
    },
  },
};

const TENANT_KINDS = Object.keys(SOURCES) as TenantKind[];

function listIn<K extends ListedKind>(kind: K): NonNullable<KindSource<TenantObjects[K]>['listIn']> {
  const list = SOURCES[kind].listIn;
  if (list === undefined) throw new Error(`no namespace list for ${kind}`);
  return list;
}

/** Straight from the API server, as provisioning needs. */
export function apiReads(kube: Kube): KubeReads {
  return {
    get: <K extends TenantKind>(kind: K, namespace: string, name: string) =>
      readOptional(() => (SOURCES[kind] as KindSource<TenantObjects[K]>).read(kube, namespace, name)),
    list: async <K extends ListedKind>(kind: K, namespace: string) => (await listIn(kind)(kube, namespace)).items,
  };
}

export type CacheEvent = 'add' | 'update' | 'delete';
export type CacheHandler<K extends TenantKind> = (obj: TenantObjects[K]) => void;

export interface TenantObjectCacheOptions {
  kube: Kube;
  log: Logger;
}

/** The watch caches; reads fall back to the API for a kind whose cache has not synced (yet). */
export class TenantObjectCache {
  private readonly options: TenantObjectCacheOptions;
  private readonly handlers: { kind: TenantKind; event: CacheEvent; handler: (obj: KubernetesObject) => void }[] = [];
  private readonly informers: InformerSet<TenantKind>;
  /** For a kind whose cache has not synced. */
  private readonly fallback: KubeReads;

  constructor(options: TenantObjectCacheOptions) {
    this.options = options;
    this.fallback = apiReads(options.kube);
    this.informers = new InformerSet(TENANT_KINDS, (kind, stopping) => this.informerOf(kind, stopping));
  }

  /** Subscribes before start: the initial list arrives as 'add' events. */
  on<K extends TenantKind>(kind: K, event: CacheEvent, handler: CacheHandler<K>): void {
    this.handlers.push({ kind, event, handler });
  }

  start(): Promise<void> {
    return this.informers.start();
  }

  stop(): Promise<void> {
    return this.informers.stop();
  }

  /** Reads from the caches; from the API for a kind not synced. */
  readonly reads: KubeReads = {
    // An informer of kind K holds objects of kind K only.
    get: async <K extends TenantKind>(kind: K, namespace: string, name: string): Promise<TenantObjects[K] | undefined> => {
      const informer = this.informers.syncedInformer(kind);
      if (informer === undefined) return this.fallback.get(kind, namespace, name);
      return informer.get(name, namespace || undefined);
    },
    list: async <K extends ListedKind>(kind: K, namespace: string): Promise<TenantObjects[K][]> => {
      const informer = this.informers.syncedInformer(kind);
      if (informer === undefined) return this.fallback.list(kind, namespace);
      return informer.list(namespace) as TenantObjects[K][];
    },
  };

  private informerOf(kind: TenantKind, stopping: () => boolean): CachingInformer<KubernetesObject> {
    const source = SOURCES[kind] as KindSource<KubernetesObject>;
    const { kube, log } = this.options;
    const informer = restartingInformer<KubernetesObject>({
      config: kube.config,
      path: source.path,
      labelSelector: source.labelSelector,
      list: () => source.listAll(kube, source.labelSelector),
      trim: (obj) => {
        if (obj.metadata) delete obj.metadata.managedFields;
        source.trim?.(obj);
      },
      log,
      stopping,
    });
    for (const { event, handler } of this.handlers.filter((h) => h.kind === kind)) informer.on(event, handler);
    return informer;
  }
}
