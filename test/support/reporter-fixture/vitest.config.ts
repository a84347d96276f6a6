// A run the summary reporter must call failed: one failing test, and one file whose setup throws.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: { root: import.meta.dirname, include: ['*.fixture.ts'], reporters: ['../summary-reporter.ts'] },
});
