/**
 * The Secrets and ConfigMaps tenants' `spec.valuesFrom` may read: only those labelled
 * `eva.aidonow.com/values-source: "true"` (src/api/values-from.ts). Read two ways behind one interface:
 * straight from the API server (`apiValuesSources`, filtered by the label after the GET), or from two
 * label-selected watch caches across namespaces (`ValuesSourceCache`), which also tell the controller
 * when one changes, so the tenants that use it are reconciled at once (no polling). Nothing else is
 * cached: a Secret without the label never enters this process's memory through here.
 *
 * The operator's only writes to them (`apiValuesSourceBindings`): binding a source in its own
 * namespace to the uid of the EvaTenant it names, and retiring it at that tenant's decommission. Both
 * are merge patches of labels and one annotation, guarded by the resourceVersion that was read.
 */
import type { KubernetesObject, V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { LABELS, MANAGED_BY } from '../api/constants.ts';
import { RETIRED_FROM_ANNOTATION, VALUES_SOURCE_KINDS, VALUES_SOURCE_LABEL, VALUES_SOURCE_UID_LABEL, type ValuesSourceKind } from '../api/values-from.ts';
import type { Logger } from '../log.ts';
import { type CachingInformer, InformerSet, restartingInformer } from '../runtime/informers.ts';
import { isConflict, type Kube, MERGE_PATCH, readOptional } from './kube.ts';

/** A values source as the steps read it: its data as text (a Secret's decoded). */
export interface ValuesSourceObject {
  kind: ValuesSourceKind;
  namespace: string;
  name: string;
  labels: Readonly<Record<string, string>>;
  data: Readonly<Record<string, string>>;
  /** What a binding or retirement write is guarded by ('' for an object only known by its name). */
  resourceVersion: string;
}

export interface ValuesSourceReads {
  /** The object when it exists and opts in by its label; undefined otherwise (the two are not told apart). */
  get(kind: ValuesSourceKind, namespace: string, name: string): Promise<ValuesSourceObject | undefined>;
}

/** The rule of `optsIn` as a label selector: the operator's own objects never even enter the caches. */
const SELECTOR = `${VALUES_SOURCE_LABEL}=true,${LABELS.managedBy}!=${MANAGED_BY},owner!=helm`;

/**
 * Labelled, and not one of the operator's or helm's own objects (those are never a values source,
 * even if someone labels one).
 */
export function optsIn(labels: Readonly<Record<string, string>> | undefined): boolean {
  return labels?.[VALUES_SOURCE_LABEL] === 'true' && labels[LABELS.managedBy] !== MANAGED_BY && labels['owner'] !== 'helm';
}

/** Which object it is, and the version a write to it is guarded by. */
function identityOf(kind: ValuesSourceKind, obj: KubernetesObject): Pick<ValuesSourceObject, 'kind' | 'namespace' | 'name' | 'resourceVersion'> {
  const { namespace = '', name = '', resourceVersion = '' } = obj.metadata ?? {};
  return { kind, namespace, name, resourceVersion };
}

function sourceOf(kind: ValuesSourceKind, obj: V1Secret | V1ConfigMap): ValuesSourceObject | undefined {
  const labels = obj.metadata?.labels ?? {};
  if (!optsIn(labels)) return undefined;
  const data = kind === 'Secret'
    ? Object.fromEntries(Object.entries(obj.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]))
    : { ...(obj.data ?? {}) };
  return { ...identityOf(kind, obj), labels, data };
}

const READ: { readonly [K in ValuesSourceKind]: (kube: Kube, namespace: string, name: string) => Promise<V1Secret | V1ConfigMap> } = {
  Secret: (kube, namespace, name) => kube.core.readNamespacedSecret({ name, namespace }),
  ConfigMap: (kube, namespace, name) => kube.core.readNamespacedConfigMap({ name, namespace }),
};

/** Straight from the API server (one GET per reference), for steps run without the controller's caches. */
export function apiValuesSources(kube: Kube): ValuesSourceReads {
  return {
    get: async (kind, namespace, name) => {
      const obj = await readOptional(() => READ[kind](kube, namespace, name));
      return obj === undefined ? undefined : sourceOf(kind, obj);
    },
  };
}

/** The operator's writes to values sources in its own namespace (see the header). */
export interface ValuesSourceBindings {
  /** Labels the source with the tenant's uid; 409 when it changed since it was read (unless to this very binding). */
  bind(source: ValuesSourceObject, uid: string): Promise<void>;
  /** Removes its values-source label and records the uid it served; 409 when it changed since it was read. */
  retire(source: ValuesSourceObject, uid: string): Promise<void>;
  /** The values sources of a namespace that match a label selector (added to the opt-in rule). */
  list(namespace: string, selector: string): Promise<ValuesSourceObject[]>;
}

const PATCH: { readonly [K in ValuesSourceKind]: (kube: Kube, source: ValuesSourceObject, metadata: Record<string, unknown>) => Promise<unknown> } = {
  Secret: (kube, { name, namespace }, metadata) => kube.core.patchNamespacedSecret({ name, namespace, body: { metadata } }, MERGE_PATCH),
  ConfigMap: (kube, { name, namespace }, metadata) => kube.core.patchNamespacedConfigMap({ name, namespace, body: { metadata } }, MERGE_PATCH),
};

const LIST_IN = {
  Secret: (kube: Kube, namespace: string, labelSelector: string) => kube.core.listNamespacedSecret({ namespace, labelSelector }),
  ConfigMap: (kube: Kube, namespace: string, labelSelector: string) => kube.core.listNamespacedConfigMap({ namespace, labelSelector }),
} as const;

/** Binding and retiring through merge patches of metadata only; the data is never written. */
export function apiValuesSourceBindings(kube: Kube): ValuesSourceBindings {
  const patch = (source: ValuesSourceObject, metadata: Record<string, unknown>): Promise<unknown> =>
    PATCH[source.kind](kube, source, { ...metadata, resourceVersion: source.resourceVersion });
  return {
    bind: async (source, uid) => {
      try {
        await patch(source, { labels: { [VALUES_SOURCE_UID_LABEL]: uid } });
      } catch (err) {
        if (!isConflict(err)) throw err;
        // Read from a cache that had not seen this tenant's own binding yet: done already, not a conflict.
        const fresh = await readOptional(() => READ[source.kind](kube, source.namespace, source.name));
        if (fresh?.metadata?.labels?.[VALUES_SOURCE_UID_LABEL] !== uid) throw err;
      }
    },
    retire: async (source, uid) => {
      await patch(source, { labels: { [VALUES_SOURCE_LABEL]: null }, annotations: { [RETIRED_FROM_ANNOTATION]: uid } });
    },
    list: async (namespace, selector) => {
      const lists = await Promise.all(VALUES_SOURCE_KINDS.map(async (kind) => {
        const items: (V1Secret | V1ConfigMap)[] = (await LIST_IN[kind](kube, namespace, `${SELECTOR},${selector}`)).items;
        return items.flatMap((obj) => sourceOf(kind, obj) ?? []);
      }));
      return lists.flat();
    },
  };
}

const PATHS: Readonly<Record<ValuesSourceKind, string>> = { Secret: '/api/v1/secrets', ConfigMap: '/api/v1/configmaps' };

const LIST_ALL = {
  Secret: (kube: Kube) => kube.core.listSecretForAllNamespaces({ labelSelector: SELECTOR }),
  ConfigMap: (kube: Kube) => kube.core.listConfigMapForAllNamespaces({ labelSelector: SELECTOR }),
} as const;

export type ValuesSourceEvent = 'add' | 'update' | 'delete';
export type ValuesSourceHandler = (event: ValuesSourceEvent, source: ValuesSourceObject) => void;

/** The label-selected watch caches of both kinds; reads fall back to the API until a kind has synced. */
export class ValuesSourceCache implements ValuesSourceReads {
  private readonly informers: InformerSet<ValuesSourceKind>;
  private readonly handlers: ValuesSourceHandler[] = [];
  private readonly fallback: ValuesSourceReads;
  private readonly kube: Kube;
  private readonly log: Logger;

  constructor(options: { kube: Kube; log: Logger }) {
    this.kube = options.kube;
    this.log = options.log;
    this.fallback = apiValuesSources(options.kube);
    this.informers = new InformerSet(VALUES_SOURCE_KINDS, (kind, stopping) => this.informerOf(kind, stopping));
  }

  /** Subscribes before start: the initial list arrives as 'add' events. */
  on(handler: ValuesSourceHandler): void {
    this.handlers.push(handler);
  }

  get(kind: ValuesSourceKind, namespace: string, name: string): Promise<ValuesSourceObject | undefined> {
    const informer = this.informers.syncedInformer(kind);
    if (informer === undefined) return this.fallback.get(kind, namespace, name);
    const obj = informer.get(name, namespace);
    return Promise.resolve(obj === undefined ? undefined : sourceOf(kind, obj));
  }

  start(): Promise<void> {
    return this.informers.start();
  }

  stop(): Promise<void> {
    return this.informers.stop();
  }

  private informerOf(kind: ValuesSourceKind, stopping: () => boolean): CachingInformer<KubernetesObject> {
    const informer = restartingInformer<KubernetesObject>({
      config: this.kube.config,
      path: PATHS[kind],
      labelSelector: SELECTOR,
      list: () => LIST_ALL[kind](this.kube),
      trim: (obj) => {
        if (obj.metadata) delete obj.metadata.managedFields;
      },
      log: this.log,
      stopping,
    });
    for (const event of ['add', 'update', 'delete'] as const) {
      informer.on(event, (obj) => {
        // A deleted object, or one whose label was removed, is reported by its name only.
        const source = sourceOf(kind, obj) ?? { ...identityOf(kind, obj), labels: {}, data: {} };
        for (const handler of this.handlers) handler(event, source);
      });
    }
    return informer;
  }
}
