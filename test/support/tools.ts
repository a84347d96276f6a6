/** Locates the pinned binaries (helm, kubectl, nats-server, ...) built by scripts/lib/build-components.sh. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

const componentDirs = new Map<string, string>();

/** A component set's cache folder (scripts/lib/build-components.sh), built first if needed (slow when cold). */
function componentDir(set: 'control-plane' | 'helm-server'): string {
  let dir = componentDirs.get(set);
  if (dir === undefined) {
    dir = execFileSync('bash', [join(repoRoot, 'scripts/lib/build-components.sh'), set], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    componentDirs.set(set, dir);
  }
  return dir;
}

/** The cache folder holding the pinned binaries; builds them first if needed (slow when cold). */
export function binDir(): string {
  return componentDir('control-plane');
}

export function tool(name: 'helm' | 'kubectl' | 'nats-server' | 'etcd' | 'kwokctl'): string {
  return join(binDir(), name);
}

/** What /proc/<pid>/stat says of a process: its command name, state letter and parent; undefined when gone. */
export function processStat(pid: number): { comm: string; state: string; ppid: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read around its last ')'.
  const close = stat.lastIndexOf(')');
  const [state = '', ppid = ''] = stat.slice(close + 2).split(' ');
  return { comm: stat.slice(stat.indexOf('(') + 1, close), state, ppid: Number(ppid) };
}

/**
 * Whether a process still runs. A zombie does not: it has exited and only waits to be reaped, which
 * can be forever here (an orphan goes to a PID 1 that does not reap), yet signal 0 still reaches it.
 */
export function processAlive(pid: number): boolean {
  const state = processStat(pid)?.state;
  return state !== undefined && state !== 'Z' && state !== 'X';
}

/** The operator's helm server (helm-server/, built by build-components.sh helm-server; seconds when warm). */
export function helmServerBinary(): string {
  return join(componentDir('helm-server'), 'eva-helm-server');
}
