import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderedImages } from './check-images.ts';

const cli = join(import.meta.dirname, '../cli.ts');
const run = (args: readonly string[], input?: string): { status: number | null; stdout: string; stderr: string } =>
  spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', input });

const work = mkdtempSync(join(tmpdir(), 'eva-release-commands-'));
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});
const HEX = 'a'.repeat(64);
function imagesFile(text: string): string {
  const file = join(work, `images-${String(Math.random()).slice(2)}.txt`);
  writeFileSync(file, text);
  return file;
}

describe('eva-operator --help', () => {
  const commandsIn = (help: string): string[] =>
    [...(help.split('Commands:')[1] ?? '').matchAll(/^ {2}([a-z-]+)/gm)].map((m) => m[1] ?? '').filter((name) => name !== 'help');

  it('lists the user commands only; the script helpers stay callable (hidden), as scripts/lib/eva-cli.sh calls them', () => {
    const help = run(['--help']);
    expect(help.status).toBe(0);
    expect(commandsIn(help.stdout)).toEqual(['run', 'crd', 'version', 'nats-bootstrap', 'preflight', 'hub']);
    // Positive control: a hidden helper still runs (the other cases here call images and tenant-manifest).
    expect(run(['semver', 'valid', '1.2.3']).status).toBe(0);
  }, 30_000);
});

describe('eva-operator semver', () => {
  it('orders rc.10 after rc.9 (numeric pre-release identifiers), a release after its pre-releases', () => {
    expect(run(['semver', 'compare', '1.2.0-rc.10', '1.2.0-rc.9']).stdout).toBe('1\n');
    expect(run(['semver', 'compare', '1.2.0-rc.9', '1.2.0']).stdout).toBe('-1\n');
    expect(run(['semver', 'compare', '1.2.0+build.1', '1.2.0']).stdout).toBe('0\n');
  });
  it('valid exits 0 for strict semver only', () => {
    expect(run(['semver', 'valid', '1.4.0-rc.1']).status).toBe(0);
    expect(run(['semver', 'valid', 'v1.4.0']).status).toBe(1);
  });
});

describe('eva-operator images', () => {
  it('lines prints every image line with its number; comments and blank lines are not image lines', () => {
    const file = imagesFile(`# header\n\nghcr.io/aidonow/eva-forge:1.0.0@sha256:PLACEHOLDER\ndocker.io/library/nats:2.15.0-alpine@sha256:${HEX}\n`);
    expect(run(['images', 'lines', '--file', file]).stdout).toBe(
      `3\tghcr.io/aidonow/eva-forge\t1.0.0\tPLACEHOLDER\taidonow/eva-forge\n4\tdocker.io/library/nats\t2.15.0-alpine\t${HEX}\tlibrary/nats\n`,
    );
  });
  it('lines --own keeps only our own images, after checking every line', () => {
    const file = imagesFile(`ghcr.io/aidonow/eva-forge:1.0.0@sha256:PLACEHOLDER\ndocker.io/library/nats:2.15.0-alpine@sha256:PLACEHOLDER\n`);
    expect(run(['images', 'lines', '--file', file, '--own']).stdout).toBe('1\tghcr.io/aidonow/eva-forge\t1.0.0\tPLACEHOLDER\taidonow/eva-forge\n');
    const broken = run(['images', 'lines', '--file', imagesFile(`ghcr.io/aidonow/a:1@sha256:PLACEHOLDER\nnats:2@sha256:${HEX}\n`), '--own']);
    expect(broken.status).toBe(2);
  });
  it('archive-header names its writer and is comment only: the archive\'s first image line is image line 0, images/0', () => {
    const header = run(['images', 'archive-header', 'scripts/mirror-images.sh --archive']).stdout;
    expect(header).toContain('# Written by scripts/mirror-images.sh --archive: line N');
    const file = imagesFile(`${header}docker.io/library/nats:2.15.0-alpine@sha256:${HEX}\n`);
    expect(run(['images', 'lines', '--file', file]).stdout).toBe(`3\tdocker.io/library/nats\t2.15.0-alpine\t${HEX}\tlibrary/nats\n`);
  });
  it('lines refuses a malformed line, one without a registry host or one without a digest, naming it (exit 2)', () => {
    const malformed = run(['images', 'lines', '--file', imagesFile('ghcr.io/aidonow/x:1.0.0@sha256:short\n'), '--name', 'images.txt']);
    expect(malformed.status).toBe(2);
    expect(malformed.stderr).toContain('images.txt line 1: malformed');
    const hostless = run(['images', 'lines', '--file', imagesFile(`library/nats:1@sha256:${HEX}\n`), '--name', 'images.txt']);
    expect(hostless.status).toBe(2);
    expect(hostless.stderr).toContain('images.txt line 1: malformed, the registry is missing (write docker.io/library/nats:1)');
    const unpinned = run(['images', 'lines', '--file', imagesFile('docker.io/library/nats:1\n'), '--name', 'images.txt']);
    expect(unpinned.status).toBe(2);
    expect(unpinned.stderr).toContain('images.txt line 1: third-party image docker.io/library/nats:1 has no digest');
  });
  it('find matches by path and tag or digest, also a reference already at the mirror; exit 1 when not listed', () => {
    const file = imagesFile(`docker.io/library/nats:2.15.0-alpine@sha256:${HEX}\n`);
    expect(run(['images', 'find', 'docker.io/library/nats:2.15.0-alpine', '--file', file]).stdout).toBe(`library/nats\t2.15.0-alpine\t${HEX}\n`);
    expect(run(['images', 'find', `other.io/library/nats@sha256:${HEX}`, '--file', file]).stdout).toBe(`library/nats\t2.15.0-alpine\t${HEX}\n`);
    expect(run(['images', 'find', '127.0.0.1:5999/m/library/nats:2.15.0-alpine', '--file', file, '--mirror', '127.0.0.1:5999/m']).status).toBe(0);
    expect(run(['images', 'find', 'docker.io/library/nats:9.9.9', '--file', file]).status).toBe(1);
  });
  it('find lets the digest decide when the reference has one (also with a tag, as a pull does), and the path always', () => {
    const file = imagesFile(`docker.io/library/nats:2.15.0-alpine@sha256:${HEX}\n`);
    expect(run(['images', 'find', `docker.io/library/other@sha256:${HEX}`, '--file', file]).status).toBe(1);
    expect(run(['images', 'find', `docker.io/library/nats:9.9.9@sha256:${HEX}`, '--file', file]).stdout).toBe(`library/nats\t2.15.0-alpine\t${HEX}\n`);
    expect(run(['images', 'find', `docker.io/library/nats:2.15.0-alpine@sha256:${'b'.repeat(64)}`, '--file', file]).status).toBe(1);
  });
  it('registry accepts HOST[:PORT][/PREFIX] without trailing slashes, and refuses anything else (exit 2)', () => {
    expect(run(['images', 'registry', '127.0.0.1:5999/mirror/']).stdout).toBe('127.0.0.1:5999/mirror\n');
    expect(run(['images', 'registry', 'registry.internal']).stdout).toBe('registry.internal\n');
    for (const bad of ['https://registry.internal', 'r.io/UPPER', 'r.io:port', 'r.io/a b']) {
      const refused = run(['images', 'registry', bad]);
      expect(refused.status, bad).toBe(2);
      expect(refused.stderr).toContain('HOST[:PORT][/PREFIX]');
    }
  });
  it('write-digests fills only the named PLACEHOLDER lines and keeps every other byte', () => {
    const text = `# keep me\nghcr.io/aidonow/a:1.0.0@sha256:PLACEHOLDER\nghcr.io/aidonow/b:1.0.0@sha256:PLACEHOLDER\n`;
    const file = imagesFile(text);
    expect(run(['images', 'write-digests', '--file', file], `2 sha256:${HEX}\n`).status).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(text.replace('a:1.0.0@sha256:PLACEHOLDER', `a:1.0.0@sha256:${HEX}`));
    const refused = run(['images', 'write-digests', '--file', file], `2 sha256:${HEX}\n`);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('line 2 has no PLACEHOLDER digest');
  });
});

describe('eva-operator tenant-manifest', () => {
  const args = ['tenant-manifest', '--name', 'democo', '--code', 'DEMOCO', '--tier', 'Customer', '--wave', '2', '--operator-version', '1.0.0'];
  it('prints the EvaTenant as YAML, the versions as strings and the wave as a number', () => {
    const printed = run(args);
    expect(printed.status).toBe(0);
    expect(parse(printed.stdout)).toEqual({
      apiVersion: 'eva.aidonow.com/v1alpha1',
      kind: 'EvaTenant',
      metadata: { name: 'democo' },
      spec: { capsuleCode: 'DEMOCO', tier: 'Customer', wave: 2, seedsVersion: '1.0.0', operatorVersion: '1.0.0' },
    });
  });
  it('keeps a value data: a code carrying YAML is refused by the schema (exit 2), not written as structure', () => {
    const refused = run(args.map((a) => (a === 'DEMOCO' ? 'DEMOCO\n  tier: Platform' : a)));
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('/spec/capsuleCode');
    expect(refused.stdout).toBe('');
  });
});

describe('check-images helpers', () => {
  it('reads every image: of a rendered manifest once', () => {
    expect(renderedImages('spec:\n  image: "a:1"\n  - image: b:2\n  image: a:1\n')).toEqual(['a:1', 'b:2']);
  });
});
