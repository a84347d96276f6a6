/**
 * The local control plane's API server audit log: every write (create, update, patch, delete,
 * deletecollection), metadata only, with the client's User-Agent (scripts/dev-cluster/audit-policy.yaml;
 * Leases and Events are not recorded). The tests' own clients authenticate as the same admin user and
 * every operator of theirs as the same ServiceAccount (test/support/operator-identity.ts), so the
 * User-Agent tells them apart.
 */
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface AuditEvent {
  verb: string;
  user?: { username?: string };
  userAgent?: string;
  requestURI?: string;
  requestReceivedTimestamp: string;
  objectRef?: { resource?: string; apiGroup?: string; namespace?: string; name?: string; subresource?: string };
  responseStatus?: { code?: number };
}

export const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** The audit log of the dev cluster whose kubeconfig is `kubeconfig` (by default this process's cluster). */
export function auditLogPath(kubeconfig = process.env['KUBECONFIG'] ?? ''): string {
  return join(kubeconfig, '..', 'kwok', 'clusters', 'eva', 'logs', 'audit.log');
}

/** Where the log ends now: pass it to auditWritesSince to read what is written after this moment. */
export function auditOffset(log = auditLogPath()): number {
  const fd = openSync(log, 'r');
  try {
    return fstatSync(fd).size;
  } finally {
    closeSync(fd);
  }
}

/** The writes audited since `offset` (a log shorter than that was recreated: read whole). */
export function auditWritesSince(offset: number, log = auditLogPath()): AuditEvent[] {
  return auditEventsSince(offset, log).filter((event) => WRITE_VERBS.has(event.verb));
}

/** Every request audited since `offset` (reads only where the cluster's audit policy records them). */
export function auditEventsSince(offset: number, log = auditLogPath()): AuditEvent[] {
  const fd = openSync(log, 'r');
  let text: string;
  try {
    const size = fstatSync(fd).size;
    const from = offset <= size ? offset : 0;
    const buffer = Buffer.alloc(size - from);
    readSync(fd, buffer, 0, buffer.length, from);
    text = buffer.toString('utf8');
  } finally {
    closeSync(fd);
  }
  return parseAuditLines(text);
}

/**
 * Every request audited at or after `since`, from the log and the files the API server rotated it
 * into (audit-<time>.log next to it, at 100 MB): for a cluster made for one run, whose files are all its own.
 */
export function auditEventsFrom(since: Date): AuditEvent[] {
  const dir = dirname(auditLogPath());
  const files = readdirSync(dir).filter((name) => /^audit.*\.log$/.test(name));
  return files
    .flatMap((name) => parseAuditLines(readFileSync(join(dir, name), 'utf8')))
    .filter((event) => new Date(event.requestReceivedTimestamp) >= since);
}

function parseAuditLines(text: string): AuditEvent[] {
  const events: AuditEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      events.push(JSON.parse(line) as AuditEvent);
    } catch {
      // the last line may be half written
    }
  }
  return events;
}
