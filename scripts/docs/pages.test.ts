/**
 * The generated pages of docs/ are what their generators make now (regenerated in memory), every
 * reason of the catalogue has a guide entry with text, and every eva.aidonow.com/ key src/ or the
 * scripts use is in the API reference.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Reason } from '../../src/api/reasons.ts';
import { REASON_GUIDE, type ReasonGuide } from '../../src/api/reason-guide.ts';
import { METADATA_KEYS } from './api-metadata.ts';
import { chartValueRows } from './configuration.ts';
import { GENERATED_PAGES } from './pages.ts';

const root = join(import.meta.dirname, '../..');

/** Reasons of a catalogue with no guide entry, or an entry with an empty text. */
export function reasonsWithoutGuide(reasons: readonly string[], guide: Readonly<Record<string, ReasonGuide | undefined>>): string[] {
  return reasons.filter((reason) => {
    const entry = guide[reason];
    return entry === undefined || [entry.meaning, entry.cause, entry.action].some((text) => text.trim() === '');
  });
}

/** The eva.aidonow.com/ keys a text names (`${GROUP}/key` or the literal), without the prefix. */
export function metadataKeysIn(text: string): string[] {
  return [...text.matchAll(/(?:\$\{GROUP\}|eva\.aidonow\.com)\/([a-z][a-z-]*[a-z])\b/g)].map((m) => m[1] ?? '');
}

const sourceFiles = (): string[] =>
  execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'src/*.ts', 'scripts/*.sh'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((file) => file !== '' && !file.endsWith('.test.ts'));

describe('generated docs', () => {
  it.each(Object.keys(GENERATED_PAGES))('%s is current (run `npm run docs:generate`)', (path) => {
    const render = GENERATED_PAGES[path];
    expect(readFileSync(join(root, path), 'utf8')).toBe(render?.(root));
  });

  it('every reason of the catalogue has a guide entry: meaning, likely cause, what to do', () => {
    expect(reasonsWithoutGuide(Object.values(Reason), REASON_GUIDE)).toEqual([]);
    expect(Object.keys(REASON_GUIDE).sort()).toEqual(Object.values(Reason).sort());
  });

  it('sees a reason without an entry, or with an empty text (positive control)', () => {
    const guide = { Known: { area: 'progress', meaning: 'm', cause: 'c', action: 'a' }, Blank: { area: 'progress', meaning: 'm', cause: ' ', action: 'a' } } as const;
    expect(reasonsWithoutGuide(['Known', 'Blank', 'New'], guide)).toEqual(['Blank', 'New']);
  });

  it('every eva.aidonow.com/ label and annotation of src/ and the scripts is in the API reference', () => {
    const used = new Set(sourceFiles().flatMap((file) => metadataKeysIn(readFileSync(join(root, file), 'utf8'))));
    expect(used.size, 'the scan sees the keys').toBeGreaterThan(10);
    expect([...used].filter((key) => !(key in METADATA_KEYS)).sort()).toEqual([]);
    expect(metadataKeysIn("`${GROUP}/wave` and 'eva.aidonow.com/restore-from-uid'")).toEqual(['wave', 'restore-from-uid']);
  });

  it('the configuration table has a row per chart value, with its default and setting (positive controls)', () => {
    const rows = new Map(chartValueRows(root).map((row) => [row.path, row]));
    expect(rows.get('baseDomain')).toMatchObject({ defaultValue: '"tenants.eva.local"', setting: 'EVA_BASE_DOMAIN' });
    expect(rows.get('networkPolicy.ingressNamespaces')?.setting).toBe('NETWORK_POLICY_INGRESS_NAMESPACES');
    expect(rows.get('nats.enabled')?.meaning).toMatch(/^Quick start/);
    expect(rows.get('ingressTls')?.setting, 'prose is no setting').toBe('');
  });
});
