/** Writes every module chart's values.schema.json, and the operator chart's values policy, from the values contract: `npm run charts:schema`. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chartSchemaFile, chartValuesSchemaJson, VALUES_POLICY_FILE, valuesPolicyTemplate } from './chart-values-schema.ts';
import { MODULES } from './modules.ts';

for (const module of MODULES) {
  writeFileSync(fileURLToPath(new URL(`../../${chartSchemaFile(module)}`, import.meta.url)), chartValuesSchemaJson());
  process.stdout.write(`wrote ${chartSchemaFile(module)}\n`);
}
writeFileSync(fileURLToPath(new URL(`../../${VALUES_POLICY_FILE}`, import.meta.url)), valuesPolicyTemplate());
process.stdout.write(`wrote ${VALUES_POLICY_FILE}\n`);
