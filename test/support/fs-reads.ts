/**
 * Counts the synchronous file-system reads made while a call runs (the steps read bundle files with
 * node:fs's sync calls). node:fs's CommonJS exports are wrapped and pushed into the ES module bindings
 * (module.syncBuiltinESMExports), so code that imported `readFileSync` by name is counted too.
 */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const READ_CALLS = ['readFileSync', 'readdirSync', 'statSync', 'lstatSync', 'existsSync', 'openSync'] as const;

/** The paths read, one entry per call, while `run` ran (calls by anything in this process). */
export async function fileReadsDuring(run: () => Promise<unknown>): Promise<string[]> {
  const paths: string[] = [];
  const originals = READ_CALLS.map((name) => [name, Reflect.get(fs, name) as (...args: unknown[]) => unknown] as const);
  for (const [name, original] of originals) {
    Reflect.set(fs, name, (...args: unknown[]): unknown => {
      paths.push(String(args[0]));
      return Reflect.apply(original, fs, args);
    });
  }
  syncBuiltinESMExports();
  try {
    await run();
  } finally {
    for (const [name, original] of originals) Reflect.set(fs, name, original);
    syncBuiltinESMExports();
  }
  return paths;
}
