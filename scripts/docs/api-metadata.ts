/**
 * The human-written half of the API reference: what each condition type, phase, label and
 * annotation means. Typed by the catalogues in src/api, so a new phase or condition type without a
 * line here does not compile; a test fails when src/ uses an eva.aidonow.com/ key not listed.
 */
import type { Phase, ProvisioningCondition } from '../../src/api/constants.ts';

export const PHASE_MEANING: Readonly<Record<Phase, string>> = {
  Requested: 'Seen by an operator, nothing done yet.',
  Provisioning: 'The saga runs its steps (a new tenant, a spec change being applied, or one set back to Active).',
  Active: 'All five provisioning conditions are True; checked for drift every driftIntervalSeconds.',
  Degraded: 'Was Active; a step needs repair or the drift check cannot run. Still served.',
  Decommissioning: 'Deleted, or spec.lifecycle Decommissioned: the decommission saga removes what the tenant owns.',
  Decommissioned: 'spec.lifecycle Decommissioned and done: everything removed (retained data aside), the object kept.',
  Failed: 'A step needs a change by the user (Stalled True says which); retried slowly meanwhile.',
  Suspended: 'Hibernated (spec.lifecycle Suspended): modules at zero replicas, no Ingress, NATS credentials refused, data kept.',
};

export const PROVISIONING_CONDITION_MEANING: Readonly<Record<ProvisioningCondition, string>> = {
  NamespaceReady: 'The tenant namespace with its quota, limit range and NetworkPolicy.',
  Provisioned: "The tenant's NATS account and credentials, streams, alert rule and tenant record.",
  SeedLoaded: 'The seed data of spec.seedsVersion (default: the newest bundled) in the tenant\'s bucket.',
  ModulesDeployed: "The modules' credentials, one Helm release per module of the tier, each Deployment available, replaced NATS users revoked.",
  IngressReady: 'The tenant Ingress routing to every module, with an address (and TLS when configured).',
};

/** Conditions beside the five: kstatus's summary and the suspend report. */
export const SUMMARY_CONDITION_MEANING: Readonly<Record<string, string>> = {
  Ready: 'Derived from the five: True when all are True (reason Provisioned), else the reason of the first failing (False) or pending one. True with reason Suspended while hibernated, Decommissioned when a kept object is decommissioned.',
  Reconciling: 'Present (True) only while the operator works towards the spec (kstatus InProgress).',
  Stalled: 'Present (True) only while the operator cannot proceed without a change by the user: bad input, or no running operator serves the tenant (kstatus Failed).',
  Suspended: 'Present while spec.suspend is true: reason ReconciliationSuspended; the message reports drift observed and not repaired.',
};

export interface MetadataKey {
  readonly kind: 'label' | 'annotation' | 'finalizer';
  readonly on: string;
  readonly meaning: string;
}

/** Every eva.aidonow.com/ key, without its prefix. */
export const METADATA_KEYS: Readonly<Record<string, MetadataKey>> = {
  'capsule-code': { kind: 'label', on: 'every object the tenant owns; values-source objects in the operator namespace', meaning: "The tenant's capsule code. On a values source in the operator's namespace (set by you): with eva.aidonow.com/tenant, names the one tenant that may read it." },
  tier: { kind: 'label', on: 'the tenant namespace and objects', meaning: "The tenant's tier." },
  wave: { kind: 'label', on: 'EvaTenant, tenant namespace', meaning: 'Mirrors spec.wave (kubectl get evt -l eva.aidonow.com/wave=1); written by the operator.' },
  'tenant-uid': { kind: 'label', on: 'every object the tenant owns (and NATS stream metadata); values sources in the operator namespace (written by the operator)', meaning: 'The uid of the EvaTenant that owns the object: what tells two tenants with the same code apart. On a values source: the EvaTenant it is bound to, written on first use and never changed.' },
  tenant: { kind: 'label', on: "a values source in the operator's namespace (set by you)", meaning: 'The name of the one EvaTenant that may read it (docs/values-from.md); bound to that EvaTenant\'s uid on first use.' },
  module: { kind: 'label', on: "a module's Deployment and pods", meaning: "The module's name." },
  shard: { kind: 'label', on: 'EvaTenant (set by a platform administrator)', meaning: 'The shard whose operator serves the tenant (an operator with SHARD of that value); none: the default shard. Relabelling hands it over (docs/sharding.md).' },
  'values-source': { kind: 'label', on: 'Secret or ConfigMap (set by you)', meaning: '"true" opts the object in as a spec.valuesFrom source; no other object is ever read (docs/values-from.md).' },
  'alert-rules': { kind: 'label', on: "the tenant's alert-rule ConfigMap", meaning: '"true" on the queue-depth alert rule kept as a ConfigMap when the PrometheusRule CRD is absent.' },
  'values-hash': { kind: 'label', on: 'module Helm release', meaning: 'Digest of the chart and values last applied (status.modules.<module>.valuesDigest).' },
  'nats-account': { kind: 'label', on: "the Secrets of NATS account keys in the operator's namespace", meaning: 'Marks a Secret holding a NATS account\'s keys (eva-nats-account-<code>).' },
  'operator-version': { kind: 'annotation', on: 'EvaTenant (written by the operator); the operator pod', meaning: 'The operator version (and /shard) that owns the tenant. Remove it to let another version claim a tenant whose owner is gone (OperatorOwnerAbsent).' },
  'max-wave': { kind: 'annotation', on: "each operator's leader Lease", meaning: 'The MAX_WAVE that operator claims unpinned tenants up to.' },
  'restore-from-uid': { kind: 'annotation', on: 'a new EvaTenant (set by a platform administrator)', meaning: 'The uid of a deleted tenant with retained data that this one takes over (docs/lifecycle.md, "Restore"); a platform administrator\'s act (eva-tenant-platform-controls).' },
  'restore-from-nats': { kind: 'annotation', on: "a new EvaTenant restoring a moved tenant (written by the hub controller's mover, a platform control)", meaning: "With restore-from-uid: the NATS server of the cluster the tenant moved from (one nats:// or tls:// URL); each stream and seed bucket missing here is copied from there (docs/multi-cluster.md, \"Moving a tenant\")." },
  'member-cluster': { kind: 'label', on: "a Secret in the hub controller's namespace (set by the platform)", meaning: 'The member cluster (ManagedCluster name) whose kubeconfig, NATS address and operator namespace the Secret gives the mover (docs/multi-cluster.md).' },
  move: { kind: 'label', on: "the hub controller's move records (ConfigMaps eva-move-<tenant>, written by its mover)", meaning: 'The tenant the record is the move of: where it goes, how far it got, its downtime.' },
  'force-decommission': { kind: 'annotation', on: 'EvaTenant (set by a platform administrator)', meaning: 'Comma-separated decommission steps to force past their verification, or all: each forced step\'s remove still runs once; recorded in a Warning Event DecommissionForced.' },
  'rotate-nats-credentials': { kind: 'annotation', on: 'EvaTenant (set by you)', meaning: "Any new value (e.g. a timestamp) rotates the modules' NATS credentials; the old user is revoked after the modules roll." },
  'retired-from': { kind: 'annotation', on: "a values source in the operator's namespace (written by the operator)", meaning: 'The uid of the deleted EvaTenant it was bound to; its values-source label was removed then, so no tenant reads it again.' },
  'retained-from-uid': { kind: 'annotation', on: 'the NATS account keys Secret (written by the operator; also in stream and bucket metadata)', meaning: 'The uid of the deleted EvaTenant whose data is retained: a restore naming that uid is honoured only with this mark (docs/lifecycle.md, "Restore").' },
  'retained-code': { kind: 'annotation', on: 'the NATS account keys Secret (written by the operator; also in stream and bucket metadata)', meaning: 'The capsule code the data was retained under: a restore must ask for the same code.' },
  'retained-at': { kind: 'annotation', on: 'the NATS account keys Secret (written by the operator; also in stream and bucket metadata)', meaning: 'When the data was marked retained (RFC 3339).' },
  'restored-from-uid': { kind: 'annotation', on: 'the NATS account keys Secret (written by the operator)', meaning: 'The uid whose retained data the owner took over: objects still stamped with that uid are the owner\'s.' },
  rollout: { kind: 'annotation', on: 'EvaTenant (written by a rollout, with its pin)', meaning: 'The EvaRollout that moved the tenant (docs/rollouts.md); with rollout-wave, rollout-batch and rollout-from, the record a rollback returns it by.' },
  'rollout-wave': { kind: 'annotation', on: 'EvaTenant (written by a rollout)', meaning: 'The wave it moved in.' },
  'rollout-batch': { kind: 'annotation', on: 'EvaTenant (written by a rollout)', meaning: 'The batch it moved in, numbered across the rollout (1, 2, ...).' },
  'rollout-from': { kind: 'annotation', on: 'EvaTenant (written by a rollout)', meaning: 'The operator version it left, where a rollback returns it.' },
  'crd-version': { kind: 'annotation', on: 'the EvaTenant CRD', meaning: 'The chart appVersion whose CRD is installed (scripts/quickstart.sh); a newer CRD is never downgraded.' },
  'tenant-protection': { kind: 'finalizer', on: 'EvaTenant', meaning: 'Comes off only when every decommission step verified that its resources are gone.' },
};
