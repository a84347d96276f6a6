/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, that CI tooling can read
 * whatever the test runner. A skipped test is never counted as passed, and a run that failed never
 * reads as green: a file that failed as a whole (a throwing beforeAll, a missing tool, a syntax
 * error) counts its tests that did not pass as failed (at least one), and so does every error
 * outside a test and a failed global setup, and every problem an end-of-run check reports
 * (run-checks.ts), printed just above it.
 */
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
    const total = tallyRun(files, unhandledErrors.length + problems.length, reason !== 'passed');
    process.stdout.write(`\n${closingLine(total)}\n`);
  }
}
