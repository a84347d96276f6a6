/** The bundled seed data: seeds/<version>/<module>.json (format in seeds/README.md). */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MODULES } from '../../src/api/modules.ts';
import { repoRoot } from '../support/tools.ts';

const seedsDir = join(repoRoot, 'seeds');

/** NATS KV keys: letters, digits, '-', '_', '.', '/', '='; no leading/trailing dot, no empty token. */
const KV_KEY = /^[-/_=.A-Za-z0-9]+$/;

interface SeedEntry {
  key: string;
  value: unknown;
}
interface SeedFile {
  module: string;
  entries: SeedEntry[];
}

function isValidKey(key: string): boolean {
  return KV_KEY.test(key) && !key.startsWith('.') && !key.endsWith('.') && !key.includes('..');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads and shape-checks one seed file; throws naming the file and the problem. */
function readSeed(version: string, module: string): SeedFile {
  const path = `seeds/${version}/${module}.json`;
  const value: unknown = JSON.parse(readFileSync(join(repoRoot, path), 'utf8'));
  if (!isRecord(value) || typeof value['module'] !== 'string' || !Array.isArray(value['entries'])) {
    throw new Error(`${path}: expected {"module": string, "entries": [...]}`);
  }
  const entries = value['entries'].map((entry: unknown, i): SeedEntry => {
    if (!isRecord(entry) || typeof entry['key'] !== 'string' || !('value' in entry)) {
      throw new Error(`${path}: entries[${i}] must be {"key": string, "value": <JSON>}`);
    }
    return { key: entry['key'], value: entry['value'] };
  });
  return { module: value['module'], entries };
}

const versions = readdirSync(seedsDir, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();
const files = versions.flatMap((version) => MODULES.map((module): [string, string] => [version, module]));

describe('seeds', () => {
  it('ships versions 1.0.0 and 1.1.0', () => {
    expect(versions).toEqual(expect.arrayContaining(['1.0.0', '1.1.0']));
  });

  it.each(versions)('%s has exactly one file per module', (version) => {
    const names = readdirSync(join(seedsDir, version)).sort();
    expect(names).toEqual(MODULES.map((m) => `${m}.json`).sort());
  });

  it.each(files)('%s/%s parses, names its module and has valid, unique keys', (version, module) => {
    const seed = readSeed(version, module);
    expect(seed.module).toBe(module);
    expect(seed.entries.length).toBeGreaterThanOrEqual(5);
    expect(seed.entries.length).toBeLessThanOrEqual(15);
    const keys = seed.entries.map((e) => e.key);
    expect(keys.filter((k) => !isValidKey(k))).toEqual([]);
    expect(keys.filter((k, i) => keys.indexOf(k) !== i)).toEqual([]);
  });

  it('the key rule rejects what NATS KV rejects', () => {
    for (const bad of ['', '.a', 'a.', 'a..b', 'a b', 'a*b', 'a>b', 'ä']) expect(isValidKey(bad), bad).toBe(false);
    for (const good of ['a', 'a.b', 'a-b_c/d=e', 'sla.priority.P1']) expect(isValidKey(good), good).toBe(true);
  });

  it.each(MODULES)('%s: 1.1.0 adds, changes and removes keys relative to 1.0.0', (module) => {
    const before = new Map(readSeed('1.0.0', module).entries.map((e) => [e.key, JSON.stringify(e.value)]));
    const after = new Map(readSeed('1.1.0', module).entries.map((e) => [e.key, JSON.stringify(e.value)]));
    const added = [...after.keys()].filter((k) => !before.has(k));
    const removed = [...before.keys()].filter((k) => !after.has(k));
    const changed = [...after.keys()].filter((k) => before.has(k) && before.get(k) !== after.get(k));
    expect(added.length).toBeGreaterThanOrEqual(1);
    expect(removed).toHaveLength(1);
    expect(changed).toHaveLength(1);
  });
});
