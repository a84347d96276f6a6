/**
 * scripts/check-images.sh against the real files (passes; --release fails on our own PLACEHOLDER
 * digests only, and passes once they are filled in) and against broken copies in a temporary folder (each problem fails, naming its line).
 * Uses the pinned helm binary: the check renders every chart.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MODULES } from '../../src/api/modules.ts';
import { repoRoot, tool } from '../support/tools.ts';

const script = join(repoRoot, 'scripts/check-images.sh');
const realImages = readFileSync(join(repoRoot, 'images.txt'), 'utf8');

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

function check(args: readonly string[] = []): Run {
  const result = spawnSync('bash', [script, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', HELM: tool('helm') },
    timeout: 120_000,
  });
  if (result.error) throw result.error;
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** 1-based number of the first images.txt line starting with `prefix`. */
function lineOf(text: string, prefix: string): number {
  const index = text.split('\n').findIndex((line) => line.startsWith(prefix));
  if (index === -1) throw new Error(`no line starting with ${prefix}`);
  return index + 1;
}

const imageLines = (text: string): string[] => text.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));

beforeAll(() => {
  expect(existsSync(tool('helm'))).toBe(true);
}, 3_600_000);

describe('images.txt', () => {
  it('lists the operator, every module, the Dockerfile bases and NATS, each with a registry', () => {
    const repositories = imageLines(realImages).map((line) => line.slice(0, line.lastIndexOf(':', line.indexOf('@'))));
    expect(repositories).toEqual(
      expect.arrayContaining([
        'ghcr.io/aidonow/eva-operator',
        ...MODULES.map((m) => `ghcr.io/aidonow/${m}`),
        'docker.io/library/node',
        'docker.io/library/golang',
        'docker.io/library/nats',
      ]),
    );
  });

  it('every third-party digest says where it was read (repository, file and commit)', () => {
    const lines = realImages.split('\n');
    lines.forEach((line, index) => {
      if (line.startsWith('#') || line.trim() === '' || line.startsWith('ghcr.io/aidonow/') || line.endsWith('@sha256:PLACEHOLDER')) return;
      expect(lines[index - 1] ?? '', `line ${index + 1} ${line}`).toMatch(/^#\s+\S+\/\S+ \S+ @ [0-9a-f]{40}$/);
    });
  });
});

describe('scripts/check-images.sh on the real files', () => {
  it('passes; every third-party image has its published digest (no PLACEHOLDER but our own)', () => {
    const run = check();
    expect(run.stderr).not.toContain('ERROR');
    expect(run.stderr).not.toContain('third-party image');
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^check-images: OK: \d+ images listed; \d+ chart image references and 4 Dockerfile base images are listed/);
    expect(imageLines(realImages).filter((l) => !l.startsWith('ghcr.io/aidonow/') && l.endsWith('PLACEHOLDER'))).toEqual([]);
  });

  it('--release fails on every PLACEHOLDER, naming each line: only our own images, not pushed yet', () => {
    const run = check(['--release']);
    expect(run.status).toBe(1);
    const placeholders = imageLines(realImages).filter((line) => line.endsWith('@sha256:PLACEHOLDER'));
    expect(placeholders.length).toBe(MODULES.length + 1);
    expect(placeholders.filter((line) => !line.startsWith('ghcr.io/aidonow/'))).toEqual([]);
    for (const line of placeholders) {
      const key = line.slice(0, line.indexOf('@'));
      expect(run.stderr).toContain(`images.txt line ${String(lineOf(realImages, line))}: ${key} still has the PLACEHOLDER digest`);
    }
    expect(run.stderr).toContain(`check-images: ${String(placeholders.length)} problem(s)`);
    expect(placeholders.filter((line) => !line.startsWith('ghcr.io/aidonow/'))).toEqual([]);
  });
});

describe('scripts/check-images.sh on broken copies', () => {
  let root: string;
  const images = (): string => readFileSync(join(root, 'images.txt'), 'utf8');
  const write = (file: string, text: string): void => {
    writeFileSync(join(root, file), text);
  };
  const edit = (file: string, from: string | RegExp, to: string): void => {
    const text = readFileSync(join(root, file), 'utf8');
    const changed = text.replace(from, to);
    expect(changed, `${file}: ${String(from)} not found`).not.toBe(text);
    write(file, changed);
  };
  const failsWith = (...messages: string[]): void => {
    const run = check(['--root', root]);
    expect(run.status, run.stderr).toBe(1);
    for (const message of messages) expect(run.stderr).toContain(message);
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'eva-check-images-'));
    for (const file of ['images.txt', 'Dockerfile', 'versions.env']) copyFileSync(join(repoRoot, file), join(root, file));
    cpSync(join(repoRoot, 'charts'), join(root, 'charts'), { recursive: true });
    // The copy passes as it is: every failure below comes from the one change each test makes.
    expect(check(['--root', root]).status).toBe(0);
  });

  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('--release passes once the release step filled in our own digests (the positive control of --release)', () => {
    edit('images.txt', /^(ghcr\.io\/aidonow\/[^@\n]+)@sha256:PLACEHOLDER$/gm, `$1@sha256:${'ab'.repeat(32)}`);
    const run = check(['--release', '--root', root]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('no PLACEHOLDER (release)');
  });

  it('a third-party line without a digest fails, naming the line', () => {
    const line = lineOf(images(), 'docker.io/library/node:');
    edit('images.txt', /^(docker\.io\/library\/node:[^@\n]+)@sha256:[0-9a-f]{64}$/m, '$1');
    failsWith(`images.txt line ${String(line)}: third-party image docker.io/library/node:24.21.0-slim has no digest`);
  });

  it('a malformed line fails, naming the line', () => {
    write('images.txt', `${images()}this is not an image\n`);
    failsWith(`images.txt line ${String(images().split('\n').length - 1)}: malformed`);
  });

  it('a digest that is not 64 hex digits fails as malformed', () => {
    const line = lineOf(images(), 'docker.io/library/golang:');
    edit('images.txt', /^(docker\.io\/library\/golang:[^@\n]+)@sha256:[0-9a-f]{64}$/m, '$1@sha256:abc123');
    failsWith(`images.txt line ${String(line)}: malformed`);
  });

  it('a line without a registry fails as malformed', () => {
    const line = lineOf(images(), 'docker.io/library/node:');
    edit('images.txt', /^docker\.io\/library\/node:/m, 'node:');
    failsWith(`images.txt line ${String(line)}: malformed, the registry is missing (write docker.io/library/node:24.21.0-slim)`);
  });

  it('an image listed twice fails', () => {
    const first = imageLines(images())[0] ?? '';
    write('images.txt', `${images()}${first}\n`);
    failsWith('is listed twice');
  });

  it('an image the operator chart renders that is not listed fails (nats.enabled=true)', () => {
    edit('images.txt', /^docker\.io\/library\/nats:.*\n/m, '');
    failsWith('charts/eva-operator renders image docker.io/library/nats:2.15.0-alpine is not listed in images.txt');
  });

  it('a module image not listed fails for every tier', () => {
    edit('images.txt', /^ghcr\.io\/aidonow\/orbit-crm:.*\n/m, '');
    for (const tier of ['Starter', 'Customer', 'Enterprise', 'Platform']) {
      failsWith(`charts/modules/orbit-crm (tier ${tier}) renders image ghcr.io/aidonow/orbit-crm:1.0.0 is not listed in images.txt`);
    }
  });

  it('a chart image changed in values.yaml and not listed fails', () => {
    edit('charts/modules/eva-shell/values.yaml', /tag: "?1\.0\.0"?/, 'tag: "1.0.1"');
    failsWith('renders image ghcr.io/aidonow/eva-shell:1.0.1 is not listed in images.txt');
  });

  it('a Dockerfile FROM that is not listed fails, naming the Dockerfile line', () => {
    const extra = `FROM docker.io/library/alpine:3.24.1@sha256:${'ab'.repeat(32)} AS extra\n`;
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    write('Dockerfile', `${dockerfile}${extra}`);
    failsWith(`Dockerfile line ${String(dockerfile.split('\n').length)}: FROM docker.io/library/alpine:3.24.1@sha256:${'ab'.repeat(32)} is not listed in images.txt`);
  });

  it('a Dockerfile FROM without a digest fails (the FROM names it through ARG GOLANG_IMAGE)', () => {
    edit('Dockerfile', /(ARG GOLANG_IMAGE=docker\.io\/library\/golang:[^@\s]+)@sha256:[0-9a-f]{64}/, '$1');
    failsWith('the default of ARG GOLANG_IMAGE): FROM docker.io/library/golang:1.26.8-alpine is not pinned by digest');
  });

  it('a Dockerfile FROM whose digest differs from images.txt fails', () => {
    edit('Dockerfile', /(ARG GOLANG_IMAGE=docker\.io\/library\/golang:[^@\s]+)@sha256:[0-9a-f]{64}/, `$1@sha256:${'cd'.repeat(32)}`);
    failsWith(`has digest sha256:${'cd'.repeat(32)} but images.txt line`);
  });

  it('a Dockerfile FROM through a build argument without a default fails', () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    write('Dockerfile', `${dockerfile}FROM \${OTHER_IMAGE} AS other\n`);
    failsWith(`Dockerfile line ${String(dockerfile.split('\n').length)}: FROM \${OTHER_IMAGE} uses a build argument without a default`);
  });

  it('helm and NATS versions must agree with versions.env', () => {
    edit('Dockerfile', /^ARG HELM_VERSION=.*$/m, 'ARG HELM_VERSION=4.3.0');
    edit('versions.env', /^NATS_SERVER_VERSION=.*$/m, 'NATS_SERVER_VERSION=2.15.3');
    failsWith(
      'Dockerfile: ARG HELM_VERSION=4.3.0 disagrees with versions.env HELM_VERSION=4.3.1',
      `images.txt line ${String(lineOf(images(), 'docker.io/library/nats:'))}: docker.io/library/nats:2.15.0-alpine does not match NATS_SERVER_VERSION=2.15.3`,
    );
  });
});
