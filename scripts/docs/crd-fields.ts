/**
 * The fields of the EvaTenant CRD's schema (crds/, generated from src/api/evatenant.ts), flattened
 * into rows for the API reference: path, type, whether required, default, validation, description.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CRD_FILE } from '../../src/api/crd.ts';

/** The part of OpenAPI v3 a structural CRD schema uses, as far as the reference reads it. */
export interface OpenApiSchema {
  readonly type?: string;
  readonly description?: string;
  readonly default?: unknown;
  readonly enum?: readonly string[];
  readonly pattern?: string;
  readonly format?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly maxItems?: number;
  readonly maxProperties?: number;
  readonly required?: readonly string[];
  readonly properties?: Readonly<Record<string, OpenApiSchema>>;
  readonly additionalProperties?: OpenApiSchema;
  readonly items?: OpenApiSchema;
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
  readonly 'x-kubernetes-validations'?: readonly { readonly rule: string; readonly message?: string }[];
}

export interface CrdVersion {
  readonly name: string;
  readonly additionalPrinterColumns?: readonly { readonly name: string; readonly jsonPath: string; readonly description?: string }[];
  readonly schema: { readonly openAPIV3Schema: OpenApiSchema };
}

export interface Crd {
  readonly spec: {
    readonly group: string;
    readonly scope: string;
    readonly names: { readonly kind: string; readonly plural: string; readonly shortNames?: readonly string[]; readonly categories?: readonly string[] };
    readonly versions: readonly CrdVersion[];
  };
}

export interface FieldRow {
  readonly path: string;
  readonly type: string;
  readonly required: boolean;
  readonly defaultValue: string;
  readonly validation: string;
  readonly description: string;
}

/** The committed CRD, as the API server gets it. */
export function readCrd(root: string, file = CRD_FILE): Crd {
  const crd: unknown = parse(readFileSync(join(root, file), 'utf8'));
  if (typeof crd !== 'object' || crd === null || !('spec' in crd)) throw new Error(`${file} is not a CustomResourceDefinition`);
  return crd as Crd;
}

/** What a map's keys are, by the map's path (the reader sees `<module>` rather than `<key>`). */
const MAP_KEYS: Readonly<Record<string, string>> = {
  'spec.versions': '<module>',
  'spec.helmValues': '<module>',
  'spec.valuesFrom': '<module>',
  'status.elapsedSeconds': '<condition>',
  'status.modules': '<module>',
  'status.decommission': '<step>',
};

function typeOf(schema: OpenApiSchema): string {
  if (schema.additionalProperties) return `map of ${typeOf(schema.additionalProperties)}`;
  if (schema.type === 'array' && schema.items) return `array of ${typeOf(schema.items)}`;
  if (schema.format !== undefined) return `${schema.type ?? 'any'} (${schema.format})`;
  return schema.type ?? 'any';
}

function validationOf(schema: OpenApiSchema): string {
  const parts = [
    schema.enum && `one of ${schema.enum.join(', ')}`,
    schema.pattern !== undefined && `pattern \`${schema.pattern}\``,
    schema.minimum !== undefined && `minimum ${String(schema.minimum)}`,
    schema.maximum !== undefined && `maximum ${String(schema.maximum)}`,
    schema.minLength !== undefined && `min length ${String(schema.minLength)}`,
    schema.maxLength !== undefined && `max length ${String(schema.maxLength)}`,
    schema.maxItems !== undefined && `at most ${String(schema.maxItems)} items`,
    schema.maxProperties !== undefined && `at most ${String(schema.maxProperties)} keys`,
    ...(schema['x-kubernetes-validations'] ?? []).map((v) => `rule: ${v.message ?? v.rule}`),
    schema['x-kubernetes-preserve-unknown-fields'] === true && !schema.properties && 'free-form',
  ];
  return parts.filter((p): p is string => typeof p === 'string').join('; ');
}

/** Every field under `schema`, depth first, maps and arrays included (their entries as `<key>` and `[]`). */
export function fieldRows(path: string, schema: OpenApiSchema, required = false): FieldRow[] {
  const row: FieldRow = {
    path,
    type: typeOf(schema),
    required,
    defaultValue: schema.default === undefined ? '' : JSON.stringify(schema.default),
    validation: validationOf(schema),
    description: schema.description ?? '',
  };
  const children = Object.entries(schema.properties ?? {}).flatMap(([name, child]) => fieldRows(`${path}.${name}`, child, schema.required?.includes(name) ?? false));
  const entries = schema.additionalProperties ? nestedRows(`${path}.${MAP_KEYS[path] ?? '<key>'}`, schema.additionalProperties) : [];
  const items = schema.type === 'array' && schema.items ? nestedRows(`${path}[]`, schema.items) : [];
  return [row, ...children, ...entries, ...items];
}

/** A map's value or an array's item: listed only when it has fields of its own. */
const nestedRows = (path: string, schema: OpenApiSchema): FieldRow[] =>
  schema.properties || schema.additionalProperties || schema.items ? fieldRows(path, schema) : [];
