import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createLogger } from '../log.ts';
import {
  assertSecretsDirIsTmpfs,
  removeStaleSecretFiles,
  SecretsDirError,
  TMPFS_MAGIC,
  writeSecretValuesFile,
} from './secret-values-file.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

function capturingLogger(): { log: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger('debug', { write: (line: string) => lines.push(line) }), lines };
}

describe('secret values files', () => {
  let shmDir: string;
  let diskDir: string;

  beforeAll(() => {
    // /dev/shm is a tmpfs on Linux; assert it so a surprising machine fails loudly instead of lying.
    expect(statfsSync('/dev/shm').type).toBe(TMPFS_MAGIC);
    shmDir = mkdtempSync('/dev/shm/eva-secret-test-');
    diskDir = mkdtempSync(join(repoRoot, '.secret-test-'));
    expect(statfsSync(diskDir).type).not.toBe(TMPFS_MAGIC);
  });

  afterAll(() => {
    rmSync(shmDir, { recursive: true, force: true });
    rmSync(diskDir, { recursive: true, force: true });
  });

  it('writes the values as YAML in a 0600 file on tmpfs and removes it at the end of the block', () => {
    const { log } = capturingLogger();
    const values = { nats: { url: 'nats://x:4222', user: 'u', password: 'p4ss' }, credentials: { 'db-password': '007' } };
    let path = '';
    {
      using file = writeSecretValuesFile(values, { dir: shmDir, allowNonTmpfs: false, log });
      path = file.path;
      expect(path.startsWith(`${shmDir}/`)).toBe(true);
      expect(path.endsWith('.yaml')).toBe(true);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(parse(readFileSync(path, 'utf8'))).toEqual(values);
    }
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(shmDir)).toEqual([]);
  });

  it('removes the file when the block throws', () => {
    const { log } = capturingLogger();
    const run = (): void => {
      using file = writeSecretValuesFile({ a: 1 }, { dir: shmDir, allowNonTmpfs: false, log });
      throw new Error(`boom ${file.path}`);
    };
    expect(run).toThrow(/boom/);
    expect(readdirSync(shmDir)).toEqual([]);
  });

  it('gives every call its own file', () => {
    const { log } = capturingLogger();
    using a = writeSecretValuesFile({ a: 1 }, { dir: shmDir, allowNonTmpfs: false, log });
    using b = writeSecretValuesFile({ b: 2 }, { dir: shmDir, allowNonTmpfs: false, log });
    expect(a.path).not.toBe(b.path);
    expect(readdirSync(shmDir)).toHaveLength(2);
  });

  it('refuses a folder that is not a tmpfs, naming the folder and the override', () => {
    const { log } = capturingLogger();
    expect(() => writeSecretValuesFile({ a: 1 }, { dir: diskDir, allowNonTmpfs: false, log })).toThrow(SecretsDirError);
    expect(() => { assertSecretsDirIsTmpfs(diskDir, false, log); }).toThrow(
      new RegExp(`HELM_SECRETS_DIR ${diskDir} is not a tmpfs.*HELM_SECRETS_ALLOW_NON_TMPFS`),
    );
    expect(readdirSync(diskDir)).toEqual([]);
  });

  it('refuses a folder that does not exist', () => {
    const { log } = capturingLogger();
    expect(() => { assertSecretsDirIsTmpfs(join(shmDir, 'missing'), true, log); }).toThrow(/is not usable/);
  });

  it('with the override, writes to a non-tmpfs folder and warns on every use', () => {
    const { log, lines } = capturingLogger();
    for (let i = 0; i < 3; i += 1) {
      using file = writeSecretValuesFile({ password: 'hunter2' }, { dir: diskDir, allowNonTmpfs: true, log });
      expect(existsSync(file.path)).toBe(true);
    }
    const warnings = lines.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(3);
    expect(warnings[0]?.msg).toMatch(/is not a tmpfs/);
    expect(lines.join('\n')).not.toContain('hunter2');
    expect(readdirSync(diskDir)).toEqual([]);
  });

  it('removes stale values files a crash left, and nothing else', () => {
    const dir = join(shmDir, 'stale');
    mkdirSync(dir);
    writeFileSync(join(dir, 'eva-values-abc123.yaml'), 'password: x\n');
    writeFileSync(join(dir, 'eva-values-def456.yaml'), 'password: y\n');
    writeFileSync(join(dir, 'unrelated.txt'), 'keep');
    expect(removeStaleSecretFiles(dir)).toBe(2);
    expect(readdirSync(dir)).toEqual(['unrelated.txt']);
  });
});
