import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { carriedTally, closingLine, tallyFile, tallyRun } from './summary-reporter.ts';

describe('tallyFile', () => {
  it('counts a green file as it is', () => {
    expect(tallyFile(['passed', 'passed', 'skipped'], false)).toEqual({ passed: 2, failed: 0, skipped: 1 });
  });
  it('counts the tests of a file that failed as a whole as failed, not skipped', () => {
    expect(tallyFile(['skipped', 'skipped', 'skipped'], true)).toEqual({ passed: 0, failed: 3, skipped: 0 });
  });
  it('counts a failed file with no tests as one failure', () => {
    expect(tallyFile([], true)).toEqual({ passed: 0, failed: 1, skipped: 0 });
  });
});

describe('tallyRun', () => {
  it('adds errors outside any test to the failures', () => {
    expect(tallyRun([{ passed: 3, failed: 0, skipped: 0 }], 2, true)).toEqual({ passed: 3, failed: 2, skipped: 0 });
  });
  it('never reads a failed run (a failed global setup) as zero failures', () => {
    expect(tallyRun([], 0, true)).toEqual({ passed: 0, failed: 1, skipped: 0 });
  });
  it('reads a passed run as it is (positive control)', () => {
    expect(tallyRun([{ passed: 3, failed: 0, skipped: 0 }], 0, false)).toEqual({ passed: 3, failed: 0, skipped: 0 });
  });
});

describe('carriedTally (two runs of one test command)', () => {
  it('adds the earlier run, so a failure in the first is in the last closing line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'eva-tally-'));
    try {
      const file = join(dir, 'tally.json');
      expect(carriedTally(file, { passed: 5, failed: 1, skipped: 0 })).toEqual({ passed: 5, failed: 1, skipped: 0 });
      expect(carriedTally(file, { passed: 10, failed: 0, skipped: 0 })).toEqual({ passed: 15, failed: 1, skipped: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('is the run itself without a file (the control)', () => {
    expect(carriedTally(undefined, { passed: 2, failed: 0, skipped: 0 })).toEqual({ passed: 2, failed: 0, skipped: 0 });
  });
});

describe('the closing line of a real vitest run', () => {
  it('says failed for a failing test, for a file whose setup throws and for a problem an end-of-run check reports', () => {
    const fixture = join(import.meta.dirname, 'reporter-fixture');
    const run = spawnSync(process.execPath, [join(process.cwd(), 'node_modules/vitest/vitest.mjs'), 'run', '--config', join(fixture, 'vitest.config.ts')], {
      encoding: 'utf8',
      cwd: fixture,
      // A run of its own: not one of scripts/test.sh's runs whose tallies add up (EVA_TEST_TALLY_FILE).
      env: { ...process.env, CI: 'true', EVA_TEST_TALLY_FILE: '' },
    });
    const lastLine = run.stdout.trimEnd().split('\n').at(-1);
    expect(run.status).not.toBe(0);
    expect(run.stdout).toContain('end-of-run check failed: a write was refused (fixture)');
    expect(lastLine).toBe(closingLine({ passed: 1, failed: 4, skipped: 0 }));
  }, 60_000);
});
