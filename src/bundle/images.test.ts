import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MODULES } from '../api/modules.ts';
import { DependencyError, InputError } from '../errors.ts';
import { ImageCatalog, ImageCatalogError, normalizeReference, parseReference, pinnedPartsOrProblem, readImageLines } from './images.ts';

const DIGEST = 'a'.repeat(64);
const OTHER_DIGEST = 'b'.repeat(64);

const catalogue = `# test catalogue

ghcr.io/aidonow/orbit-crm:1.0.0@sha256:${DIGEST}
ghcr.io/aidonow/orbit-crm:1.10.0@sha256:PLACEHOLDER
ghcr.io/aidonow/orbit-crm:1.2.0-rc.1@sha256:${OTHER_DIGEST}
ghcr.io/aidonow/orbit-crm:1.2.0@sha256:PLACEHOLDER
ghcr.io/aidonow/orbit-itsm:1.0.0@sha256:PLACEHOLDER
`;

describe('ImageCatalog', () => {
  it('reads the bundled images.txt: one placeholder image per module, resolving by tag', () => {
    const catalog = ImageCatalog.fromFile(fileURLToPath(new URL('../../images.txt', import.meta.url)));
    for (const module of MODULES) {
      expect(catalog.resolveModule(module)).toEqual({ repository: `ghcr.io/aidonow/${module}`, tag: '1.0.0' });
    }
    const moduleImages = catalog.images.filter((i) => (MODULES as readonly string[]).includes(i.repository.split('/').at(-1) ?? ''));
    expect(moduleImages).toHaveLength(MODULES.length);
  });

  it('resolves a pinned version with its digest, and the highest release when unpinned', () => {
    const catalog = ImageCatalog.parse(catalogue);
    expect(catalog.resolveModule('orbit-crm', '1.0.0')).toEqual({
      repository: 'ghcr.io/aidonow/orbit-crm',
      tag: '1.0.0',
      digest: `sha256:${DIGEST}`,
    });
    expect(catalog.resolveModule('orbit-crm')).toEqual({ repository: 'ghcr.io/aidonow/orbit-crm', tag: '1.10.0' });
    expect(catalog.versionsOf('orbit-crm')).toEqual(['1.0.0', '1.2.0-rc.1', '1.2.0', '1.10.0']);
  });

  it('rejects an unknown pinned version as the tenant’s input error, listing what exists', () => {
    const catalog = ImageCatalog.parse('ghcr.io/aidonow/orbit-crm:1.0.0@sha256:PLACEHOLDER\n');
    const attempt = (): unknown => catalog.resolveModule('orbit-crm', '9.9.9');
    expect(attempt).toThrow(InputError);
    expect(attempt).toThrow('orbit-crm 9.9.9 is not in images.txt; available: 1.0.0');
    try {
      attempt();
    } catch (err) {
      expect((err as InputError).reason).toBe('UnknownModuleVersion');
    }
  });

  it('treats a module missing from the catalogue as a packaging error', () => {
    const catalog = ImageCatalog.parse(catalogue);
    expect(() => catalog.resolveModule('eva-shell')).toThrow(DependencyError);
    expect(() => catalog.resolveModule('eva-shell')).toThrow(/lists no image for module eva-shell/);
  });

  it('rewrites the registry for an air-gapped cluster and keeps the digest', () => {
    const catalog = ImageCatalog.parse(catalogue, 'images.txt', 'registry.internal:5000/');
    expect(catalog.resolveModule('orbit-crm', '1.0.0')).toEqual({
      repository: 'registry.internal:5000/aidonow/orbit-crm',
      tag: '1.0.0',
      digest: `sha256:${DIGEST}`,
    });
  });

  it('puts a registry in front of an image that had none', () => {
    const catalog = ImageCatalog.parse(`aidonow/orbit-itsm:1.0.0@sha256:PLACEHOLDER\n`, 'images.txt', 'mirror.local');
    expect(catalog.resolveModule('orbit-itsm').repository).toBe('mirror.local/aidonow/orbit-itsm');
  });

  it('accepts a registry with a port', () => {
    const catalog = ImageCatalog.parse(`localhost:5000/aidonow/orbit-itsm:2.0.0@sha256:${DIGEST}\n`);
    expect(catalog.resolveModule('orbit-itsm')).toEqual({
      repository: 'localhost:5000/aidonow/orbit-itsm',
      tag: '2.0.0',
      digest: `sha256:${DIGEST}`,
    });
  });

  it.each([
    ['no digest', 'ghcr.io/aidonow/orbit-crm:1.0.0'],
    ['no tag', `ghcr.io/aidonow/orbit-crm@sha256:${DIGEST}`],
    ['a short digest', 'ghcr.io/aidonow/orbit-crm:1.0.0@sha256:abc'],
    ['an invented placeholder spelling', 'ghcr.io/aidonow/orbit-crm:1.0.0@sha256:TODO'],
    ['two images on one line', `ghcr.io/a/b:1@sha256:${DIGEST} ghcr.io/a/c:1@sha256:${DIGEST}`],
  ])('names the line number of a malformed line (%s)', (_what, line) => {
    expect(() => ImageCatalog.parse(`# header\n\n${line}\n`, 'images.txt')).toThrow(ImageCatalogError);
    expect(() => ImageCatalog.parse(`# header\n\n${line}\n`, 'images.txt')).toThrow(/^images\.txt line 3: expected/);
  });

  it('rejects the same image listed twice', () => {
    const line = 'ghcr.io/aidonow/orbit-crm:1.0.0@sha256:PLACEHOLDER';
    expect(() => ImageCatalog.parse(`${line}\n${line}\n`)).toThrow('images.txt line 2: ghcr.io/aidonow/orbit-crm:1.0.0 is listed twice');
  });
});

describe('image references', () => {
  it('splits a reference as written: the tag only in the last path part, the digest with its algorithm', () => {
    expect(parseReference('node')).toEqual({ repository: 'node', tag: '', digest: '' });
    expect(parseReference('localhost:5000/x/y')).toEqual({ repository: 'localhost:5000/x/y', tag: '', digest: '' });
    expect(parseReference('localhost:5000/x/y:2')).toEqual({ repository: 'localhost:5000/x/y', tag: '2', digest: '' });
    expect(parseReference(`r.io/a/b@sha256:${DIGEST}`)).toEqual({ repository: 'r.io/a/b', tag: '', digest: `sha256:${DIGEST}` });
    expect(parseReference(`r.io/a/b:1.0@sha256:${DIGEST}`)).toEqual({ repository: 'r.io/a/b', tag: '1.0', digest: `sha256:${DIGEST}` });
  });

  it('makes Docker defaults explicit', () => {
    expect(normalizeReference('node')).toEqual({ repository: 'docker.io/library/node', tag: 'latest', digest: '' });
    expect(normalizeReference('bitnami/redis:7')).toEqual({ repository: 'docker.io/bitnami/redis', tag: '7', digest: '' });
    expect(normalizeReference(`index.docker.io/library/golang:1.26@sha256:${DIGEST}`)).toEqual({ repository: 'docker.io/library/golang', tag: '1.26', digest: `sha256:${DIGEST}` });
    expect(normalizeReference(`registry-1.docker.io/nats@sha256:${DIGEST}`)).toEqual({ repository: 'docker.io/library/nats', tag: '', digest: `sha256:${DIGEST}` });
    expect(normalizeReference('localhost:5000/x/y:2')).toEqual({ repository: 'localhost:5000/x/y', tag: '2', digest: '' });
  });
});

describe('pinnedPartsOrProblem', () => {
  const first = (text: string): ReturnType<typeof pinnedPartsOrProblem> => {
    const [line] = readImageLines(`# header\n${text}\n`);
    if (line === undefined) throw new Error('no image line');
    return pinnedPartsOrProblem(line, 'list.txt');
  };

  it('gives the parts of a line with a registry host and a digest (hex or PLACEHOLDER)', () => {
    expect(first(`localhost:5000/a/b:1.2@sha256:${DIGEST}`)).toEqual({ repository: 'localhost:5000/a/b', tag: '1.2', digest: DIGEST });
    expect(first('ghcr.io/aidonow/x:1.0.0@sha256:PLACEHOLDER')).toEqual({ repository: 'ghcr.io/aidonow/x', tag: '1.0.0', digest: 'PLACEHOLDER' });
  });

  it('names what is wrong, with the line number: the grammar first, then the registry, then the digest', () => {
    expect(first('ghcr.io/aidonow/x:1.0.0@sha256:short')).toBe('list.txt line 2: malformed, expected <registry>/<repository>:<tag>@sha256:<64 hex digits>, got "ghcr.io/aidonow/x:1.0.0@sha256:short"');
    expect(first(`nats:2@sha256:${DIGEST}`)).toBe(`list.txt line 2: malformed, the registry is missing (write docker.io/library/nats:2), got "nats:2@sha256:${DIGEST}"`);
    expect(first('aidonow/x:1')).toBe('list.txt line 2: malformed, the registry is missing (write docker.io/aidonow/x:1), got "aidonow/x:1"');
    expect(first('ghcr.io/aidonow/x:1')).toBe('list.txt line 2: ghcr.io/aidonow/x:1 has no digest (add @sha256:PLACEHOLDER until the release step fills it)');
    expect(first('quay.io/a/b:1')).toBe('list.txt line 2: third-party image quay.io/a/b:1 has no digest: pin it (@sha256:<64 hex digits>)');
  });
});
