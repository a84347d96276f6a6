/**
 * The values a module release is rendered with: the operator's own (image from images.txt honouring
 * spec.versions, tenant, otel, seed, the NATS Secret's name and revision), the tenant's
 * spec.helmValues[module] (only what the contract of src/api/module-values.ts lets a tenant set,
 * checked here again because the API server never re-validates a spec stored before the contract),
 * and the secret values (the tenant's generated credentials) that only ever reach helm through a
 * tmpfs values file.
 */
import { createHash } from 'node:crypto';
import { moduleValuesProblems } from '../api/module-values.ts';
import type { ModuleName } from '../api/modules.ts';
import { Reason } from '../api/reasons.ts';
import type { Bundle } from '../bundle/bundle.ts';
import { canonicalJson } from '../canonical-json.ts';
import type { OperatorConfig } from '../config.ts';
import { InputError } from '../errors.ts';
import { NATS_CREDENTIALS_SECRET } from './account.ts';
import { desiredSeedsVersion } from './record.ts';
import { isHibernated, type TenantScope } from '../tenancy/scope.ts';

type Values = Record<string, unknown>;

function isPlainObject(value: unknown): value is Values {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep merge where `override` wins; objects merge key by key, anything else (arrays, null) replaces. */
export function deepMerge(base: Values, override: Values): Values {
  const merged: Values = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = merged[key];
    merged[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
  }
  return merged;
}

export interface ModuleValues {
  /** Safe to log and show. */
  readonly plain: Values;
  /** Only ever written to the tmpfs values file. */
  readonly secret: Values;
}

export interface ValuesDeps extends Pick<Bundle, 'images' | 'seeds'> {
  config: Pick<OperatorConfig, 'moduleOtelEndpoint'>;
}

export interface ValuesInput {
  module: ModuleName;
  scope: TenantScope;
  deps: ValuesDeps;
  credentials: Readonly<Record<string, string>>;
  /** A digest of the credentials in Secret eva-nats: new credentials, new pods. */
  natsRevision: string;
}

/** The tenant's values for a module, refused (naming each key and value) when they break the contract. */
export function tenantValues(scope: TenantScope, module: ModuleName): Values {
  const values = scope.tenant.spec.helmValues?.[module] ?? {};
  const problems = moduleValuesProblems(values, scope.tenant.spec.tier);
  if (problems.length > 0) {
    throw new InputError(Reason.InvalidHelmValues, `spec.helmValues.${module}: ${problems.join('; ')}; nothing was changed for ${module}`);
  }
  return values;
}

/** The non-secret values of a module: the tenant's, then the operator's on top (the operator's win). */
export function moduleValues({ module, scope, deps, credentials, natsRevision }: ValuesInput): ModuleValues {
  const { spec } = scope.tenant;
  const tenant = tenantValues(scope, module);
  const image = deps.images.resolveModule(module, spec.versions?.[module]);
  const operator: Values = {
    image: { repository: image.repository, tag: image.tag, digest: image.digest ?? '' },
    tenant: { code: scope.code, tier: spec.tier },
    otel: { endpoint: deps.config.moduleOtelEndpoint ?? '' },
    seed: { enabled: true, version: desiredSeedsVersion(scope, deps.seeds).version },
    nats: { secretName: NATS_CREDENTIALS_SECRET, credentialsRevision: natsRevision },
  };
  // Hibernation goes through helm like any value (the release owns replicas; no second writer), and
  // wins over the tenant's own replicaCount.
  const hibernation = isHibernated(scope) ? { replicaCount: 0 } : {};
  return { plain: { ...deepMerge(tenant, operator), ...hibernation }, secret: { credentials: { ...credentials } } };
}

/** What goes into the values file: everything, the operator's secret values last so they win. */
export const valuesFileContent = (values: ModuleValues): Values => ({ ...values.plain, ...values.secret });

/**
 * The release label that says "this release has exactly these values on exactly this chart". Secrets
 * are included so rotated credentials trigger an upgrade; a label value holds at most 63 characters,
 * so the hex digest is cut to 48 (192 bits; it only has to tell revisions apart).
 */
export function valuesHash(chartFingerprint: string, values: ModuleValues): string {
  return createHash('sha256').update(canonicalJson({ chart: chartFingerprint, values: valuesFileContent(values) })).digest('hex').slice(0, 48);
}

/** The strings to scrub from helm's messages: every secret value the operator passed. */
export function secretStrings(values: ModuleValues): string[] {
  const out: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === 'string' && value !== '') out.push(value);
    else if (isPlainObject(value)) Object.values(value).forEach(walk);
  };
  walk(values.secret);
  return out;
}
