import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { chartSchemaFile, chartValuesSchemaJson, VALUES_POLICY_FILE, valuesPolicyTemplate } from './chart-values-schema.ts';
import { MODULES } from './modules.ts';

describe('module charts’ values.schema.json', () => {
  it.each(MODULES)('%s matches the values contract (run `npm run charts:schema` after changing it)', (module) => {
    expect(readFileSync(new URL(`../../${chartSchemaFile(module)}`, import.meta.url), 'utf8')).toBe(chartValuesSchemaJson());
  });
});

describe('the operator chart’s values policy', () => {
  it('matches the values contract (run `npm run charts:schema` after changing it)', () => {
    expect(readFileSync(new URL(`../../${VALUES_POLICY_FILE}`, import.meta.url), 'utf8')).toBe(valuesPolicyTemplate());
  });
});
