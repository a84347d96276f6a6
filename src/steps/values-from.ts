/**
 * Reads a tenant's `spec.valuesFrom` (src/api/values-from.ts) into values fragments, one per
 * reference, before module-values.ts merges them over `spec.helmValues` and judges the result by the
 * values contract. Every problem names the module, the reference and the key, never a value read from
 * a Secret (a YAML parser's message quotes the source, so a Secret's is not passed on).
 */
import { parse as parseYaml } from 'yaml';
import { LABELS } from '../api/constants.ts';
import { isModuleName, type ModuleName } from '../api/modules.ts';
import { Reason } from '../api/reasons.ts';
import { DEFAULT_VALUES_KEY, describeReference, VALUES_SOURCE_LABEL, type ValuesReference } from '../api/values-from.ts';
import type { ValuesSourceObject, ValuesSourceReads } from '../adapters/values-sources.ts';
import { InputError } from '../errors.ts';
import type { TenantScope } from '../tenancy/scope.ts';

type Values = Record<string, unknown>;

/** What one reference contributes to a module's values. */
export interface ValuesFragment {
  /** How messages name it: `spec.valuesFrom.orbit-crm[0] (Secret eva-tenant-acmeco/sso (key values.yaml))`. */
  readonly source: string;
  /** From a Secret: only ever written to the tmpfs values file, never shown. */
  readonly secret: boolean;
  readonly values: Values;
}

/** Per module of the spec: its fragments in order, or why they cannot be read (the module waits). */
export type ValuesFromByModule = ReadonlyMap<ModuleName, readonly ValuesFragment[] | InputError>;

export const NO_VALUES_FROM: ValuesFromByModule = new Map();

function isPlainObject(value: unknown): value is Values {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `{a: {b: value}}` for `a.b`; own properties only, so no segment can reach a prototype. */
export function atPath(path: string, value: unknown): Values {
  return path.split('.').reduceRight<unknown>((inner, segment) => {
    const wrapper: Values = {};
    Object.defineProperty(wrapper, segment, { value: inner, enumerable: true, writable: true, configurable: true });
    return wrapper;
  }, value) as Values;
}

/** The namespace a reference points into: the tenant's own, or the operator's. */
export const referenceNamespace = (ref: ValuesReference, tenantNamespace: string, operatorNamespace: string): string =>
  ref.namespace === 'Operator' ? operatorNamespace : tenantNamespace;

/** An object in the operator's namespace labelled with another tenant's capsule code is not this tenant's. */
function reservedForAnother(source: ValuesSourceObject, scope: TenantScope, operatorNamespace: string): boolean {
  const owner = source.labels[LABELS.capsuleCode];
  return source.namespace === operatorNamespace && owner !== undefined && owner !== scope.code;
}

function notFound(where: string): InputError {
  return new InputError(
    Reason.ValuesFromNotFound,
    `${where}: not found among the objects a tenant may read (a Secret or ConfigMap labelled ${VALUES_SOURCE_LABEL}: "true"; in the operator's namespace not labelled for another tenant's capsule code); the module waits and resumes when it appears`,
  );
}

/** The values one key holds: YAML merged as a mapping, or (targetPath) the whole text as one string. */
export function fragmentValues(text: string, ref: ValuesReference, where: string, secret: boolean): Values {
  if (ref.targetPath !== undefined) return atPath(ref.targetPath, text);
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (err) {
    // The parser's message quotes the source text: shown for a ConfigMap, withheld for a Secret.
    const detail = secret ? 'its content is not shown' : (err as Error).message.split('\n')[0] ?? '';
    throw new InputError(Reason.ValuesFromInvalid, `${where}: not YAML (${detail})`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (!isPlainObject(parsed)) throw new InputError(Reason.ValuesFromInvalid, `${where}: must hold a YAML mapping of values, or set targetPath to use the text as one value`);
  return parsed;
}

interface ReadContext {
  scope: TenantScope;
  reads: ValuesSourceReads;
  operatorNamespace: string;
}

/** One reference's fragment; undefined when it is optional and absent. */
async function readFragment(ref: ValuesReference, where: string, ctx: ReadContext): Promise<ValuesFragment | undefined> {
  const namespace = referenceNamespace(ref, ctx.scope.namespace, ctx.operatorNamespace);
  const source = `${where} (${describeReference(ref, namespace)})`;
  const object = await ctx.reads.get(ref.kind, namespace, ref.name);
  const usable = object !== undefined && !reservedForAnother(object, ctx.scope, ctx.operatorNamespace) ? object : undefined;
  if (usable === undefined) {
    if (ref.optional === true) return undefined;
    throw notFound(source);
  }
  const text = usable.data[ref.valuesKey ?? DEFAULT_VALUES_KEY];
  if (text === undefined) {
    if (ref.optional === true) return undefined;
    throw new InputError(Reason.ValuesFromInvalid, `${source}: no such key (keys: ${Object.keys(usable.data).sort().join(', ') || 'none'})`);
  }
  const secret = ref.kind === 'Secret';
  return { source, secret, values: fragmentValues(text, ref, source, secret) };
}

/** In order, so the first problem reported is the first reference's (reads come from the caches). */
async function readModule(module: ModuleName, refs: readonly ValuesReference[], ctx: ReadContext): Promise<readonly ValuesFragment[] | InputError> {
  const fragments: ValuesFragment[] = [];
  for (const [index, ref] of refs.entries()) {
    try {
      const fragment = await readFragment(ref, `spec.valuesFrom.${module}[${index}]`, ctx);
      if (fragment !== undefined) fragments.push(fragment);
    } catch (err) {
      if (err instanceof InputError) return err;
      throw err;
    }
  }
  return fragments;
}

/**
 * Every module's fragments. A module name that is not a module is refused by name (the CRD has no
 * CEL rule for it: rules are not ratcheted here). Reads from the watch caches when the controller
 * runs, else from the API server.
 */
export async function loadValuesFrom(scope: TenantScope, reads: ValuesSourceReads, operatorNamespace: string): Promise<ValuesFromByModule> {
  const valuesFrom = scope.tenant.spec.valuesFrom ?? {};
  const unknown = Object.keys(valuesFrom).filter((name) => !isModuleName(name));
  if (unknown.length > 0) throw new InputError(Reason.InvalidHelmValues, `spec.valuesFrom: ${unknown.join(', ')} is not a module name`);
  const ctx = { scope, reads, operatorNamespace };
  const loaded = new Map<ModuleName, readonly ValuesFragment[] | InputError>();
  for (const module of scope.modules) {
    const refs = valuesFrom[module];
    if (refs !== undefined) loaded.set(module, await readModule(module, refs, ctx));
  }
  return loaded;
}
