/**
 * The layout is the architecture: imports only go down
 *   cli -> operator -> controller -> metrics -> saga -> steps -> release -> nats -> config -> adapters -> tenancy -> (errors, log, versions, ...) -> api
 * A type two layers share lives in the lower one. Tests may import anything; production code may not.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));

/** Lower number = lower layer. Files directly in src/ are listed by name. */
const LAYER: Readonly<Record<string, number>> = {
  api: 0,
  'errors.ts': 1,
  'canonical-json.ts': 1,
  'versions.ts': 1,
  tenancy: 1.5,
  'log.ts': 1,
  'config.ts': 2.5,
  adapters: 2,
  nats: 2.6,
  release: 2.7,
  steps: 3,
  saga: 4,
  metrics: 5,
  controller: 6,
  'operator.ts': 7,
  'nats-bootstrap.ts': 7,
  'cli.ts': 8,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The layer name of a file: its top folder under src/, or its own name for files directly in src/. */
const unitOf = (file: string): string => relative(SRC, file).split('/')[0] ?? file;

function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)].map((m) => m[1] ?? '');
  return specifiers.map((spec) => resolve(dirname(file), spec));
}

function upwardImports(): string[] {
  const problems: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = unitOf(file);
    for (const target of relativeImports(file)) {
      const to = unitOf(target);
      const [fromLayer, toLayer] = [LAYER[from], LAYER[to]];
      if (fromLayer === undefined || toLayer === undefined) problems.push(`${relative(SRC, file)}: unplaced layer ${from} or ${to}`);
      else if (to !== from && toLayer >= fromLayer) problems.push(`${relative(SRC, file)} imports ${relative(SRC, target)} (${from} -> ${to})`);
    }
  }
  return problems;
}

describe('layering', () => {
  it('every production import goes down the layout (no folder imports a folder above it, so no cycles)', () => {
    expect(upwardImports()).toEqual([]);
  });

  it('the check sees imports: the saga imports steps, and steps import adapters', () => {
    const edges = sourceFiles(SRC).flatMap((file) => relativeImports(file).map((t) => `${unitOf(file)}->${unitOf(t)}`));
    expect(edges).toContain('saga->steps');
    expect(edges).toContain('steps->adapters');
  });
});
