/**
 * Which EvaTenant owns a per-tenant object: two EvaTenants may ask for the same capsule code, and
 * only the Kubernetes uid tells them apart. Kubernetes objects carry it as a label, NATS objects in
 * their metadata, account key Secrets as a label; the same key everywhere.
 */
import { LABELS, RESTORE_FROM_ANNOTATION } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import { InputError } from '../errors.ts';
import type { TenantScope } from './scope.ts';

/** Stream/bucket metadata naming the tenant that owns a NATS object: the same keys as our labels. */
const OWNER_UID_METADATA = LABELS.tenantUid;
const CAPSULE_CODE_METADATA = LABELS.capsuleCode;

/** The Kubernetes uid: what tells two EvaTenants that asked for the same capsule code apart. */
export function tenantUid(scope: TenantScope): string {
  const uid = scope.tenant.metadata.uid;
  if (uid === undefined || uid === '') {
    throw new InputError(Reason.TenantUidMissing, `EvaTenant ${scope.tenant.metadata.name} has no metadata.uid`);
  }
  return uid;
}

/** The uid of a deleted tenant whose retained NATS data this tenant takes over (its annotation), if any. */
export const restoredUid = (scope: TenantScope): string | undefined => scope.tenant.metadata.annotations?.[RESTORE_FROM_ANNOTATION] || undefined;

/**
 * Whether an owner uid found on a NATS object or account keys is this tenant: its own uid, or the
 * uid its restore annotation names (the object is then re-stamped with its own uid).
 */
export const isOwnOrRestored = (scope: TenantScope, owner: string): boolean => owner === tenantUid(scope) || owner === restoredUid(scope);

export function ownerMetadata(scope: TenantScope): Record<string, string> {
  return { [OWNER_UID_METADATA]: tenantUid(scope), [CAPSULE_CODE_METADATA]: scope.code };
}

/** The owner uid recorded on a NATS object; undefined for objects without one (adopted as ours). */
export function ownerOf(metadata: Readonly<Record<string, string>> | undefined): string | undefined {
  return metadata?.[OWNER_UID_METADATA];
}

export function codeInUse(scope: TenantScope, what: string, otherUid: string): InputError {
  return new InputError(
    Reason.CapsuleCodeInUse,
    `capsule code ${scope.code} is already used by another tenant (uid ${otherUid}); ${what} belongs to it. ` +
      'Choose another capsuleCode.',
  );
}
