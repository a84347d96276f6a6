/**
 * Wake-ups from the objects tenants' `spec.valuesFrom` reads: an index from each referenced Secret or
 * ConfigMap to the tenants whose spec names it, kept from the controller's EvaTenant informer, and the
 * label-selected watch caches of adapters/values-sources.ts. When a referenced object appears, changes
 * its data or goes away, exactly the tenants using it are reconciled; their releases whose values did
 * not change keep their values digest, so helm runs only for those that did. No polling per tenant.
 */
import { createHash } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ValuesSourceCache, ValuesSourceObject } from '../adapters/values-sources.ts';
import { canonicalJson } from '../canonical-json.ts';
import { tenantNamespace } from '../tenancy/names.ts';

/** The part of the caches the watch uses (its events, and their lifetime). */
export type ValuesSourceEvents = Pick<ValuesSourceCache, 'on' | 'start' | 'stop'>;

const sourceKey = (kind: string, namespace: string, name: string): string => `${kind}/${namespace}/${name}`;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What a tenant's data depends on, kept as a digest: the index never holds a Secret's content. */
const dataDigest = (source: ValuesSourceObject): string => createHash('sha256').update(canonicalJson({ labels: source.labels, data: source.data })).digest('hex');

export class ValuesFromWatch {
  private readonly sources: ValuesSourceEvents;
  private readonly operatorNamespace: string;
  /** Referenced object -> EvaTenant names. */
  private readonly users = new Map<string, Set<string>>();
  /** EvaTenant name -> the objects its spec references. */
  private readonly referenced = new Map<string, readonly string[]>();
  private readonly seen = new Map<string, string>();

  constructor(sources: ValuesSourceEvents, operatorNamespace: string) {
    this.sources = sources;
    this.operatorNamespace = operatorNamespace;
  }

  /** The objects a (raw, unparsed) EvaTenant's spec.valuesFrom names. */
  referencesOf(obj: KubernetesObject): string[] {
    const spec = (obj as { spec?: unknown }).spec;
    if (!isRecord(spec) || typeof spec['capsuleCode'] !== 'string' || !isRecord(spec['valuesFrom'])) return [];
    const own = tenantNamespace(spec['capsuleCode']);
    return Object.values(spec['valuesFrom']).flatMap((refs) => (Array.isArray(refs) ? (refs as unknown[]) : [])).filter(isRecord).map((ref) =>
      sourceKey(String(ref['kind']), ref['namespace'] === 'Operator' ? this.operatorNamespace : own, String(ref['name'])),
    );
  }

  /** The tenants whose spec names this object. */
  tenantsUsing(kind: string, namespace: string, name: string): string[] {
    return [...(this.users.get(sourceKey(kind, namespace, name)) ?? [])];
  }

  /** An EvaTenant was added or changed (from the controller's informer). */
  noteTenant(obj: KubernetesObject): void {
    const name = obj.metadata?.name;
    if (name === undefined) return;
    this.forgetTenant(name);
    const keys = this.referencesOf(obj);
    if (keys.length === 0) return;
    this.referenced.set(name, keys);
    for (const key of keys) this.users.set(key, (this.users.get(key) ?? new Set<string>()).add(name));
  }

  forgetTenant(name: string): void {
    for (const key of this.referenced.get(name) ?? []) {
      const names = this.users.get(key);
      names?.delete(name);
      if (names?.size === 0) this.users.delete(key);
    }
    this.referenced.delete(name);
  }

  /** Wakes the tenants that use an object when it appears, its data or labels change, or it goes. */
  subscribe(wake: (tenant: string) => void): void {
    this.sources.on((event, source) => {
      const key = sourceKey(source.kind, source.namespace, source.name);
      if (event === 'delete') this.seen.delete(key);
      else {
        const digest = dataDigest(source);
        if (event === 'update' && this.seen.get(key) === digest) return;
        this.seen.set(key, digest);
      }
      for (const tenant of this.tenantsUsing(source.kind, source.namespace, source.name)) wake(tenant);
    });
  }

  start(): Promise<void> {
    return this.sources.start();
  }

  stop(): Promise<void> {
    return this.sources.stop();
  }
}
