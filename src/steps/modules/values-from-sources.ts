/**
 * Reads a tenant's `spec.valuesFrom` (src/api/values-from.ts) into values fragments, one per
 * reference, before module-values.ts merges them over `spec.helmValues` and judges the result by the
 * values contract. Every problem names the module, the reference and the key, never a value read from
 * a Secret (a YAML parser's message quotes the source, so a Secret's is not passed on).
 *
 * A source in the tenant's namespace is the tenant's (the namespace binds it). One in the operator's
 * namespace serves only the EvaTenant it names (label eva.aidonow.com/tenant), and ensure binds it to
 * that EvaTenant's uid on first use (label eva.aidonow.com/tenant-uid, a write guarded by the
 * resourceVersion read): a later EvaTenant with the same name or capsule code has another uid and is
 * refused, as is any tenant for a source without the label. The decommission retires the tenant's
 * bindings (`retireValuesSources`), so nothing it was handed can be read again.
 */
import { LABELS } from '../../api/constants.ts';
import { isModuleName, type ModuleName } from '../../api/modules.ts';
import { Reason } from '../../api/reasons.ts';
import {
  DEFAULT_VALUES_KEY,
  describeReference,
  MAX_VALUES_SOURCE_BYTES,
  VALUES_SOURCE_LABEL,
  VALUES_SOURCE_TENANT_LABEL,
  VALUES_SOURCE_UID_LABEL,
  type ValuesReference,
} from '../../api/values-from.ts';
import { isConflict } from '../../adapters/kube.ts';
import type { ValuesSourceBindings, ValuesSourceObject, ValuesSourceReads } from '../../adapters/values-sources.ts';
import { DependencyError, InputError } from '../../errors.ts';
import { tenantUid } from '../../tenancy/ownership.ts';
import type { TenantScope } from '../../tenancy/scope.ts';
import { notReady, READY, type Verdict } from '../step.ts';
import { parseTenantYaml } from '../tenant-yaml.ts';

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

/**
 * How a source stands towards this tenant: usable; named for it but not bound yet (ensure binds it,
 * verify reads it as ensure will); or refused, with what to do about it.
 */
export type Binding = { readonly kind: 'usable' | 'unbound' } | { readonly kind: 'refused'; readonly why: string };

const USABLE: Binding = { kind: 'usable' };
const UNBOUND: Binding = { kind: 'unbound' };

function refusedBinding(what: string, scope: TenantScope): Binding {
  const remedy = `stage a source of its own labelled ${VALUES_SOURCE_TENANT_LABEL}=${scope.tenant.metadata.name} and ${LABELS.capsuleCode}=${scope.code} (the operator binds it to this EvaTenant's uid on first use), or put it in the tenant's namespace`;
  return { kind: 'refused', why: `in the operator's namespace a values source serves only the EvaTenant it is bound to, and this one ${what}; ${remedy}` };
}

/** The rule of the header; sources in the tenant's own namespace are always usable. */
export function bindingOf(source: ValuesSourceObject, scope: TenantScope, operatorNamespace: string): Binding {
  if (source.namespace !== operatorNamespace) return USABLE;
  const boundTo = source.labels[VALUES_SOURCE_UID_LABEL];
  if (boundTo !== undefined) return boundTo === tenantUid(scope) ? USABLE : refusedBinding(`is bound to another EvaTenant (label ${VALUES_SOURCE_UID_LABEL})`, scope);
  const named = source.labels[VALUES_SOURCE_TENANT_LABEL];
  if (named === undefined) return refusedBinding(`has no label ${VALUES_SOURCE_TENANT_LABEL} naming one`, scope);
  if (named !== scope.tenant.metadata.name) return refusedBinding(`is labelled ${VALUES_SOURCE_TENANT_LABEL} for another EvaTenant`, scope);
  // Name and code both: the portal chooses names, so a name alone would go to whoever asks for it first.
  const code = source.labels[LABELS.capsuleCode];
  if (code === undefined) return refusedBinding(`has no label ${LABELS.capsuleCode} naming its capsule code`, scope);
  if (code !== scope.code) return refusedBinding(`is labelled ${LABELS.capsuleCode} for another capsule code`, scope);
  return UNBOUND;
}

function notFound(where: string): InputError {
  return new InputError(
    Reason.ValuesFromNotFound,
    `${where}: not found among the objects a tenant may read (a Secret or ConfigMap labelled ${VALUES_SOURCE_LABEL}: "true"); the module waits and resumes when it appears`,
  );
}

/** The values one key holds: YAML merged as a mapping, or (targetPath) the whole text as one string. */
export function fragmentValues(text: string, ref: ValuesReference, where: string, secret: boolean): Values {
  if (ref.targetPath !== undefined) return atPath(ref.targetPath, text);
  const read = parseTenantYaml(text);
  if (!read.ok) {
    // The parser's message quotes the source text: shown for a ConfigMap, withheld for a Secret.
    if (read.parserMessage) throw new InputError(Reason.ValuesFromInvalid, `${where}: not YAML (${secret ? 'its content is not shown' : read.problem})`);
    throw new InputError(Reason.ValuesFromInvalid, `${where}: refused as tenant input: ${read.problem}`);
  }
  const parsed = read.value;
  if (parsed === null || parsed === undefined) return {};
  if (!isPlainObject(parsed)) throw new InputError(Reason.ValuesFromInvalid, `${where}: must hold a YAML mapping of values, or set targetPath to use the text as one value`);
  return parsed;
}

interface ReadContext {
  scope: TenantScope;
  reads: ValuesSourceReads;
  operatorNamespace: string;
  /** Given in ensure only: verify and the drift check never write. */
  bindings?: ValuesSourceBindings | undefined;
}

/** Binds a source named for this tenant to its uid; a concurrent change is retried, never overwritten. */
async function bind(object: ValuesSourceObject, source: string, ctx: ReadContext): Promise<void> {
  if (ctx.bindings === undefined) return;
  try {
    await ctx.bindings.bind(object, tenantUid(ctx.scope));
    ctx.scope.log.info({ source }, 'values source bound to this tenant');
  } catch (err) {
    if (isConflict(err)) throw new DependencyError(Reason.ValuesFromUnbound, `${source}: changed while being bound to this tenant; retrying`, { cause: err });
    throw err;
  }
}

/** The object a reference reads, bound to this tenant; undefined when it is optional and absent. */
async function usableSource(ref: ValuesReference, source: string, namespace: string, ctx: ReadContext): Promise<ValuesSourceObject | undefined> {
  const object = await ctx.reads.get(ref.kind, namespace, ref.name);
  if (object === undefined) {
    if (ref.optional === true) return undefined;
    throw notFound(source);
  }
  const binding = bindingOf(object, ctx.scope, ctx.operatorNamespace);
  if (binding.kind === 'refused') throw new InputError(Reason.ValuesFromUnbound, `${source}: ${binding.why}`);
  if (binding.kind === 'unbound') await bind(object, source, ctx);
  return object;
}

/** One reference's fragment; undefined when it is optional and absent. */
async function readFragment(ref: ValuesReference, where: string, ctx: ReadContext): Promise<ValuesFragment | undefined> {
  const namespace = referenceNamespace(ref, ctx.scope.namespace, ctx.operatorNamespace);
  const source = `${where} (${describeReference(ref, namespace)})`;
  const usable = await usableSource(ref, source, namespace, ctx);
  if (usable === undefined) return undefined;
  const text = usable.data[ref.valuesKey ?? DEFAULT_VALUES_KEY];
  if (text === undefined) {
    if (ref.optional === true) return undefined;
    throw new InputError(Reason.ValuesFromInvalid, `${source}: no such key (keys: ${Object.keys(usable.data).sort().join(', ') || 'none'})`);
  }
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_VALUES_SOURCE_BYTES) {
    throw new InputError(Reason.ValuesFromInvalid, `${source}: holds ${String(bytes)} bytes, above the limit of ${String(MAX_VALUES_SOURCE_BYTES)} a values key may hold`);
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
 * runs, else from the API server. With `bindings` (ensure), sources named for the tenant are bound.
 */
export async function loadValuesFrom(scope: TenantScope, reads: ValuesSourceReads, operatorNamespace: string, bindings?: ValuesSourceBindings): Promise<ValuesFromByModule> {
  const valuesFrom = scope.tenant.spec.valuesFrom ?? {};
  const unknown = Object.keys(valuesFrom).filter((name) => !isModuleName(name));
  if (unknown.length > 0) throw new InputError(Reason.InvalidHelmValues, `spec.valuesFrom: ${unknown.join(', ')} is not a module name`);
  const ctx = { scope, reads, operatorNamespace, bindings };
  const loaded = new Map<ModuleName, readonly ValuesFragment[] | InputError>();
  for (const module of scope.modules) {
    const refs = valuesFrom[module];
    if (refs !== undefined) loaded.set(module, await readModule(module, refs, ctx));
  }
  return loaded;
}

// ---- decommission: the tenant's bindings retired --------------------------------------------------

/** A label value holds at most 63 characters: a longer EvaTenant name can name no source. */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/**
 * The sources in the operator's namespace this tenant could still read: bound to its uid, or named
 * for it and never bound (a source staged for it that it never used must not wait for the next
 * EvaTenant of that name). A source bound to another uid is never touched.
 */
async function servedSources(scope: TenantScope, bindings: ValuesSourceBindings, operatorNamespace: string): Promise<ValuesSourceObject[]> {
  const bound = await bindings.list(operatorNamespace, `${VALUES_SOURCE_UID_LABEL}=${tenantUid(scope)}`);
  const name = scope.tenant.metadata.name;
  if (!LABEL_VALUE.test(name)) return bound;
  const named = await bindings.list(operatorNamespace, `${VALUES_SOURCE_TENANT_LABEL}=${name},!${VALUES_SOURCE_UID_LABEL}`);
  return [...bound, ...named];
}

const describeSource = (source: ValuesSourceObject): string => `${source.kind} ${source.namespace}/${source.name}`;

/**
 * At decommission: every source the tenant could still read loses its values-source label (no tenant
 * can select it again) and records the uid it served (annotation eva.aidonow.com/retired-from).
 * Idempotent: a retired source is no longer listed. A source changed meanwhile is retried next pass.
 */
export async function retireValuesSources(scope: TenantScope, bindings: ValuesSourceBindings, operatorNamespace: string): Promise<void> {
  for (const source of await servedSources(scope, bindings, operatorNamespace)) {
    await bindings.retire(source, tenantUid(scope));
    scope.log.info({ source: describeSource(source) }, 'values source retired');
  }
}

/** Read-only: READY when no source in the operator's namespace can be read by this tenant any more. */
export async function verifyValuesSourcesRetired(scope: TenantScope, bindings: ValuesSourceBindings, operatorNamespace: string): Promise<Verdict> {
  const left = await servedSources(scope, bindings, operatorNamespace);
  if (left.length === 0) return READY;
  return notReady(Reason.ValuesSourcesNotRetired, `values sources not retired yet: ${left.map(describeSource).join(', ')}`);
}
