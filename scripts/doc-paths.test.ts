/**
 * Every test file the docs, comments, scripts and YAML name exists: a test that moved or was renamed
 * leaves no pointer to a file that is not there. A mention counts as found when it is a path from the
 * repository root or the tail of one (`steps/account.test.ts`, `account.test.ts`: test basenames are
 * unique, scripts/test-layout.test.ts checks that). Globs (`src/**\/*.test.ts`) are no mention; a
 * path broken over two lines after a `/` is read joined. `x.test.ts` is the name of an example.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file !== '' && !file.startsWith('node_modules/') && existsSync(join(root, file)));

/** Where test files are named: prose, code, scripts and manifests. */
const MENTIONING = /\.(md|ts|sh|ya?ml)$/;
const EXAMPLE = 'x.test.ts';

/** The test file paths a text names, a path cut after a `/` at a line's end (and a comment's `*`, `//` or `#` after it) joined again. */
function mentionedTestPaths(text: string): string[] {
  const joined = text.replace(/([\w.-]\/)\n[ \t]*(?:\*|\/\/|#)?[ \t]*/g, '$1');
  return [...joined.matchAll(/(?<![\w./*{}$-])((?:[\w.-]+\/)*[\w-][\w.-]*\.test\.ts)\b/g)].map((m) => m[1] ?? '');
}

/** Whether a mention names a file of the checkout: its path from the root, or the tail of one. */
function resolves(mention: string, paths: readonly string[]): boolean {
  return paths.some((path) => path === mention || path.endsWith(`/${mention}`));
}

describe('test files named in docs, comments and scripts', () => {
  it('exist', () => {
    const testFiles = files.filter((file) => file.endsWith('.test.ts'));
    const stale = files
      .filter((file) => MENTIONING.test(file))
      .flatMap((file) => mentionedTestPaths(readFileSync(join(root, file), 'utf8')).map((mention) => ({ file, mention })))
      .filter(({ mention }) => basename(mention) !== EXAMPLE && !resolves(mention, testFiles))
      .map(({ file, mention }) => `${file}: ${mention}`);
    expect(stale).toEqual([]);
    expect(testFiles.length).toBeGreaterThan(50);
  });

  it('are read as paths, tails and broken lines, and globs are passed over (positive controls)', () => {
    expect(mentionedTestPaths('see `test/steps/x.test.ts` and (x.test.ts)')).toEqual(['test/steps/x.test.ts', 'x.test.ts']);
    expect(mentionedTestPaths('crashes (test/cluster/\naccount/x.test.ts runs)')).toEqual(['test/cluster/account/x.test.ts']);
    expect(mentionedTestPaths(' * as test/cluster/\n * steps/x.test.ts asserts')).toEqual(['test/cluster/steps/x.test.ts']);
    expect(mentionedTestPaths("include: ['src/**/*.test.ts', `${dir}/x.test.ts`], f.endsWith('.test.ts')")).toEqual([]);
    const paths = ['test/cluster/steps/x.test.ts'];
    expect(resolves('test/cluster/steps/x.test.ts', paths)).toBe(true);
    expect(resolves('steps/x.test.ts', paths)).toBe(true);
    expect(resolves('x.test.ts', paths)).toBe(true);
    expect(resolves('test/steps/x.test.ts', paths)).toBe(false);
    expect(resolves('cluster/x.test.ts', paths)).toBe(false);
    expect(resolves(`a${EXAMPLE}`, ['src/steps/b' + EXAMPLE])).toBe(false);
  });
});
