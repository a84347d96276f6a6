/**
 * Each module chart's values.schema.json, generated from the values contract (module-values.ts): the
 * tenant's keys as the CRD allows them, the operator's typed and patterned, nothing else. Helm checks
 * it before rendering, so a chart installed by hand is held to the same contract as the operator.
 * `npm run charts:schema` writes the files; a test fails when they drift.
 */
import { OperatorModuleValuesSchema, TenantModuleValuesSchema } from './module-values.ts';
import type { ModuleName } from './modules.ts';

export const chartSchemaFile = (module: ModuleName): string => `charts/modules/${module}/values.schema.json`;

/** The schema text (stable, with a trailing newline) of every module chart. */
export function chartValuesSchemaJson(): string {
  const plain = (schema: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
  const schema = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'EVA module values (generated from src/api/module-values.ts; do not edit)',
    type: 'object',
    properties: {
      ...plain(TenantModuleValuesSchema)['properties'] as object,
      ...plain(OperatorModuleValuesSchema)['properties'] as object,
      // Helm's own: the library dependency's values and the global scope.
      'eva-module-lib': { type: 'object' },
      global: { type: 'object' },
    },
    additionalProperties: false,
  };
  return `${JSON.stringify(schema, null, 2)}\n`;
}
