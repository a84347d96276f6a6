/** The TypeScript files under a folder, for tests that read the code itself (layering, who sets Ready). */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every .ts file under `dir`, tests left out unless `withTests`. */
export function sourceFiles(dir: string, withTests = false): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path, withTests);
    return entry.name.endsWith('.ts') && (withTests || !entry.name.endsWith('.test.ts')) ? [path] : [];
  });
}
