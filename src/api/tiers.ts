/**
 * Per-tier JetStream limits for a tenant's streams (each tenant has an events and a commands stream,
 * both sized by this table). Every stream keeps one replica on file storage and discards its oldest
 * messages when full: producers never see "stream full", and the newest data is the data that matters.
 *
 * max_bytes is reserved up front by JetStream against the server's storage, so the sums here are a
 * capacity-planning input: two streams per tenant, times tenants per tier.
 */
import type { Tier } from './constants.ts';

export interface StreamLimits {
  readonly maxMsgs: number;
  readonly maxBytes: number;
  readonly maxAgeSeconds: number;
  /** Must stay at or below the server's max_payload (1 MiB by default), or publishes fail first. */
  readonly maxMsgSize: number;
  readonly replicas: 1;
  readonly storage: 'file';
  readonly discard: 'old';
}

const KIB = 1024;
const MIB = 1024 * KIB;
const GIB = 1024 * MIB;
const DAY_SECONDS = 24 * 60 * 60;

const COMMON = { replicas: 1, storage: 'file', discard: 'old' } as const;

export const STREAM_LIMITS_BY_TIER: Readonly<Record<Tier, StreamLimits>> = {
  Starter: { ...COMMON, maxMsgs: 100_000, maxBytes: 64 * MIB, maxAgeSeconds: 7 * DAY_SECONDS, maxMsgSize: 256 * KIB },
  Customer: { ...COMMON, maxMsgs: 1_000_000, maxBytes: 256 * MIB, maxAgeSeconds: 14 * DAY_SECONDS, maxMsgSize: 512 * KIB },
  Enterprise: { ...COMMON, maxMsgs: 10_000_000, maxBytes: 1 * GIB, maxAgeSeconds: 30 * DAY_SECONDS, maxMsgSize: 1 * MIB },
  Platform: { ...COMMON, maxMsgs: 10_000_000, maxBytes: 1 * GIB, maxAgeSeconds: 30 * DAY_SECONDS, maxMsgSize: 1 * MIB },
};

/** Revisions helm keeps per module release (`--history-max`): one Secret each in the tenant namespace. */
export const RELEASE_HISTORY_MAX = 5;

/** Object counts every tier's quota bounds: what a runaway writer could otherwise pile up in etcd. */
type CountKey = 'pods' | 'secrets' | 'configmaps' | 'services' | 'services.loadbalancers' | 'services.nodeports' | 'persistentvolumeclaims';
/** Requests only Starter and Customer bound; Enterprise and Platform CPU and memory stay unbounded by design. */
type RequestKey = 'requests.cpu' | 'requests.memory';

/** The ResourceQuota `spec.hard` of a tier, in Kubernetes' own keys. */
export type NamespaceQuota = Readonly<Record<CountKey, string>> & Readonly<Partial<Record<RequestKey, string>>>;

/**
 * Counts a tier needs, with m modules (MODULES_BY_TIER: Starter 2, Customer 4, Enterprise and
 * Platform 6); each limit is at least twice the need (src/api/tiers.test.ts checks it):
 *   - secrets: per module its `<module>-credentials` and up to RELEASE_HISTORY_MAX (5) helm release
 *     records (helm prunes before it writes the next), so 6m; plus eva-nats, the credentials Secret,
 *     the ingress TLS Secret and cert-manager's key while it issues: 6m + 4 = 16, 28, 40.
 *   - configmaps: per module `<module>-config`; plus kube-root-ca.crt (every namespace has it), the
 *     alert rules (without a Prometheus Operator) and one a service mesh may add: m + 3 = 5, 7, 9.
 *   - services: one per module (ClusterIP; the render guard refuses the other types, and the quota
 *     allows no NodePort or LoadBalancer either): m = 2, 4, 6.
 *   - persistentvolumeclaims: no module chart has one: 0.
 *   - pods: replicas at the tier's bound (MODULE_BOUNDS_BY_TIER.maxReplicas) plus the rolling update's
 *     surge (25%, rounded up) per module: Starter 2 x (2 + 1) = 6, Customer 4 x (3 + 1) = 16,
 *     Enterprise 6 x (10 + 3) = 78, Platform 6 x (20 + 5) = 150. Seed data is loaded by the module
 *     pods' init containers (steps/seed/seed-init-containers.ts): no pods of its own.
 */
const COUNTS = { 'services.loadbalancers': '0', 'services.nodeports': '0', persistentvolumeclaims: '0' } as const;

export const QUOTA_BY_TIER: Readonly<Record<Tier, NamespaceQuota>> = {
  Starter: { ...COUNTS, 'requests.cpu': '2', 'requests.memory': '4Gi', pods: '20', secrets: '32', configmaps: '12', services: '5' },
  Customer: { ...COUNTS, 'requests.cpu': '4', 'requests.memory': '8Gi', pods: '40', secrets: '56', configmaps: '16', services: '10' },
  Enterprise: { ...COUNTS, pods: '160', secrets: '80', configmaps: '20', services: '15' },
  Platform: { ...COUNTS, pods: '300', secrets: '80', configmaps: '20', services: '15' },
};

/** LimitRange container defaults, for every tier: containers that omit resources still get bounds. */
export const CONTAINER_DEFAULTS = { cpu: '500m', memory: '512Mi' } as const;

/**
 * The tenant's NATS account, per tier: the server enforces these for everything in the account, so
 * no module (or bug) can take more than its tier pays for. `diskStorage` must hold what the streams
 * and the seed bucket reserve (JetStream reserves each stream's max_bytes up front, and the account
 * requires every stream to declare one); the rest is headroom. Three streams: events, commands and
 * the seed bucket; nothing else can be created in a tenant account.
 */
export interface AccountTier {
  readonly connections: number;
  readonly subscriptions: number;
  /** Largest message; equals the streams' max_msg_size. */
  readonly payload: number;
  readonly diskStorage: number;
  readonly streams: number;
  readonly consumers: number;
  /** max_bytes of the seed data bucket eva-<CODE>-data. */
  readonly dataBucketBytes: number;
}

export const ACCOUNT_BY_TIER: Readonly<Record<Tier, AccountTier>> = {
  Starter: { connections: 32, subscriptions: 1_000, payload: 256 * KIB, diskStorage: 160 * MIB, streams: 3, consumers: 16, dataBucketBytes: 16 * MIB },
  Customer: { connections: 64, subscriptions: 4_000, payload: 512 * KIB, diskStorage: 640 * MIB, streams: 3, consumers: 64, dataBucketBytes: 64 * MIB },
  Enterprise: { connections: 256, subscriptions: 20_000, payload: 1 * MIB, diskStorage: 2560 * MIB, streams: 3, consumers: 256, dataBucketBytes: 256 * MIB },
  Platform: { connections: 256, subscriptions: 20_000, payload: 1 * MIB, diskStorage: 2560 * MIB, streams: 3, consumers: 256, dataBucketBytes: 256 * MIB },
};

/**
 * What a tenant may ask of each module (spec.helmValues.<module>.replicaCount and .resources, both
 * requests and limits, per container): Enterprise and Platform have no namespace quota, so these are
 * the only thing that stops one tenant from taking the nodes. Quantities use the forms of
 * steps/modules/module-values.ts (CPU_PATTERN, MEMORY_PATTERN). Enforced by the CRD (CEL) and again by the operator.
 */
export interface ModuleBounds {
  readonly maxReplicas: number;
  readonly maxCpu: string;
  readonly maxMemory: string;
}

export const MODULE_BOUNDS_BY_TIER: Readonly<Record<Tier, ModuleBounds>> = {
  Starter: { maxReplicas: 2, maxCpu: '1', maxMemory: '1Gi' },
  Customer: { maxReplicas: 3, maxCpu: '2', maxMemory: '2Gi' },
  Enterprise: { maxReplicas: 10, maxCpu: '4', maxMemory: '8Gi' },
  Platform: { maxReplicas: 20, maxCpu: '8', maxMemory: '16Gi' },
};
