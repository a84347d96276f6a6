/** Names every per-tenant object shares, derived from the capsule code (the labels are in api/constants.ts). */

export const tenantNamespace = (code: string): string => `eva-tenant-${code.toLowerCase()}`;
/** The tenant's two JetStream streams, one a kind. */
export const STREAM_KINDS = ['events', 'commands'] as const;
export type StreamKind = (typeof STREAM_KINDS)[number];
export const streamName = (code: string, kind: StreamKind): string => `eva-${code}-${kind}`;
export const eventsStream = (code: string): string => streamName(code, 'events');
export const commandsStream = (code: string): string => streamName(code, 'commands');
/** What a stream captures: only its own kind of the tenant's subjects (the prefix isolates tenants). */
export const streamSubject = (code: string, kind: StreamKind): string => `capsule.${code}.${kind}.>`;
/** The tenant's seed data bucket (a KV bucket, stored as stream KV_<bucket>). */
export const dataBucket = (code: string): string => `eva-${code}-data`;
/** The stream behind a KV bucket. */
export const kvStream = (bucket: string): string => `KV_${bucket}`;
/** The tenant's modules use replies under this prefix; their permissions allow no other inbox. */
export const inboxPrefix = (code: string): string => `_INBOX_${code}`;
/** Every subject of the tenant's own traffic; its streams capture `capsule.<CODE>.<kind>.>`. */
export const tenantSubjects = (code: string): string => `capsule.${code}.>`;
