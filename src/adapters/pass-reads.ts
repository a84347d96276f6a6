/**
 * One reconcile pass's reads of a tenant's objects. In a namespace this pass created, nothing the steps
 * read exists until the pass writes it, and nobody else writes there until the pass lets helm in. Until
 * then a read is answered from what the pass wrote (the API server's answers to its applies and
 * creates) instead of asking the API server for what it has just said (about a dozen requests per new
 * tenant). Anywhere else, and in that namespace once helm is let in, every read goes to the API server,
 * as provisioning needs. Nothing outlives the pass: after a crash, or in the next pass, the namespace
 * exists already and the reads go to the API server again.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeReads, ListedKind, TenantKind, TenantObjects } from './tenant-objects.ts';

const keyOf = (kind: string, name: string): string => `${kind}/${name}`;

export class PassReads implements KubeReads {
  private readonly base: KubeReads;
  /** Namespaces this pass created and only it has written in: what it wrote there, by kind/name. */
  private readonly born = new Map<string, Map<string, KubernetesObject>>();

  constructor(base: KubeReads) {
    this.base = base;
  }

  namespaceCreated(namespace: string): void {
    this.born.set(namespace, new Map());
  }

  handOver(namespace: string): boolean {
    return this.born.delete(namespace);
  }

  /** The Kube view's observer (Kube.observedBy): what the pass wrote, as the API server returned it. */
  readonly remember = (written: KubernetesObject): void => {
    this.born.get(written.metadata?.namespace ?? '')?.set(keyOf(written.kind ?? '', written.metadata?.name ?? ''), written);
  };

  async get<K extends TenantKind>(kind: K, namespace: string, name: string): Promise<TenantObjects[K] | undefined> {
    const written = this.born.get(namespace);
    if (written === undefined) return this.base.get(kind, namespace, name);
    const object = written.get(keyOf(kind, name));
    // The object the pass wrote under this kind's name (a helm release record is never one of them).
    return object === undefined ? undefined : structuredClone(object);
  }

  async list<K extends ListedKind>(kind: K, namespace: string): Promise<TenantObjects[K][]> {
    const written = this.born.get(namespace);
    if (written === undefined) return this.base.list(kind, namespace);
    return [...written.values()].filter((object) => object.kind === kind).map((object) => structuredClone(object) as TenantObjects[K]);
  }
}
