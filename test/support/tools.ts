/** Locates the pinned binaries (helm, kubectl, nats-server, ...) built by scripts/lib/build-components.sh. */
import { execFileSync } from 'node:child_process';
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

/** Whether a process exists (signal 0 delivers nothing, only checks). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The operator's helm server (helm-server/, built by build-components.sh helm-server; seconds when warm). */
export function helmServerBinary(): string {
  return join(componentDir('helm-server'), 'eva-helm-server');
}
