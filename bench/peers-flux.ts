/**
 * Flux's side of bench/peers.ts: its controllers (built by scripts/lib/build-components.sh flux) run as
 * local processes against the benchmark's control plane, and a loopback HelmRepository serves the
 * operator's own module charts.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createReadStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { killOnExit, stopChild } from '../test/support/child-processes.ts';
import { freePort } from '../test/support/ports.ts';
import { repoRoot } from '../test/support/tools.ts';
import { requiredEnv } from '../test/support/kubectl.ts';

export const FLUX_CONTROLLERS = ['source-controller', 'helm-controller'] as const;
export type FluxController = (typeof FLUX_CONTROLLERS)[number];

/** The cached Flux set (controllers and crds/), built first when missing. */
export function fluxDir(): string {
  return execFileSync('bash', [join(repoRoot, 'scripts/lib/build-components.sh'), 'flux'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

function versionsEnv(): Record<string, string> {
  const pairs = readFileSync(join(repoRoot, 'versions.env'), 'utf8')
    .split('\n')
    .map((line) => /^([A-Z_]+)=(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null);
  return Object.fromEntries(pairs.map((match) => [match[1] ?? '', match[2] ?? '']));
}

export function fluxVersions(): Record<FluxController | 'flux', string> {
  const env = versionsEnv();
  return {
    flux: env['FLUX_VERSION'] ?? '?',
    'source-controller': env['FLUX_SOURCE_CONTROLLER_VERSION'] ?? '?',
    'helm-controller': env['FLUX_HELM_CONTROLLER_VERSION'] ?? '?',
  };
}

/**
 * GOMEMLIMIT as Flux's manifests set it: the container's limits.memory (a resourceFieldRef), read
 * from the controller's own config/manager/deployment.yaml in the Go module cache (the build fetched it).
 */
export function fluxMemoryLimitBytes(controller: FluxController): number {
  const version = fluxVersions()[controller];
  const download = JSON.parse(execFileSync('go', ['mod', 'download', '-json', `github.com/fluxcd/${controller}@v${version}`], { encoding: 'utf8', env: { ...process.env, GOTOOLCHAIN: 'local' } })) as { Dir: string };
  const documents = readFileSync(join(download.Dir, 'config/manager/deployment.yaml'), 'utf8');
  const deployment = parse(documents) as { spec: { template: { spec: { containers: { resources: { limits: { memory: string } } }[] } } } };
  const limit = deployment.spec.template.spec.containers[0]?.resources.limits.memory ?? '';
  const match = /^(\d+)(Mi|Gi)$/.exec(limit);
  if (!match) throw new Error(`cannot read ${controller}'s memory limit "${limit}"`);
  return Number(match[1]) * 2 ** (match[2] === 'Gi' ? 30 : 20);
}

export interface ChartRepository {
  url: string;
  close(): Promise<void>;
}

/** `helm package` of the charts and `helm repo index`, served by a static HTTP server on 127.0.0.1. */
export async function serveCharts(charts: readonly string[]): Promise<ChartRepository> {
  const dir = mkdtempSync(join(tmpdir(), 'eva-bench-charts-'));
  const helm = join(requiredEnv('EVA_TOOLS_DIR'), 'helm');
  for (const chart of charts) execFileSync(helm, ['package', chart, '--destination', dir], { stdio: 'ignore' });
  const port = await freePort();
  const url = `http://127.0.0.1:${String(port)}`;
  execFileSync(helm, ['repo', 'index', dir, '--url', url], { stdio: 'ignore' });
  const server: Server = createServer((request, response) => {
    const name = (request.url ?? '/').split('?')[0]?.replace(/^\/+/, '') ?? '';
    // Only the index and the packaged charts: no path leaves the folder.
    if (!/^[a-z0-9][a-z0-9.-]*\.(tgz|yaml)$/.test(name)) {
      response.writeHead(404).end();
      return;
    }
    createReadStream(join(dir, name))
      .once('error', () => response.writeHead(404).end())
      .once('open', () => response.writeHead(200))
      .pipe(response);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url,
    close: () =>
      new Promise((resolve) => {
        server.close(() => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
      }),
  };
}

export interface FluxProcesses {
  pids: Record<FluxController, number>;
  logs(): string;
  stop(): Promise<void>;
}

// Without leader election: out of cluster it needs a namespace flag these versions lack, and one
// replica has no one to elect (leases are not counted by the audit policy anyway).
async function controllerArgs(controller: FluxController, concurrency: number, storage: string, healthPort: number): Promise<string[]> {
  const args = ['--watch-all-namespaces', '--log-level=info', '--log-encoding=json', `--concurrent=${String(concurrency)}`];
  args.push(`--metrics-addr=127.0.0.1:${String(await freePort())}`, `--health-addr=127.0.0.1:${String(healthPort)}`);
  if (controller === 'source-controller') {
    const storagePort = String(await freePort());
    args.push(`--storage-path=${storage}`, `--storage-addr=127.0.0.1:${storagePort}`, `--storage-adv-addr=127.0.0.1:${storagePort}`);
  }
  return args;
}

/** Until the controller's /readyz answers 200; fails at once when a controller exited. */
async function untilHealthy(port: number, children: readonly ChildProcess[], logs: () => string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (children.some((child) => child.exitCode !== null || child.signalCode !== null)) throw new Error(`a Flux controller exited: ${logs().slice(-2000)}`);
    const healthy = await fetch(`http://127.0.0.1:${String(port)}/readyz`).then((r) => r.ok, () => false);
    if (healthy) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`a Flux controller is not ready after 120 s: ${logs().slice(-2000)}`);
}

/** Both controllers as processes (no --kubeconfig flag: KUBECONFIG), every listener on its own loopback port. */
export async function startFlux(dir: string, concurrency: number): Promise<FluxProcesses> {
  const storage = mkdtempSync(join(tmpdir(), 'eva-bench-flux-storage-'));
  let output = '';
  const children: Partial<Record<FluxController, ChildProcess>> = {};
  const healthPorts: number[] = [];
  for (const controller of FLUX_CONTROLLERS) {
    const healthPort = await freePort();
    healthPorts.push(healthPort);
    const child = spawn(join(dir, controller), await controllerArgs(controller, concurrency, storage, healthPort), {
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: process.env['HOME'] ?? '/root',
        KUBECONFIG: requiredEnv('KUBECONFIG'),
        RUNTIME_NAMESPACE: 'flux-system',
        GOMEMLIMIT: String(fluxMemoryLimitBytes(controller)),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const append = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-200_000);
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    killOnExit(child);
    children[controller] = child;
  }
  const pidOf = (controller: FluxController): number => children[controller]?.pid ?? -1;
  for (const port of healthPorts) await untilHealthy(port, Object.values(children), () => output);
  return {
    pids: { 'source-controller': pidOf('source-controller'), 'helm-controller': pidOf('helm-controller') },
    logs: () => output,
    stop: async () => {
      await Promise.all(Object.values(children).map((child) => stopChild(child)));
      rmSync(storage, { recursive: true, force: true });
    },
  };
}
