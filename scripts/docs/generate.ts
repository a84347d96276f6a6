/** Writes the generated pages of docs/ (api-reference, configuration, troubleshooting): `npm run docs:generate`. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GENERATED_PAGES } from './pages.ts';

const root = join(import.meta.dirname, '../..');
for (const [path, render] of Object.entries(GENERATED_PAGES)) {
  writeFileSync(join(root, path), render(root));
  process.stdout.write(`wrote ${path}\n`);
}
