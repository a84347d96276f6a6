/**
 * The seed data bundled under <seedsBasePath>/<version>/<module>.json (see seeds/README.md), read and
 * checked once when the operator starts. A tenant's seedsVersion is looked up here, never joined into
 * a path; a broken file is kept as the error the tenants that ask for its version get.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { MODULES, type ModuleName } from '../api/modules.ts';
import { Reason } from '../api/reasons.ts';
import { canonicalJson } from '../canonical-json.ts';
import { InputError } from '../errors.ts';
import { compareVersions } from '../versions.ts';

/** KV key -> value (any JSON). */
export type SeedEntries = ReadonlyMap<string, unknown>;

/** What one version holds for some modules, and its digest (what the tenant record stores as applied). */
export interface SeedBundle {
  readonly entries: SeedEntries;
  readonly digest: string;
}

/** sha256 (hex) of the canonical JSON of the entries as a key-sorted [{key, value}] list. */
export function seedDigest(entries: SeedEntries): string {
  const list = [...entries.keys()].sort().map((key) => ({ key, value: entries.get(key) }));
  return createHash('sha256').update(canonicalJson(list)).digest('hex');
}

// ---- the files ------------------------------------------------------------------------------------

const KV_KEY = /^[-/_=.A-Za-z0-9]+$/;
const isKvKey = (key: string): boolean => KV_KEY.test(key) && !key.startsWith('.') && !key.endsWith('.') && !key.includes('..');

function invalid(file: string, problem: string): InputError {
  return new InputError(Reason.SeedsBundleInvalid, `bundled seed file ${file} ${problem}; choose another seedsVersion`);
}

/** One module's entries, keys prefixed with the module; an InputError when the file breaks the format. */
function readModuleFile(dir: string, module: ModuleName): [string, unknown][] {
  const file = join(dir, `${module}.json`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw invalid(file, `cannot be read: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof raw !== 'object' || raw === null || !('module' in raw) || raw.module !== module) {
    throw invalid(file, `does not name module ${module}`);
  }
  if (!('entries' in raw) || !Array.isArray(raw.entries)) throw invalid(file, 'has no entries list');
  return raw.entries.map((entry: unknown): [string, unknown] => {
    if (typeof entry !== 'object' || entry === null || !('key' in entry) || !('value' in entry)) {
      throw invalid(file, 'has an entry without key or value');
    }
    if (typeof entry.key !== 'string' || !isKvKey(entry.key)) {
      throw invalid(file, `has an invalid key ${String(entry.key)}`);
    }
    return [`${module}.${entry.key}`, entry.value];
  });
}

type ModuleFile = { readonly file: string; readonly entries: readonly [string, unknown][] } | InputError;

function moduleFile(dir: string, module: ModuleName): ModuleFile {
  try {
    return { file: join(dir, `${module}.json`), entries: readModuleFile(dir, module) };
  } catch (err) {
    if (err instanceof InputError) return err;
    throw err;
  }
}

/** The version folders under the base path, newest first (none when the folder does not exist). */
function versionFolders(seedsBasePath: string): string[] {
  let names: string[];
  try {
    names = readdirSync(seedsBasePath);
  } catch {
    return [];
  }
  return names
    .filter((name) => !name.startsWith('.') && statSync(join(seedsBasePath, name)).isDirectory())
    .sort((a, b) => compareVersions(b, a));
}

// ---- the catalogue --------------------------------------------------------------------------------

export class SeedCatalog {
  /** The bundled versions, newest first. */
  readonly versions: readonly string[];
  /** The base path, for messages. */
  readonly source: string;
  private readonly files: ReadonlyMap<string, ReadonlyMap<ModuleName, ModuleFile>>;
  private readonly bundles = new Map<string, SeedBundle>();

  private constructor(source: string, files: ReadonlyMap<string, ReadonlyMap<ModuleName, ModuleFile>>) {
    this.source = source;
    this.files = files;
    this.versions = [...files.keys()];
  }

  /** Reads and checks every module file of every version folder once. */
  static load(seedsBasePath: string): SeedCatalog {
    const versions = versionFolders(seedsBasePath);
    const files = new Map(versions.map((version) => {
      const dir = join(seedsBasePath, version);
      return [version, new Map(MODULES.map((module) => [module, moduleFile(dir, module)]))] as const;
    }));
    return new SeedCatalog(seedsBasePath, files);
  }

  has(version: string): boolean {
    return this.files.has(version);
  }

  /**
   * The entries of `modules` in a bundled version and their digest (computed once per version and
   * module set); InputError when the version is not bundled or a file of it is broken.
   */
  bundle(version: string, modules: readonly ModuleName[]): SeedBundle {
    const key = `${version}\0${modules.join(',')}`;
    const known = this.bundles.get(key);
    if (known !== undefined) return known;
    const entries = this.entries(version, modules);
    const bundle = { entries, digest: seedDigest(entries) };
    this.bundles.set(key, bundle);
    return bundle;
  }

  private entries(version: string, modules: readonly ModuleName[]): Map<string, unknown> {
    const files = this.files.get(version);
    if (files === undefined) throw this.unknownVersion(version);
    const entries = new Map<string, unknown>();
    for (const module of modules) {
      const file = files.get(module);
      if (file === undefined) throw invalid(join(this.source, version, `${module}.json`), 'is not a module of this operator');
      if (file instanceof InputError) throw file;
      for (const [key, value] of file.entries) {
        if (entries.has(key)) throw invalid(file.file, `repeats key ${key}`);
        entries.set(key, value);
      }
    }
    return entries;
  }

  private unknownVersion(version: string): InputError {
    const available = [...this.versions].reverse().join(', ') || 'none';
    return new InputError(Reason.UnknownSeedsVersion, `seedsVersion "${version}" is not bundled with this operator; available: ${available}`);
  }
}
