/**
 * One tenant as every layer sees it while working on it: the EvaTenant, its capsule code and the
 * names derived from it, its modules, a logger and the shutdown signal. It lives below steps/ and
 * nats/ so that both take it without importing each other.
 */
import type { EvaTenant } from '../api/evatenant.ts';
import type { ModuleName } from '../api/modules.ts';
import type { Logger } from '../log.ts';

/** Everything a step may know about the tenant it works on. */
export interface TenantScope {
  readonly tenant: EvaTenant;
  /** The capsule code, e.g. ABCDEF. */
  readonly code: string;
  /** eva-tenant-<code lowercased>. */
  readonly namespace: string;
  /** The modules the tenant's tier calls for. */
  readonly modules: readonly ModuleName[];
  readonly log: Logger;
  /** Aborted when the operator shuts down: finish the current call, start nothing new. */
  readonly signal: AbortSignal;
}

/**
 * spec.lifecycle Suspended (hibernation): everything the tenant owns is kept, but its modules run no
 * replica, its Ingress is withdrawn and NATS refuses its modules' credentials. The steps' ensure and
 * verify read it, so the drift check keeps a hibernated tenant hibernated instead of "repairing" it.
 */
export const isHibernated = (scope: TenantScope): boolean => scope.tenant.spec.lifecycle === 'Suspended';

/** spec.dataRetention Retain: decommissioning keeps the NATS account (disabled), streams and seed bucket. */
export const retainsData = (scope: TenantScope): boolean => scope.tenant.spec.dataRetention === 'Retain';
