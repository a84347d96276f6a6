import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAssignments, renderTemplate } from './render-template.ts';

describe('render-template', () => {
  it('substitutes the names given, and only those (as envsubst with a list of names)', () => {
    const values = new Map([['STATE', '/var/x'], ['EMPTY', '']]);
    expect(renderTemplate('root = "${STATE}/c" ${EMPTY}|$STATE ${OTHER} $${STATE}', values)).toBe('root = "/var/x/c" |$STATE ${OTHER} $/var/x');
  });

  it('takes a value as data, newlines and = included; refuses an argument that is not NAME=value', () => {
    expect(parseAssignments(['A=x=y\nz', 'B='])).toEqual(new Map([['A', 'x=y\nz'], ['B', '']]));
    expect(() => parseAssignments(['-x'])).toThrow('expected NAME=value');
  });

  it('writes what envsubst writes for a real template (scripts/dev-cluster/nats.conf)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'eva-render-'));
    try {
      const template = join(import.meta.dirname, '../dev-cluster/nats.conf');
      const args = ['SERVER_NAME=eva-dev', 'LISTEN=127.0.0.1:1', 'HTTP=127.0.0.1:2', 'AUTH_INCLUDE=../a/nats-auth.conf', 'STORE=/s'];
      const ours = spawnSync(process.execPath, [join(import.meta.dirname, 'render-template.ts'), template, ...args], { encoding: 'utf8' });
      expect(ours.status, ours.stderr).toBe(0);
      const names = args.map((a) => `\${${a.split('=')[0] ?? ''}}`).join(' ');
      const theirs = spawnSync('envsubst', [names], { encoding: 'utf8', input: readFileSync(template, 'utf8'), env: Object.fromEntries(args.map((a) => a.split('=') as [string, string])) });
      expect(theirs.status, 'envsubst (gettext-base) must be installed for this comparison').toBe(0);
      expect(ours.stdout).toBe(theirs.stdout);
      writeFileSync(join(dir, 'bad'), '');
      expect(spawnSync(process.execPath, [join(import.meta.dirname, 'render-template.ts'), join(dir, 'bad'), 'oops'], { encoding: 'utf8' }).status).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
