/**
 * scripts/mirror-images.sh and scripts/release-fill-digests.sh against real registries: two
 * `docker-registry` (distribution) processes on 127.0.0.1 (plain HTTP, free ports, storage in a temp
 * folder). Small OCI images are written by hand (a gzip layer with one file, a config, a manifest and,
 * for one of them, a two-platform index) and pushed to registry 1 with skopeo; the scripts copy them
 * to registry 2 and every digest there must equal the pinned one. Needs skopeo and docker-registry
 * (listed in scripts/lib/prerequisites.txt, installed by scripts/test.sh); not the cluster.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { freePort } from '../support/ports.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, tool } from '../support/tools.ts';

const mirrorScript = join(repoRoot, 'scripts/mirror-images.sh');
const fillScript = join(repoRoot, 'scripts/release-fill-digests.sh');
const checkScript = join(repoRoot, 'scripts/check-images.sh');
const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

interface Registry {
  host: string; // 127.0.0.1:<port>
  process: ChildProcess;
}

interface TestImage {
  path: string; // repository path in registry 1, e.g. eva/alpha
  tag: string;
  digest: string; // sha256:<hex> of the manifest (or index) bytes
}

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

let work = '';
const registries: Registry[] = [];
let images: TestImage[] = [];

function run(command: string, args: readonly string[]): Run {
  const result = spawnSync(command, args, {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '/root', HELM: tool('helm') },
    timeout: 100_000,
  });
  if (result.error) throw result.error;
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

const mirror = (args: readonly string[]): Run => run('bash', [mirrorScript, ...args]);


async function startRegistry(name: string): Promise<Registry> {
  const port = await freePort();
  const dir = join(work, name);
  mkdirSync(join(dir, 'storage'), { recursive: true });
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: warn',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'storage')}`,
      'http:',
      `  addr: 127.0.0.1:${port}`,
      '',
    ].join('\n'),
  );
  const child = spawn('docker-registry', ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const registry = { host: `127.0.0.1:${port}`, process: child };
  registries.push(registry);
  for (let i = 0; i < 100; i += 1) {
    if (child.exitCode !== null) throw new Error(`docker-registry ${name} exited ${child.exitCode}: ${stderr}`);
    try {
      const response = await fetch(`http://${registry.host}/v2/`);
      if (response.status === 200) return registry;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`docker-registry ${name} did not answer GET /v2/ on ${registry.host}: ${stderr}`);
}

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { architecture: string; os: string };
}

/** Writes a blob into an OCI layout; returns its descriptor. */
function blob(layout: string, mediaType: string, data: Buffer | string): Descriptor {
  const hex = sha256(data);
  writeFileSync(join(layout, 'blobs/sha256', hex), data);
  return { mediaType, digest: `sha256:${hex}`, size: Buffer.byteLength(data) };
}

/** One platform's image: a gzip layer holding /hello.txt, its config and manifest. Returns the manifest descriptor. */
function writeImage(layout: string, content: string, architecture: string): Descriptor {
  const files = mkdtempSync(join(work, 'layer-'));
  writeFileSync(join(files, 'hello.txt'), content);
  const tar = execFileSync('tar', ['--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '-cf', '-', '-C', files, 'hello.txt']);
  const layer = blob(layout, 'application/vnd.oci.image.layer.v1.tar+gzip', gzipSync(tar));
  const config = blob(
    layout,
    'application/vnd.oci.image.config.v1+json',
    JSON.stringify({
      architecture,
      os: 'linux',
      config: { Cmd: ['/hello.txt'] },
      rootfs: { type: 'layers', diff_ids: [`sha256:${sha256(tar)}`] },
    }),
  );
  const manifest = JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [layer] });
  return { ...blob(layout, OCI_MANIFEST, manifest), platform: { architecture, os: 'linux' } };
}

/** Builds an OCI layout by hand (a two-platform index when multiArch) and pushes it to registry 1 as path:tag. */
function buildAndPush(path: string, tag: string, multiArch: boolean): TestImage {
  const layout = mkdtempSync(join(work, 'oci-'));
  mkdirSync(join(layout, 'blobs/sha256'), { recursive: true });
  writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  let top: Descriptor;
  if (multiArch) {
    const manifests = ['amd64', 'arm64'].map((arch) => writeImage(layout, `${path}:${tag} on ${arch}\n`, arch));
    top = blob(layout, OCI_INDEX, JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests }));
  } else {
    const { mediaType, digest, size } = writeImage(layout, `${path}:${tag}\n`, 'amd64');
    top = { mediaType, digest, size };
  }
  writeFileSync(
    join(layout, 'index.json'),
    JSON.stringify({ schemaVersion: 2, manifests: [{ ...top, annotations: { 'org.opencontainers.image.ref.name': tag } }] }),
  );
  const push = run('skopeo', [
    'copy', '--all', '--preserve-digests', '-q', '--dest-tls-verify=false',
    `oci:${layout}:${tag}`, `docker://${registries[0]!.host}/${path}:${tag}`,
  ]);
  expect(push.status, push.stderr).toBe(0);
  return { path, tag, digest: top.digest };
}

/** The digest of the manifest at host/path:tag: the sha256 of its bytes, read with skopeo. */
function digestAt(reference: string): string {
  const result = spawnSync('skopeo', ['inspect', '--raw', '--tls-verify=false', `docker://${reference}`], { timeout: 30_000 });
  if (result.status !== 0) throw new Error(`skopeo inspect ${reference}: ${result.stderr.toString()}`);
  return `sha256:${sha256(result.stdout)}`;
}

async function catalog(registry: Registry): Promise<string[]> {
  const response = await fetch(`http://${registry.host}/v2/_catalog?n=1000`);
  const body = (await response.json()) as { repositories?: string[] };
  return body.repositories ?? [];
}

/** Writes an images file pinning the test images at registry 1; returns its path. */
function imagesFile(name: string, lines: readonly string[]): string {
  const file = join(work, name);
  writeFileSync(file, ['# test images', ...lines, ''].join('\n'));
  return file;
}

const lineOf = (image: TestImage): string => `${registries[0]!.host}/${image.path}:${image.tag}@${image.digest}`;
const TLS_OFF = ['--src-tls-verify=false', '--dest-tls-verify=false'];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'mirror-test-'));
  await startRegistry('registry-1');
  await startRegistry('registry-2');
  images = [buildAndPush('eva/alpha', '1.0.0', false), buildAndPush('eva/beta', '2.1.0', false), buildAndPush('eva/multi', '3.0.0', true)];
}, 120_000);

afterAll(() => {
  for (const registry of registries) registry.process.kill('SIGTERM');
  if (work !== '') rmSync(work, { recursive: true, force: true });
});

describe('the test images in registry 1', () => {
  it('have the digests of the hand-written manifests and index', () => {
    for (const image of images) expect(digestAt(`${registries[0]!.host}/${image.path}:${image.tag}`)).toBe(image.digest);
  });
});

describe('scripts/mirror-images.sh', () => {
  it('--help exits 0', () => {
    const result = mirror(['--help']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('--from-archive');
  });

  it('--dry-run prints the plan and writes nothing to the destination', async () => {
    const file = imagesFile('dry.txt', images.map(lineOf));
    const result = mirror(['--images', file, '--registry', `${registries[1]!.host}/dry`, '--dry-run', ...TLS_OFF]);
    expect(result.status, result.stderr).toBe(0);
    for (const image of images) expect(result.stdout).toContain(`${registries[1]!.host}/dry/${image.path}:${image.tag}`);
    expect((await catalog(registries[1]!)).filter((repository) => repository.startsWith('dry/'))).toEqual([]);
  });

  it('mirrors every image to registry 2 with the pinned digest (a multi-arch index included)', () => {
    const file = imagesFile('mirror.txt', [...images.map(lineOf), 'ghcr.io/aidonow/eva-forge:1.0.0@sha256:PLACEHOLDER']);
    const result = mirror(['--images', file, '--registry', `${registries[1]!.host}/air`, ...TLS_OFF]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).toContain('warning: skipping ghcr.io/aidonow/eva-forge:1.0.0');
    for (const image of images) expect(digestAt(`${registries[1]!.host}/air/${image.path}:${image.tag}`)).toBe(image.digest);
  });

  it('--strict fails on a PLACEHOLDER digest, naming the image', () => {
    const file = imagesFile('strict.txt', ['ghcr.io/aidonow/eva-shell:1.0.0@sha256:PLACEHOLDER']);
    const result = mirror(['--images', file, '--registry', `${registries[1]!.host}/strict`, '--strict', '--dry-run']);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('FAILED: ghcr.io/aidonow/eva-shell:1.0.0');
  });

  it('fails naming the image whose pinned digest was tampered with, and still mirrors the others', () => {
    const [alpha, beta] = images as [TestImage, TestImage];
    const tampered = `sha256:${sha256('not the manifest of eva/beta')}`;
    const file = imagesFile('tampered.txt', [lineOf(alpha), lineOf({ ...beta, digest: tampered })]);
    const result = mirror(['--images', file, '--registry', `${registries[1]!.host}/tampered`, ...TLS_OFF]);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`FAILED: ${registries[0]!.host}/eva/beta:2.1.0`);
    expect(result.stderr).toMatch(/1 image\(s\) failed: \S+\/eva\/beta:2\.1\.0$/m);
    expect(result.stderr).not.toContain('FAILED: ' + `${registries[0]!.host}/eva/alpha`);
    expect(digestAt(`${registries[1]!.host}/tampered/eva/alpha:1.0.0`)).toBe(alpha.digest);
    expect(spawnSync('skopeo', ['inspect', '--raw', '--tls-verify=false', `docker://${registries[1]!.host}/tampered/eva/beta:2.1.0`]).status).not.toBe(0);
  });

  it('--archive writes one file; --from-archive pushes it elsewhere with the same digests', () => {
    const file = imagesFile('archive.txt', images.map(lineOf));
    const archive = join(work, 'images.tar');
    const written = mirror(['--images', file, '--archive', archive, ...TLS_OFF]);
    expect(written.status, written.stderr).toBe(0);
    const listing = execFileSync('tar', ['-tf', archive], { encoding: 'utf8' });
    expect(listing).toContain('images.txt');
    expect(listing).toContain('images/2/manifest.json');

    // From the archive alone: every copy's source is a dir: inside it, registry 1 is not read.
    const pushed = mirror(['--from-archive', archive, '--registry', `${registries[1]!.host}/from-archive`, ...TLS_OFF]);
    expect(pushed.status, pushed.stderr).toBe(0);
    for (const image of images) expect(digestAt(`${registries[1]!.host}/from-archive/${image.path}:${image.tag}`)).toBe(image.digest);
  });

  it('--tool with a tool that is not installed fails clearly', () => {
    const result = run('bash', ['-c', `PATH=/usr/bin:/bin; command -v crane >/dev/null && exit 99; bash ${mirrorScript} --tool crane --registry 127.0.0.1:1`]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('crane not found on PATH');
  });
});

/** Copies a test image within registry 1 to the path of `reference` (<registry>/<path>:<tag>), as a release build pushes it. */
function pushAs(image: TestImage, reference: string): void {
  const copy = run('skopeo', [
    'copy', '--all', '--preserve-digests', '-q', '--src-tls-verify=false', '--dest-tls-verify=false',
    `docker://${registries[0]!.host}/${image.path}@${image.digest}`,
    `docker://${registries[0]!.host}/${reference.slice(reference.indexOf('/') + 1)}`,
  ]);
  expect(copy.status, copy.stderr).toBe(0);
}

describe('scripts/release-fill-digests.sh', () => {
  const fill = (args: readonly string[]): Run => run('bash', [fillScript, ...args]);

  it('--help exits 0', () => {
    const result = fill(['--help']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('--registry');
  });

  it('fills every PLACEHOLDER of the real images.txt from the registry, and check-images.sh --release passes', () => {
    const real = readFileSync(join(repoRoot, 'images.txt'), 'utf8');
    const placeholders = real.split('\n').filter((line) => line.endsWith('@sha256:PLACEHOLDER'));
    expect(placeholders.length).toBeGreaterThan(0);
    // The release build's pushes: each placeholder image at registry 1 under its path (ghcr.io/<path>).
    const source = images[0]!;
    for (const line of placeholders) pushAs(source, line.slice(0, line.indexOf('@')));
    // A temporary root: the real charts, Dockerfile and versions.env, and a copy of images.txt to fill.
    const root = mkdtempSync(join(work, 'root-'));
    for (const name of ['charts', 'Dockerfile', 'versions.env']) symlinkSync(join(repoRoot, name), join(root, name));
    writeFileSync(join(root, 'images.txt'), real);

    const own = fill(['--registry', registries[0]!.host, '--file', join(root, 'images.txt'), '--tls-verify=false']);
    expect(own.status, own.stderr).toBe(0);
    const afterOwn = readFileSync(join(root, 'images.txt'), 'utf8');
    expect(afterOwn).not.toMatch(/^ghcr\.io\/aidonow\/.*PLACEHOLDER$/m);
    expect(afterOwn).toContain(`ghcr.io/aidonow/eva-operator:0.1.0@${source.digest}`);

    const rest = fill(['--registry', registries[0]!.host, '--file', join(root, 'images.txt'), '--tls-verify=false', '--include-third-party']);
    expect(rest.status, rest.stderr).toBe(0);
    const filled = readFileSync(join(root, 'images.txt'), 'utf8');
    expect(filled).not.toMatch(/@sha256:PLACEHOLDER$/m);
    // Only the placeholder lines changed: comments and pinned lines are kept byte for byte.
    expect(filled.replaceAll(source.digest.slice('sha256:'.length), 'PLACEHOLDER')).toBe(real);

    const check = run('bash', [checkScript, '--release', '--root', root]);
    expect(check.status, check.stderr).toBe(0);
    expect(check.stdout).toContain('no PLACEHOLDER (release)');
  });

  it('fails naming each image that was not pushed, leaving the file unchanged', () => {
    const text = [
      `ghcr.io/aidonow/eva-operator:0.1.0@sha256:PLACEHOLDER`,
      `ghcr.io/aidonow/never-pushed:9.9.9@sha256:PLACEHOLDER`,
      '',
    ].join('\n');
    pushAs(images[1]!, 'ghcr.io/aidonow/eva-operator:0.1.0');
    const file = join(work, 'unpushed.txt');
    writeFileSync(file, text);
    const result = fill(['--registry', registries[0]!.host, '--file', file, '--tls-verify=false']);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('FAILED: ghcr.io/aidonow/never-pushed:9.9.9');
    expect(result.stderr).not.toContain('FAILED: ghcr.io/aidonow/eva-operator');
    expect(readFileSync(file, 'utf8')).toBe(text);
  });
});
