/** Helm as the tests observe it: releases through the pinned CLI, running helm processes through /proc. */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { tool } from '../../test/support/tools.ts';

export interface HelmRelease {
  name: string;
  revision: string;
  status: string;
}

/** Releases of `namespace`, in every status (Helm 4 lists them all by default), sorted by name. */
export function helmReleases(namespace: string): HelmRelease[] {
  const out = spawnSync(tool('helm'), ['list', '-n', namespace, '-o', 'json'], { encoding: 'utf8', env: process.env });
  if (out.status !== 0) throw new Error(`helm list -n ${namespace} failed: ${out.stderr}`);
  return (JSON.parse(out.stdout) as HelmRelease[])
    .map(({ name, revision, status }) => ({ name, revision, status }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

export interface HelmProcess {
  pid: number;
  argv: string[];
}

/**
 * The helm processes running with `--namespace <namespace>`, read from /proc in-process: no process
 * to spawn, so it is cheap enough to repeat every few milliseconds.
 */
export function helmProcesses(namespace: string): HelmProcess[] {
  const found: HelmProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile
    }
    const flag = argv.indexOf('--namespace');
    if (argv[0]?.split('/').pop() === 'helm' && flag > 0 && argv[flag + 1] === namespace) found.push({ pid: Number(entry), argv });
  }
  return found;
}
