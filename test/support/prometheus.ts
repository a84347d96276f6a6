/**
 * A real Prometheus server as a child process, scraping loopback targets every second: the one
 * test/tools/build-prometheus.sh builds (and scripts/test.sh's install step, for the rollout gate's
 * tests), used by bench/render-dashboard.ts, test/rollout/prometheus-gate.test.ts and e2e/rollout.test.ts.
 */
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { killOnExit, stopChild } from './child-processes.ts';
import { freePort } from './ports.ts';

export const PROMETHEUS_VERSION = '3.15.0';

/** Where test/tools/build-prometheus.sh puts it (outside the repository, like the other built components). */
export const prometheusBinary = (): string => join(homedir(), '.cache/eva-operator', `prometheus-${PROMETHEUS_VERSION}`, 'prometheus');

export function loopbackOnly(url: string, what: string): void {
  const host = new URL(url).hostname;
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(host)) throw new Error(`${what} ${url} is not a loopback address`);
}

export interface PrometheusProcess {
  readonly url: string;
  readonly version: string;
  stop(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function ready(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/-/ready`)).ok;
  } catch {
    return false;
  }
}

/** Prometheus scraping `targets` (host:port, loopback only) every second, its data under `dir`. */
export async function startPrometheus(binary: string, dir: string, targets: readonly string[]): Promise<PrometheusProcess> {
  for (const target of targets) loopbackOnly(`http://${target}`, 'scrape target');
  const config = join(dir, 'prometheus.yml');
  const scrapeEvery = { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' };
  writeFileSync(config, stringify({ global: scrapeEvery, scrape_configs: [{ job_name: 'eva-operator', static_configs: [{ targets }] }] }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const version = execFileSync(binary, ['--version'], { encoding: 'utf8' }).split('\n')[0] ?? '';
  const child = spawn(binary, [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  killOnExit(child);
  for (let i = 0; i < 300 && !(await ready(url)); i += 1) {
    if (child.exitCode !== null) throw new Error(`Prometheus exited:\n${output}`);
    await sleep(100);
  }
  return { url, version, stop: async () => { await stopChild(child); } };
}
