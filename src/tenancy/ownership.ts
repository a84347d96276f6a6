/**
 * Which EvaTenant owns a per-tenant object: two EvaTenants may ask for the same capsule code, and
 * only the Kubernetes uid tells them apart. Kubernetes objects carry it as a label, NATS objects in
 * their metadata, account key Secrets as a label; the same key everywhere.
 *
 * For NATS data the account keys record (Secret eva-nats-account-<code>) is the one proof of custody:
 * its owner holds the account, and a stream or bucket stamped with another uid is that owner's only
 * when the record says it restored from that uid. An annotation on an EvaTenant never grants anything.
 */
import { LABELS, RESTORE_FROM_ANNOTATION, RESTORE_FROM_NATS_ANNOTATION, RETAINED_MARKS } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import { InputError } from '../errors.ts';
import type { TenantScope } from './scope.ts';

/** Stream/bucket metadata naming the tenant that owns a NATS object: the same keys as our labels. */
const OWNER_UID_METADATA = LABELS.tenantUid;
const CAPSULE_CODE_METADATA = LABELS.capsuleCode;

/** Set by the decommission that retained the data: whose it was, under which code, since when (ISO time). */
export interface Retention {
  readonly uid: string;
  readonly code: string;
  readonly at: string;
}

/** What the account keys record says about who holds a capsule code's NATS data. */
export interface Custody {
  /** The EvaTenant uid that holds the account ('' for the operator's own account). */
  readonly owner: string;
  /** Set by a completed takeover: objects still stamped with this uid are the owner's. */
  readonly restoredFrom?: string;
  /** Set while the data waits, retained, for a restore. */
  readonly retained?: Retention;
}

/** The Kubernetes uid: what tells two EvaTenants that asked for the same capsule code apart. */
export function tenantUid(scope: TenantScope): string {
  const uid = scope.tenant.metadata.uid;
  if (uid === undefined || uid === '') {
    throw new InputError(Reason.TenantUidMissing, `EvaTenant ${scope.tenant.metadata.name} has no metadata.uid`);
  }
  return uid;
}

/** The uid whose retained NATS data this tenant asks to take over (its annotation), if any: a request, never a proof. */
export const restoreAskedFrom = (scope: TenantScope): string | undefined => scope.tenant.metadata.annotations?.[RESTORE_FROM_ANNOTATION] || undefined;

const SOURCE_PROTOCOLS: ReadonlySet<string> = new Set(['nats:', 'tls:']);

/**
 * The other cluster's NATS server this tenant's restore copies its retained streams from (annotation
 * restore-from-nats), if it asks for one: exactly one nats:// or tls:// URL with a host and a port,
 * no credentials (the account's own keys sign in), no path. The value is data: it is only ever a
 * connection address, and it is never echoed (a mistyped one could hold a password).
 */
export function restoreSourceOf(scope: TenantScope): string | undefined {
  const value = scope.tenant.metadata.annotations?.[RESTORE_FROM_NATS_ANNOTATION];
  if (value === undefined || value === '') return undefined;
  const invalid = (why: string): InputError => new InputError(Reason.RestoreSourceInvalid, `annotation ${RESTORE_FROM_NATS_ANNOTATION} ${why}`);
  if (restoreAskedFrom(scope) === undefined) throw invalid(`comes only with ${RESTORE_FROM_ANNOTATION} (it says where that restore's data is)`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid('is not a URL (expected one nats://host:port or tls://host:port)');
  }
  const problem = sourceProblem(url);
  if (problem !== undefined) throw invalid(problem);
  return `${url.protocol}//${url.host}`;
}

function sourceProblem(url: URL): string | undefined {
  if (!SOURCE_PROTOCOLS.has(url.protocol)) return `must use nats:// or tls://, not ${url.protocol.slice(0, 16)}//`;
  if (url.hostname === '' || url.port === '') return 'must name a host and a port (nats://host:port)';
  if (url.username !== '' || url.password !== '') return "must not carry credentials: the account's own keys sign in";
  if (!['', '/'].includes(url.pathname) || url.search !== '' || url.hash !== '') return 'must be host and port only, without a path, query or fragment';
  return undefined;
}

/**
 * Whether this tenant may act on a NATS object stamped `owner`: only in data its keys record proves
 * it holds, and only on objects of its own, unstamped (adopted), or of the uid it restored from.
 */
export function mayActOn(scope: TenantScope, custody: Custody, owner: string | undefined): boolean {
  if (custody.owner !== tenantUid(scope)) return false;
  return owner === undefined || owner === custody.owner || owner === custody.restoredFrom;
}

export function ownerMetadata(scope: TenantScope): Record<string, string> {
  return { [OWNER_UID_METADATA]: tenantUid(scope), [CAPSULE_CODE_METADATA]: scope.code };
}

/** The owner uid recorded on a NATS object; undefined for objects without one (adopted as ours). */
export function ownerOf(metadata: Readonly<Record<string, string>> | undefined): string | undefined {
  return metadata?.[OWNER_UID_METADATA];
}

/** This tenant's retention, as of `at`. */
export const retentionOf = (scope: TenantScope, at: string): Retention => ({ uid: tenantUid(scope), code: scope.code, at });

/** The custody with its retained mark replaced, or removed (undefined): owner and restored-from kept. */
export function withRetention({ owner, restoredFrom }: Custody, retained: Retention | undefined): Custody {
  return { owner, ...(restoredFrom !== undefined ? { restoredFrom } : {}), ...(retained !== undefined ? { retained } : {}) };
}

/** The retained marks as NATS metadata (the same keys as the keys Secret's annotations). */
export const retainedMetadata = ({ uid, code, at }: Retention): Record<string, string> => ({ [RETAINED_MARKS.fromUid]: uid, [RETAINED_MARKS.code]: code, [RETAINED_MARKS.at]: at });

/** Whether a NATS object is stamped as this tenant's and marked retained by it. */
export const isRetainedBy = (scope: TenantScope, metadata: Readonly<Record<string, string>> | undefined): boolean =>
  ownerOf(metadata) === tenantUid(scope) && metadata?.[RETAINED_MARKS.fromUid] === tenantUid(scope) && metadata[RETAINED_MARKS.code] === scope.code;

export const hasRetainedMarks = (metadata: Readonly<Record<string, string>> | undefined): boolean =>
  Object.values(RETAINED_MARKS).some((key) => metadata?.[key] !== undefined);

/** The metadata without the retained marks (data used again is no longer waiting for a restore). */
export function withoutRetainedMarks(metadata: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const marks: ReadonlySet<string> = new Set(Object.values(RETAINED_MARKS));
  return Object.fromEntries(Object.entries(metadata ?? {}).filter(([key]) => !marks.has(key)));
}

export function codeInUse(scope: TenantScope, what: string, otherUid: string): InputError {
  return new InputError(
    Reason.CapsuleCodeInUse,
    `capsule code ${scope.code} is already used by another tenant (uid ${otherUid}); ${what} belongs to it. ` +
      'Choose another capsuleCode.',
  );
}

/** A restore that is not honoured: `why` names the condition that failed; nothing was touched. */
export function restoreRefused(scope: TenantScope, from: string, why: string): InputError {
  return new InputError(Reason.RestoreRefused, `restore of the NATS data of uid ${from} for capsule code ${scope.code} (annotation ${RESTORE_FROM_ANNOTATION}) refused: ${why}; nothing was changed`);
}
