/**
 * README's command blocks, run as written where this machine can run them. Each ```bash block of
 * README is listed below with how it is exercised; a new block fails this test until it is listed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../support/tools.ts';

const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');

/** Where each block is run, by its first line. */
const COVERAGE: Record<string, string> = {
  'scripts/dev-cluster.sh up': 'here, as written, on a throwaway cluster (below)',
  'eval "$(scripts/dev-cluster.sh env)"': 'test/cluster/quickstart/newcomer.test.ts, as written',
  'scripts/quickstart.sh --dry-run': 'test/cluster/quickstart/quickstart.test.ts (--dry-run, and an install with --values)',
  'kubectl apply --server-side -f crds/': 'test/cluster/charts/operator-chart.test.ts (CRD, bootstrap Secret, helm install with the bootstrap values)',
  'scripts/mirror-images.sh --registry registry.internal:5000/eva': 'test/images/mirror.test.ts, against a registry on loopback (registry.internal is not reachable from here)',
  'scripts/build-image.sh': 'e2e/real-node.test.ts (builds every image, then runs them on the real node)',
  'kubectl -n argocd patch configmap argocd-cm --type merge --patch "$(jq -n --rawfile lua deploy/argocd/health.lua \\':
    'e2e/gitops.test.ts, as written, into an argocd-cm of its own; the health check it installs judges the captured tenants',
  'scripts/dev-cluster.sh up --real-node': 'e2e/real-node.test.ts (scripts/lib/real-node.sh up, load-images, exec, down)',
};

describe('README command blocks', () => {
  it('every bash block is run by a test (listed here)', () => {
    const firstLines = blocks.map((b) => b.split('\n')[0]?.replace(/\s+#.*$/, '').trim() ?? '');
    expect(firstLines.filter((line) => COVERAGE[line] === undefined), 'README blocks no test runs').toEqual([]);
  });

  it('"The local control plane": the block as written, on a cluster of its own (own state folder and NATS ports)', () => {
    const block = blocks.find((b) => b.startsWith('scripts/dev-cluster.sh up'));
    expect(block).toBeDefined();
    const state = mkdtempSync(join(tmpdir(), 'eva-readme-cluster-'));
    try {
      const env = { PATH: process.env['PATH'], HOME: process.env['HOME'], EVA_DEV_CLUSTER_DIR: state, EVA_NATS_PORT: '35222', EVA_NATS_MONITOR_PORT: '39222' };
      const run = spawnSync('bash', ['-euo', 'pipefail', '-c', block ?? ''], { cwd: repoRoot, env, encoding: 'utf8', timeout: 300_000 });
      expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
      expect(run.stdout).toMatch(/^acmeco\s+ACMECO\s+Starter/m);
      expect(run.stdout).toContain('nats-server: running (nats://127.0.0.1:35222');
      expect(run.stderr).toContain('stopped; state removed');
    } finally {
      spawnSync('bash', [join(repoRoot, 'scripts/dev-cluster.sh'), 'down'], { env: { ...process.env, EVA_DEV_CLUSTER_DIR: state }, timeout: 120_000 });
      rmSync(state, { recursive: true, force: true });
    }
  }, 360_000);
});
