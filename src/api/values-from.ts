/**
 * `spec.valuesFrom.<module>`: module values read from Secrets and ConfigMaps (Flux HelmRelease's
 * valuesFrom: kind, name, valuesKey, targetPath, optional), merged over `spec.helmValues.<module>` in
 * order and judged by the same values contract.
 *
 * Where a reference may point: `namespace` is not a namespace name but Tenant (the tenant's own
 * namespace, the default) or Operator (the operator's namespace), so a spec cannot even name another
 * tenant's namespace. And only an object labelled `eva.aidonow.com/values-source: "true"` is ever
 * read (the operator watches only those): the operator's own Secrets (NATS signing keys, account keys,
 * module credentials, helm releases) never carry the label, so no spec can read them into its values.
 * In the operator's namespace an object serves only the EvaTenant it names (`eva.aidonow.com/tenant`),
 * and the operator binds it to that EvaTenant's uid on first use (`eva.aidonow.com/tenant-uid`): a
 * later EvaTenant of the same name or capsule code cannot read it, and the decommission retires it.
 * No CEL here: CRD rules are not ratcheted on this API server (see module-values-cel.ts).
 */
import { type Static, Type } from '@sinclair/typebox';
import { GROUP, LABELS } from './constants.ts';
import { StringEnum, StringKeyedMap } from './schema-kinds.ts';

/** The label that opts a Secret or ConfigMap in as a values source; its value must be "true". */
export const VALUES_SOURCE_LABEL = `${GROUP}/values-source`;
/** In the operator's namespace: the metadata.name of the one EvaTenant a source serves (set by whoever stages it). */
export const VALUES_SOURCE_TENANT_LABEL = `${GROUP}/tenant`;
/** In the operator's namespace: the uid of that EvaTenant, written by the operator on first use (the binding). */
export const VALUES_SOURCE_UID_LABEL = LABELS.tenantUid;
/** On a source the decommission retired (its values-source label removed): the uid of the tenant it served. */
export const RETIRED_FROM_ANNOTATION = `${GROUP}/retired-from`;
export const VALUES_SOURCE_KINDS = ['Secret', 'ConfigMap'] as const;
export type ValuesSourceKind = (typeof VALUES_SOURCE_KINDS)[number];
export const VALUES_SOURCE_NAMESPACES = ['Tenant', 'Operator'] as const;
export const DEFAULT_VALUES_KEY = 'values.yaml';
/** References per module: enough for layered settings, few enough to keep a reconcile cheap. */
export const MAX_VALUES_REFERENCES = 8;
/** The most a referenced key may hold (its text, in UTF-8 bytes): settings, not data files. */
export const MAX_VALUES_SOURCE_BYTES = 64 * 1024;

/** A dotted path of plain keys (`secretConfig.sso.clientSecret`): no brackets, escapes or empty segments. */
export const TARGET_PATH_PATTERN = '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$';
/** A Secret or ConfigMap data key. */
const DATA_KEY_PATTERN = '^[-._a-zA-Z0-9]{1,253}$';
/** A DNS subdomain, as Secret and ConfigMap names are. */
const OBJECT_NAME_PATTERN = '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$';

export const ValuesReferenceSchema = Type.Object({
  kind: StringEnum(VALUES_SOURCE_KINDS, { description: 'Secret or ConfigMap.' }),
  name: Type.String({ pattern: OBJECT_NAME_PATTERN, maxLength: 253, description: 'Its name.' }),
  namespace: Type.Optional(
    StringEnum(VALUES_SOURCE_NAMESPACES, {
      description: `Tenant (the tenant's namespace, the default) or Operator (the operator's namespace). Either way the object must be labelled ${VALUES_SOURCE_LABEL}: "true".`,
    }),
  ),
  valuesKey: Type.Optional(
    Type.String({ pattern: DATA_KEY_PATTERN, maxLength: 253, description: `The data key to read (default ${DEFAULT_VALUES_KEY}).` }),
  ),
  targetPath: Type.Optional(
    Type.String({
      pattern: TARGET_PATH_PATTERN,
      maxLength: 250,
      description: 'A dotted path (secretConfig.sso.clientSecret): the key\'s whole content becomes one string value there. Without it the key holds YAML merged over the inline values. A Secret\'s values go under secretConfig, never config.',
    }),
  ),
  optional: Type.Optional(Type.Boolean({ description: 'A missing object or key is skipped instead of stopping the module.' })),
});
export type ValuesReference = Static<typeof ValuesReferenceSchema>;

export const ValuesFromSchema = StringKeyedMap(Type.Array(ValuesReferenceSchema, { maxItems: MAX_VALUES_REFERENCES }), {
  description: `Per module: values from Secrets and ConfigMaps labelled ${VALUES_SOURCE_LABEL}: "true", merged in order over helmValues and checked by the same contract.`,
});
export type ValuesFrom = Static<typeof ValuesFromSchema>;

/** `Secret eva-tenant-acmeco/sso (key client-secret)`: how messages name a reference. */
export function describeReference(ref: ValuesReference, namespace: string): string {
  return `${ref.kind} ${namespace}/${ref.name} (key ${ref.valuesKey ?? DEFAULT_VALUES_KEY})`;
}
