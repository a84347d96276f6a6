/** Writes the CRD from the TypeScript schema, to crds/ and to the operator chart: `npm run crd:generate`. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CRD_FILE, renderCrdYaml } from './crd.ts';

for (const target of [CRD_FILE, `charts/eva-operator/${CRD_FILE}`]) {
  writeFileSync(fileURLToPath(new URL(`../../${target}`, import.meta.url)), renderCrdYaml());
  process.stdout.write(`wrote ${target}\n`);
}
