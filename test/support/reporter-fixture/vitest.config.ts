// A run the summary reporter must call failed: one failing test, one file whose setup throws, and an
// end-of-run check of a global setup that reports a problem.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { root: import.meta.dirname, include: ['*.fixture.ts'], reporters: ['../summary-reporter.ts'], globalSetup: ['./failing-check.setup.ts'] },
});
