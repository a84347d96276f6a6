/** Names shared by the API, the controller and the tooling around them. */
export const GROUP = 'eva.aidonow.com';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'EvaTenant';
export const PLURAL = 'evatenants';
export const SINGULAR = 'evatenant';
export const SHORT_NAMES = ['evt'] as const;
export const CATEGORIES = ['eva'] as const;
export const CRD_NAME = `${PLURAL}.${GROUP}`;

/** Labels every per-tenant object shares. */
export const LABELS = {
  capsuleCode: `${GROUP}/capsule-code`,
  tier: `${GROUP}/tier`,
  wave: `${GROUP}/wave`,
  tenantUid: `${GROUP}/tenant-uid`,
  managedBy: 'app.kubernetes.io/managed-by',
} as const;

export const MANAGED_BY = 'eva-operator';
/** On every module's objects (its Deployment, pods): the module's name. */
export const MODULE_LABEL = `${GROUP}/module`;

export const FINALIZER = `${GROUP}/tenant-protection`;
export const OWNER_ANNOTATION = `${GROUP}/operator-version`;
/** The operator version in an owner annotation, whose value is `version` (default shard) or `version/shard` (controller/metadata.ts). */
export const ownerVersion = (owner: string | undefined): string | undefined => (owner === undefined || owner === '' ? undefined : owner.split('/')[0]);
export const WAVE_LABEL = `${GROUP}/wave`;
/**
 * The shard a tenant belongs to: only an operator Deployment whose SHARD has this value acts on it
 * (none: the default shard, operators without SHARD). Relabelling hands the tenant over.
 */
export const SHARD_LABEL = `${GROUP}/shard`;
/**
 * On each operator's leader-election Lease: the MAX_WAVE it claims unpinned tenants up to, so that
 * every operator can tell a tenant whose wave no running operator claims (none: an operator too old
 * to publish it, taken to claim every wave).
 */
export const MAX_WAVE_ANNOTATION = `${GROUP}/max-wave`;
/**
 * Set by a cluster operator to force a decommission past steps that can never finish (e.g. a NATS
 * server that is gone for good): a comma-separated list of step names, or `all`. Recorded in an Event.
 */
export const FORCE_DECOMMISSION_ANNOTATION = `${GROUP}/force-decommission`;
/**
 * Set (to any new value, e.g. a timestamp) to rotate the tenant's NATS credentials: new credentials
 * in Secret eva-nats, the modules rolled once, then the old user revoked on the server.
 */
export const ROTATE_NATS_CREDENTIALS_ANNOTATION = `${GROUP}/rotate-nats-credentials`;

export const TIERS = ['Starter', 'Customer', 'Enterprise', 'Platform'] as const;
export type Tier = (typeof TIERS)[number];

export const LIFECYCLES = ['Active', 'Suspended', 'Decommissioned'] as const;
export type Lifecycle = (typeof LIFECYCLES)[number];

export const PHASES = [
  'Requested',
  'Provisioning',
  'Active',
  'Degraded',
  'Decommissioning',
  'Decommissioned',
  'Failed',
  'Suspended',
] as const;
export type Phase = (typeof PHASES)[number];

/** The five provisioning conditions, in saga order; Ready is derived from them. */
export const PROVISIONING_CONDITIONS = [
  'NamespaceReady',
  'Provisioned',
  'SeedLoaded',
  'ModulesDeployed',
  'IngressReady',
] as const;
export type ProvisioningCondition = (typeof PROVISIONING_CONDITIONS)[number];
export const CONDITION_TYPES = [...PROVISIONING_CONDITIONS, 'Ready'] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];

export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;
export type ConditionStatus = (typeof CONDITION_STATUSES)[number];

export const WAVES = { min: 1, max: 3 } as const;

/** What decommissioning does with the tenant's NATS data: Delete (zero residue) or Retain it, account disabled. */
export const DATA_RETENTIONS = ['Delete', 'Retain'] as const;
export type DataRetention = (typeof DATA_RETENTIONS)[number];
/**
 * On a new EvaTenant: the uid of the deleted EvaTenant whose retained NATS data (account, streams,
 * seed bucket) it takes over. Naming the uid is deliberate: a reused capsule code alone never hands
 * one customer's data to another.
 */
export const RESTORE_FROM_ANNOTATION = `${GROUP}/restore-from-uid`;
/**
 * With restore-from-uid, on a tenant moved from another cluster (docs/multi-cluster.md, "Moving a
 * tenant"): that cluster's NATS server (one nats:// or tls:// URL), which still holds the retained
 * streams and seed bucket. The operator copies each one it lacks from there (JetStream snapshot and
 * restore) as the account's own user, before the restore takes them over.
 */
export const RESTORE_FROM_NATS_ANNOTATION = `${GROUP}/restore-from-nats`;
/**
 * Custody marks of retained NATS data, as annotations of the account keys Secret and as metadata of
 * the tenant's streams and seed bucket (the same keys): set by the decommission that retains the data
 * (whose it was, under which capsule code, since when) and cleared when a tenant uses it again. A
 * restore is honoured only for data so marked.
 */
export const RETAINED_MARKS = { fromUid: `${GROUP}/retained-from-uid`, code: `${GROUP}/retained-code`, at: `${GROUP}/retained-at` } as const;
/** On the account keys Secret: the uid whose retained data its owner took over (objects still stamped with it are the owner's). */
export const RESTORED_FROM_UID_ANNOTATION = `${GROUP}/restored-from-uid`;

/** Six uppercase letters: compact, unambiguous and safe in DNS labels, stream and release names. */
export const CAPSULE_CODE_PATTERN = '^[A-Z]{6}$';

/** Semantic Versioning 2.0.0 (no leading "v"). */
export const SEMVER_PATTERN =
  '^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?(\\+[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?$';
