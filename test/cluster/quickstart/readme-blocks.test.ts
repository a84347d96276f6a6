/**
 * The command blocks of README and the docs, run as written where this machine can run them. Each
 * ```bash block of README.md, CONTRIBUTING.md and docs/ is listed below with how it is exercised (or,
 * in NOT_RUN, why no test can run it); a new block fails this test until it is listed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../support/tools.ts';

/** Pages whose blocks predate this check; whoever next edits one lists its blocks here and removes it. */
const NOT_YET_CHECKED = new Set(['docs/nats.md', 'docs/sharding.md']);

const markdownUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? markdownUnder(join(dir, entry.name)) : entry.name.endsWith('.md') ? [relative(repoRoot, join(dir, entry.name))] : [],
  );
const pages = ['README.md', 'CONTRIBUTING.md', ...markdownUnder(join(repoRoot, 'docs')).sort()].filter((page) => !NOT_YET_CHECKED.has(page));
const blocks = pages.flatMap((page) => [...readFileSync(join(repoRoot, page), 'utf8').matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1] ?? ''));
/** A block's first command, without its comment. */
const firstLine = (block: string): string => block.split('\n')[0]?.replace(/\s+#.*$/, '').trim() ?? '';

/** Where each block is run, by its first line. */
const COVERAGE: Record<string, string> = {
  'scripts/dev-cluster.sh up': 'here, as written, on a throwaway cluster (below)',
  'eval "$(scripts/dev-cluster.sh env)"': 'test/cluster/quickstart/newcomer.test.ts, as written',
  'scripts/quickstart.sh --dry-run': 'test/cluster/quickstart/quickstart.test.ts (--dry-run, and an install with --values)',
  'kubectl apply --server-side -f crds/': 'test/cluster/charts/operator-chart.test.ts (CRD, bootstrap Secret, helm install with the bootstrap values)',
  'scripts/mirror-images.sh --registry registry.internal:5000/eva': 'test/images/mirror.test.ts, against a registry on loopback (registry.internal is not reachable from here)',
  'scripts/build-image.sh': 'e2e/real-node.test.ts (builds every image, then runs them on the real node)',
  'kubectl -n argocd patch configmap argocd-cm --type merge --patch "$(jq -n --rawfile lua deploy/argocd/health.lua \\':
    "as written, into an argocd-cm of their own: docs/gitops.md's by e2e/gitops.test.ts (the check it installs judges the captured tenants), docs/multi-cluster.md's by e2e/multi-cluster.test.ts on its hub (the check it installs judges the tenants' works)",
  'scripts/dev-cluster.sh up --real-node': 'e2e/real-node.test.ts (scripts/lib/real-node.sh up, load-images, exec, down)',
  'kubectl apply -f samples/evatenant-starter.yaml': 'test/cluster/quickstart/newcomer.test.ts, as written, with an operator run from this checkout',
  'scripts/release.sh 0.1.0 --registry registry.example.com/eva': 'e2e/release.test.ts, to a registry on the real node (plain HTTP: --tls-verify=false), and its refusal of a version the chart does not carry',
  'helm install eva oci://registry.example.com/eva/charts/eva-operator --version 0.1.0 -n eva-system -f my-values.yaml --wait':
    'e2e/release.test.ts runs this same line, in docs/install.md\'s "Install from a release" block',
  'kubectl create namespace eva-system': 'e2e/release.test.ts, as written, from an empty folder with only kubectl and helm, the registry the node\'s (helm with --plain-http)',
  'scripts/mirror-images.sh --chart oci://registry.example.com/eva/charts/eva-operator:0.1.0 --registry registry.internal:5000':
    'e2e/release.test.ts: the mirror (with --images: this machine reaches no public registry for the third-party lines), then the install line as written with the release registry stopped',
  'kubectl delete evt --all --wait=true --timeout=10m': 'e2e/release.test.ts, the three uninstall blocks as written, after an install from the released chart; nothing named eva is left',
  'kubectl get evt': 'e2e/release.test.ts (uninstall, as written)',
  'kubectl delete validatingadmissionpolicy,validatingadmissionpolicybinding eva-tenant-deletion-protection eva-tenant-values eva-tenant-platform-controls': 'e2e/release.test.ts (uninstall, as written)',
  'node src/cli.ts preflight --nats-url nats://nats.example.com:4222 --nats-creds nats-keys/system.creds \\':
    'test/cluster/preflight/preflight.test.ts runs the same command with the same flags (and --output json), given the test plane\'s NATS, IngressClass, ingress namespace and TLS Secret instead of these example names (passing, and failing on each one)',
  'helm test eva -n eva-system --logs': 'e2e/release.test.ts, as written, after each install from the released chart on the real node (every check passes there)',
  'test/tools/build-ocm.sh':
    "scripts/test.sh's install step, as written (the Open Cluster Management stage); of the block's other lines, npm test runs e2e/multi-cluster.test.ts, and bench:multi-cluster is a benchmark (docs/multi-cluster.md's figures), not a test",
  'helm install eva-hub oci://registry.example.com/eva/charts/eva-hub --version 0.1.0 --set executor.namespace=eva-system':
    'e2e/release.test.ts, as written, from the released chart in an empty folder (then uninstalled to nothing); e2e/multi-cluster.test.ts applies the same chart on its hub and places every tenant as a portal bound so',
  'helm upgrade eva oci://registry.example.com/eva/charts/eva-operator --version 0.1.0 -n eva-system --reuse-values --set hubExecutor.create=true':
    "e2e/release.test.ts, as written, on the install from the released chart (the executor holds the portal role and no more); e2e/multi-cluster.test.ts gives its members the chart's same executor",
  'npm run --silent typecheck': 'scripts/test.sh runs the same commands over the whole tree (typecheck, lint, every vitest project), as CI does',
  'install -D -m 0755 kubectl-eva "$HOME/.local/bin/kubectl-eva"':
    'test/kubectl-eva/kubectl-eva-binary.test.ts: the same steps (the executable of npm run build:cli on a PATH folder; kubectl plugin list; kubectl eva version) in an empty environment whose PATH holds only kubectl and the plugin',
};

/** Blocks no test runs, and why. */
const NOT_RUN: Record<string, string> = {
  "kubectl get secret -n eva-system eva-nats-account-acmeco -o jsonpath='{.metadata.labels.eva\\.aidonow\\.com/tenant-uid}'":
    'names an install in eva-system and a tenant acmeco that the shared test plane does not have; test/cluster/kubectl-eva/kubectl-eva.test.ts reads the same label and retained marks with kubectl eva retained',
  'helm upgrade eva-hub oci://registry.example.com/eva/charts/eva-hub --version 0.1.0 --reuse-values --set controller.moves=true':
    "needs a hub with member clusters and a node for the controller's Deployment; test/charts/hub-chart.test.ts renders controller.moves, and e2e/multi-cluster.test.ts runs eva-operator hub --moves as the ServiceAccount and RBAC that chart renders, with member Secrets labelled as the block's",
  'kubectl apply -f restore-acmeco.yaml':
    'needs the file the page shows and retained data of acmeco; test/cluster/kubectl-eva/kubectl-eva.test.ts runs the same restore, wait and delete with kubectl eva purge against the test plane',
};

describe('README and docs command blocks', () => {
  it('every bash block is run by a test, or says why none can (listed here)', () => {
    expect(pages, 'the pages are read').toEqual(expect.arrayContaining(['README.md', 'docs/install.md', 'docs/development/local-control-plane.md']));
    const firstLines = blocks.map(firstLine);
    expect(firstLines.filter((line) => COVERAGE[line] === undefined && NOT_RUN[line] === undefined), 'blocks no test runs').toEqual([]);
    expect(Object.keys(COVERAGE).filter((line) => !firstLines.includes(line)), 'listed blocks that no page has any more').toEqual([]);
  });

  it('"The local control plane": the block as written, on a cluster of its own (own state folder and NATS ports)', () => {
    const block = blocks.find((b) => firstLine(b) === 'scripts/dev-cluster.sh up');
    expect(block).toBeDefined();
    const state = mkdtempSync(join(tmpdir(), 'eva-readme-cluster-'));
    try {
      const env = { PATH: process.env['PATH'], HOME: process.env['HOME'], EVA_DEV_CLUSTER_DIR: state, EVA_NATS_PORT: '15322', EVA_NATS_MONITOR_PORT: '19322' };
      const run = spawnSync('bash', ['-euo', 'pipefail', '-c', block ?? ''], { cwd: repoRoot, env, encoding: 'utf8', timeout: 300_000 });
      expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
      expect(run.stdout).toMatch(/^acmeco\s+ACMECO\s+Starter/m);
      expect(run.stdout).toContain('nats-server: running (nats://127.0.0.1:15322');
      expect(run.stderr).toContain('stopped; state removed');
    } finally {
      spawnSync('bash', [join(repoRoot, 'scripts/dev-cluster.sh'), 'down'], { env: { ...process.env, EVA_DEV_CLUSTER_DIR: state }, timeout: 120_000 });
      rmSync(state, { recursive: true, force: true });
    }
  }, 360_000);
});
