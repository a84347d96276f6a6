/**
 * The layout is the architecture: imports only go down
 *   (cli | kubectl-eva) -> (operator | preflight) -> (controller | hub) -> metrics -> multicluster -> status -> rollout -> saga -> steps -> script-commands -> nats -> config -> adapters -> runtime -> bundle -> tenancy -> (errors, log, versions, ...) -> api
 * and no two files import each other, directly or round about, inside a folder either (no import
 * circle). A type two layers share lives in the lower one. Tests may import anything; production code may not.
 */
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from '../test/support/source-files.ts';

const SRC = dirname(fileURLToPath(import.meta.url));

/** Lower number = lower layer. Files directly in src/ are listed by name. */
const LAYER: Readonly<Record<string, number>> = {
  api: 0,
  'errors.ts': 1,
  'canonical-json.ts': 1,
  'versions.ts': 1,
  tenancy: 1.5,
  bundle: 1.8,
  // What client-go and kube-rs give a controller (work queue, backoff, clock, informers, leader election): nothing of tenants.
  runtime: 1.9,
  'log.ts': 1,
  config: 2.4,
  'config.ts': 2.5,
  adapters: 2,
  nats: 2.6,
  // The decisions and formats the scripts ask `eva-operator` for (not Helm releases).
  'script-commands': 2.7,
  steps: 3,
  saga: 4,
  // Fleet rollouts: which tenants move and when, judged by gates (pure; its controller sits in controller/).
  rollout: 4.2,
  // The status room: the condition table, the one summarize(), the saga record, the writer (between the saga and the controllers).
  status: 4.5,
  // Beyond one cluster: the multi-cluster engine's objects for a placed tenant and the hub's view of it
  // (pure; its summary of a member that stopped reporting is the status room's).
  multicluster: 4.7,
  metrics: 5,
  controller: 6,
  // The hub controller (eva-operator hub): the hub's view onto tenant works; moves a tenant between member clusters, deciding with multicluster/move.ts.
  hub: 6,
  'operator.ts': 7,
  'nats-bootstrap.ts': 7,
  // A command beside the operator: reads the cluster and NATS through the adapters, with the operator's settings.
  preflight: 7,
  'cli.ts': 8,
  // The kubectl plugin (its own executable, dist/kubectl-eva): an entry beside cli.ts, reading the API and the decommission's step list.
  'kubectl-eva': 8,
};

/** The layer name of a file: its top folder under src/, or its own name for files directly in src/. */
const unitOf = (file: string): string => relative(SRC, file).split('/')[0] ?? file;

function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)].map((m) => m[1] ?? '');
  return specifiers.map((spec) => resolve(dirname(file), spec));
}

function upwardImports(): string[] {
  const problems: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = unitOf(file);
    for (const target of relativeImports(file)) {
      const to = unitOf(target);
      const [fromLayer, toLayer] = [LAYER[from], LAYER[to]];
      if (fromLayer === undefined || toLayer === undefined) problems.push(`${relative(SRC, file)}: unplaced layer ${from} or ${to}`);
      else if (to !== from && toLayer >= fromLayer) problems.push(`${relative(SRC, file)} imports ${relative(SRC, target)} (${from} -> ${to})`);
    }
  }
  return problems;
}

/** Every production file (relative to src/) and the files it imports, type-only imports included. */
function importGraph(): Map<string, string[]> {
  return new Map(sourceFiles(SRC).map((file) => [relative(SRC, file), relativeImports(file).map((target) => relative(SRC, target))]));
}

/**
 * The import circles of a graph (Tarjan's strongly connected components): every set of two or more
 * files that reach each other through imports, and every file that imports itself; each sorted.
 */
export function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    order.set(node, order.size);
    low.set(node, order.size - 1);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!order.has(next)) visit(next);
      if (onStack.has(next)) low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
    }
    if (low.get(node) === order.get(node)) closeComponent(node);
  };
  /** `root` heads a strongly connected component: it and everything above it on the stack. */
  const closeComponent = (root: string): void => {
    const component: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = member === root ? undefined : stack.pop()) {
      onStack.delete(member);
      component.push(member);
    }
    if (component.length > 1 || (graph.get(root) ?? []).includes(root)) cycles.push(component.sort());
  };
  for (const node of graph.keys()) if (!order.has(node)) visit(node);
  return cycles;
}

/** Production files that may read process.env besides config.ts, and why it is not configuration there. */
const OTHER_ENVIRONMENT_READERS: Readonly<Record<string, string>> = {
  'adapters/helm.ts': 'hands an allow-listed part of its own environment down to the helm processes it starts',
};

const environmentReaders = (): string[] =>
  sourceFiles(SRC)
    .filter((file) => /process\.env\b/.test(readFileSync(file, 'utf8')))
    .map((file) => relative(SRC, file));

/** Above this many lines a file's header must say why it is not split: the words "over ~350 lines". */
const MAX_LINES = 360;
const LONG_FILE_REASON = 'over ~350 lines';
/** Over the limit while another branch of this session splits them; an entry fails once its file is short (remove it then). */
const BEING_SPLIT: Readonly<Record<string, string>> = {};

/** Files in src/ (tests too) over MAX_LINES, and whether their header comment gives the reason. */
function longFiles(): { file: string; reasoned: boolean }[] {
  return sourceFiles(SRC, true).flatMap((path) => {
    const text = readFileSync(path, 'utf8');
    if (text.split('\n').length <= MAX_LINES) return [];
    const header = /^\s*\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? '';
    return [{ file: relative(SRC, path), reasoned: header.replace(/\s*\n\s*\*\s*/g, ' ').includes(LONG_FILE_REASON) }];
  });
}

describe('layering', () => {
  it('every production import goes down the layout (no folder imports a folder above it)', () => {
    expect(upwardImports()).toEqual([]);
  });

  it('no import circle: no production file imports itself, directly or through others', () => {
    expect(importCycles(importGraph())).toEqual([]);
  });

  it('the environment is read in config.ts (and the few files OTHER_ENVIRONMENT_READERS names, with a reason)', () => {
    const readers = environmentReaders();
    expect(readers, 'the check sees the reader').toContain('config.ts');
    expect(readers.filter((file) => file !== 'config.ts' && !(file in OTHER_ENVIRONMENT_READERS))).toEqual([]);
  });

  it(`no file in src/ runs over ${String(MAX_LINES)} lines without saying why in its header`, () => {
    const long = longFiles();
    expect(long.filter((f) => f.reasoned).map((f) => f.file), 'the check sees long files and their reasons').toContain('runtime/workqueue.test.ts');
    expect(long.filter((f) => !f.reasoned && !(f.file in BEING_SPLIT)).map((f) => f.file)).toEqual([]);
    const split = Object.keys(BEING_SPLIT).filter((file) => !long.some((f) => f.file === file));
    expect(split, 'split since: remove from BEING_SPLIT').toEqual([]);
  });

  it('the check sees imports: the saga imports steps, and steps import adapters', () => {
    const edges = sourceFiles(SRC).flatMap((file) => relativeImports(file).map((t) => `${unitOf(file)}->${unitOf(t)}`));
    expect(edges).toContain('saga->steps');
    expect(edges).toContain('steps->adapters');
  });
});

describe('the import circle finder', () => {
  const graph = (edges: Record<string, string[]>): Map<string, string[]> => new Map(Object.entries(edges));

  it('finds a circle through three files, and not the file that only leads into it', () => {
    expect(importCycles(graph({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] }))).toEqual([['a', 'b', 'c']]);
  });

  it('finds two files importing each other (the kube.ts <-> tenant-objects.ts shape) and a file importing itself', () => {
    expect(importCycles(graph({ 'kube.ts': ['tenant-objects.ts'], 'tenant-objects.ts': ['kube.ts', 'informers.ts'], 'informers.ts': [], 'self.ts': ['self.ts'] }))).toEqual([
      ['kube.ts', 'tenant-objects.ts'],
      ['self.ts'],
    ]);
  });

  it('finds none where imports only go down: a diamond, and an import of a file outside the graph', () => {
    expect(importCycles(graph({ top: ['left', 'right'], left: ['bottom'], right: ['bottom', 'elsewhere'], bottom: [] }))).toEqual([]);
  });
});
