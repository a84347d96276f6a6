/** Test files are found by name: no two share one (a unit test and its cluster test are named apart). */
import { execFileSync } from 'node:child_process';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

describe('test files', () => {
  it('have names of their own', () => {
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.test.ts'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
    const byName = Map.groupBy(files, (file) => basename(file));
    expect([...byName].filter(([, paths]) => paths.length > 1).map(([, paths]) => paths.join(' and '))).toEqual([]);
    expect(files.length).toBeGreaterThan(50);
  });
});
