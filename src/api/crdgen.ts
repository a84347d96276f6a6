/** Writes crds/ from the TypeScript schema: `npm run crd:generate`. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CRD_FILE, renderCrdYaml } from './crd.ts';

const target = fileURLToPath(new URL(`../../${CRD_FILE}`, import.meta.url));
writeFileSync(target, renderCrdYaml());
process.stdout.write(`wrote ${CRD_FILE}\n`);
