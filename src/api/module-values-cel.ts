/**
 * The CRD side of the module values contract, compiled from TenantModuleValuesSchema and the tier table.
 *
 * The API server prunes undeclared fields before it validates, so a client that skips strict field
 * validation would see `foo:` dropped in silence; and CRD CEL rules cannot see undeclared fields at all
 * (they type an object by its declared properties; kube-apiserver 1.36: "undefined field"). So every
 * closed object of the contract keeps unknown fields (x-kubernetes-preserve-unknown-fields): never
 * dropped. The ValidatingAdmissionPolicy of valuesPolicyValidations then refuses them by name: it sees
 * the object as plain maps, every key included. The operator-owned keys are declared, so a rule
 * refuses each by name with its own message. Refusing unknown keys in the CRD (by counting: `anyOf`
 * of key subsets with maxProperties) was tried and dropped: CRD rules are not ratcheted, so a tenant
 * stored before the contract could no longer be updated at all (not even its status or finalizer).
 */
import { Kind, type SchemaOptions, type TUnsafe, Type, TypeRegistry } from '@sinclair/typebox';
import { TIERS } from './constants.ts';
import { OPERATOR_OWNED_KEYS, SECRET_CONFIG_KEY, secretConfigOnlyFromSecret, TENANT_KEYS, TenantModuleValuesSchema } from './module-values.ts';
import type { CelRule } from './schema-kinds.ts';
import { MODULE_BOUNDS_BY_TIER, type ModuleBounds } from './tiers.ts';

/** A CEL rule with a message computed from the object. */
export interface CelRuleWithExpression extends CelRule {
  messageExpression?: string;
}

type Node = Record<string, unknown>;

const celString = (value: string): string => {
  if (value.includes("'") || value.includes('\\')) throw new Error(`cannot quote ${value} in CEL`);
  return `'${value}'`;
};

/** A TypeBox schema as structural OpenAPI: closed objects keep unknown keys (see above). */
export function structural(schema: Node): Node {
  // JSON round trip: drops TypeBox's symbol-keyed bookkeeping ([Kind]).
  const { additionalProperties, properties, ...rest } = JSON.parse(JSON.stringify(schema)) as Node;
  if (additionalProperties !== false || typeof properties !== 'object' || properties === null) return { additionalProperties, properties, ...rest };
  const children = Object.fromEntries(Object.entries(properties as Record<string, Node>).map(([key, child]) => [key, structural(child)]));
  return { ...rest, properties: children, 'x-kubernetes-preserve-unknown-fields': true };
}

/** Declared so that the API server keeps them and CEL can refuse them by name. */
const ownedKeyProperties = Object.fromEntries(
  OPERATOR_OWNED_KEYS.map((key) => [key, { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, description: 'set by the operator; refused here' }]),
);

/**
 * On spec.helmValues (as `self`). Not put in the CRD: CRD rules are not ratcheted here (measured:
 * neither plain rules nor oldSelf transition rules let an unchanged stored value pass on
 * kube-apiserver 1.36), so a spec stored before the contract would refuse every update, status and
 * finalizer included. They run in the ValidatingAdmissionPolicy of valuesPolicyYaml instead, on the
 * writes that change the spec only.
 */
const ownedKeyRules: CelRuleWithExpression[] = OPERATOR_OWNED_KEYS.map((key) => ({
  rule: `self.all(m, !has(self[m].${key}))`,
  message: `${key} is set by the operator; a tenant may set only ${TENANT_KEYS.join(', ')}`,
  reason: 'FieldValueForbidden',
}));

/** The per-tier value of a bound as a CEL expression on the spec (`self.tier`). */
function byTier(pick: (bounds: ModuleBounds) => string): string {
  const [last, ...others] = [...TIERS].reverse();
  if (last === undefined) throw new Error('no tiers');
  return others.reduce((tail, tier) => `(self.tier == ${celString(tier)} ? ${pick(MODULE_BOUNDS_BY_TIER[tier])} : ${tail})`, pick(MODULE_BOUNDS_BY_TIER[last]));
}

const within = (path: string, max: string): string => `(!has(${path}) || quantity(${path}).compareTo(quantity(${max})) <= 0)`;

function resourcesWithin(v: string): string {
  const maxCpu = byTier((b) => celString(b.maxCpu));
  const maxMemory = byTier((b) => celString(b.maxMemory));
  const kinds = ['requests', 'limits'].map((kind) => `(!has(${v}.resources.${kind}) || (${within(`${v}.resources.${kind}.cpu`, maxCpu)} && ${within(`${v}.resources.${kind}.memory`, maxMemory)}))`);
  return `(!has(${v}.resources) || (${kinds.join(' && ')}))`;
}

/** Rules on the spec (as `self`): the bounds depend on `tier`, a sibling of `helmValues`. A static message:
 * naming the module or the tier in a messageExpression costs more than the API server's CEL budget allows. */
function tierBoundRules(): CelRuleWithExpression[] {
  const maxReplicas = byTier((b) => String(b.maxReplicas));
  const table = (pick: (bounds: ModuleBounds) => string): string => TIERS.map((tier) => `${tier} ${pick(MODULE_BOUNDS_BY_TIER[tier])}`).join(', ');
  const checks = [
    { ok: `(!has($v.replicaCount) || $v.replicaCount <= ${maxReplicas})`, message: `helmValues: replicaCount is above the tier's maximum (${table((b) => String(b.maxReplicas))})` },
    { ok: resourcesWithin('$v'), message: `helmValues: resources are above the tier's maximum per container (cpu: ${table((b) => b.maxCpu)}; memory: ${table((b) => b.maxMemory)})` },
  ];
  return checks.map(({ ok, message }) => ({
    rule: `!has(self.helmValues) || self.helmValues.all(m, ${ok.replaceAll('$v', 'self.helmValues[m]')})`,
    message,
  }));
}

/** A closed object of the contract (additionalProperties: false): its path below helmValues.<module>, and its keys. */
interface ClosedObject {
  readonly path: readonly string[];
  readonly keys: readonly string[];
}

const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every closed object of a schema, the root first; free-form objects (config) are not closed. */
function closedObjects(schema: Node, path: readonly string[] = []): ClosedObject[] {
  const properties = schema['properties'];
  if (schema['additionalProperties'] !== false || !isNode(properties)) return [];
  const children = Object.entries(properties).flatMap(([key, child]) => (isNode(child) ? closedObjects(child, [...path, key]) : []));
  return [{ path, keys: Object.keys(properties) }, ...children];
}

const celList = (values: readonly string[]): string => `[${values.map(celString).join(', ')}]`;

/**
 * On the request's object (a VAP sees it as plain maps, undeclared keys included): any key of
 * helmValues.<module> (or of resources, resources.requests, ...) outside the contract, refused with a
 * message naming the module and the key. The operator-owned keys have their own rules and messages.
 */
function unknownKeyRules(): CelRuleWithExpression[] {
  return closedObjects(JSON.parse(JSON.stringify(TenantModuleValuesSchema)) as Node).map(({ path, keys }) => {
    const known = path.length === 0 ? [...keys, ...OPERATOR_OWNED_KEYS] : keys;
    const v = 'object.spec.helmValues[m]';
    const target = [v, ...path].join('.');
    const present = path.map((_, i) => `has(${[v, ...path.slice(0, i + 1)].join('.')})`);
    const closed = `${target}.all(k, k in ${celList(known)})`;
    const ok = [...present.map((p) => `!${p}`), closed].join(' || ');
    const where = path.length === 0 ? 'a tenant may set only' : `${path.join('.')} holds only`;
    // secretConfig is known (its own rule refuses it inline, saying where it comes from) but not listed.
    const listed = path.length === 0 ? TENANT_KEYS : keys;
    const names = `object.spec.helmValues.filter(m, !(${ok})).map(m, ${target}.filter(k, !(k in ${celList(known)})).map(k, 'spec.helmValues.' + m + '.${path.map((p) => `${p}.`).join('')}' + k).join(', ')).join(', ')`;
    return {
      rule: `!has(object.spec.helmValues) || object.spec.helmValues.all(m, ${ok})`,
      message: `helmValues: a key outside the values contract (${where} ${listed.join(', ')})`,
      messageExpression: `${names} + ': not a value a tenant may set (${where} ${listed.join(', ')})'`,
    };
  });
}

const MODULE_PLACEHOLDER = '@module@';

/**
 * secretConfig written in spec.helmValues: refused naming the module and the key, and saying to use
 * valuesFrom a Secret (a value in the spec is stored in plain text, as the whole EvaTenant is).
 */
function secretConfigRule(): CelRuleWithExpression {
  const v = `object.spec.helmValues[m].${SECRET_CONFIG_KEY}`;
  const [before = '', after = ''] = secretConfigOnlyFromSecret(MODULE_PLACEHOLDER).split(MODULE_PLACEHOLDER);
  return {
    rule: `!has(object.spec.helmValues) || object.spec.helmValues.all(m, !has(${v}))`,
    message: `spec.helmValues.<module>.${SECRET_CONFIG_KEY}: ${secretConfigOnlyFromSecret('<module>')}`,
    messageExpression: `object.spec.helmValues.filter(m, has(${v})).map(m, 'spec.helmValues.' + m + '.${SECRET_CONFIG_KEY}: ${before}' + m + ${celString(after)}).join('; ')`,
  };
}

TypeRegistry.Set('TenantModuleValues', (_schema, value) => typeof value === 'object' && value !== null && !Array.isArray(value));

/**
 * spec.helmValues.<module> in the CRD. At run time the parser only requires an object: a spec stored
 * before the contract existed must still parse, so the modules step can report it by name
 * (moduleValuesProblems) rather than the whole tenant becoming unreadable.
 */
export function TenantModuleValues(options: SchemaOptions = {}): TUnsafe<Record<string, unknown>> {
  const node = structural(TenantModuleValuesSchema);
  return Type.Unsafe<Record<string, unknown>>({
    ...options,
    ...node,
    [Kind]: 'TenantModuleValues',
    properties: { ...(node['properties'] as Node), ...ownedKeyProperties },
  });
}

/** The name of the policy (and of its binding); cluster-wide, one per cluster. */
export const VALUES_POLICY_NAME = 'eva-tenant-values';

/**
 * The rules above as a ValidatingAdmissionPolicy's validations: `self` (helmValues, or the spec) is
 * written as the request's object. The policy judges a create, and an update whose spec changed; a
 * write of status or metadata alone (the operator's) never meets it, so a tenant stored before the
 * contract stays writable and the operator reports it (InvalidHelmValues).
 */
export interface PolicyValidation {
  readonly expression: string;
  readonly message: string;
  /** Names the module and key; `message` stands when it cannot be evaluated. */
  readonly messageExpression?: string;
  readonly reason: string;
}

export function valuesPolicyValidations(): PolicyValidation[] {
  const onHelmValues = ownedKeyRules.map((r) => ({
    expression: `!has(object.spec.helmValues) || ${r.rule.replaceAll('self', 'object.spec.helmValues')}`,
    message: r.message,
  }));
  const unknown = [secretConfigRule(), ...unknownKeyRules()].map(({ rule, message, messageExpression }) => ({ expression: rule, message, ...(messageExpression === undefined ? {} : { messageExpression }) }));
  const onSpec = tierBoundRules().map((r) => ({ expression: r.rule.replaceAll('self.', 'object.spec.'), message: r.message }));
  return [...onHelmValues, ...unknown, ...onSpec].map((v) => ({ ...v, reason: 'Invalid' }));
}
