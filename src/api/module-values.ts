/**
 * The module values contract: what a tenant may set in `spec.helmValues.<module>` (and, with
 * secretConfig, from a Secret through spec.valuesFrom), and the bounds per tier. One TypeBox
 * definition feeds three checkers:
 *  - the CRD (CEL rules compiled from it by ./module-values-cel.ts, so `kubectl apply` refuses a key
 *    by name whatever the client's field validation: pruning never drops a tenant's key silently),
 *  - the operator (`moduleValuesProblems`, for objects stored before the schema existed),
 *  - each module chart's values.schema.json (./chart-values-schema.ts; helm checks it before rendering).
 */
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { CAPSULE_CODE_PATTERN, type Tier, TIERS } from './constants.ts';
import { FreeFormObject, StringEnum } from './schema-kinds.ts';
import { MODULE_BOUNDS_BY_TIER } from './tiers.ts';

/** CPU: millicores (`500m`) or whole cores (`2`); nothing else, so every checker reads it the same way. */
export const CPU_PATTERN = '^([1-9][0-9]{0,5}m|[1-9][0-9]{0,2})$';
/** Memory: `Mi` or `Gi` only. */
export const MEMORY_PATTERN = '^[1-9][0-9]{0,5}(Mi|Gi)$';
/** An HTTP path: a slash, then URL-safe characters only (no space, quote, colon, newline or `{`). */
export const HTTP_PATH_PATTERN = '^/[A-Za-z0-9._~/-]{0,127}$';

const Quantities = Type.Object(
  {
    cpu: Type.Optional(Type.String({ pattern: CPU_PATTERN, maxLength: 8, description: 'e.g. 250m or 2' })),
    memory: Type.Optional(Type.String({ pattern: MEMORY_PATTERN, maxLength: 8, description: 'e.g. 256Mi or 1Gi' })),
  },
  { additionalProperties: false },
);

/** What a tenant may set per module. Everything else belongs to the operator. */
export const TenantModuleValuesSchema = Type.Object(
  {
    config: Type.Optional(FreeFormObject({ description: 'module configuration, rendered only as data into the ConfigMap <module>-config' })),
    secretConfig: Type.Optional(
      FreeFormObject({ description: 'secret module configuration, only from a Secret through spec.valuesFrom (never inline); rendered only into the Secret <module>-credentials' }),
    ),
    replicaCount: Type.Optional(Type.Integer({ minimum: 0, description: 'an integer from 0 to the tier maximum' })),
    resources: Type.Optional(
      Type.Object(
        { requests: Type.Optional(Quantities), limits: Type.Optional(Quantities) },
        { additionalProperties: false, description: 'requests and limits, each with cpu (250m, 2) and memory (256Mi, 1Gi), up to the tier maximum' },
      ),
    ),
    probes: Type.Optional(
      Type.Object(
        {
          readinessPath: Type.Optional(Type.String({ pattern: HTTP_PATH_PATTERN, maxLength: 128 })),
          livenessPath: Type.Optional(Type.String({ pattern: HTTP_PATH_PATTERN, maxLength: 128 })),
        },
        { additionalProperties: false, description: 'readinessPath and livenessPath, HTTP paths such as /healthz' },
      ),
    ),
  },
  { additionalProperties: false },
);
export type TenantModuleValues = Static<typeof TenantModuleValuesSchema>;

/** The secret counterpart of `config`: set only from a Secret (spec.valuesFrom), rendered only into the module's Secret. */
export const SECRET_CONFIG_KEY = 'secretConfig';

/** What a tenant may write in spec.helmValues (secretConfig comes only from a Secret). */
export const TENANT_KEYS = (Object.keys(TenantModuleValuesSchema.properties) as (keyof TenantModuleValues)[]).filter((key) => key !== SECRET_CONFIG_KEY);

/** Set by the operator only: a tenant who sets one is refused, naming it. */
export const OPERATOR_OWNED_KEYS = ['image', 'tenant', 'nats', 'credentials', 'otel', 'service', 'ingress', 'seed', 'podAnnotations'] as const;

// ---- quantities -----------------------------------------------------------------------------------

/** Millicores of a CPU_PATTERN quantity. */
export function millicores(quantity: string): number {
  return quantity.endsWith('m') ? Number(quantity.slice(0, -1)) : Number(quantity) * 1000;
}

/** MiB of a MEMORY_PATTERN quantity. */
export function mebibytes(quantity: string): number {
  return quantity.endsWith('Gi') ? Number(quantity.slice(0, -2)) * 1024 : Number(quantity.slice(0, -2));
}

// ---- the operator's check ---------------------------------------------------------------------------

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `resources.limits.cpu: 8 is above the Starter maximum of 1` etc., for values that passed the schema. */
function boundProblems(values: TenantModuleValues, tier: Tier): string[] {
  const bounds = MODULE_BOUNDS_BY_TIER[tier];
  const problems: string[] = [];
  if (values.replicaCount !== undefined && values.replicaCount > bounds.maxReplicas) {
    problems.push(`replicaCount: ${values.replicaCount} is above the ${tier} maximum of ${bounds.maxReplicas}`);
  }
  for (const kind of ['requests', 'limits'] as const) {
    const { cpu, memory } = values.resources?.[kind] ?? {};
    if (cpu !== undefined && millicores(cpu) > millicores(bounds.maxCpu)) {
      problems.push(`resources.${kind}.cpu: ${cpu} is above the ${tier} maximum of ${bounds.maxCpu}`);
    }
    if (memory !== undefined && mebibytes(memory) > mebibytes(bounds.maxMemory)) {
      problems.push(`resources.${kind}.memory: ${memory} is above the ${tier} maximum of ${bounds.maxMemory}`);
    }
  }
  return problems;
}

function schemaProblems(values: Record<string, unknown>): string[] {
  const owned = Object.keys(values).filter((key) => (OPERATOR_OWNED_KEYS as readonly string[]).includes(key));
  const problems = owned.map((key) => `${key}: set by the operator, a tenant may set only ${TENANT_KEYS.join(', ')}`);
  const rest = Object.fromEntries(Object.entries(values).filter(([key]) => !owned.includes(key)));
  for (const error of Value.Errors(TenantModuleValuesSchema, rest)) {
    const path = error.path.slice(1).replaceAll('/', '.');
    problems.push(error.message === 'Unexpected property' ? `${path}: not a value a tenant may set` : `${path || '.'}: ${error.message} (${JSON.stringify(error.value)})`);
  }
  return problems;
}

/**
 * Why `spec.helmValues.<module>` breaks the contract (each problem names the key and the value), or
 * an empty list. The API server checks the same on every write; this is for objects it stored before.
 */
export function moduleValuesProblems(values: unknown, tier: Tier): string[] {
  if (!isRecord(values)) return ['.: must be an object'];
  const problems = schemaProblems(values);
  if (problems.length > 0) return problems;
  return boundProblems(values, tier);
}

// ---- where a value may come from ----------------------------------------------------------------

/** Where a module's values were written: inline in the EvaTenant, or read from a ConfigMap or a Secret. */
export type ValuesOrigin = 'inline' | 'ConfigMap' | 'Secret';

/** Why `secretConfig` written in spec.helmValues is refused, for the operator and the values policy alike. */
export const secretConfigOnlyFromSecret = (module: string): string =>
  `may be set only from a Secret: use spec.valuesFrom.${module} with kind: Secret and a targetPath under ${SECRET_CONFIG_KEY} (a value written in the EvaTenant is stored and shown in plain text)`;

/**
 * Why values break the rule of where they may come from: `secretConfig` only from a Secret (so it
 * never sits in plain text in a spec or a ConfigMap), and nothing from a Secret under `config` (the
 * charts render config into the ConfigMap <module>-config, readable by whoever reads ConfigMaps).
 * Each problem names the key and never quotes a value.
 */
export function originProblems(values: Record<string, unknown>, origin: ValuesOrigin, module: string): string[] {
  if (origin === 'Secret') {
    return Object.hasOwn(values, 'config')
      ? [`config: a value from a Secret may not go under config (rendered in plain text into the ConfigMap ${module}-config): put it under ${SECRET_CONFIG_KEY} (targetPath ${SECRET_CONFIG_KEY}.<key>), rendered only into the Secret ${module}-credentials`]
      : [];
  }
  if (!Object.hasOwn(values, SECRET_CONFIG_KEY)) return [];
  return [origin === 'inline' ? `${SECRET_CONFIG_KEY}: ${secretConfigOnlyFromSecret(module)}` : `${SECRET_CONFIG_KEY}: may be set only from a Secret, not from a ConfigMap: reference a Secret (kind: Secret) for it`];
}

// ---- the operator-owned values (for the charts' values.schema.json) --------------------------------

const NAME_PATTERN = '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$';

/** The values only the operator sets: typed and patterned so the chart refuses anything else. */
export const OperatorModuleValuesSchema = Type.Object({
  image: Type.Object(
    {
      repository: Type.String({ pattern: '^[a-z0-9]([-a-z0-9._:]*[a-z0-9])?(/[a-z0-9]([-a-z0-9._]*[a-z0-9])?)*$', maxLength: 255 }),
      tag: Type.String({ pattern: '^([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$' }),
      digest: Type.String({ pattern: '^(sha256:[a-f0-9]{64})?$' }),
      pullPolicy: StringEnum(['Always', 'IfNotPresent', 'Never']),
    },
    { additionalProperties: false },
  ),
  tenant: Type.Object(
    { code: Type.String({ pattern: `(${CAPSULE_CODE_PATTERN})|^$` }), tier: StringEnum(TIERS) },
    { additionalProperties: false },
  ),
  otel: Type.Object({ endpoint: Type.String({ pattern: '^(https?://[A-Za-z0-9.:\\[\\]_-]+(/[A-Za-z0-9._~/-]*)?)?$', maxLength: 255 }) }, { additionalProperties: false }),
  service: Type.Object({ port: Type.Integer({ minimum: 1024, maximum: 65535 }) }, { additionalProperties: false }),
  seed: Type.Object(
    { enabled: Type.Boolean(), version: Type.String({ pattern: '^([A-Za-z0-9][A-Za-z0-9._-]{0,62})?$' }) },
    { additionalProperties: false },
  ),
  ingress: Type.Object({ path: Type.String({ pattern: HTTP_PATH_PATTERN, maxLength: 128 }) }, { additionalProperties: false }),
  podAnnotations: Type.Object({}, { additionalProperties: false, description: 'none: annotations instruct other controllers' }),
  credentials: Type.Record(Type.String({ pattern: '^[-._a-zA-Z0-9]{1,253}$' }), Type.String()),
  nats: Type.Object(
    { secretName: Type.String({ pattern: NAME_PATTERN }), credentialsRevision: Type.String({ pattern: '^[A-Za-z0-9-]{0,64}$' }) },
    { additionalProperties: false },
  ),
});
