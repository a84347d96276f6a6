import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MODULES } from '../api/modules.ts';
import { DependencyError, InputError } from '../errors.ts';
import { ImageCatalog, ImageCatalogError } from './images.ts';

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
