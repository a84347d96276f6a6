import { describe, expect, it } from 'vitest';
import { MAX_YAML_DEPTH, parseTenantYaml, shapeProblem, syntaxDepth } from './tenant-yaml.ts';

const problemOf = (text: string): string => {
  const read = parseTenantYaml(text);
  return read.ok ? 'accepted' : read.problem;
};

/** Anchors a..f, each list holding ten aliases of the one before: 10^6 values once expanded. */
const aliasBomb = ['a: &a [x,x,x,x,x,x,x,x,x,x]', ...['b', 'c', 'd', 'e', 'f'].map((k, i) => `${k}: &${k} [${Array(10).fill(`*${'abcde'[i] ?? ''}`).join(',')}]`)].join('\n');

describe('tenant YAML', () => {
  it('reads ordinary values, aliases that repeat a value included (positive control)', () => {
    expect(parseTenantYaml('config: {a: 1}\nb: &x [1, 2]\nc: *x\n')).toEqual({ ok: true, value: { config: { a: 1 }, b: [1, 2], c: [1, 2] } });
    expect(parseTenantYaml('')).toEqual({ ok: true, value: null });
  });

  it('refuses an alias inside its own anchor (a cyclic value), in a mapping or a list', () => {
    for (const text of ['config: &a {x: *a}', 'a: &a [1, *a]', 'a: &a {b: {c: [*a]}}']) expect(problemOf(text), text).toContain('an alias refers to its own anchor');
  });

  it('refuses alias-expansion bombs by the yaml library\'s alias limit, and an alias without an anchor', () => {
    expect(problemOf(aliasBomb)).toContain('more than 100 aliases resolved');
    expect(problemOf('a: *nowhere')).toContain('an alias with no anchor before it');
  });

  it('refuses nesting deeper than the limit before the recursive parser runs (thousands of [ would overflow its stack); at the limit it reads', () => {
    const flow = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    for (const text of [flow(30_000), `${'- '.repeat(30_000)}x`, Array.from({ length: 100 }, (_, i) => `${' '.repeat(i)}a:`).join('\n')]) {
      expect(problemOf(text)).toBe(`nested more than ${String(MAX_YAML_DEPTH)} levels deep`);
    }
    expect(syntaxDepth(flow(MAX_YAML_DEPTH), 1000)).toBe(MAX_YAML_DEPTH);
    expect(parseTenantYaml(flow(MAX_YAML_DEPTH)).ok).toBe(true);
    // Aliases can nest deeper than the text does: the parsed value is measured too.
    const nested = ['a: &a [[[[[[[[[[1]]]]]]]]]]', ...['b', 'c', 'd', 'e', 'f', 'g'].map((k, i) => `${k}: &${k} [[[[[[[[[[*${'abcdef'[i] ?? ''}]]]]]]]]]]`)].join('\n');
    expect(problemOf(nested)).toBe(`nested more than ${String(MAX_YAML_DEPTH)} levels deep`);
  });

  it('refuses more than 64 KiB; a parser error is marked as quoting the source', () => {
    expect(problemOf(`a: ${'x'.repeat(65_536)}`)).toBe('65539 bytes, above the limit of 65536');
    expect(parseTenantYaml('a: [1,')).toMatchObject({ ok: false, parserMessage: true });
    expect(parseTenantYaml('a: 1\na: 2')).toMatchObject({ ok: false, parserMessage: true });
  });

  it('measures a value once expanded: cyclic, too deep or too large; a shared (not cyclic) object is fine', () => {
    const shared = { x: 1 };
    expect(shapeProblem({ a: shared, b: shared, c: [shared, shared] })).toBeUndefined();
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = { again: cyclic };
    expect(shapeProblem(cyclic)).toBe('cyclic');
    const wide = Array.from({ length: 300 }, () => Array.from({ length: 300 }, () => 1));
    expect(shapeProblem(wide)).toBe('large');
  });
});
