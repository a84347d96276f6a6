/** Writes every module chart's values.schema.json from the values contract: `npm run charts:schema`. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chartSchemaFile, chartValuesSchemaJson } from './chart-values-schema.ts';
import { MODULES } from './modules.ts';

for (const module of MODULES) {
  writeFileSync(fileURLToPath(new URL(`../../${chartSchemaFile(module)}`, import.meta.url)), chartValuesSchemaJson());
  process.stdout.write(`wrote ${chartSchemaFile(module)}\n`);
}
