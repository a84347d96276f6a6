/**
 * Every reason the operator puts on a condition or an Event, in one catalogue (as Flux keeps
 * its reasons in api/v2/condition_types.go). Steps, the decommission saga and the status writer use
 * these names; `StepError.reason` is typed by them, so a reason cannot be invented at a call site.
 * Values are CamelCase, as Kubernetes condition reasons must be.
 */
export const Reason = {
  // -- condition bookkeeping (status/conditions.ts, status/summarize.ts) ---------------------------
  Progressing: 'Progressing',
  Pending: 'Pending',
  Interrupted: 'Interrupted',
  NamespaceActive: 'NamespaceActive',
  TenantRecordStored: 'TenantRecordStored',
  SeedApplied: 'SeedApplied',
  ReleasesDeployed: 'ReleasesDeployed',
  IngressAdmitted: 'IngressAdmitted',
  Provisioned: 'Provisioned',
  /** Hibernation (spec.lifecycle Suspended) and data retention. */
  Suspended: 'Suspended',
  ScaledToZero: 'ScaledToZero',
  IngressWithdrawn: 'IngressWithdrawn',
  NatsCredentialsRefused: 'NatsCredentialsRefused',
  Retained: 'Retained',

  // -- Normal events: the saga's progress (status/status-writer.ts) and the decommission ------------
  ProvisioningStarted: 'ProvisioningStarted',
  NamespaceCreated: 'NamespaceCreated',
  SeedLoaded: 'SeedLoaded',
  ModuleDeployStarted: 'ModuleDeployStarted',
  ModuleDeployComplete: 'ModuleDeployComplete',
  IngressProvisioned: 'IngressProvisioned',
  ProvisioningComplete: 'ProvisioningComplete',
  DeprovisionStarted: 'DeprovisionStarted',
  DeprovisionComplete: 'DeprovisionComplete',
  /** A cluster operator forced the decommission past steps (a Warning event). */
  DecommissionForced: 'DecommissionForced',

  // -- GitOps lifecycle (kstatus summary of tenants the saga does not run for) ----------------------
  Decommissioning: 'Decommissioning',
  Decommissioned: 'Decommissioned',
  /** spec.suspend is true: the operator writes nothing but this status. */
  ReconciliationSuspended: 'ReconciliationSuspended',

  // -- catch-alls for errors that carry no reason ---------------------------------------------------
  StepFailed: 'StepFailed',
  CheckFailed: 'CheckFailed',
  RemoveFailed: 'RemoveFailed',
  /** A reconcile failed outside any step (e.g. the API server refused a status write). */
  ReconcileFailed: 'ReconcileFailed',
  ShuttingDown: 'ShuttingDown',

  // -- no running operator serves the tenant (Warning events of controller/unserved-reporter.ts) ------
  OperatorVersionAbsent: 'OperatorVersionAbsent',
  OperatorShardAbsent: 'OperatorShardAbsent',
  /** Unpinned and unowned, with a spec.wave above the MAX_WAVE of every running operator of its shard. */
  OperatorWaveAbsent: 'OperatorWaveAbsent',
  /** Owned (annotation eva.aidonow.com/operator-version) by an operator whose Lease is gone: nobody else takes it. */
  OperatorOwnerAbsent: 'OperatorOwnerAbsent',

  // -- beyond one cluster: the hub's view of a placed tenant (src/multicluster/) -------------------------
  /** The member holding the tenant stopped reporting to the hub: the status the hub has is its last. */
  MemberNotReporting: 'MemberNotReporting',
  /** The hub's summary on a tenant work: the member has not caught up with the work's generation yet. */
  MemberApplying: 'MemberApplying',
  /** The member's API server refused the EvaTenant the hub placed there (no CRD, or refused by admission). */
  MemberRefusedTenant: 'MemberRefusedTenant',
  /** The engine decided no member cluster for the tenant's Placement (none matches its labels, no cluster set bound, ...). */
  NoMemberMatches: 'NoMemberMatches',

  // -- fleet rollouts (EvaRollout: src/rollout/, status/summarize.ts summarizeRollout) ------------------
  RolloutMoving: 'RolloutMoving',
  RolloutBaking: 'RolloutBaking',
  RolloutPaused: 'RolloutPaused',
  RolloutSucceeded: 'RolloutSucceeded',
  RollingBack: 'RollingBack',
  RolledBack: 'RolledBack',
  GateFailed: 'GateFailed',
  TargetVersionAbsent: 'TargetVersionAbsent',
  RolloutOverlaps: 'RolloutOverlaps',
  NothingToMove: 'NothingToMove',
  WaveEmpty: 'WaveEmpty',

  // -- the tenant itself ----------------------------------------------------------------------------
  TenantUidMissing: 'TenantUidMissing',
  CapsuleCodeInUse: 'CapsuleCodeInUse',
  /** A restore (annotation eva.aidonow.com/restore-from-uid) whose data is not retained, not of that uid or code, or whose tenant still exists. */
  RestoreRefused: 'RestoreRefused',
  /** Annotation eva.aidonow.com/restore-from-nats is not one nats:// or tls:// URL, or comes without restore-from-uid. */
  RestoreSourceInvalid: 'RestoreSourceInvalid',
  /** Decommissioning with spec.dataRetention Retain: the data is not marked retained yet. */
  RetentionPending: 'RetentionPending',

  // -- namespace, quotas, network policy --------------------------------------------------------------
  NamespaceMissing: 'NamespaceMissing',
  NamespaceNotOwned: 'NamespaceNotOwned',
  NamespaceTerminating: 'NamespaceTerminating',
  NamespaceLabelsDrifted: 'NamespaceLabelsDrifted',
  QuotaMissing: 'QuotaMissing',
  QuotaDrifted: 'QuotaDrifted',
  QuotaPresent: 'QuotaPresent',
  QuotaExceeded: 'QuotaExceeded',
  LimitRangeDrifted: 'LimitRangeDrifted',
  LimitRangePresent: 'LimitRangePresent',
  NetworkPolicyMissing: 'NetworkPolicyMissing',
  NetworkPolicyDrifted: 'NetworkPolicyDrifted',
  NetworkPolicyPresent: 'NetworkPolicyPresent',
  /** A NetworkPolicy in the tenant namespace that the operator did not write (policies add up: it may widen). */
  NetworkPolicyForeign: 'NetworkPolicyForeign',

  // -- NATS: connection, the tenant's account and its credentials --------------------------------------
  NatsUnavailable: 'NatsUnavailable',
  NatsAuthFailed: 'NatsAuthFailed',
  NatsStorageExhausted: 'NatsStorageExhausted',
  JetStreamUnavailable: 'JetStreamUnavailable',
  AccountKeysCorrupt: 'AccountKeysCorrupt',
  AccountMissing: 'AccountMissing',
  AccountDrifted: 'AccountDrifted',
  AccountRejected: 'AccountRejected',
  AccountPresent: 'AccountPresent',
  AccountKeysPresent: 'AccountKeysPresent',
  JetStreamUsageExceedsTier: 'JetStreamUsageExceedsTier',
  NatsCredentialsMissing: 'NatsCredentialsMissing',
  NatsCredentialsDrifted: 'NatsCredentialsDrifted',
  NatsCredentialsPresent: 'NatsCredentialsPresent',
  NatsCredentialsRotating: 'NatsCredentialsRotating',
  NatsCredentialsStillAccepted: 'NatsCredentialsStillAccepted',

  // -- streams ------------------------------------------------------------------------------------------
  StreamMissing: 'StreamMissing',
  StreamDrifted: 'StreamDrifted',
  StreamConflict: 'StreamConflict',
  StreamSubjectsOverlap: 'StreamSubjectsOverlap',
  StreamPresent: 'StreamPresent',

  // -- alert rules ----------------------------------------------------------------------------------------
  AlertRulesMissing: 'AlertRulesMissing',
  AlertRulesDrifted: 'AlertRulesDrifted',
  AlertRulesDuplicated: 'AlertRulesDuplicated',
  AlertRulesPresent: 'AlertRulesPresent',

  // -- tenant record ----------------------------------------------------------------------------------
  TenantRecordMissing: 'TenantRecordMissing',
  TenantRecordDrifted: 'TenantRecordDrifted',
  TenantRecordCorrupt: 'TenantRecordCorrupt',
  TenantRecordConflict: 'TenantRecordConflict',
  TenantRecordPresent: 'TenantRecordPresent',

  // -- seed data --------------------------------------------------------------------------------------
  SeedsNotBundled: 'SeedsNotBundled',
  UnknownSeedsVersion: 'UnknownSeedsVersion',
  SeedsBundleInvalid: 'SeedsBundleInvalid',
  SeedPending: 'SeedPending',
  SeedBucketMissing: 'SeedBucketMissing',
  SeedBucketDrifted: 'SeedBucketDrifted',
  SeedBucketPresent: 'SeedBucketPresent',

  // -- module releases ----------------------------------------------------------------------------------
  ChartMissing: 'ChartMissing',
  ChartRenderFailed: 'ChartRenderFailed',
  /** The render guard refused what helm was about to apply (an object or image outside the module contract). */
  RenderRejected: 'RenderRejected',
  InvalidHelmValues: 'InvalidHelmValues',
  /** A spec.valuesFrom reference names no object the tenant may read (absent, or not labelled as a values source). */
  ValuesFromNotFound: 'ValuesFromNotFound',
  /** A spec.valuesFrom reference's key is absent, above the size limit, or does not hold values (not YAML, cyclic, too deep). */
  ValuesFromInvalid: 'ValuesFromInvalid',
  /** A spec.valuesFrom reference in the operator's namespace is not bound to this tenant (unlabelled, named or bound for another). */
  ValuesFromUnbound: 'ValuesFromUnbound',
  /** Decommission: a values source in the operator's namespace this tenant could read is not retired yet. */
  ValuesSourcesNotRetired: 'ValuesSourcesNotRetired',
  UnknownModuleVersion: 'UnknownModuleVersion',
  ModuleImageMissing: 'ModuleImageMissing',
  ModuleDeployFailed: 'ModuleDeployFailed',
  HelmFailed: 'HelmFailed',
  HelmTimeout: 'HelmTimeout',
  KubernetesUnreachable: 'KubernetesUnreachable',
  ReleasePending: 'ReleasePending',
  ReleaseMissing: 'ReleaseMissing',
  ReleaseNotDeployed: 'ReleaseNotDeployed',
  ReleaseOutdated: 'ReleaseOutdated',
  UndesiredRelease: 'UndesiredRelease',
  ReleasesRemain: 'ReleasesRemain',
  /**
   * A helm release record in the tenant namespace holds what the operator did not write (an object
   * outside the module's kinds, names or namespace, hooks, or a payload that disagrees with its labels):
   * helm is not run on that release until a platform administrator removes the record.
   */
  ReleaseRecordRefused: 'ReleaseRecordRefused',
  ModuleResourcesRemain: 'ModuleResourcesRemain',
  CredentialsMissing: 'CredentialsMissing',
  CredentialsRemain: 'CredentialsRemain',
  DeploymentMissing: 'DeploymentMissing',
  DeploymentProgressing: 'DeploymentProgressing',
  DeploymentUnavailable: 'DeploymentUnavailable',
  DeploymentStalled: 'DeploymentStalled',
  ReplicaFailure: 'ReplicaFailure',
  ImagePullFailed: 'ImagePullFailed',

  // -- ingress ----------------------------------------------------------------------------------------
  IngressMissing: 'IngressMissing',
  IngressDrifted: 'IngressDrifted',
  WaitingForAddress: 'WaitingForAddress',
  IngressPresent: 'IngressPresent',
  /** The tenant's TLS Secret (or the platform's, INGRESS_TLS_SECRET) is missing or unusable. */
  TlsSecretMissing: 'TlsSecretMissing',
  TlsCertificateExpired: 'TlsCertificateExpired',
  /** Not a readable certificate, or not one for the tenant's host. */
  TlsCertificateInvalid: 'TlsCertificateInvalid',
} as const;

export type Reason = (typeof Reason)[keyof typeof Reason];

/**
 * Waits every rollout passes through (Deployments rolling out, an Ingress before its address): while
 * a tenant is brought up or a change is applied they are progress, shown on the conditions, not
 * Warning events; the same reason on an Active tenant (drift) is one.
 */
export const ROLLOUT_PROGRESS: ReadonlySet<Reason> = new Set([Reason.DeploymentProgressing, Reason.DeploymentUnavailable, Reason.WaitingForAddress]);
