/**
 * The EvaTenant API: the single source of truth for the TypeScript types, the run-time parser and
 * the CRD's OpenAPI schema (crds/ is generated from here; a test fails when they drift).
 */
import { type Static, Type } from '@sinclair/typebox';
import {
  type API_VERSION,
  CAPSULE_CODE_PATTERN,
  CONDITION_STATUSES,
  DATA_RETENTIONS,
  type KIND,
  LIFECYCLES,
  PHASES,
  SEMVER_PATTERN,
  TIERS,
  WAVES,
} from './constants.ts';
import { MODULES } from './modules.ts';
import { TenantModuleValues } from './module-values-cel.ts';
import { celRules, FreeFormObject, StringEnum, StringKeyedMap } from './schema-kinds.ts';
import { ValuesFromSchema } from './values-from.ts';

const knownModulesRule = celRules({
  rule: `self.all(m, m in [${MODULES.map((m) => `'${m}'`).join(', ')}])`,
  message: `keys must be module names: ${MODULES.join(', ')}`,
});

/** Seeds and chart versions become folder names: no path separators, no leading dot. */
const VERSION_LABEL_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$';

export const EvaTenantSpecSchema = Type.Object(
  {
    capsuleCode: Type.String({
      description: 'Six uppercase letters identifying the tenant everywhere (namespace, streams, releases). Immutable.',
      pattern: CAPSULE_CODE_PATTERN,
      ...celRules({ rule: 'self == oldSelf', message: 'capsuleCode is immutable once set' }),
    }),
    tier: StringEnum(TIERS, { description: 'Sizing tier: quotas, stream limits and the set of modules.' }),
    lifecycle: Type.Optional(
      StringEnum(LIFECYCLES, {
        description:
          'Active provisions the tenant; Suspended hibernates it (modules scaled to zero, Ingress withdrawn, NATS credentials refused, all data kept); Decommissioned removes everything but keeps this object.',
        default: 'Active',
      }),
    ),
    dataRetention: Type.Optional(
      StringEnum(DATA_RETENTIONS, {
        description:
          'On decommission or delete: Delete removes every trace; Retain keeps the NATS account (disabled, credentials refused), streams and seed bucket for a later restore or purge.',
        default: 'Delete',
      }),
    ),
    operatorVersion: Type.Optional(
      Type.String({
        description: 'Pins the operator version (semver, e.g. 1.4.0) that may own this tenant.',
        pattern: SEMVER_PATTERN,
        maxLength: 64,
      }),
    ),
    seedsVersion: Type.Optional(
      Type.String({
        description: 'Version of the bundled seed data to load (a folder under seeds/).',
        pattern: VERSION_LABEL_PATTERN,
      }),
    ),
    versions: Type.Optional(
      StringKeyedMap(Type.String({ pattern: SEMVER_PATTERN, maxLength: 64 }), {
        description: 'Per-module chart version pins (module name -> semver).',
        ...knownModulesRule,
      }),
    ),
    helmValues: Type.Optional(
      StringKeyedMap(TenantModuleValues(), {
        description: 'Per-module values a tenant may set (module name -> config, replicaCount, resources, probes; secretConfig only from a Secret through valuesFrom); everything else is the operator\'s.',
        maxProperties: MODULES.length,
        ...knownModulesRule,
      }),
    ),
    valuesFrom: Type.Optional(ValuesFromSchema),
    wave: Type.Optional(
      Type.Integer({
        description: 'Staged-rollout wave: 1 internal, 2 pilot, 3 fleet.',
        minimum: WAVES.min,
        maximum: WAVES.max,
        default: WAVES.min,
      }),
    ),
    suspend: Type.Optional(
      Type.Boolean({
        description:
          'Stops reconciliation (as Flux suspend does): nothing the tenant owns is written, a deletion waits; drift is only reported in status. false resumes and repairs.',
      }),
    ),
    deletionProtection: Type.Optional(
      Type.Boolean({
        description:
          'Refuses DELETE of this EvaTenant in the API server (ValidatingAdmissionPolicy eva-tenant-deletion-protection), even with no operator running. Set it to false to allow deletion.',
      }),
    ),
  },
  { description: 'The desired tenant.' },
);

export const ConditionSchema = Type.Object({
  type: Type.String({ maxLength: 316, pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$' }),
  status: StringEnum(CONDITION_STATUSES),
  reason: Type.String({ minLength: 1, maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' }),
  message: Type.String({ maxLength: 32768 }),
  lastTransitionTime: Type.String({ format: 'date-time' }),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
});

export const ModuleStatusSchema = Type.Object({
  chartVersion: Type.Optional(Type.String({ description: 'The chart version of the deployed release.' })),
  readyReplicas: Type.Integer({ minimum: 0 }),
  replicas: Type.Integer({ minimum: 0, description: 'Replicas the Deployment asks for (0 while Suspended).' }),
  valuesDigest: Type.Optional(Type.String({ description: 'Digest of the chart and values last applied.' })),
  message: Type.String({ maxLength: 1024 }),
});

export const EvaTenantStatusSchema = Type.Object(
  {
    phase: Type.Optional(StringEnum(PHASES)),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
    conditions: Type.Optional(
      Type.Array(ConditionSchema, {
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      }),
    ),
    provisioningStartedAt: Type.Optional(
      Type.String({ format: 'date-time', description: 'When the current provisioning run started.' }),
    ),
    elapsedSeconds: Type.Optional(
      StringKeyedMap(Type.Number({ minimum: 0 }), {
        description: 'Per condition: seconds from provisioningStartedAt until it became True.',
      }),
    ),
    saga: Type.Optional(
      FreeFormObject({ description: 'Where the saga rests (state, the step provisioning resumes at, its context) and the digest of the spec it acted on, so a restarted operator resumes where it was.' }),
    ),
    url: Type.Optional(Type.String({ description: 'Where the tenant is served (from its Ingress: https when it has TLS); absent while it has none.' })),
    modules: Type.Optional(
      StringKeyedMap(ModuleStatusSchema, { description: 'Per module of the tier: its release and Deployment as last observed.' }),
    ),
    decommission: Type.Optional(
      StringKeyedMap(Type.String(), {
        description: 'Per decommission step: Removed, or why it is not removed yet.',
      }),
    ),
  },
  { description: 'What the operator observed and did.' },
);

export type EvaTenantSpecInput = Static<typeof EvaTenantSpecSchema>;
/** A spec after API-server defaulting: defaulted fields are always present. */
export type EvaTenantSpec = EvaTenantSpecInput & Required<Pick<EvaTenantSpecInput, 'lifecycle' | 'wave'>>;
export type EvaTenantStatus = Static<typeof EvaTenantStatusSchema>;
export type ModuleStatus = Static<typeof ModuleStatusSchema>;
export type Condition = Static<typeof ConditionSchema>;

/** The metadata fields the operator reads, as they arrive over the wire (timestamps are strings). */
export interface TenantMetadata {
  name: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
}

export interface EvaTenant {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: TenantMetadata;
  spec: EvaTenantSpec;
  status?: EvaTenantStatus;
}
