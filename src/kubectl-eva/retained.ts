/**
 * `kubectl eva retained`: the tenant data that decommissions with `dataRetention: Retain` kept, read
 * from the account keys Secrets (eva-nats-account-<code>) and their retained marks, without I/O. Only
 * metadata is read: a keys Secret's data is never looked at or printed.
 */
import { LABELS, RETAINED_MARKS } from '../api/constants.ts';
import { accountKeysName } from '../nats/account-keys.ts';
import { ageOf } from './duration.ts';
import { columns } from './table.ts';

/** The metadata of a Secret, as much as the list needs. */
export interface SecretMetadata {
  name?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface RetainedData {
  code: string;
  formerUid: string;
  retainedAt: string;
  /** The name of the EvaTenant that has the former uid, when one still exists (then nothing is to restore from it). */
  tenantWithUid?: string;
  /** The owner label, when it is not the former uid (a restore in progress or a hand edit). */
  ownerLabel?: string;
  secret: string;
}

/**
 * The Secrets that hold retained data: all three retained marks set (a partial mark is no mark: the
 * operator refuses to restore from it) and named after the code they were retained under.
 */
export function retainedData(secrets: readonly SecretMetadata[], tenantsByUid: ReadonlyMap<string, string>): RetainedData[] {
  return secrets.flatMap((secret) => {
    const a = secret.annotations ?? {};
    const [formerUid, code, retainedAt] = [a[RETAINED_MARKS.fromUid], a[RETAINED_MARKS.code], a[RETAINED_MARKS.at]];
    if (!formerUid || !code || !retainedAt || secret.name !== accountKeysName(code)) return [];
    const owner = secret.labels?.[LABELS.tenantUid];
    const tenant = tenantsByUid.get(formerUid);
    return [{ code, formerUid, retainedAt, secret: secret.name, ...(tenant === undefined ? {} : { tenantWithUid: tenant }), ...(owner !== undefined && owner !== formerUid ? { ownerLabel: owner } : {}) }];
  }).sort((x, y) => x.code.localeCompare(y.code));
}

export function renderRetained(data: readonly RetainedData[], now: Date): string {
  if (data.length === 0) return 'No retained tenant data.\n';
  const rows = data.map((d) => [d.code, d.formerUid, d.retainedAt, ageOf(d.retainedAt, now), d.tenantWithUid === undefined ? 'no' : `yes: ${d.tenantWithUid}`]);
  return [...columns([['CODE', 'FORMER UID', 'RETAINED AT', 'AGE', 'TENANT WITH UID'], ...rows]), ''].join('\n');
}
