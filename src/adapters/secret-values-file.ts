/**
 * Secret Helm values only ever touch disk as a file in HELM_SECRETS_DIR, which must be a tmpfs (RAM,
 * never written to a node's disk, gone with the pod). The file is a Disposable, so a call site writes
 * `using file = writeSecretValuesFile(...)` and the file is removed however the block ends.
 */
import { closeSync, readdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import tmp from 'tmp';
import { stringify } from 'yaml';
import type { Logger } from '../log.ts';

/** statfs(2) f_type of a tmpfs mount (linux/magic.h). */
export const TMPFS_MAGIC = 0x01021994;

const FILE_PREFIX = 'eva-values-';
const FILE_SUFFIX = '.yaml';
// tmp replaces the Xs with random characters and creates the file with O_EXCL, so names never collide.
const FILE_TEMPLATE = `${FILE_PREFIX}XXXXXX${FILE_SUFFIX}`;

export class SecretsDirError extends Error {
  override readonly name = 'SecretsDirError';
}

export interface SecretValuesFile extends Disposable {
  /** Absolute path, for `helm --values <path>`. */
  readonly path: string;
}

export interface SecretsDirOptions {
  dir: string;
  allowNonTmpfs: boolean;
  log: Logger;
}

/** Refuses a secrets folder that is not a tmpfs, unless the operator was told to allow it (then warns). */
export function assertSecretsDirIsTmpfs(dir: string, allowNonTmpfs: boolean, log: Logger): void {
  let type: number;
  try {
    type = statfsSync(dir).type;
  } catch (err) {
    throw new SecretsDirError(`HELM_SECRETS_DIR ${dir} is not usable: ${(err as Error).message}`, { cause: err });
  }
  if (type === TMPFS_MAGIC) return;
  const problem = `HELM_SECRETS_DIR ${dir} is not a tmpfs (filesystem type 0x${type.toString(16)}): secret Helm values would be written to disk`;
  if (!allowNonTmpfs) {
    throw new SecretsDirError(`${problem}; mount an emptyDir with medium: Memory there, or set HELM_SECRETS_ALLOW_NON_TMPFS=true to accept the risk`);
  }
  // Warned on every use, not once: a risk accepted at start must stay visible in the logs.
  log.warn({ dir }, `${problem} (allowed by HELM_SECRETS_ALLOW_NON_TMPFS)`);
}

/** Writes `values` as YAML into a new 0600 file in the secrets folder; dispose it to remove it. */
export function writeSecretValuesFile(values: Readonly<Record<string, unknown>>, options: SecretsDirOptions): SecretValuesFile {
  assertSecretsDirIsTmpfs(options.dir, options.allowNonTmpfs, options.log);
  const file = tmp.fileSync({ tmpdir: options.dir, template: FILE_TEMPLATE, mode: 0o600 });
  const remove = (): void => {
    rmSync(file.name, { force: true });
  };
  try {
    writeFileSync(file.fd, stringify(values));
  } catch (err) {
    remove();
    throw err;
  } finally {
    closeSync(file.fd);
  }
  return { path: file.name, [Symbol.dispose]: remove };
}

/** Removes the values files a crash left behind (only ours, by name); returns how many. */
export function removeStaleSecretFiles(dir: string): number {
  const stale = readdirSync(dir).filter((name) => name.startsWith(FILE_PREFIX) && name.endsWith(FILE_SUFFIX));
  for (const name of stale) rmSync(join(dir, name), { force: true });
  return stale.length;
}
