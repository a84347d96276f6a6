import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    // Forks, not threads: tests spawn helm, kubectl and the operator as real processes.
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['src/**/*.test.ts', 'scripts/**/*.test.ts', 'test/support/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'cluster',
          include: ['test/**/*.test.ts', 'e2e/**/*.test.ts'],
          exclude: ['test/support/*.test.ts'],
          // Brings up (or reuses) the local control plane once; fails loudly, never skips.
          globalSetup: ['./test/support/cluster-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
