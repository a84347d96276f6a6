/**
 * dist/kubectl-eva, built by `npm run build:cli`, on a machine with only kubectl: from an empty folder
 * with an empty environment (`env -i`) whose PATH holds kubectl and the plugin and nothing else (no
 * node), `kubectl eva version` prints the version it was built as (package.json's) and `--help` the
 * commands; the executable copied alone into another folder runs the same.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, tool } from '../support/tools.ts';

const work = mkdtempSync(join(tmpdir(), 'kubectl-eva-binary-'));
const [bin, empty, alone] = ['bin', 'empty', 'alone'].map((dir) => join(work, dir)) as [string, string, string];
const { version } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };

/** `env -i PATH=<bin> HOME=<empty>` from the empty folder. */
const bare = (command: string, args: readonly string[], cwd = empty): { status: number | null; stdout: string; stderr: string; error?: Error } =>
  spawnSync(command, args, { cwd, env: { PATH: bin, HOME: empty }, encoding: 'utf8', timeout: 60_000 });

beforeAll(() => {
  const built = spawnSync('npm', ['run', '--silent', 'build:cli'], { cwd: repoRoot, encoding: 'utf8', timeout: 280_000 });
  expect(built.status, built.stderr).toBe(0);
  console.log(`[kubectl-eva] ${built.stdout.trim()}`);
  for (const dir of [bin, empty, alone]) mkdirSync(dir);
  copyFileSync(tool('kubectl'), join(bin, 'kubectl'));
  copyFileSync(join(repoRoot, 'dist/kubectl-eva'), join(bin, 'kubectl-eva'));
  copyFileSync(join(repoRoot, 'dist/kubectl-eva'), join(alone, 'kubectl-eva'));
  spawnSync('chmod', ['0755', join(bin, 'kubectl'), join(bin, 'kubectl-eva'), join(alone, 'kubectl-eva')]);
}, 300_000);

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe('kubectl-eva, the single executable', () => {
  it('the machine has only kubectl and the plugin on PATH: no node (the positive control of "Node inside")', () => {
    expect(readdirSync(bin).sort()).toEqual(['kubectl', 'kubectl-eva']);
    expect(bare('node', ['--version']).error?.message).toMatch(/ENOENT/);
    expect(bare('kubectl', ['plugin', 'list']).stdout).toContain(join(bin, 'kubectl-eva'));
  });

  it('kubectl eva version prints the version it was built as (package.json), not read at run time', () => {
    const run = bare('kubectl', ['eva', 'version']);
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe(`${version}\n`);
  });

  it('kubectl eva --help lists the day-2 commands, without the experimental SEA warning', () => {
    const run = bare('kubectl', ['eva', '--help']);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Usage: kubectl eva [options] [command]');
    const commands = [...(run.stdout.split('Commands:')[1] ?? '').matchAll(/^ {2}([a-z]+)/gm)].map((m) => m[1]);
    expect(commands).toEqual(['status', 'retained', 'restore', 'purge', 'force', 'rotate', 'version', 'help']);
    expect(run.stderr).toBe('');
  });

  it('copied alone into another folder, it runs the same (nothing beside it is read)', () => {
    const run = bare('./kubectl-eva', ['version'], alone);
    expect(run.stdout).toBe(`${version}\n`);
    expect(readdirSync(alone)).toEqual(['kubectl-eva']);
  });
});
