/**
 * TypeBox builders for the few shapes a Kubernetes structural schema needs that TypeBox's own
 * builders do not emit: string enums (`enum`, not `anyOf` of `const`), maps (`additionalProperties`,
 * not `patternProperties`) and free-form objects (`x-kubernetes-preserve-unknown-fields`).
 * Each registers a check so that the same schema also validates objects at run time.
 */
import {
  FormatRegistry,
  Kind,
  type SchemaOptions,
  type Static,
  type TSchema,
  type TUnsafe,
  Type,
  TypeRegistry,
} from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

interface StringEnumSchema {
  enum: readonly string[];
}
TypeRegistry.Set<StringEnumSchema>(
  'StringEnum',
  (schema, value) => typeof value === 'string' && schema.enum.includes(value),
);

interface MapSchema {
  additionalProperties: TSchema;
}
TypeRegistry.Set<MapSchema>(
  'Map',
  (schema, value) =>
    isPlainObject(value) &&
    Object.values(value).every((item) => Value.Check(schema.additionalProperties, item)),
);

TypeRegistry.Set('FreeForm', (_schema, value) => isPlainObject(value));

// RFC 3339 timestamps, as the API server writes them (it validates the format itself).
FormatRegistry.Set('date-time', (value) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value));

export function StringEnum<const T extends readonly string[]>(
  values: T,
  options: SchemaOptions = {},
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ ...options, [Kind]: 'StringEnum', type: 'string', enum: [...values] });
}

export function StringKeyedMap<V extends TSchema>(
  values: V,
  options: SchemaOptions = {},
): TUnsafe<Record<string, Static<V>>> {
  return Type.Unsafe<Record<string, Static<V>>>({
    ...options,
    [Kind]: 'Map',
    type: 'object',
    additionalProperties: values,
  });
}

/** An object kept verbatim: the API server prunes nothing below it. */
export function FreeFormObject(options: SchemaOptions = {}): TUnsafe<Record<string, unknown>> {
  return Type.Unsafe<Record<string, unknown>>({
    ...options,
    [Kind]: 'FreeForm',
    type: 'object',
    'x-kubernetes-preserve-unknown-fields': true,
  });
}

/** A CEL rule the API server evaluates (x-kubernetes-validations). */
export interface CelRule {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export function celRules(...rules: CelRule[]): { 'x-kubernetes-validations': CelRule[] } {
  return { 'x-kubernetes-validations': rules };
}
