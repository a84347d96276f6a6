/**
 * Child processes of tests and benchmarks (operators, NATS, Flux's controllers, Prometheus): never
 * outliving the runner that started them (a crashed runner must not leave an operator claiming
 * tenants on the shared cluster), and stopped the same way everywhere.
 */
import type { ChildProcess } from 'node:child_process';

/** SIGKILLs `child` (by default; `kill` otherwise) if this process exits first; the listener goes once the child has exited. */
export function killOnExit(child: ChildProcess, kill = (): void => { child.kill('SIGKILL'); }): void {
  process.once('exit', kill);
  child.once('exit', () => process.removeListener('exit', kill));
}

const hasExited = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;

/** Resolves with the exit code once `child` has exited (null: killed by a signal). */
export function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (hasExited(child)) resolve(child.exitCode);
    else child.once('exit', (code) => { resolve(code); });
  });
}

/** SIGTERM, then SIGKILL if it still runs after `graceMs`; resolves with the exit code once it exited. */
export function stopChild(child: ChildProcess, graceMs = 15_000): Promise<number | null> {
  if (hasExited(child)) return Promise.resolve(child.exitCode);
  const force = setTimeout(() => child.kill('SIGKILL'), graceMs);
  force.unref();
  const done = exited(child).finally(() => {
    clearTimeout(force);
  });
  child.kill('SIGTERM');
  return done;
}

/** Whether a process of the group `pgid` is left. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends `signal` to every process of the group that `child` (spawned `detached`) leads, if any is left. */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid !== undefined && groupAlive(child.pid)) process.kill(-child.pid, signal);
}

/** Resolves with `child`'s exit code once it and every other process of its group (spawned `detached`) have exited. */
export async function groupExited(child: ChildProcess): Promise<number | null> {
  const code = await exited(child);
  while (child.pid !== undefined && groupAlive(child.pid)) await new Promise((resolve) => setTimeout(resolve, 100));
  return code;
}
