/** Locates the pinned binaries (helm, kubectl, nats-server, ...) built by scripts/lib/build-components.sh. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

let cachedBinDir: string | undefined;

/** The cache folder holding the pinned binaries; builds them first if needed (slow when cold). */
export function binDir(): string {
  cachedBinDir ??= execFileSync('bash', [join(repoRoot, 'scripts/lib/build-components.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  return cachedBinDir;
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

let cachedHelmServer: string | undefined;

/** The operator's helm server (helm-server/, built by build-components.sh helm-server; seconds when warm). */
export function helmServerBinary(): string {
  cachedHelmServer ??= join(
    execFileSync('bash', [join(repoRoot, 'scripts/lib/build-components.sh'), 'helm-server'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim(),
    'eva-helm-server',
  );
  return cachedHelmServer;
}
