/**
 * The Kubernetes adapter: the only module that builds API clients (one KubeConfig, one User-Agent,
 * one kept-alive connection pool). Objects leave it typed (EvaTenant is parsed at this boundary);
 * writes use server-side apply with one field manager, and status writes carry a resourceVersion
 * precondition. Beside it, informers.ts (watch caches), tenant-objects.ts (how tenant objects are
 * read: the API reader and the watch caches, handed to the steps next to this class, as Flux hands
 * controllers its cached client.Client and its APIReader) and kube-leases.ts (Leases) use its
 * clients and config; elsewhere client-node is imported for its object types only.
 */
import {
  ApiException,
  ApiextensionsV1Api,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  type KubernetesObject,
  NetworkingV1Api,
  Observable,
  type ObservableMiddleware,
  type ApiConstructor,
  type ApiType,
  createConfiguration,
  PatchStrategy,
  type RequestContext,
  ServerConfiguration,
  setHeaderMiddleware,
  setHeaderOptions,
  type V1APIResource,
  VersionApi,
} from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { TokenBucket } from 'limiter';
import { GROUP, KIND, PLURAL, VERSION } from '../api/constants.ts';
import type { EvaTenant, EvaTenantStatus } from '../api/evatenant.ts';
import { parseEvaTenant } from '../api/parse.ts';
import type { Reason } from '../api/reasons.ts';

export const FIELD_MANAGER = 'eva-operator';

/**
 * A KubeConfig whose requests say which operator version made them (User-Agent), so the API
 * server's audit log shows which of two coexisting versions wrote what.
 */
class IdentifiedKubeConfig extends KubeConfig {
  userAgent = FIELD_MANAGER;
  /** One for every API client of this config, so the rate limit holds for the process as a whole. */
  requests: ObservableMiddleware = requestMiddleware(undefined, undefined);
  private sharedDispatcher: ReturnType<RequestContext['getDispatcher']>;

  /**
   * client-node 2.0 builds a new HTTP agent for every request, so every request paid a TLS
   * handshake (in this process and in the API server). One agent for this config keeps
   * connections alive and reuses them. Credentials travel in headers, which are still set per request.
   */
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    this.sharedDispatcher ??= context.getDispatcher();
    if (this.sharedDispatcher !== undefined) context.setDispatcher(this.sharedDispatcher);
  }

  // As KubeConfig.makeApiClient, with our User-Agent instead of the client library's.
  override makeApiClient<T extends ApiType>(apiClientType: ApiConstructor<T>): T {
    const cluster = this.getCurrentCluster();
    if (!cluster) throw new Error('No active cluster!');
    const config = createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: this },
      middleware: [setHeaderMiddleware('User-Agent', this.userAgent), this.requests],
    });
    return new apiClientType(config);
  }
}

/** client-go's QPS and burst: requests per second on average, and how many may go at once after a quiet spell. */
export interface ClientRateLimit {
  qps: number;
  burst: number;
}

export type RequestObserver = (method: string, waitedSeconds: number) => void;

/**
 * In front of every request of the generated clients: a token bucket (client-go's client-side rate
 * limit), so a restart with a thousand tenants to check cannot flood the API server, and the count of
 * requests by method (what the steady-state benchmark reads). Watches are long-lived and not counted,
 * as in client-go.
 */
function requestMiddleware(limit: ClientRateLimit | undefined, observe: RequestObserver | undefined): ObservableMiddleware {
  const bucket = limit ? new TokenBucket({ bucketSize: limit.burst, tokensPerInterval: limit.qps, interval: 'second' }) : undefined;
  return {
    pre: (request) => {
      const started = performance.now();
      const admitted = bucket ? bucket.removeTokens(1) : Promise.resolve(0);
      return new Observable(
        admitted.then(() => {
          observe?.(request.getHttpMethod(), (performance.now() - started) / 1000);
          return request;
        }),
      );
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
}

export interface KubeConfigOptions {
  /** User-Agent `eva-operator/<version>`, and ` (shard <shard>)` for a sharded Deployment. */
  operatorVersion?: string;
  shard?: string | undefined;
  rateLimit?: ClientRateLimit;
  /** Told of every request (its HTTP method) and how long it waited for the rate limit. */
  onRequest?: RequestObserver;
}

export function loadKubeConfig(options: KubeConfigOptions = {}): KubeConfig {
  const kc = new IdentifiedKubeConfig();
  kc.loadFromDefault();
  const { operatorVersion, shard } = options;
  if (operatorVersion) kc.userAgent = `${FIELD_MANAGER}/${operatorVersion}${shard === undefined ? '' : ` (shard ${shard})`}`;
  kc.requests = requestMiddleware(options.rateLimit, options.onRequest);
  inlineTlsFiles(kc);
  return kc;
}

/**
 * client-node reads the CA, certificate and key files on every request, for an agent that
 * applySecurityAuthentication then drops for the shared one: 3% of the operator's CPU at 100
 * tenants. Read once here, as the shared agent does. A bearer token file (in a pod) is not TLS
 * material: its authenticator keeps re-reading it as it rotates.
 */
function inlineTlsFiles(kc: KubeConfig): void {
  const base64 = (file: string): string => readFileSync(file).toString('base64');
  const clusters = kc.clusters.map(({ caFile, ...cluster }) => (caFile ? { ...cluster, caData: base64(caFile) } : { ...cluster }));
  const users = kc.users.map(({ certFile, keyFile, ...user }) => ({
    ...user,
    ...(certFile ? { certData: base64(certFile) } : {}),
    ...(keyFile ? { keyData: base64(keyFile) } : {}),
  }));
  kc.loadFromOptions({ clusters, users, contexts: kc.contexts, currentContext: kc.currentContext });
}

export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  return undefined;
}

/** A failed request in one line: the status code and the API server's own message, without the headers client-node's message carries. */
export function describeApiError(err: unknown): string {
  if (!(err instanceof ApiException)) return err instanceof Error ? (unreachable(err) ?? err.message) : String(err);
  const body: unknown = err.body;
  let message: unknown = typeof body === 'object' && body !== null ? (body as { message?: unknown }).message : undefined;
  if (typeof body === 'string') {
    try {
      message = (JSON.parse(body) as { message?: unknown } | null)?.message;
    } catch {
      message = body.slice(0, 200);
    }
  }
  return `the API server answered ${String(err.code)}${typeof message === 'string' && message !== '' ? `: ${message}` : ''}`;
}

/** A request that reached no API server: fetch says only "fetch failed", its cause says why (ECONNREFUSED 127.0.0.1:6443). */
function unreachable(err: Error): string | undefined {
  const { code, address, port } = (err.cause ?? {}) as { code?: unknown; address?: unknown; port?: unknown };
  const where = typeof address === 'string' ? ` ${address}${typeof port === 'number' ? `:${String(port)}` : ''}` : '';
  return typeof code === 'string' ? `the API server cannot be reached (${code}${where})` : undefined;
}

export const isNotFound = (err: unknown): boolean => httpStatusOf(err) === 404;
export const isConflict = (err: unknown): boolean => httpStatusOf(err) === 409;

/** Reads something that may legitimately be absent: 404 becomes undefined, other errors propagate. */
export async function readOptional<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Deletes idempotently: already gone is success. */
export async function deleteIgnoringNotFound(remove: () => Promise<unknown>): Promise<void> {
  try {
    await remove();
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** Options for a JSON merge patch through the generated clients. */
export const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** A list of metadata only (PartialObjectMetadataList): a Secret's payload is never fetched or decoded. */
export const METADATA_ONLY = setHeaderOptions('Accept', 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1');
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

export type JsonPatchOperation =
  | { op: 'test' | 'add' | 'replace'; path: string; value: unknown }
  | { op: 'remove'; path: string };

export type EventType = 'Normal' | 'Warning';

/**
 * Whether the API server serves a kind, by client-node's own discovery (cached per group version), which
 * KubernetesObjectApi keeps protected. A generated group client (AdmissionregistrationV1Api) would do
 * too, but adds about 0.8 MB to the operator's bundle for one read.
 */
export class Discovery extends KubernetesObjectApi {
  /** The resource that serves `kind` in `apiVersion`; undefined when none does (or the group version is not served). */
  served(apiVersion: string, kind: string): Promise<V1APIResource | undefined> {
    return readOptional(() => this.resource(apiVersion, kind));
  }
}

/** Told of each object the operator wrote through `apply` or `create`, as the API server returned it. */
export type WriteObserver = (written: KubernetesObject) => void;

export class Kube {
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly networking: NetworkingV1Api;
  readonly custom: CustomObjectsApi;
  readonly coordination: CoordinationV1Api;
  readonly apiextensions: ApiextensionsV1Api;
  readonly objects: KubernetesObjectApi;
  /** The API server's version and discovery: read by `eva-operator preflight`. */
  readonly version: VersionApi;
  readonly discovery: Discovery;

  readonly config: KubeConfig;
  /** Events' reportingInstance: the replica (pod name), so two replicas' events can be told apart. */
  private readonly instance: string;
  /** Set on a view (observedBy) only. */
  private observer: WriteObserver | undefined;

  constructor(config: KubeConfig, instance: string = FIELD_MANAGER) {
    this.config = config;
    this.instance = instance;
    this.core = config.makeApiClient(CoreV1Api);
    this.apps = config.makeApiClient(AppsV1Api);
    this.networking = config.makeApiClient(NetworkingV1Api);
    this.custom = config.makeApiClient(CustomObjectsApi);
    this.coordination = config.makeApiClient(CoordinationV1Api);
    this.apiextensions = config.makeApiClient(ApiextensionsV1Api);
    this.objects = KubernetesObjectApi.makeApiClient(config);
    this.version = config.makeApiClient(VersionApi);
    this.discovery = config.makeApiClient(Discovery);
  }

  /**
   * These clients, telling `observer` of each apply and create: one reconcile pass's reads learn from
   * its writes (adapters/pass-reads.ts). The view shares every client (this Kube is its prototype).
   */
  observedBy(observer: WriteObserver): Kube {
    const view = Object.create(this) as Kube;
    view.observer = observer;
    return view;
  }

  /** Server-side apply: idempotent, and only the fields this operator owns are touched. */
  async apply<T extends KubernetesObject>(object: T): Promise<T> {
    const applied = await this.objects.patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
    this.observer?.(applied);
    return applied;
  }

  /** Create: 409 when the object exists, so the loser of a race keeps the winner's object. */
  async create<T extends KubernetesObject>(object: T): Promise<T> {
    const created = await this.objects.create(object, undefined, undefined, FIELD_MANAGER);
    this.observer?.(created);
    return created;
  }

  async getTenant(name: string): Promise<EvaTenant | undefined> {
    try {
      return parseEvaTenant(await this.custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async listTenantsRaw(): Promise<{ items: unknown[]; resourceVersion: string }> {
    const list: unknown = await this.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL });
    const typed = list as { items?: unknown[]; metadata?: { resourceVersion?: string } };
    return { items: typed.items ?? [], resourceVersion: typed.metadata?.resourceVersion ?? '' };
  }

  /** The name of the EvaTenant with this uid, if one exists (one being deleted still does). A uid is never reused. */
  async tenantNameWithUid(uid: string): Promise<string | undefined> {
    const { items } = await this.listTenantsRaw();
    const found = items.find((item) => (item as { metadata?: { uid?: unknown } }).metadata?.uid === uid) as { metadata: { name?: unknown } } | undefined;
    return found === undefined ? undefined : String(found.metadata.name);
  }

  /**
   * Replaces the status, guarded by the resourceVersion the caller last saw: a concurrent writer
   * makes this fail with 409 (retry), never silently overwrites it. Returns the updated tenant.
   */
  async writeTenantStatus(tenant: EvaTenant, status: EvaTenantStatus): Promise<EvaTenant> {
    // PUT, not a merge patch: the status is replaced whole, so fields we drop really go away.
    const body = { apiVersion: tenant.apiVersion, kind: tenant.kind, metadata: tenant.metadata, spec: tenant.spec, status };
    const updated: unknown = await this.custom.replaceClusterCustomObjectStatus({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      name: tenant.metadata.name,
      body,
      fieldManager: FIELD_MANAGER,
    });
    return parseEvaTenant(updated);
  }

  /** Merge-patches metadata (finalizers, annotations, labels) with a resourceVersion precondition. */
  async patchTenantMetadata(tenant: EvaTenant, metadata: Record<string, unknown>): Promise<EvaTenant> {
    const body = { metadata: { ...metadata, resourceVersion: tenant.metadata.resourceVersion } };
    const updated: unknown = await this.custom.patchClusterCustomObject(
      { group: GROUP, version: VERSION, plural: PLURAL, name: tenant.metadata.name, body, fieldManager: FIELD_MANAGER },
      MERGE_PATCH,
    );
    return parseEvaTenant(updated);
  }

  /** Applies a JSON patch to the tenant; `test` operations make it fail (422) if the object moved on. */
  async jsonPatchTenant(name: string, operations: JsonPatchOperation[]): Promise<void> {
    await this.custom.patchClusterCustomObject(
      { group: GROUP, version: VERSION, plural: PLURAL, name, body: operations, fieldManager: FIELD_MANAGER },
      jsonPatch,
    );
  }

  /** Records a core/v1 Event on the tenant (cluster-scoped objects keep theirs in `default`). */
  async recordEvent(tenant: EvaTenant, type: EventType, reason: Reason, message: string): Promise<void> {
    await this.recordEventOn({ kind: KIND, ...tenant.metadata }, type, reason, message);
  }

  /** Records a core/v1 Event on one of the operator's cluster-scoped objects of this API group (kept in `default`). */
  async recordEventOn(object: { kind: string; name: string; uid?: string; resourceVersion?: string }, type: EventType, reason: Reason, message: string): Promise<void> {
    const now = new Date();
    await this.core.createNamespacedEvent({
      namespace: 'default',
      body: {
        metadata: { generateName: `${object.name}.` },
        involvedObject: { apiVersion: `${GROUP}/${VERSION}`, kind: object.kind, name: object.name, uid: object.uid, resourceVersion: object.resourceVersion },
        type,
        reason,
        message,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        source: { component: FIELD_MANAGER },
        reportingComponent: FIELD_MANAGER,
        reportingInstance: this.instance,
      },
    });
  }
}
