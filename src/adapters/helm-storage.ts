/**
 * helm's release records read whole (readReleases in helm.ts reads only their labels): one Secret
 * `sh.helm.release.v1.<release>.v<N>` per revision, labelled owner=helm, name, status, version; its
 * `data.release` is the release as JSON, gzipped, base64-encoded (helm's storage/driver/util.go),
 * then base64-encoded again by the Secret. Whatever writes Secrets in the namespace can write such a
 * record, so the operator reads what helm would act on (the manifest it deletes from and diffs
 * against, the hooks it would run) before it starts helm (steps/modules/release-records.ts).
 *
 * Also the one write the operator makes to a record itself: marking a revision a dead helm left
 * pending as failed (Flux helm-controller's "unlock"), so the next upgrade runs through the render
 * guard instead of a rollback to a stored manifest.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import type { V1Secret } from '@kubernetes/client-node';
import { isConflict, type Kube, MERGE_PATCH } from './kube.ts';
import { Reason } from '../api/reasons.ts';
import { DependencyError } from '../errors.ts';
import { asRecord, num, str } from './helm.ts';

/** One revision as stored: its Secret's labels beside what its payload says (they may disagree). */
export interface StoredRelease {
  /** The storage Secret's name. */
  readonly secret: string;
  /** The Secret's resourceVersion when read: an unlock writes only this version. */
  readonly resourceVersion: string;
  readonly labels: { readonly name: string; readonly version: string; readonly status: string };
  /** What the payload says; undefined when it is not a release helm could read. */
  readonly body: StoredBody | undefined;
  /** Why the payload could not be read, when it could not. */
  readonly unreadable?: string;
}

export interface StoredBody {
  readonly name: string;
  readonly namespace: string;
  readonly version: number;
  readonly status: string;
  /** The objects helm deletes on uninstall and diffs an upgrade against. */
  readonly manifest: string;
  /** Hook manifests (helm runs delete hooks on uninstall): the module contract has none. */
  readonly hooks: readonly { readonly path: string; readonly manifest: string }[];
}

const GZIP_MAGIC = [0x1f, 0x8b];
/**
 * The most a stored release may expand to: a Secret holds at most 1 MiB, but gzip expands a forged one
 * a thousandfold; helm's own records of the module charts are a few hundred KiB at most.
 */
export const MAX_RELEASE_PAYLOAD_BYTES = 8 * 1024 * 1024;
/** What helm writes into a record it leaves failed; the description says who unlocked it and why. */
const FAILED = 'failed';

/** helm's encoding of a release (base64 of gzipped JSON; plain JSON before helm 2.x compressed it). */
export function decodePayload(data: string): unknown {
  const bytes = Buffer.from(Buffer.from(data, 'base64').toString('latin1'), 'base64');
  const json = bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1] ? gunzipSync(bytes, { maxOutputLength: MAX_RELEASE_PAYLOAD_BYTES }) : bytes;
  return JSON.parse(json.toString('utf8')) as unknown;
}

/** `data.release` of a storage Secret holding `release` (as helm writes it). */
export function encodePayload(release: unknown): string {
  const helmEncoded = gzipSync(Buffer.from(JSON.stringify(release), 'utf8')).toString('base64');
  return Buffer.from(helmEncoded, 'latin1').toString('base64');
}

function bodyOf(release: Record<string, unknown>): StoredBody {
  const hooks = Array.isArray(release['hooks']) ? release['hooks'].map(asRecord) : [];
  return {
    name: str(release['name']),
    namespace: str(release['namespace']),
    version: num(release['version']),
    status: str(asRecord(release['info'])['status']),
    manifest: str(release['manifest']),
    hooks: hooks.map((hook) => ({ path: str(hook['path']) || str(hook['name']), manifest: str(hook['manifest']) })),
  };
}

/** The payload, or why helm could not read it. */
function readBody(data: string | undefined): Pick<StoredRelease, 'body' | 'unreadable'> {
  if (data === undefined) return { body: undefined, unreadable: 'it has no data.release' };
  try {
    return { body: bodyOf(asRecord(decodePayload(data))) };
  } catch {
    // The parser's message would quote the payload, and a genuine record holds values from Secrets.
    return { body: undefined, unreadable: `its data.release is not a helm release (not base64 of gzipped JSON, or over ${MAX_RELEASE_PAYLOAD_BYTES / 1024 / 1024} MiB expanded)` };
  }
}

/** One storage Secret read: its labels and, when helm could read it, its payload. */
export function parseStoredRelease(secret: V1Secret): StoredRelease {
  const { name = '', resourceVersion = '', labels = {} } = secret.metadata ?? {};
  return {
    secret: name,
    resourceVersion,
    labels: { name: labels['name'] ?? '', version: labels['version'] ?? '', status: labels['status'] ?? '' },
    ...readBody(secret.data?.['release']),
  };
}

const releaseSelector = (release: string): string => `owner=helm,name=${release}`;

/** Every stored revision of the release in the namespace, as helm's own queries (owner=helm, name) find them. */
export async function readStoredReleases(kube: Kube, namespace: string, release: string): Promise<StoredRelease[]> {
  const list = await kube.core.listNamespacedSecret({ namespace, labelSelector: releaseSelector(release) });
  return list.items.map(parseStoredRelease);
}

/**
 * Marks a revision left pending as failed, in its payload and its status label, as helm itself
 * records a failed operation; nothing else of the record changes. Only the record as it was read
 * (and checked): one merge patch carrying that resourceVersion, so a record changed since then is
 * not written (ReleasePending, and the next attempt reads and checks it again). A failed record
 * stays as it is.
 */
export async function markReleaseFailed(kube: Kube, namespace: string, record: StoredRelease, description: string): Promise<void> {
  const secret = await kube.core.readNamespacedSecret({ name: record.secret, namespace });
  const data = secret.data?.['release'];
  if (secret.metadata?.resourceVersion !== record.resourceVersion || data === undefined) throw changedSince(record);
  if (secret.metadata.labels?.['status'] === FAILED) return;
  const release = asRecord(decodePayload(data));
  release['info'] = { ...asRecord(release['info']), status: FAILED, description };
  const body = {
    metadata: { resourceVersion: record.resourceVersion, labels: { status: FAILED, modifiedAt: String(Math.floor(Date.now() / 1000)) } },
    data: { release: encodePayload(release) },
  };
  try {
    await kube.core.patchNamespacedSecret({ name: record.secret, namespace, body }, MERGE_PATCH);
  } catch (err) {
    throw isConflict(err) ? changedSince(record) : err;
  }
}

const changedSince = (record: StoredRelease): DependencyError =>
  new DependencyError(Reason.ReleasePending, `the record ${record.secret} changed since it was checked; it is read and checked again`);
