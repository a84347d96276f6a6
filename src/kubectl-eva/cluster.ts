/**
 * kubectl-eva's reads and writes, as the user who runs it: the kubeconfig kubectl would use (KUBECONFIG,
 * else ~/.kube/config; or --kubeconfig, and --context). Every write is a patch of exactly what the
 * command sets, with field manager kubectl-eva; the API server's RBAC and admission decide whether the
 * caller may (nothing here works around them).
 */
import { type CoreV1Event, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { API_VERSION, GROUP, KIND, LABELS, PLURAL, VERSION } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { describeApiError, httpStatusOf, isNotFound, Kube, MERGE_PATCH, METADATA_ONLY, readOptional } from '../adapters/kube.ts';
import type { SecretMetadata } from './retained.ts';
import type { TenantEvent } from './status-view.ts';

export const FIELD_MANAGER = 'kubectl-eva';
/** Where Events about cluster-scoped objects (EvaTenants) are recorded. */
const EVENTS_NAMESPACE = 'default';
const SERVER_SIDE_APPLY = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

export interface ConnectOptions {
  kubeconfig?: string;
  context?: string;
  /** Act as this user (kubectl's --as): the API server checks that the caller may impersonate. */
  as?: string;
}

/** A refusal or failure to show the user as it is (the API server's own message), exit status 1. */
export class CommandFailed extends Error {
  override readonly name = 'CommandFailed';
}

/** An API error as a CommandFailed that says what was attempted; 403 and 422 carry the API server's (admission's) message. */
export function failed(what: string, err: unknown): CommandFailed {
  const status = httpStatusOf(err);
  const refused = status === 403 || status === 422 ? ' (refused: RBAC or the admission policy eva-tenant-platform-controls decides who may)' : '';
  return new CommandFailed(`${what}: ${describeApiError(err)}${refused}`);
}

export function kubeConfigOf({ kubeconfig, context, as }: ConnectOptions): KubeConfig {
  const kc = new KubeConfig();
  if (kubeconfig === undefined) kc.loadFromDefault();
  else kc.loadFromFile(kubeconfig);
  // What client-node falls back to when it found no kubeconfig and is not in a pod.
  if (kc.getCurrentCluster()?.server === 'http://localhost:8080') throw new CommandFailed('no kubeconfig: set KUBECONFIG or pass --kubeconfig, as for kubectl');
  if (context !== undefined) {
    if (kc.getContextObject(context) === null) throw new CommandFailed(`context ${context} is not in the kubeconfig (contexts: ${kc.getContexts().map((c) => c.name).join(', ')})`);
    kc.setCurrentContext(context);
  }
  if (as !== undefined) {
    const current = kc.getCurrentUser()?.name;
    const users = kc.users.map((user) => (user.name === current ? { ...user, impersonateUser: as } : user));
    kc.loadFromOptions({ clusters: kc.clusters, users, contexts: kc.contexts, currentContext: kc.currentContext });
  }
  return kc;
}

const eventOf = (e: CoreV1Event): TenantEvent => {
  const seen = e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata.creationTimestamp;
  return { type: e.type ?? '', reason: e.reason ?? '', message: e.message ?? '', count: e.count ?? 1, ...(seen === undefined ? {} : { lastSeen: new Date(seen).toISOString() }) };
};

export class Cluster {
  private readonly kube: Kube;

  constructor(options: ConnectOptions) {
    this.kube = new Kube(kubeConfigOf(options), FIELD_MANAGER);
  }

  async tenant(name: string): Promise<EvaTenant | undefined> {
    try {
      return await this.kube.getTenant(name);
    } catch (err) {
      throw failed(`reading EvaTenant ${name}`, err);
    }
  }

  async existingTenant(name: string): Promise<EvaTenant> {
    const tenant = await this.tenant(name);
    if (tenant === undefined) throw new CommandFailed(`EvaTenant ${name} not found`);
    return tenant;
  }

  /** The Events about this EvaTenant (this uid: not those of an earlier object of the same name). */
  async events(tenant: EvaTenant): Promise<TenantEvent[]> {
    const fieldSelector = `involvedObject.kind=${KIND},involvedObject.name=${tenant.metadata.name}`;
    try {
      const list = await this.kube.core.listNamespacedEvent({ namespace: EVENTS_NAMESPACE, fieldSelector });
      return list.items.filter((e) => tenant.metadata.uid === undefined || e.involvedObject.uid === tenant.metadata.uid).map(eventOf);
    } catch (err) {
      throw failed(`listing the Events of EvaTenant ${tenant.metadata.name}`, err);
    }
  }

  /** The metadata (never the data) of the account keys Secrets in the operator's namespace. */
  async keysSecrets(namespace: string): Promise<SecretMetadata[]> {
    try {
      const list = await this.kube.core.listNamespacedSecret({ namespace, labelSelector: LABELS.tenantUid }, METADATA_ONLY);
      return list.items.map(({ metadata }) => ({ ...(metadata?.name === undefined ? {} : { name: metadata.name }), labels: metadata?.labels ?? {}, annotations: metadata?.annotations ?? {} }));
    } catch (err) {
      throw failed(`listing the account keys Secrets in namespace ${namespace}`, err);
    }
  }

  /** uid -> name of every EvaTenant. */
  async tenantsByUid(): Promise<Map<string, string>> {
    try {
      const { items } = await this.kube.listTenantsRaw();
      const metadata = items.map((item) => (item as { metadata?: { uid?: unknown; name?: unknown } }).metadata);
      return new Map(metadata.flatMap((m) => (typeof m?.uid === 'string' && typeof m.name === 'string' ? [[m.uid, m.name] as const] : [])));
    } catch (err) {
      throw failed('listing EvaTenants', err);
    }
  }

  /** A merge patch of exactly these annotations (null removes one). */
  async annotate(name: string, annotations: Record<string, string | null>): Promise<void> {
    try {
      await this.kube.custom.patchClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name, body: { metadata: { annotations } }, fieldManager: FIELD_MANAGER }, MERGE_PATCH);
    } catch (err) {
      throw isNotFound(err) ? new CommandFailed(`EvaTenant ${name} not found`) : failed(`annotating EvaTenant ${name}`, err);
    }
  }

  /** Server-side apply of the fields of `tenant` that kubectl-eva manages: creates it, or changes nothing when it is already so. */
  async apply(tenant: { metadata: { name: string; annotations: Record<string, string> }; spec: Record<string, unknown> }): Promise<void> {
    const body = { apiVersion: API_VERSION, kind: KIND, ...tenant };
    try {
      await this.kube.custom.patchClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name: tenant.metadata.name, body, fieldManager: FIELD_MANAGER }, SERVER_SIDE_APPLY);
    } catch (err) {
      throw failed(`applying EvaTenant ${tenant.metadata.name}`, err);
    }
  }

  /** Deletes the EvaTenant (its decommission starts); already gone is fine. */
  async deleteTenant(name: string): Promise<void> {
    try {
      await readOptional(() => this.kube.custom.deleteClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name }));
    } catch (err) {
      throw failed(`deleting EvaTenant ${name}`, err);
    }
  }
}
