/**
 * Test files are found by name and placed by what they need: no two share one basename (a unit test
 * and its cluster test are named apart), every file that needs a control plane lives in test/cluster/
 * or e2e/ and no other file does, and the vitest projects run each file exactly where it lives
 * (unit: src/, scripts/; binaries: the rest of test/; cluster: test/cluster/, e2e/).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, join, matchesGlob } from 'node:path';
import { describe, expect, it } from 'vitest';
import config from '../vitest.config.ts';

const root = join(import.meta.dirname, '..');
const testFiles = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.test.ts'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter(Boolean)
  .filter((file) => !file.startsWith('node_modules/'));

/** The test helpers (test/support/) that reach the control plane: kubectl, its setup, and the e2e ones. */
const CONTROL_PLANE_HELPERS = ['kubectl', 'cluster-setup', 'air-gap', 'converged', 'health-verdicts', 'helm', 'hub-tenants', 'metrics', 'multi-cluster', 'nats', 'operator', 'real-node-probe', 'real-node', 'tenants'];

/**
 * What a test uses to reach a control plane: a helper of CONTROL_PLANE_HELPERS, a control plane of
 * its own (dev-cluster.sh, real-node.sh), or the kubeconfig the cluster setup exports (read through
 * loadKubeConfig, not one the test writes for a stand-in server).
 */
export function needsControlPlane(text: string): boolean {
  const helpers = new RegExp(`support\\/(${CONTROL_PLANE_HELPERS.join('|')})\\.ts'|scripts\\/dev-cluster\\.sh|scripts\\/lib\\/real-node\\.sh`);
  const setupKubeconfig = text.includes('loadKubeConfig(') && !text.includes("process.env['KUBECONFIG'] =");
  return helpers.test(text) || setupKubeconfig;
}

const inClusterFolder = (file: string): boolean => file.startsWith('test/cluster/') || file.startsWith('e2e/');

interface Project {
  readonly name: string;
  readonly include: readonly string[];
  readonly exclude: readonly string[];
}

function projects(): Project[] {
  return (config.test?.projects ?? []).flatMap((entry) => {
    if (typeof entry !== 'object' || !('test' in entry) || entry.test === undefined) return [];
    const { name, include = [], exclude = [] } = entry.test;
    return [{ name: typeof name === 'string' ? name : String(name?.label), include, exclude }];
  });
}

const projectsOf = (file: string): string[] =>
  projects()
    .filter((p) => p.include.some((g) => matchesGlob(file, g)) && !p.exclude.some((g) => matchesGlob(file, g)))
    .map((p) => p.name);

describe('test files', () => {
  it('have names of their own', () => {
    const byName = Map.groupBy(testFiles, (file) => basename(file));
    expect([...byName].filter(([, paths]) => paths.length > 1).map(([, paths]) => paths.join(' and '))).toEqual([]);
    expect(testFiles.length).toBeGreaterThan(50);
  });

  it('that need a control plane live in test/cluster/ or e2e/, and no others do', () => {
    // This file names every way in as text, for the positive controls below.
    const others = testFiles.filter((file) => file !== 'scripts/test-layout.test.ts');
    const misplaced = others.filter((file) => needsControlPlane(readFileSync(join(root, file), 'utf8')) !== inClusterFolder(file));
    expect(misplaced).toEqual([]);
    expect(testFiles.filter(inClusterFolder).length).toBeGreaterThan(20);
  });

  it('are run by exactly the project their folder names', () => {
    const expected = (file: string): string => (inClusterFolder(file) ? 'cluster' : file.startsWith('test/') && !file.startsWith('test/support/') ? 'binaries' : 'unit');
    const wrong = testFiles.map((file) => [file, projectsOf(file).join(',')]).filter(([file = '', got]) => got !== expected(file));
    expect(wrong).toEqual([]);
  });

  it("run operators of versions of their own: a file interrupted mid-run leaves tenants pinned to its version, which another file's operator must not take", () => {
    const filesByVersion = new Map<string, Set<string>>();
    for (const file of testFiles.filter(inClusterFolder)) {
      for (const [version] of readFileSync(join(root, file), 'utf8').matchAll(/(?<=')9\.\d+\.\d+(?=')/g)) {
        filesByVersion.set(version, (filesByVersion.get(version) ?? new Set()).add(file));
      }
    }
    // 9.9.9 is the version that never runs (a pin to an absent operator).
    const shared = [...filesByVersion].filter(([version, files]) => version !== '9.9.9' && files.size > 1);
    expect(shared.map(([version, files]) => `${version}: ${[...files].join(', ')}`)).toEqual([]);
    expect(filesByVersion.size, 'the check sees the versions').toBeGreaterThan(10);
  });

  it('the control-plane check sees each way in (positive controls) and passes a stand-in kubeconfig', () => {
    expect(needsControlPlane("import { kubectlOk } from '../../support/kubectl.ts';")).toBe(true);
    expect(needsControlPlane("import { waitForPhase } from '../test/support/tenants.ts';")).toBe(true);
    expect(needsControlPlane("import { startOperator } from '../../support/operator.ts';")).toBe(true);
    expect(needsControlPlane("import { startNatsServer } from '../support/nats-server.ts';")).toBe(false);
    expect(needsControlPlane("import { fakeHelm } from '../support/fake-helm.ts';")).toBe(false);
    expect(needsControlPlane('const kube = new Kube(loadKubeConfig());')).toBe(true);
    expect(needsControlPlane("spawnSync('bash', [join(repoRoot, 'scripts/dev-cluster.sh'), 'up'])")).toBe(true);
    expect(needsControlPlane("process.env['KUBECONFIG'] = standIn; new Kube(loadKubeConfig());")).toBe(false);
    expect(needsControlPlane("import { tool } from '../support/tools.ts';")).toBe(false);
    expect(projectsOf('test/cluster/steps/x.test.ts')).toEqual(['cluster']);
    expect(projectsOf('test/charts/x.test.ts')).toEqual(['binaries']);
  });
});
