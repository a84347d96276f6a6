/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, that CI tooling can read
 * whatever the test runner. A skipped test is never counted as passed, and a run that failed never
 * reads as green: a file that failed as a whole (a throwing beforeAll, a missing tool, a syntax
 * error) counts its tests that did not pass as failed (at least one), and so does every error
 * outside a test and a failed global setup, and every problem an end-of-run check reports
 * (run-checks.ts), printed just above it.
 *
 * scripts/test.sh runs vitest twice (the compatibility stage on the oldest Kubernetes, then the whole
 * suite): with EVA_TEST_TALLY_FILE set, each run adds the tally that file holds to its own, writes the
 * sum back, and closes with it, so the last closing line counts both runs.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';
import { runChecks } from './run-checks.ts';

export interface Tally {
  passed: number;
  failed: number;
  skipped: number;
}

export type TestState = 'passed' | 'failed' | 'skipped' | 'pending';

/** What one file adds: its tests by state; when the file itself failed, what did not pass failed. */
export function tallyFile(states: readonly TestState[], fileFailed: boolean): Tally {
  const passed = states.filter((s) => s === 'passed').length;
  const failedTests = states.filter((s) => s === 'failed').length;
  const rest = states.length - passed - failedTests;
  if (!fileFailed) return { passed, failed: failedTests, skipped: rest };
  return { passed, failed: Math.max(1, failedTests + rest), skipped: 0 };
}

/** The whole run: files, errors outside any test, and a run that failed with nothing to show for it. */
export function tallyRun(files: readonly Tally[], unhandledErrors: number, runFailed: boolean): Tally {
  const total = files.reduce<Tally>(
    (sum, f) => ({ passed: sum.passed + f.passed, failed: sum.failed + f.failed, skipped: sum.skipped + f.skipped }),
    { passed: 0, failed: unhandledErrors, skipped: 0 },
  );
  if (runFailed && total.failed === 0) total.failed = 1;
  return total;
}

/** The tally of earlier runs in the file (absent: none), plus this one, written back. */
export function carriedTally(file: string | undefined, run: Tally): Tally {
  if (file === undefined || file === '') return run;
  const earlier = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8') || '{"passed":0,"failed":0,"skipped":0}') as Tally) : { passed: 0, failed: 0, skipped: 0 };
  const sum = { passed: earlier.passed + run.passed, failed: earlier.failed + run.failed, skipped: earlier.skipped + run.skipped };
  writeFileSync(file, JSON.stringify(sum));
  return sum;
}

export const closingLine = (t: Tally): string => `tests: ${String(t.passed)} passed, ${String(t.failed)} failed, ${String(t.skipped)} skipped`;

export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
    reason: 'passed' | 'interrupted' | 'failed',
  ): void {
    const files = testModules.map((mod) =>
      tallyFile(
        [...mod.children.allTests()].map((t) => t.result().state),
        mod.state() === 'failed' || mod.errors().length > 0,
      ),
    );
    // End-of-run checks of the global setups (run-checks.ts): each problem is a failure of the run.
    const problems = runChecks();
    for (const problem of problems) process.stdout.write(`\nend-of-run check failed: ${problem}\n`);
    const run = tallyRun(files, unhandledErrors.length + problems.length, reason !== 'passed');
    const total = carriedTally(process.env['EVA_TEST_TALLY_FILE'], run);
    if (total !== run) process.stdout.write(`\nthis run: ${closingLine(run)}; with the earlier runs of this test command:\n`);
    process.stdout.write(`\n${closingLine(total)}\n`);
  }
}
