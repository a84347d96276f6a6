import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { processAlive, processStat } from './tools.ts';

describe('processAlive', () => {
  it('a zombie (exited, not reaped yet) does not run; its parent does (positive control)', async () => {
    // bash starts a child that exits a second later, then becomes `sleep`, which never reaps it: a
    // zombie. (A child that exits at once may be reaped by bash itself before the exec, on a busy machine.)
    const parent = spawn('bash', ['-c', 'sleep 1 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const [line] = (await once(parent.stdout, 'data')) as [Buffer];
      const zombie = Number(line.toString().trim());
      await expect.poll(() => processStat(zombie)?.state, { timeout: 10_000 }).toBe('Z');
      expect(processAlive(zombie)).toBe(false);
      expect(processAlive(parent.pid ?? -1)).toBe(true);
      expect(processStat(parent.pid ?? -1)).toMatchObject({ comm: 'sleep', ppid: process.pid });
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('a process that is gone does not run', () => {
    expect(processAlive(2 ** 22 + 1)).toBe(false);
    expect(processStat(2 ** 22 + 1)).toBeUndefined();
  });
});
