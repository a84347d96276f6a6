/**
 * The image catalogue (images.txt): every image the operator deploys, pinned by digest, one per line
 * `<registry>/<repository>:<tag>@sha256:<digest>`. A module's image is the line whose repository ends
 * in the module's name. Own images carry `sha256:PLACEHOLDER` until a release step fills the digest;
 * those resolve by tag. With an air-gap registry the registry part is rewritten, the digest kept.
 */
import { Reason } from '../api/reasons.ts';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { ModuleName } from '../api/modules.ts';
import { DependencyError, InputError } from '../errors.ts';

const DIGEST_PLACEHOLDER = 'PLACEHOLDER';

export interface CatalogImage {
  /** e.g. ghcr.io/aidonow/orbit-crm (already rewritten for the air-gap registry). */
  readonly repository: string;
  readonly tag: string;
  /** sha256:<64 hex>, or undefined while the catalogue holds PLACEHOLDER. */
  readonly digest?: string;
}

/** What a module chart's `image` values need. */
export interface ModuleImage {
  repository: string;
  tag: string;
  digest?: string;
}

const LINE = /^(?<repository>[a-z0-9][a-z0-9._:/-]*[a-z0-9]):(?<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})@sha256:(?<digest>[a-f0-9]{64}|PLACEHOLDER)$/;

export class ImageCatalogError extends Error {
  override readonly name = 'ImageCatalogError';
}

/** A first path part with a dot or a port, or `localhost`, is a registry host (Docker's rule). */
function splitRegistry(repository: string): { registry?: string; path: string } {
  const slash = repository.indexOf('/');
  const first = slash === -1 ? '' : repository.slice(0, slash);
  if (first.includes('.') || first.includes(':') || first === 'localhost') {
    return { registry: first, path: repository.slice(slash + 1) };
  }
  return { path: repository };
}

function parseLine(line: string, lineNumber: number, file: string, airGapRegistry?: string): CatalogImage {
  const groups = LINE.exec(line)?.groups;
  const repository = groups?.['repository'];
  const tag = groups?.['tag'];
  const digest = groups?.['digest'];
  if (repository === undefined || tag === undefined || digest === undefined) {
    throw new ImageCatalogError(
      `${file} line ${lineNumber}: expected <registry>/<repository>:<tag>@sha256:<64 hex digits or ${DIGEST_PLACEHOLDER}>, got "${line}"`,
    );
  }
  const rewritten = airGapRegistry === undefined ? repository : `${airGapRegistry.replace(/\/+$/, '')}/${splitRegistry(repository).path}`;
  return digest === DIGEST_PLACEHOLDER ? { repository: rewritten, tag } : { repository: rewritten, tag, digest: `sha256:${digest}` };
}

function parseVersion(version: string): { core: number[]; pre: string } {
  const withoutBuild = version.split('+', 1)[0] ?? '';
  const dash = withoutBuild.indexOf('-');
  const core = dash === -1 ? withoutBuild : withoutBuild.slice(0, dash);
  return { core: core.split('.').map((n) => Number.parseInt(n, 10) || 0), pre: dash === -1 ? '' : withoutBuild.slice(dash + 1) };
}

/** Semver precedence, for the default choice: the highest release wins; pre-releases sort below it. */
function compareVersions(a: string, b: string): number {
  const va = parseVersion(a);
  const vb = parseVersion(b);
  for (let i = 0; i < Math.max(va.core.length, vb.core.length); i += 1) {
    const diff = (va.core[i] ?? 0) - (vb.core[i] ?? 0);
    if (diff !== 0) return diff;
  }
  if (va.pre === vb.pre) return 0;
  if (va.pre === '') return 1;
  if (vb.pre === '') return -1;
  return va.pre < vb.pre ? -1 : 1;
}

export class ImageCatalog {
  readonly images: readonly CatalogImage[];
  private readonly source: string;

  constructor(images: readonly CatalogImage[], source = 'images.txt') {
    this.images = images;
    this.source = source;
  }

  static fromFile(path: string, airGapRegistry?: string): ImageCatalog {
    return ImageCatalog.parse(readFileSync(path, 'utf8'), basename(path), airGapRegistry);
  }

  /** Parses the file's text; blank lines and `#` comments are skipped; a malformed line names its number. */
  static parse(text: string, source = 'images.txt', airGapRegistry?: string): ImageCatalog {
    const images: CatalogImage[] = [];
    const seen = new Set<string>();
    text.split(/\r?\n/).forEach((raw, index) => {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      const image = parseLine(line, index + 1, source, airGapRegistry);
      const key = `${image.repository}:${image.tag}`;
      if (seen.has(key)) throw new ImageCatalogError(`${source} line ${index + 1}: ${key} is listed twice`);
      seen.add(key);
      images.push(image);
    });
    return new ImageCatalog(images, source);
  }

  /** The module's versions (tags) in the catalogue, lowest first. */
  versionsOf(module: ModuleName): string[] {
    return this.imagesOf(module).map((image) => image.tag);
  }

  /**
   * The image for a module: the pinned version (spec.versions[module]) or else the highest listed.
   * An unknown pin is the tenant's mistake (InputError); a module missing from the catalogue is the
   * operator's packaging mistake (DependencyError).
   */
  resolveModule(module: ModuleName, versionPin?: string): ModuleImage {
    const candidates = this.imagesOf(module);
    const chosen = versionPin === undefined ? candidates.at(-1) : candidates.find((image) => image.tag === versionPin);
    if (chosen === undefined && versionPin !== undefined && candidates.length > 0) {
      throw new InputError(
        Reason.UnknownModuleVersion,
        `${module} ${versionPin} is not in ${this.source}; available: ${candidates.map((image) => image.tag).join(', ')}`,
      );
    }
    if (chosen === undefined) throw new DependencyError(Reason.ModuleImageMissing, `${this.source} lists no image for module ${module}`);
    const image: ModuleImage = { repository: chosen.repository, tag: chosen.tag };
    if (chosen.digest !== undefined) image.digest = chosen.digest;
    return image;
  }

  private imagesOf(module: ModuleName): CatalogImage[] {
    return this.images
      .filter((image) => image.repository.split('/').at(-1) === module)
      .sort((a, b) => compareVersions(a.tag, b.tag));
  }
}
