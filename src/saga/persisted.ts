/**
 * status.saga as the operator stores it: the saga's persisted snapshot and the digest of the spec it
 * acted on. The CRD keeps it free-form (the snapshot is XState's to shape), so it is read here, typed,
 * and nowhere else by key.
 */
import type { EvaTenantStatus } from '../api/evatenant.ts';

export interface SagaRecord {
  /** XState's persisted snapshot (actor.getPersistedSnapshot()); undefined when none is stored. */
  readonly snapshot: unknown;
  /** Digest of what provisioning acted on; undefined in a status an older operator wrote. */
  readonly specDigest: string | undefined;
}

/** status.saga, typed; an absent or foreign one reads as empty (the saga then starts over). */
export function sagaRecordOf(status: EvaTenantStatus | undefined): SagaRecord {
  const stored: Readonly<Record<string, unknown>> = status?.saga ?? {};
  const { snapshot, specDigest } = stored;
  return { snapshot, specDigest: typeof specDigest === 'string' ? specDigest : undefined };
}

/** What status.saga stores: written by the status builder, read back by sagaRecordOf. */
export function sagaRecord(snapshot: unknown, specDigest: string): NonNullable<EvaTenantStatus['saga']> {
  return { snapshot, specDigest } satisfies SagaRecord;
}
