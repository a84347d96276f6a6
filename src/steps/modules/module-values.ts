/**
 * The values a module release is rendered with: the operator's own (image from images.txt honouring
 * spec.versions, tenant, otel, seed, the NATS Secret's name and revision), the tenant's
 * spec.helmValues[module] with spec.valuesFrom[module] merged over it in order (only what the
 * contract of src/api/module-values.ts lets a tenant set, checked here: the API server never sees what
 * a referenced object holds, nor re-validates a spec stored before the contract), and the secret
 * values (the tenant's generated credentials, and whatever came from a Secret) that only ever reach
 * helm through a tmpfs values file.
 */
import { createHash } from 'node:crypto';
import { moduleValuesProblems, originProblems } from '../../api/module-values.ts';
import type { ModuleName } from '../../api/modules.ts';
import { Reason } from '../../api/reasons.ts';
import type { Bundle } from '../../bundle/bundle.ts';
import { canonicalJson } from '../../canonical-json.ts';
import type { OperatorConfig } from '../../config.ts';
import { InputError } from '../../errors.ts';
import { NATS_CREDENTIALS_SECRET } from '../account.ts';
import { desiredSeedsVersion } from '../record.ts';
import { isHibernated, type TenantScope } from '../../tenancy/scope.ts';
import { NO_VALUES_FROM, type ValuesFragment, type ValuesFromByModule } from './values-from-sources.ts';

type Values = Record<string, unknown>;

function isPlainObject(value: unknown): value is Values {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Sets an own property, whatever the key (`__proto__` from YAML stays a key, never a prototype). */
function setOwn(target: Values, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Deep merge where `override` wins; objects merge key by key, anything else (arrays, null) replaces. */
export function deepMerge(base: Values, override: Values): Values {
  const merged: Values = {};
  for (const [key, value] of Object.entries(base)) setOwn(merged, key, value);
  for (const [key, value] of Object.entries(override)) {
    const current = Object.hasOwn(merged, key) ? merged[key] : undefined;
    setOwn(merged, key, isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value);
  }
  return merged;
}

/** Every leaf path (`config.sso.clientSecret`) of a values tree, as key lists. */
function leafPaths(values: Values, prefix: readonly string[] = []): string[][] {
  return Object.entries(values).flatMap(([key, value]) => (isPlainObject(value) && Object.keys(value).length > 0 ? leafPaths(value, [...prefix, key]) : [[...prefix, key]]));
}

/** Deletes the leaf at `path`, then each parent that deletion left empty (no bare `secretConfig: {sso: {}}` left behind). */
function deleteAt(values: Values, path: readonly string[]): void {
  const [key, ...below] = path;
  if (key === undefined || !Object.hasOwn(values, key)) return;
  const child = values[key];
  if (below.length > 0) {
    if (!isPlainObject(child)) return;
    deleteAt(child, below);
    if (Object.keys(child).length > 0) return;
  }
  Reflect.deleteProperty(values, key);
}

/** `values` split by `paths`: the part at those paths, and the rest. */
function splitByPaths(values: Values, paths: readonly (readonly string[])[]): { at: Values; rest: Values } {
  let at: Values = {};
  const rest = structuredClone(values);
  for (const path of paths) {
    const parents = path.slice(0, -1);
    const leaf = path[path.length - 1] ?? '';
    const source = parents.reduce<unknown>((node, key) => (isPlainObject(node) ? node[key] : undefined), values);
    if (!isPlainObject(source) || !Object.hasOwn(source, leaf)) continue;
    at = deepMerge(at, parents.reduceRight<Values>((inner, key) => ({ [key]: inner }), { [leaf]: source[leaf] }));
    deleteAt(rest, path);
  }
  return { at, rest };
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
  /** spec.valuesFrom as read (steps/modules/values-from-sources.ts); none when absent. */
  valuesFrom?: ValuesFromByModule;
}

function refuse(where: string, problems: readonly string[], module: ModuleName): InputError {
  return new InputError(Reason.InvalidHelmValues, `${where}: ${problems.join('; ')}; nothing was changed for ${module}`);
}

/**
 * A problem about a value from a Secret, without the value: the contract's messages quote it
 * (`replicaCount: 9 is above ...`, `... ("the value")`), so only the key and what the contract
 * says about keys are kept.
 */
export function withoutValue(problem: string): string {
  if (problem.includes(': set by the operator') || problem.endsWith(': not a value a tenant may set')) return problem;
  const key = problem.split(':')[0] ?? '.';
  return `${key}: not within the values contract (the value, from a Secret, is not shown)`;
}

/**
 * A fragment judged alone, so a refusal names the reference that broke the contract; first where its
 * values may go (secretConfig only from a Secret, nothing from a Secret under config).
 */
function checkFragment(fragment: ValuesFragment, scope: TenantScope, module: ModuleName): void {
  const misplaced = originProblems(fragment.values, fragment.secret ? 'Secret' : 'ConfigMap', module);
  if (misplaced.length > 0) throw refuse(fragment.source, misplaced, module);
  const problems = moduleValuesProblems(fragment.values, scope.tenant.spec.tier);
  if (problems.length > 0) throw refuse(fragment.source, fragment.secret ? problems.map(withoutValue) : problems, module);
}

/** The values a tenant set for a module and which of their leaf paths came from Secrets. */
interface TenantSetValues {
  values: Values;
  secretPaths: string[][];
}

/**
 * The tenant's values for a module: helmValues, then each valuesFrom fragment over it in order,
 * refused (naming the reference and each key) when any part breaks the contract.
 */
export function tenantValues(scope: TenantScope, module: ModuleName, valuesFrom: ValuesFromByModule = NO_VALUES_FROM): TenantSetValues {
  const inline = scope.tenant.spec.helmValues?.[module] ?? {};
  const problems = [...originProblems(inline, 'inline', module), ...moduleValuesProblems(inline, scope.tenant.spec.tier)];
  if (problems.length > 0) throw refuse(`spec.helmValues.${module}`, problems, module);
  const fragments = valuesFrom.get(module) ?? [];
  if (fragments instanceof InputError) throw fragments;
  for (const fragment of fragments) checkFragment(fragment, scope, module);
  const values = fragments.reduce((merged, fragment) => deepMerge(merged, fragment.values), inline);
  const merged = moduleValuesProblems(values, scope.tenant.spec.tier);
  if (merged.length > 0) throw refuse(`spec.valuesFrom.${module} merged over spec.helmValues.${module}`, merged.map(withoutValue), module);
  return { values, secretPaths: fragments.filter((f) => f.secret).flatMap((f) => leafPaths(f.values)) };
}

/** The non-secret values of a module: the tenant's, then the operator's on top (the operator's win). */
export function moduleValues({ module, scope, deps, credentials, natsRevision, valuesFrom }: ValuesInput): ModuleValues {
  const { spec } = scope.tenant;
  const { values: tenantSet, secretPaths } = tenantValues(scope, module, valuesFrom);
  // Hibernation's replicaCount 0 must win, so a replicaCount from a Secret stays with the plain values.
  const { at: fromSecrets, rest: tenant } = splitByPaths(tenantSet, isHibernated(scope) ? secretPaths.filter((p) => p.join('.') !== 'replicaCount') : secretPaths);
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
  return { plain: { ...deepMerge(tenant, operator), ...hibernation }, secret: { ...fromSecrets, credentials: { ...credentials } } };
}

/**
 * What goes into the values file: everything, the secret values merged last (they only fill the
 * paths taken out of the plain values, and the operator's credentials, which no tenant sets).
 */
export const valuesFileContent = (values: ModuleValues): Values => deepMerge(values.plain, values.secret);

/**
 * The release label that says "this release has exactly these values on exactly this chart". Secrets
 * are included so rotated credentials (or a changed referenced Secret) trigger an upgrade; the
 * credentials' 192 random bits in the same digest keep a short secret from valuesFrom from being
 * guessed offline from it. A label value holds at most 63 characters, so the hex digest is cut to 48
 * (192 bits; it only has to tell revisions apart).
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
