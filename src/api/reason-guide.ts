/**
 * What each reason of the catalogue (reasons.ts) means to the person reading it on a condition, in
 * `status.decommission` or on an Event: the meaning, the likely cause and what to do. The one place
 * this text lives: docs/troubleshooting.md is generated from it (`npm run docs:generate`), and a
 * reason added to the catalogue without an entry here does not compile (Record<Reason, ...>).
 * It runs over ~350 lines: one entry per reason, kept in one file in catalogue order so that a new reason's
 * entry is written beside its neighbours and the page keeps the catalogue's order.
 */
import type { Reason } from './reasons.ts';

/** The sections of the troubleshooting page, in the order it shows them. */
export const REASON_AREAS = {
  progress: 'Progress and success',
  hibernation: 'Hibernation and retained data',
  events: 'Events of provisioning and decommission',
  summary: 'Tenants the provisioning saga does not run for',
  fallback: 'Failures without a reason of their own',
  operators: 'No running operator serves the tenant',
  members: 'Beyond one cluster: the hub',
  rollouts: 'Fleet rollouts (EvaRollout)',
  tenant: 'The tenant and its capsule code',
  namespace: 'Namespace, quota and NetworkPolicy',
  nats: 'NATS: connection, account and credentials',
  streams: 'JetStream streams',
  alerts: 'Alert rules',
  record: 'Tenant record',
  seed: 'Seed data',
  modules: 'Module releases',
  ingress: 'Ingress and TLS',
} as const;
export type ReasonArea = keyof typeof REASON_AREAS;

export interface ReasonGuide {
  readonly area: ReasonArea;
  /** What the reason says about the tenant, and where it appears. */
  readonly meaning: string;
  /** Why it usually happens. */
  readonly cause: string;
  /** What to do about it (or why nothing is to be done). */
  readonly action: string;
}

const NOTHING = 'Nothing: it is not a problem.';
/** Why a step's completion Event is written: only a step redone on a tenant that was Active is news. */
const STEP_REDONE = 'A step redone on a tenant that was Active: a spec change applied or drift repaired (a new tenant shows ProvisioningStarted and ProvisioningComplete only; its conditions show each step).';
const WAIT_REMOVAL =
  'Wait: the decommission retries with backoff. When it stays, look at what keeps the object (a finalizer, a webhook refusing the delete) in the operator log; only if it can never go, force the step past with annotation eva.aidonow.com/force-decommission.';

/** The anchor of a reason's entry on docs/troubleshooting.md (its heading is the reason itself). */
export const reasonAnchor = (reason: Reason): string => reason.toLowerCase();

/** Where a reason's entry is, from the root of a checkout or a release's docs: `docs/troubleshooting.md#<anchor>`. */
export const reasonDocLink = (reason: Reason): string => `docs/troubleshooting.md#${reasonAnchor(reason)}`;

export const REASON_GUIDE: Readonly<Record<Reason, ReasonGuide>> = {
  // -- progress and success ---------------------------------------------------------------------------
  Progressing: {
    area: 'progress',
    meaning: 'A condition is Unknown while the steps behind it run; also the reason of Reconciling True while the operator works towards the spec.',
    cause: 'A new tenant, a spec change being applied, or drift being repaired.',
    action: 'Nothing, unless it stays for minutes: then the message names the steps, and the operator log the step that hangs.',
  },
  Pending: {
    area: 'progress',
    meaning: 'A condition is Unknown because earlier steps have not finished.',
    cause: 'Provisioning runs the steps in order; later conditions wait for earlier ones.',
    action: 'Look at the first condition that is not True: that is where the tenant is.',
  },
  Interrupted: {
    area: 'progress',
    meaning: 'The operator stopped (shutdown, lost lease, hand-over) between two steps; the message names the step it resumes at.',
    cause: 'An operator restart, an upgrade, or a tenant moving to another operator version or shard.',
    action: 'Nothing: the next operator resumes at that step. If it stays, check that an operator serves the tenant (its Lease, its log).',
  },
  NamespaceActive: { area: 'progress', meaning: 'NamespaceReady is True: namespace, quota, limit range and NetworkPolicy are in place.', cause: 'Success.', action: NOTHING },
  TenantRecordStored: { area: 'progress', meaning: 'Provisioned is True: NATS account, credentials, streams, alert rule and tenant record are in place.', cause: 'Success.', action: NOTHING },
  SeedApplied: { area: 'progress', meaning: 'SeedLoaded is True: the seed data of the tenant\'s seedsVersion is applied.', cause: 'Success.', action: NOTHING },
  ReleasesDeployed: { area: 'progress', meaning: 'ModulesDeployed is True: every module release of the tier is deployed and its Deployment available.', cause: 'Success.', action: NOTHING },
  IngressAdmitted: { area: 'progress', meaning: 'IngressReady is True: the tenant Ingress routes to every module (and has an address unless INGRESS_READY_ON_CREATE).', cause: 'Success.', action: NOTHING },
  Provisioned: { area: 'progress', meaning: 'Ready is True: all five provisioning conditions are True; the tenant is Active.', cause: 'Success.', action: NOTHING },

  // -- hibernation and retention ----------------------------------------------------------------------
  Suspended: {
    area: 'hibernation',
    meaning: 'Ready is True with this reason while the tenant is hibernated (spec.lifecycle: Suspended): as asked, and nothing is served.',
    cause: 'spec.lifecycle was set to Suspended.',
    action: 'Set spec.lifecycle: Active to serve again (docs/lifecycle.md).',
  },
  ScaledToZero: { area: 'hibernation', meaning: 'ModulesDeployed is True while hibernated: every module release is deployed with zero replicas.', cause: 'spec.lifecycle: Suspended.', action: NOTHING },
  IngressWithdrawn: { area: 'hibernation', meaning: 'IngressReady is True while hibernated: the tenant Ingress is deleted, nothing is served.', cause: 'spec.lifecycle: Suspended.', action: NOTHING },
  NatsCredentialsRefused: {
    area: 'hibernation',
    meaning: "Provisioned is True while hibernated: NATS account, streams and record are kept, and NATS refuses the modules' credentials.",
    cause: 'spec.lifecycle: Suspended.',
    action: NOTHING,
  },
  Retained: {
    area: 'hibernation',
    meaning: 'In status.decommission: the step\'s data (seed bucket, streams, NATS account, disabled) is kept, as final as Removed.',
    cause: 'spec.dataRetention: Retain on a decommissioned or deleted tenant.',
    action: 'Restore it or purge it later: docs/lifecycle.md, "Restore" and "Purge retained data later".',
  },

  // -- events -----------------------------------------------------------------------------------------
  ProvisioningStarted: { area: 'events', meaning: 'Event: provisioning of the tenant started.', cause: 'A new tenant, or one set back to Active.', action: NOTHING },
  NamespaceCreated: { area: 'events', meaning: 'Event: step namespace completed.', cause: STEP_REDONE, action: NOTHING },
  SeedLoaded: { area: 'events', meaning: 'Event: step seed completed (the seed data is applied).', cause: STEP_REDONE, action: NOTHING },
  ModuleDeployStarted: { area: 'events', meaning: 'Event: the module releases are being upgraded or reinstalled.', cause: STEP_REDONE, action: NOTHING },
  ModuleDeployComplete: { area: 'events', meaning: 'Event: step modules completed.', cause: STEP_REDONE, action: NOTHING },
  IngressProvisioned: { area: 'events', meaning: 'Event: step ingress completed.', cause: STEP_REDONE, action: NOTHING },
  ProvisioningComplete: { area: 'events', meaning: 'Event: all five conditions are True for the first time; the tenant is Active (the message says how long it took).', cause: 'Provisioning finished.', action: NOTHING },
  DeprovisionStarted: { area: 'events', meaning: 'Event: the decommission started.', cause: 'The EvaTenant was deleted, or spec.lifecycle set to Decommissioned.', action: NOTHING },
  DeprovisionComplete: {
    area: 'events',
    meaning: "Event: every resource of the tenant is gone (with Retain: all but the retained data, and the message gives the uid a restore names).",
    cause: 'The decommission finished.',
    action: 'With retained data, keep the uid from the message: a restore needs it.',
  },
  DecommissionForced: {
    area: 'events',
    meaning: 'Warning Event: the decommission was forced past the steps it names; what those steps own may be left behind.',
    cause: 'Someone set annotation eva.aidonow.com/force-decommission (a step list or all).',
    action: 'Check that it was meant, and clean up by hand what the forced steps did not remove (e.g. a NATS account on a server that was gone).',
  },

  // -- the GitOps summary of tenants the saga does not run for ------------------------------------------
  Decommissioning: {
    area: 'summary',
    meaning: 'Ready is False while the decommission runs; the message lists the steps not removed yet, and status.decommission each step\'s state.',
    cause: 'The tenant was deleted or set to spec.lifecycle: Decommissioned.',
    action: 'Wait. If a step stays, its reason in status.decommission says why (see its entry on this page).',
  },
  Decommissioned: {
    area: 'summary',
    meaning: 'Ready is True with this reason: spec.lifecycle is Decommissioned and everything the tenant owned is removed (retained data aside); the object is kept.',
    cause: 'spec.lifecycle: Decommissioned, done.',
    action: 'Set spec.lifecycle: Active to provision again, or delete the object.',
  },
  ReconciliationSuspended: {
    area: 'summary',
    meaning: 'Condition Suspended: spec.suspend is true, so the operator writes nothing for this tenant; the message reports drift it observed but did not repair.',
    cause: 'spec.suspend: true (as Flux\'s suspend).',
    action: 'Set spec.suspend: false to resume and repair. A deletion waits until then.',
  },

  // -- failures without a reason of their own ---------------------------------------------------------------
  StepFailed: {
    area: 'fallback',
    meaning: 'A step failed with an error that carries no reason of the catalogue.',
    cause: 'An unexpected error (a bug, or a failure the operator does not classify); it is retried with backoff.',
    action: 'Read the message and the operator log for the step; if it repeats, report it with both.',
  },
  CheckFailed: {
    area: 'fallback',
    meaning: 'The drift check of an Active tenant could not run, with an error that carries no reason of its own (phase Degraded; Argo CD shows Degraded).',
    cause: 'Something the check reads failed in a way the operator does not classify (a known one, such as NatsUnavailable, keeps its own reason).',
    action: 'Restore what the message names; the tenant goes back to Active at the next check.',
  },
  RemoveFailed: {
    area: 'fallback',
    meaning: 'In status.decommission: removing a step\'s resources failed with an error that carries no reason of its own.',
    cause: 'An unexpected error during decommission; retried with backoff.',
    action: 'Read the message and the operator log; if it can never succeed, force the step past (eva.aidonow.com/force-decommission).',
  },
  ReconcileFailed: {
    area: 'fallback',
    meaning: 'A reconcile failed outside any step (e.g. the API server refused a status write); counted in eva_reconcile_total.',
    cause: 'The API server refused or failed a write: admission, RBAC, a conflict storm, an outage.',
    action: 'Read the operator log; check the chart\'s RBAC and admission policy are installed as shipped.',
  },
  ShuttingDown: {
    area: 'fallback',
    meaning: 'A module step was not started because the operator is stopping.',
    cause: 'An operator restart, upgrade or lost lease.',
    action: 'Nothing: the next operator resumes the step.',
  },

  // -- no running operator serves the tenant -------------------------------------------------------------
  OperatorVersionAbsent: {
    area: 'operators',
    meaning: 'Stalled: spec.operatorVersion names a version no running operator has (no live Lease); Warning Event and gauge eva_tenants_pinned_to_absent_version.',
    cause: 'The pinned version was never installed, was removed, or runs in another namespace or shard.',
    action: 'Install that version (a release with operatorVersion set, same namespace), or change or remove the pin.',
  },
  OperatorShardAbsent: {
    area: 'operators',
    meaning: 'Stalled: the label eva.aidonow.com/shard names a shard no running operator serves; gauge eva_tenants_in_absent_shard.',
    cause: 'No release runs with that shard value, or the label is mistyped.',
    action: 'Install a release with --set shard=<value> (docs/sharding.md), or relabel the tenant.',
  },
  OperatorWaveAbsent: {
    area: 'operators',
    meaning: 'Stalled: an unpinned tenant nobody owns has a spec.wave above the MAX_WAVE of every running operator of its shard; gauge eva_tenants_above_max_wave.',
    cause: 'A canary rollout (maxWave below 3) and a tenant of a later wave.',
    action: 'Raise maxWave when the rollout reaches that wave, or pin the tenant (spec.operatorVersion), or lower its wave.',
  },
  OperatorOwnerAbsent: {
    area: 'operators',
    meaning: 'Stalled: the operator named by annotation eva.aidonow.com/operator-version has not run for two minutes; nobody else takes a tenant another owns. Gauge eva_tenants_owned_by_absent_operator.',
    cause: 'The owning release was removed before its tenants moved (blue/green upgrade), or its pods cannot run.',
    action: 'Run that version again, or remove the annotation (kubectl annotate evt <name> eva.aidonow.com/operator-version-) so the operator of its pin, shard and wave claims it.',
  },

  // -- beyond one cluster -----------------------------------------------------------------------------------
  MemberNotReporting: {
    area: 'members',
    meaning:
      "In the hub's view of a placed tenant (docs/multi-cluster.md): Stalled, and Ready Unknown, when the engine marks the tenant's member cluster unavailable; the phase and other conditions shown are the member's last report, not its present.",
    cause: "The member's agents, its API server or the network between it and the hub are down (the engine calls a member unavailable after five missed lease renewals).",
    action: "Find out what happened to the member (its ManagedCluster's conditions on the hub). The tenant is not moved: it waits for its member, whose data it holds.",
  },

  MemberApplying: {
    area: 'members',
    meaning:
      "On a tenant's ManifestWork on the hub (the summary the hub controller writes, docs/multi-cluster.md): Reconciling, Ready False: the member has not caught up with the work's present generation (the engine has not applied it there yet, or the member's operator has not observed the EvaTenant's new generation).",
    cause: 'A change of the work was just written; the work agent applies it within seconds, the operator observes it on its next pass.',
    action: "Wait; if it stays, look at the work's Applied condition (the engine's) and the member's operator (its pods, its logs).",
  },

  MemberRefusedTenant: {
    area: 'members',
    meaning: "In the hub's view of a placed tenant: Stalled, Ready False: the member's API server refused the EvaTenant the engine applied there; the message is the engine's, with the member's error.",
    cause: 'The member has no EvaTenant CRD (the operator chart is not installed there), or its admission policies refuse the tenant (e.g. a platform control set on the hub).',
    action: "Install the operator chart on the member, or fix the tenant the hub placed; the engine applies it again by itself.",
  },

  NoMemberMatches: {
    area: 'members',
    meaning: "For a tenant's Placement on the hub: Stalled, Ready False: the engine decided no member cluster, so the tenant is nowhere yet; the message is the engine's (PlacementSatisfied).",
    cause: "No member's labels match the Placement's, the member that did is cordoned or gone, or the Placement's namespace has no ManagedClusterSetBinding.",
    action: "Label a member for it (or fix the tenant's placement labels), or bind the cluster set to the namespace; the engine decides by itself once one matches.",
  },

  // -- fleet rollouts ------------------------------------------------------------------------------------
  RolloutMoving: { area: 'rollouts', meaning: 'Reconciling: a batch has moved and its tenants are coming up on the target version.', cause: 'A rollout in progress.', action: NOTHING },
  RolloutBaking: { area: 'rollouts', meaning: 'Reconciling: the batch in flight is Ready on the target version and bakes before its gates are judged.', cause: 'A rollout in progress.', action: NOTHING },
  RolloutPaused: { area: 'rollouts', meaning: 'spec.paused: no further batch moves; the batch in flight is still judged.', cause: 'A person paused the rollout.', action: 'Set spec.paused: false to go on.' },
  RolloutSucceeded: { area: 'rollouts', meaning: 'Ready: every tenant of the named waves is on the target version, every batch passed its gates.', cause: 'Success.', action: NOTHING },
  RollingBack: { area: 'rollouts', meaning: 'Reconciling: a gate failed and the moved tenants return to the versions they came from, the last batch first.', cause: 'A failed gate with spec.onFailure: Rollback; status.gates says which, on which tenants, with what value.', action: 'Nothing while it runs; then find why the target version failed the gate.' },
  RolledBack: { area: 'rollouts', meaning: 'Stalled: every tenant this rollout moved is back on its earlier version.', cause: 'A failed gate (status.gates).', action: 'Fix the target version, then start a new rollout (this one is finished).' },
  GateFailed: { area: 'rollouts', meaning: 'Stalled: a gate failed or could not be judged (e.g. Prometheus unreachable) and spec.onFailure is Halt: the moved tenants stay where they are.', cause: 'The target version fails a gate for the tenants named in status.gates, or a gate could not be evaluated.', action: 'Look at the named tenants; delete the rollout and start another, or return them by hand (spec.operatorVersion).' },
  TargetVersionAbsent: { area: 'rollouts', meaning: 'Stalled: no operator of spec.targetVersion runs (no live Lease), so nothing would claim a moved tenant; nothing moved.', cause: 'The new release is not installed yet, or runs in another namespace.', action: 'Install the target version (a release with operatorVersion set); the rollout starts by itself.' },
  RolloutOverlaps: { area: 'rollouts', meaning: 'Stalled: another rollout in progress moves some of the same tenants; this one waits.', cause: 'Two rollouts over the same waves and versions.', action: 'Let the other finish, or delete one of them.' },
  WaveEmpty: { area: 'rollouts', meaning: 'Stalled before its first move: a wave the plan names has no tenant to move (none of that spec.wave on another version, or on spec.fromVersion).', cause: 'A wave listed by mistake, or a wrong fromVersion.', action: 'Remove the wave from spec.waves, or fix spec.fromVersion (the rollout starts once every named wave has tenants to move).' },
  NothingToMove: { area: 'rollouts', meaning: 'Stalled: no tenant of the named waves is on another version (or on spec.fromVersion).', cause: 'A wrong fromVersion or wave list, or the fleet is already on the target.', action: 'Check spec.fromVersion and spec.waves.' },

  // -- the tenant itself ---------------------------------------------------------------------------------
  TenantUidMissing: {
    area: 'tenant',
    meaning: 'The EvaTenant has no metadata.uid, which everything it owns is stamped with.',
    cause: 'Only a hand-made object outside an API server has no uid (a test stand-in); the API server always sets one.',
    action: 'Apply the tenant through the API server.',
  },
  CapsuleCodeInUse: {
    area: 'tenant',
    meaning: 'Stalled: another EvaTenant (another uid) owns this capsule code\'s namespace, NATS account, streams or record; nothing of it was touched.',
    cause: 'Two EvaTenants with the same spec.capsuleCode, or a new tenant reusing the code of a deleted one whose data was retained.',
    action: 'Choose another capsuleCode (a new EvaTenant: the code is immutable). To take over retained data on purpose, a platform administrator annotates eva.aidonow.com/restore-from-uid: <uid of the deleted tenant> (docs/lifecycle.md).',
  },
  RestoreRefused: {
    area: 'tenant',
    meaning: 'Stalled: the restore this EvaTenant asks for (annotation eva.aidonow.com/restore-from-uid) is not honoured; the message says which check failed. Nothing of the named tenant\'s data was touched.',
    cause: 'The uid names a tenant that still exists, data that was not retained (deleted with dataRetention Delete, or retained by a version before retention marks), another capsule code, or no account at all.',
    action: 'Check the uid (the DeprovisionComplete event of the retaining tenant names it) and that its EvaTenant is gone; for data retained by an older version, docs/lifecycle.md ("Restore") says how a platform administrator marks it. Otherwise remove the annotation or choose another capsuleCode.',
  },
  RestoreSourceInvalid: {
    area: 'tenant',
    meaning: 'Stalled: the annotation eva.aidonow.com/restore-from-nats (where a moved tenant\'s retained NATS data is copied from) cannot be used; the message says why. Nothing was copied or changed.',
    cause: 'The value is not exactly one nats:// or tls:// URL with a host and a port, carries credentials or a path, or the EvaTenant lacks eva.aidonow.com/restore-from-uid (a copy is only ever part of a restore).',
    action: 'A platform administrator sets the source cluster\'s NATS address as the destination cluster reaches it, e.g. nats://nats.eu.example:4222, beside restore-from-uid (docs/multi-cluster.md, "Moving a tenant"); credentials never go in it: the account\'s own keys sign in.',
  },
  RetentionPending: {
    area: 'hibernation',
    meaning: 'Decommissioning with dataRetention Retain: the retained data (account keys Secret, streams, seed bucket) is not marked retained yet.',
    cause: 'NATS or the API server was unreachable while marking; the decommission retries with backoff.',
    action: 'Wait; if it stays, the message names what is not marked and the operator log why.',
  },

  // -- namespace, quotas, network policy ---------------------------------------------------------------------
  NamespaceMissing: { area: 'namespace', meaning: 'Namespace eva-tenant-<code> does not exist.', cause: 'A new tenant, or the namespace was deleted by hand (drift).', action: 'Nothing: the operator creates it again.' },
  NamespaceNotOwned: {
    area: 'namespace',
    meaning: 'Stalled: namespace eva-tenant-<code> exists but was not created by eva-operator; it is left untouched.',
    cause: 'A namespace of that name made by someone else.',
    action: 'Delete or rename that namespace, or choose another capsuleCode.',
  },
  NamespaceTerminating: {
    area: 'namespace',
    meaning: 'The tenant namespace is being deleted; provisioning waits until it is gone, a decommission until it is removed.',
    cause: 'A decommission, a tenant re-created right after its deletion, or a namespace deleted by hand.',
    action: 'Wait. If it stays Terminating, a finalizer in it is stuck: kubectl get namespace eva-tenant-<code> -o yaml shows the conditions naming what remains.',
  },
  NamespaceLabelsDrifted: { area: 'namespace', meaning: 'The tenant namespace\'s labels differ from what the tenant needs (ownership, tier, Pod Security).', cause: 'Labels changed by hand or by another controller.', action: 'Nothing: the operator sets them again. If they keep changing, find the other writer.' },
  QuotaMissing: { area: 'namespace', meaning: 'The tier\'s ResourceQuota is missing from the tenant namespace.', cause: 'A new tenant, or the quota deleted by hand.', action: 'Nothing: the operator creates it again.' },
  QuotaDrifted: { area: 'namespace', meaning: 'The ResourceQuota differs from the tier.', cause: 'Edited by hand, or a tier change being applied.', action: 'Nothing: the operator restores it.' },
  QuotaPresent: { area: 'namespace', meaning: 'In status.decommission: the ResourceQuota still exists.', cause: 'Its deletion has not completed yet.', action: WAIT_REMOVAL },
  QuotaExceeded: {
    area: 'namespace',
    meaning: 'Stalled: a module cannot get its pods (or helm its objects) within the tenant namespace\'s ResourceQuota.',
    cause: 'spec.helmValues asks for more replicas or resources than the tier\'s quota holds, or other pods in the namespace use it up.',
    action: 'Lower replicaCount or resources in spec.helmValues, or move the tenant to a larger tier.',
  },
  LimitRangeDrifted: { area: 'namespace', meaning: 'The tier\'s LimitRange is missing or differs.', cause: 'A new tenant, a tier change, or an edit by hand.', action: 'Nothing: the operator restores it.' },
  LimitRangePresent: { area: 'namespace', meaning: 'In status.decommission: the LimitRange still exists.', cause: 'Its deletion has not completed yet.', action: WAIT_REMOVAL },
  NetworkPolicyMissing: { area: 'namespace', meaning: 'The tenant\'s NetworkPolicy does not exist.', cause: 'A new tenant, or the policy deleted by hand.', action: 'Nothing: the operator creates it again.' },
  NetworkPolicyDrifted: {
    area: 'namespace',
    meaning: 'The tenant\'s NetworkPolicy differs from the isolation policy, or exists although networkPolicy.enabled is false.',
    cause: 'Edited by hand, or the operator\'s NETWORK_POLICY_* settings changed.',
    action: 'Nothing: the operator rewrites or removes it.',
  },
  NetworkPolicyPresent: { area: 'namespace', meaning: 'In status.decommission: the tenant\'s NetworkPolicy still exists.', cause: 'Its deletion has not completed yet.', action: WAIT_REMOVAL },
  NetworkPolicyForeign: {
    area: 'namespace',
    meaning: 'NamespaceReady is False: a NetworkPolicy the operator did not write is in the tenant namespace; policies add up, so it may widen the isolation.',
    cause: 'Someone (or another controller) added a policy to the tenant namespace.',
    action: 'Delete it, or set networkPolicy.removeForeign=true to have the operator delete such policies (docs/network.md).',
  },

  // -- NATS ------------------------------------------------------------------------------------------------
  NatsUnavailable: {
    area: 'nats',
    meaning: 'The operator cannot reach NATS.',
    cause: 'NATS is down or restarting, nats.url is wrong, or a NetworkPolicy or firewall blocks the operator.',
    action: 'Check NATS and nats.url; the operator retries with backoff and carries on by itself.',
  },
  NatsAuthFailed: {
    area: 'nats',
    meaning: 'NATS rejected the credentials the operator used.',
    cause: "The operator's Secret (system.creds, operator-signing-key.nk) does not belong to this NATS's operator, or the server's trust changed. At start the operator exits with status 2 naming the setting.",
    action: 'Re-create the operator Secret from the same eva-operator nats-bootstrap the server trusts (docs/nats.md).',
  },
  NatsStorageExhausted: {
    area: 'nats',
    meaning: 'NATS cannot reserve the storage a stream needs: the tenant account\'s JetStream storage is fully reserved.',
    cause: 'Other streams of the account reserve the storage, or the server\'s JetStream store is full.',
    action: 'Free storage on the server (max_file_store) or in the account; the operator retries.',
  },
  JetStreamUnavailable: {
    area: 'nats',
    meaning: 'NATS offers no JetStream to the tenant\'s account.',
    cause: 'JetStream is off on the server, or its storage cannot hold the account\'s limits (max_file_store too small for all tenant accounts).',
    action: 'Enable JetStream with enough storage on the NATS server (nats.maxFileStore for the quick-start NATS).',
  },
  AccountKeysCorrupt: {
    area: 'nats',
    meaning: 'The Secret holding the tenant\'s NATS account keys (in the operator\'s namespace) is unreadable or incomplete, or changed while being updated.',
    cause: 'The Secret was edited by hand or restored partly; "changed while being updated" is a race and retried.',
    action: 'Restore the Secret from a backup. Without the keys the account cannot be managed.',
  },
  AccountMissing: {
    area: 'nats',
    meaning: 'The tenant has no NATS account (keys or server-side) yet.',
    cause: 'A new tenant, or a NATS server that lost its resolver data.',
    action: 'Nothing: step account creates or pushes it again.',
  },
  AccountDrifted: {
    area: 'nats',
    meaning: 'The account JWT on NATS differs from the tier (or, retaining data, the account is not disabled yet).',
    cause: 'A tier change, or the account changed on the server by another tool.',
    action: 'Nothing: the operator pushes the right JWT.',
  },
  AccountRejected: {
    area: 'nats',
    meaning: 'NATS refused an account update or lookup (or gave no readable answer). At start the operator exits with status 2 when NATS does not trust its signing key.',
    cause: 'The server does not trust the operator signing key, runs without a full resolver, or refuses the JWT.',
    action: 'Configure NATS in operator mode with a full resolver and include nats-auth.conf from the bootstrap (docs/nats.md).',
  },
  AccountPresent: { area: 'nats', meaning: 'In status.decommission: NATS still holds the tenant\'s account after its deletion.', cause: 'The server has not applied the deletion yet, or its resolver does not allow deletes.', action: 'Check the resolver allows deletion (allow_delete: true); otherwise wait.' },
  AccountKeysPresent: { area: 'nats', meaning: 'In status.decommission: the account is not deleted yet, so its keys are kept.', cause: 'The account deletion has not completed.', action: WAIT_REMOVAL },
  JetStreamUsageExceedsTier: {
    area: 'nats',
    meaning: 'Stalled: a move to a smaller tier is refused because the tenant\'s NATS data does not fit it; nothing was changed or deleted.',
    cause: 'A tier downgrade while streams or the bucket hold more than the smaller tier allows.',
    action: 'Delete data, or keep the larger tier.',
  },
  NatsCredentialsMissing: { area: 'nats', meaning: 'Secret eva-nats (the modules\' NATS credentials) does not exist in the tenant namespace.', cause: 'A new tenant, or the Secret deleted by hand.', action: 'Nothing: step account writes it again.' },
  NatsCredentialsDrifted: { area: 'nats', meaning: 'Secret eva-nats differs from the account\'s current user.', cause: 'Edited by hand, or a rotation in progress.', action: 'Nothing: the operator rewrites it.' },
  NatsCredentialsPresent: { area: 'nats', meaning: 'In status.decommission (or while retaining): Secret eva-nats still exists.', cause: 'Its deletion has not completed yet.', action: WAIT_REMOVAL },
  NatsCredentialsRotating: {
    area: 'nats',
    meaning: 'A rotation of the modules\' NATS credentials is under way (new user minted, modules rolling, the old user not revoked yet).',
    cause: 'Annotation eva.aidonow.com/rotate-nats-credentials was set to a new value.',
    action: 'Nothing: the old user is revoked once every module runs with the new credentials.',
  },
  NatsCredentialsStillAccepted: {
    area: 'nats',
    meaning: "NATS still accepts the modules' credentials after the operator disabled them (hibernation, retention).",
    cause: 'The server has not applied the account update yet, or does not trust the operator\'s revocations.',
    action: 'Check the NATS resolver; the operator retries and verifies by logging in.',
  },

  // -- streams -----------------------------------------------------------------------------------------------
  StreamMissing: { area: 'streams', meaning: 'A tenant stream (eva-<CODE>-events or -commands) does not exist.', cause: 'A new tenant, or a stream deleted on the server.', action: 'Nothing: the operator creates it again.' },
  StreamDrifted: { area: 'streams', meaning: 'A tenant stream\'s configuration differs from the tier.', cause: 'A tier change, or the stream edited on the server.', action: 'Nothing: the operator updates it.' },
  StreamConflict: {
    area: 'streams',
    meaning: 'Stalled: a tenant stream exists with a setting JetStream cannot change in place (e.g. storage type).',
    cause: 'The stream was created by something else, or by an older configuration.',
    action: 'Delete the stream (its messages are lost) or move its data away; the operator creates it anew.',
  },
  StreamSubjectsOverlap: {
    area: 'streams',
    meaning: 'Stalled: another stream in the account already captures the tenant\'s subjects.',
    cause: 'A stream made by hand in the tenant\'s account.',
    action: 'Delete or change that stream.',
  },
  StreamPresent: { area: 'streams', meaning: 'In status.decommission: a tenant stream still exists.', cause: 'Its deletion has not completed yet, or NATS is unreachable.', action: WAIT_REMOVAL },

  // -- alert rules -----------------------------------------------------------------------------------------------
  AlertRulesMissing: { area: 'alerts', meaning: 'The tenant\'s queue-depth alert rule (PrometheusRule, or ConfigMap without that CRD) is missing.', cause: 'A new tenant, or the rule deleted by hand.', action: 'Nothing: the operator creates it again.' },
  AlertRulesDrifted: { area: 'alerts', meaning: 'The alert rule differs from the tier.', cause: 'Edited by hand, or a tier change.', action: 'Nothing: the operator restores it.' },
  AlertRulesDuplicated: {
    area: 'alerts',
    meaning: 'A ConfigMap alert rule is left over beside the PrometheusRule.',
    cause: 'The PrometheusRule CRD was installed after the tenant was provisioned.',
    action: 'Nothing: the operator removes the ConfigMap.',
  },
  AlertRulesPresent: { area: 'alerts', meaning: 'In status.decommission: the alert rule still exists.', cause: 'Its deletion has not completed yet.', action: WAIT_REMOVAL },

  // -- tenant record ----------------------------------------------------------------------------------------------
  TenantRecordMissing: { area: 'record', meaning: 'The tenant\'s record in the operator\'s eva-tenants bucket does not exist (yet).', cause: 'A new tenant (step record comes before seed), or the record deleted on NATS.', action: 'Nothing: step record writes it again.' },
  TenantRecordDrifted: { area: 'record', meaning: 'The tenant record\'s fields differ from the tenant.', cause: 'A spec change (tier, seeds), or the record edited on NATS.', action: 'Nothing: the operator rewrites it.' },
  TenantRecordCorrupt: {
    area: 'record',
    meaning: 'The tenant record in eva-tenants is not valid.',
    cause: 'The record was written by hand or by another tool.',
    action: 'Delete the record (key <CODE> in bucket eva-tenants); the operator writes it again.',
  },
  TenantRecordConflict: { area: 'record', meaning: 'The tenant record changed while being written.', cause: 'Two writers at once (a race); retried.', action: 'Nothing, unless it repeats: then find the other writer.' },
  TenantRecordPresent: { area: 'record', meaning: 'In status.decommission: the tenant record still exists.', cause: 'Its deletion has not completed yet, or NATS is unreachable.', action: WAIT_REMOVAL },

  // -- seed data ----------------------------------------------------------------------------------------------------
  SeedsNotBundled: {
    area: 'seed',
    meaning: 'The tenant leaves seedsVersion out, and the operator has no seed data bundled to default to.',
    cause: 'SEEDS_BASE_PATH points at an empty or wrong folder (an image built without seeds/).',
    action: 'Fix the operator\'s image or SEEDS_BASE_PATH; or set spec.seedsVersion.',
  },
  UnknownSeedsVersion: {
    area: 'seed',
    meaning: 'Stalled: spec.seedsVersion is not bundled with this operator; the message lists the versions that are.',
    cause: 'A typo, or a version newer than the running operator.',
    action: 'Set spec.seedsVersion to a listed version, or leave it out for the newest.',
  },
  SeedsBundleInvalid: {
    area: 'seed',
    meaning: 'Stalled: a bundled seed file of the requested version is invalid.',
    cause: 'A broken seeds/ folder in the operator image.',
    action: 'Choose another seedsVersion, and report the broken bundle.',
  },
  SeedPending: { area: 'seed', meaning: 'The requested seeds version is not applied yet.', cause: 'A new tenant or a seedsVersion change.', action: 'Nothing: step seed applies it.' },
  SeedBucketMissing: { area: 'seed', meaning: 'The tenant\'s data bucket eva-<CODE>-data does not exist.', cause: 'A new tenant, or the bucket deleted on NATS.', action: 'Nothing: the operator creates it (the seed data is applied again).' },
  SeedBucketDrifted: { area: 'seed', meaning: 'The data bucket\'s size differs from the tier.', cause: 'A tier change, or the bucket edited on NATS.', action: 'Nothing: the operator updates it.' },
  SeedBucketPresent: { area: 'seed', meaning: 'In status.decommission: the data bucket still exists.', cause: 'Its deletion has not completed yet, or NATS is unreachable.', action: WAIT_REMOVAL },

  // -- module releases ----------------------------------------------------------------------------------------------
  ChartMissing: {
    area: 'modules',
    meaning: 'A module chart the tier needs is not bundled or cannot be read.',
    cause: 'CHART_BASE_PATH is wrong, or the operator image lacks charts/modules.',
    action: 'Fix the image or CHART_BASE_PATH; the operator retries.',
  },
  ChartRenderFailed: {
    area: 'modules',
    meaning: 'Stalled: helm could not render a module chart with the tenant\'s values.',
    cause: 'Values the chart cannot render (a chart bug, or values that pass the contract but break a template).',
    action: 'Read the message (helm\'s error, secrets redacted); change the values, or report the chart.',
  },
  RenderRejected: {
    area: 'modules',
    meaning: 'Stalled: the render guard refused what helm was about to apply (an object or image outside the module contract); nothing of that release was applied.',
    cause: 'A chart rendering another kind, name, namespace, a hook, a non-ClusterIP Service, or an image other than the one from images.txt.',
    action: 'Fix the chart or the values that made it render so (docs/security.md, "The render guard"); the message names each refused object or image.',
  },
  InvalidHelmValues: {
    area: 'modules',
    meaning: 'Stalled: a module\'s values break the values contract (an operator-owned key, a value above the tier\'s bounds, secretConfig inline) or helm\'s schema check; nothing was changed for that module.',
    cause: 'spec.helmValues or spec.valuesFrom stored before the admission policy, or a spec.valuesFrom key that is not a module name.',
    action: 'Remove or fix the key the message names (docs/tenant-api.md, "Module values").',
  },
  ValuesFromNotFound: {
    area: 'modules',
    meaning: 'Stalled: a spec.valuesFrom reference names no object the tenant may read; the module waits and resumes when it appears.',
    cause: 'The Secret or ConfigMap is absent, not labelled eva.aidonow.com/values-source: "true", or (in the operator\'s namespace) labelled for another tenant.',
    action: 'Create or label the object, or mark the reference optional (docs/values-from.md).',
  },
  ValuesFromInvalid: {
    area: 'modules',
    meaning: 'Stalled: a spec.valuesFrom reference\'s key is absent, larger than 64 KiB, or does not hold a YAML mapping (or holds a cyclic alias, an alias bomb or nesting too deep to be values).',
    cause: 'A wrong valuesKey, text where a mapping is expected, or hostile or generated YAML.',
    action: 'Fix the key or its content (plain YAML, no anchors needed), or use targetPath to take the text as one value (docs/values-from.md).',
  },
  ValuesFromUnbound: {
    area: 'modules',
    meaning: 'Stalled: a spec.valuesFrom reference into the operator\'s namespace names a source that is not bound to this EvaTenant; the module waits.',
    cause: 'The source lacks the eva.aidonow.com/tenant or eva.aidonow.com/capsule-code label, is labelled for another EvaTenant name or capsule code, or was bound (eva.aidonow.com/tenant-uid) to another EvaTenant, e.g. a deleted one of the same name.',
    action: 'A platform engineer stages a new source labelled eva.aidonow.com/tenant: <this EvaTenant\'s name> and eva.aidonow.com/capsule-code: <its code> (docs/values-from.md); a source bound to another uid is never re-bound.',
  },
  ValuesSourcesNotRetired: {
    area: 'modules',
    meaning: 'Decommission: a values source in the operator\'s namespace that this tenant could read is not retired yet (its values-source label still on it).',
    cause: 'The retiring patch failed (the API server unreachable, or refused by a policy) and is retried with backoff.',
    action: WAIT_REMOVAL,
  },
  UnknownModuleVersion: {
    area: 'modules',
    meaning: 'Stalled: spec.versions pins a module version images.txt does not list; the message lists the versions that are.',
    cause: 'A typo, or a version this operator does not ship.',
    action: 'Pin a listed version, or remove the pin for the newest.',
  },
  ModuleImageMissing: {
    area: 'modules',
    meaning: 'images.txt lists no image for a module of the tier.',
    cause: 'An images.txt (imagesConfigMap, IMAGES_FILE) without that module.',
    action: 'Add the module\'s image to the images.txt the operator reads.',
  },
  ModuleDeployFailed: {
    area: 'modules',
    meaning: 'A module release failed with an error that carries no reason of its own.',
    cause: 'An unexpected failure of one or more module releases; retried with backoff.',
    action: 'Read the message (it names each module) and the operator log.',
  },
  HelmFailed: {
    area: 'modules',
    meaning: 'helm failed for a module release (or the render guard could not start).',
    cause: 'A failure helm reports that is not one of the classified ones.',
    action: 'Read the message (helm\'s error, secrets redacted); it is retried with backoff.',
  },
  HelmTimeout: {
    area: 'modules',
    meaning: 'helm did not finish in time.',
    cause: 'A slow or overloaded API server, or more helm operations at once than the operator\'s CPU can serve.',
    action: 'Nothing if it passes; otherwise check the API server and lower helmConcurrency.',
  },
  KubernetesUnreachable: { area: 'modules', meaning: 'helm could not reach the API server.', cause: 'An API server outage, or a network problem from the operator pod.', action: 'Restore the API server; retried with backoff.' },
  ReleasePending: {
    area: 'modules',
    meaning: 'A module release is in a pending state (another install, upgrade or rollback in progress).',
    cause: 'An operator stopped while helm ran; the next attempt unlocks and applies the release anew.',
    action: 'Nothing, unless someone runs helm by hand on the tenant\'s releases: do not.',
  },
  ReleaseRecordRefused: {
    area: 'modules',
    meaning: 'Stalled: a helm release record (Secret sh.helm.release.v1.<module>.v<N>) in the tenant namespace fails the render guard\'s placement rules (another namespace, a kind or name the module does not have, a hook, or another release\'s identity); helm is not run on that release, the other modules carry on.',
    cause: 'A record the operator did not write: written by hand or by something with Secret write access in the namespace, or an operator bug.',
    action: 'A platform administrator inspects the record the message names (a forgery is a security incident), deletes it, and the operator installs the release anew; the decommission waits on it too (ReleasesRemain).',
  },
  ReleaseMissing: { area: 'modules', meaning: 'A module of the tier has no release.', cause: 'A new tenant, a tier change, or the release uninstalled by hand.', action: 'Nothing: the operator installs it.' },
  ReleaseNotDeployed: { area: 'modules', meaning: 'A module\'s latest release revision is not deployed (failed, superseded, pending).', cause: 'A failed upgrade.', action: 'Nothing: the operator upgrades it; if it repeats, the message of the failing step says why.' },
  ReleaseOutdated: { area: 'modules', meaning: 'A module release has other values or another chart than desired.', cause: 'A spec change, a new operator version, or values changed by hand.', action: 'Nothing: the operator upgrades it.' },
  UndesiredRelease: { area: 'modules', meaning: 'A release is installed in the tenant namespace that is not a module of the tier.', cause: 'A tier downgrade, or a release installed by hand.', action: 'Nothing: the operator uninstalls it.' },
  ReleasesRemain: { area: 'modules', meaning: 'In status.decommission: module releases still exist.', cause: 'Their uninstall has not completed yet.', action: WAIT_REMOVAL },
  ModuleResourcesRemain: { area: 'modules', meaning: 'In status.decommission: module Deployments still exist after their releases are gone.', cause: 'Their deletion has not completed yet.', action: WAIT_REMOVAL },
  CredentialsMissing: { area: 'modules', meaning: 'The modules\' generated credentials Secret eva-<code>-credentials does not exist (yet).', cause: 'A new tenant (step credentials comes before modules), or the Secret deleted by hand.', action: 'Nothing: step credentials writes it again.' },
  CredentialsRemain: { area: 'modules', meaning: 'In status.decommission: Secret eva-<code>-credentials still exists.', cause: 'Its deletion has not completed yet.', action: WAIT_REMOVAL },
  DeploymentMissing: { area: 'modules', meaning: 'A module release exists but its Deployment does not.', cause: 'The Deployment deleted by hand.', action: 'Nothing: the operator upgrades the release, which restores it.' },
  DeploymentProgressing: { area: 'modules', meaning: 'A module Deployment is rolling out (new spec not observed, replicas not all updated, old replicas running).', cause: 'A new release, a spec change, or a rotation rolling the modules.', action: 'Nothing, unless it stays: then look at the module pods.' },
  DeploymentUnavailable: {
    area: 'modules',
    meaning: 'A module Deployment is not available.',
    cause: 'Pods not ready: failing probes, no node to run on, a crash loop.',
    action: 'kubectl -n eva-tenant-<code> get pods, and describe the pods that are not ready.',
  },
  DeploymentStalled: {
    area: 'modules',
    meaning: 'A module Deployment exceeded its progress deadline.',
    cause: 'Pods that never become ready (crash loop, failing probes, no capacity).',
    action: 'Look at the module pods and their events; fix the values (probes, resources) or the cluster.',
  },
  ReplicaFailure: {
    area: 'modules',
    meaning: 'A module Deployment cannot create its pods.',
    cause: 'Admission refused the pods (Pod Security restricted, a policy), or the LimitRange refused them.',
    action: 'kubectl -n eva-tenant-<code> describe replicaset names the refusal.',
  },
  ImagePullFailed: {
    area: 'modules',
    meaning: 'A module\'s pods cannot pull their image; the message names the image.',
    cause: 'The image (by digest from images.txt) is not in the registry the nodes pull from, or a pull secret is missing; in an air gap, an image not mirrored.',
    action: 'Push or mirror the image (scripts/mirror-images.sh), or pin a version that exists; the tenant recovers by itself.',
  },

  // -- ingress ---------------------------------------------------------------------------------------------------
  IngressMissing: { area: 'ingress', meaning: 'The tenant Ingress does not exist.', cause: 'A new tenant, or the Ingress deleted by hand.', action: 'Nothing: the operator creates it again.' },
  IngressDrifted: { area: 'ingress', meaning: 'The tenant Ingress does not route to exactly the tenant\'s modules, or its TLS or annotations differ.', cause: 'A tier change, a setting change, or an edit by hand.', action: 'Nothing: the operator rewrites it.' },
  WaitingForAddress: {
    area: 'ingress',
    meaning: 'The tenant Ingress has no load-balancer address yet; IngressReady waits for one.',
    cause: 'No ingress controller serves the Ingress\'s class (ingressClass, or the cluster default), or the controller does not publish addresses.',
    action: 'Install or fix the ingress controller for that class; where none sets an address, set ingressReadyOnCreate=true.',
  },
  IngressPresent: { area: 'ingress', meaning: 'In status.decommission: the tenant Ingress still exists.', cause: 'Its deletion has not completed yet.', action: WAIT_REMOVAL },
  TlsSecretMissing: {
    area: 'ingress',
    meaning: 'The TLS Secret of the tenant host is missing or not the current copy of the platform\'s Secret.',
    cause: 'ingressTls.secret names a Secret that does not exist or lacks tls.crt and tls.key, or cert-manager (ingressTls.clusterIssuer) has not issued eva-tenant-tls yet.',
    action: 'Create the Secret, or check the cert-manager Certificate in the tenant namespace (docs/network.md).',
  },
  TlsCertificateExpired: {
    area: 'ingress',
    meaning: 'The tenant host\'s certificate has expired (the tenant is still served, with it).',
    cause: 'A platform Secret not renewed, or cert-manager failing to renew.',
    action: 'Renew the certificate in the Secret the message names.',
  },
  TlsCertificateInvalid: {
    area: 'ingress',
    meaning: 'The TLS Secret holds no readable certificate, or one not valid for the tenant\'s host.',
    cause: 'A wrong Secret, or a wildcard certificate for another domain than baseDomain.',
    action: 'Put a certificate for <code>.<baseDomain> (or *.<baseDomain>) in the Secret the message names.',
  },
};
