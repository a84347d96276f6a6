import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    // Forks, not threads: tests spawn helm, kubectl and the operator as real processes.
    pool: 'forks',
    projects: [
      {
        extends: true,
        // Some unit tests start the `eva-operator` command or a pure-JavaScript reference (tweetnacl): a
        // second or so each on a busy 2-core machine, so 5 s per test is too tight to be a verdict.
        test: { name: 'unit', include: ['src/**/*.test.ts', 'scripts/**/*.test.ts', 'test/support/*.test.ts'], testTimeout: 20_000 },
      },
      {
        extends: true,
        test: {
          // Real helm, nats-server, skopeo and docker-registry (the pinned binaries), no control plane.
          name: 'binaries',
          include: ['test/**/*.test.ts'],
          exclude: ['test/cluster/**', 'test/support/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          // Every file that needs a control plane, and only those: test/cluster/ and e2e/.
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts', 'e2e/**/*.test.ts'],
          // Brings up (or reuses) the local control plane once; fails loudly, never skips. Then the
          // identity every operator of the tests runs as: the chart's ServiceAccount, RBAC and policy.
          globalSetup: ['./test/support/cluster-setup.ts', './test/support/operator-identity.ts'],
          testTimeout: 120_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
