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
import { compareVersions } from '../versions.ts';

export const DIGEST_PLACEHOLDER = 'PLACEHOLDER';
/** The repositories of our own images: they may carry the PLACEHOLDER digest until the release step fills it. */
export const OWN_PREFIX = 'ghcr.io/aidonow/';

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

/** One line's grammar: `<repository>:<tag>`, then `@sha256:<64 hex digits | PLACEHOLDER>` (required by the catalogue). */
const LINE = /^(?<repository>[a-z0-9][a-z0-9._:/-]*[a-z0-9]):(?<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})(?:@sha256:(?<digest>[a-f0-9]{64}|PLACEHOLDER))?$/;

/** An image line of images.txt as written (blank lines and `#` comments are not image lines). */
export interface ImageLine {
  readonly number: number;
  /** The trimmed text. */
  readonly text: string;
  /** The parts; absent when the line does not follow the grammar. */
  readonly parts?: { readonly repository: string; readonly tag: string; readonly digest?: string };
}

/** Every image line of the text with its number; the one reader of images.txt's grammar. */
export function readImageLines(text: string): ImageLine[] {
  return text.split(/\r?\n/).flatMap((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return [];
    const groups = LINE.exec(line)?.groups;
    const [repository, tag, digest] = [groups?.['repository'], groups?.['tag'], groups?.['digest']];
    if (repository === undefined || tag === undefined) return [{ number: index + 1, text: line }];
    return [{ number: index + 1, text: line, parts: digest === undefined ? { repository, tag } : { repository, tag, digest } }];
  });
}

/** A line's parts when it has a registry host and a digest (64 hex digits or PLACEHOLDER). */
export interface PinnedParts {
  readonly repository: string;
  readonly tag: string;
  readonly digest: string;
}

/**
 * The parts of an image line with a registry host and a digest, or what is wrong with it, naming the
 * line as `<source> line <n>`: malformed, no registry (with the line to write instead), no digest.
 */
export function pinnedPartsOrProblem(line: ImageLine, source = 'images.txt'): PinnedParts | string {
  const where = `${source} line ${String(line.number)}`;
  const parts = line.parts;
  if (parts === undefined) return `${where}: malformed, expected <registry>/<repository>:<tag>@sha256:<64 hex digits>, got "${line.text}"`;
  const { repository, tag, digest } = parts;
  if (splitRegistry(repository).registry === undefined) {
    return `${where}: malformed, the registry is missing (write ${normalizeReference(`${repository}:${tag}`).repository}:${tag}), got "${line.text}"`;
  }
  if (digest !== undefined) return { repository, tag, digest };
  return repository.startsWith(OWN_PREFIX)
    ? `${where}: ${repository}:${tag} has no digest (add @sha256:${DIGEST_PLACEHOLDER} until the release step fills it)`
    : `${where}: third-party image ${repository}:${tag} has no digest: pin it (@sha256:<64 hex digits>)`;
}

/** An image reference as written, `<repository>[:<tag>][@<digest>]`: a part not given is ''; the digest keeps its algorithm (sha256:<hex>). */
export function parseReference(reference: string): { repository: string; tag: string; digest: string } {
  const at = reference.indexOf('@');
  const [name, digest] = at === -1 ? [reference, ''] : [reference.slice(0, at), reference.slice(at + 1)];
  const colon = name.lastIndexOf(':');
  const tagged = colon > name.lastIndexOf('/');
  return { repository: tagged ? name.slice(0, colon) : name, tag: tagged ? name.slice(colon + 1) : '', digest };
}

/** A reference with Docker's defaults made explicit: node -> docker.io/library/node:latest. */
export function normalizeReference(reference: string): { repository: string; tag: string; digest: string } {
  const { repository, tag, digest } = parseReference(reference);
  let name = splitRegistry(repository).registry === undefined ? `docker.io/${repository}` : repository;
  name = name.replace(/^(index\.docker\.io|registry-1\.docker\.io)\//, 'docker.io/');
  if (name.startsWith('docker.io/') && !name.slice('docker.io/'.length).includes('/')) name = `docker.io/library/${name.slice('docker.io/'.length)}`;
  return { repository: name, tag: tag === '' && digest === '' ? 'latest' : tag, digest };
}

export class ImageCatalogError extends Error {
  override readonly name = 'ImageCatalogError';
}

/** A registry images are mirrored into: a host, an optional port, an optional lowercase path prefix. */
const MIRROR_REGISTRY = /^[A-Za-z0-9.-]+(:[0-9]+)?(\/[a-z0-9._/-]*[a-z0-9])?$/;

export function mirrorRegistry(registry: string): string {
  const trimmed = registry.replace(/\/+$/, '');
  if (!MIRROR_REGISTRY.test(trimmed)) throw new ImageCatalogError(`a registry is HOST[:PORT][/PREFIX], got "${registry}"`);
  return trimmed;
}

/** A first path part with a dot or a port, or `localhost`, is a registry host (Docker's rule). */
export function splitRegistry(repository: string): { registry?: string; path: string } {
  const slash = repository.indexOf('/');
  const first = slash === -1 ? '' : repository.slice(0, slash);
  if (first.includes('.') || first.includes(':') || first === 'localhost') {
    return { registry: first, path: repository.slice(slash + 1) };
  }
  return { path: repository };
}

function catalogImage(line: ImageLine, file: string, airGapRegistry?: string): CatalogImage {
  const parts = line.parts;
  if (parts?.digest === undefined) {
    throw new ImageCatalogError(
      `${file} line ${String(line.number)}: expected <registry>/<repository>:<tag>@sha256:<64 hex digits or ${DIGEST_PLACEHOLDER}>, got "${line.text}"`,
    );
  }
  const { repository, tag, digest } = parts;
  const rewritten = airGapRegistry === undefined ? repository : `${airGapRegistry.replace(/\/+$/, '')}/${splitRegistry(repository).path}`;
  return digest === DIGEST_PLACEHOLDER ? { repository: rewritten, tag } : { repository: rewritten, tag, digest: `sha256:${digest}` };
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
    for (const line of readImageLines(text)) {
      const image = catalogImage(line, source, airGapRegistry);
      const key = `${image.repository}:${image.tag}`;
      if (seen.has(key)) throw new ImageCatalogError(`${source} line ${String(line.number)}: ${key} is listed twice`);
      seen.add(key);
      images.push(image);
    }
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
