/** Writes the CRDs from the TypeScript schemas, to crds/ and to the operator chart: `npm run crd:generate`. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderAllCrds } from './crd.ts';

for (const [file, yaml] of renderAllCrds()) {
  for (const target of [file, `charts/eva-operator/${file}`]) {
    writeFileSync(fileURLToPath(new URL(`../../${target}`, import.meta.url)), yaml);
    process.stdout.write(`wrote ${target}\n`);
  }
}
