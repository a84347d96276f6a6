/**
 * status.saga as the operator stores it: where the saga rests and the digest of the spec it acted on.
 * `kubectl describe evt` prints status whole, so the record is compact: the state (`active`,
 * `provisioning.modules`), the step provisioning resumes at, the saga's context and the digest; the
 * XState snapshot is rebuilt from it on read. A record an older operator wrote (the whole snapshot
 * under `snapshot`) is still read. The CRD keeps status.saga free-form; it is read here, typed, and
 * nowhere else by key.
 */
import type { EvaTenantStatus } from '../api/evatenant.ts';

export interface SagaRecord {
  /** XState's persisted snapshot (actor.getPersistedSnapshot()); undefined when none is stored. */
  readonly snapshot: unknown;
  /** Digest of what provisioning acted on; undefined in a status an older operator wrote. */
  readonly specDigest: string | undefined;
}

/** The compact record: every field a plain value kubectl prints on one line, but the context. */
interface CompactSaga {
  state: string;
  resumeAt?: string;
  context: Record<string, unknown>;
}

/** The history state provisioning resumes through (saga/provisioning-machine.ts: provisioning.resume). */
const RESUME_HISTORY = 'tenant.provisioning.resume';
const RESUME_PREFIX = 'tenant.provisioning.';

type StateValue = string | { readonly [key: string]: StateValue };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `{provisioning: 'modules'}` -> `provisioning.modules`; undefined for a parallel or unknown shape. */
function flatState(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (!isRecord(value)) return undefined;
  const entries = Object.entries(value);
  const [key, child] = entries[0] ?? [];
  const rest = entries.length === 1 ? flatState(child) : undefined;
  return key === undefined || rest === undefined ? undefined : `${key}.${rest}`;
}

const nestedState = (state: string): StateValue => {
  const [head = '', ...rest] = state.split('.');
  return rest.length === 0 ? head : { [head]: nestedState(rest.join('.')) };
};

/** The step a resting snapshot resumes at: undefined when none is remembered, null for a history it cannot carry. */
function resumeStepOf(historyValue: unknown): string | undefined | null {
  const history = isRecord(historyValue) ? historyValue : {};
  if (Object.keys(history).some((key) => key !== RESUME_HISTORY)) return null;
  const resumed: unknown = history[RESUME_HISTORY];
  if (resumed === undefined) return undefined;
  const id: unknown = Array.isArray(resumed) && resumed.length === 1 && isRecord(resumed[0]) ? resumed[0]['id'] : undefined;
  return typeof id === 'string' && id.startsWith(RESUME_PREFIX) ? id.slice(RESUME_PREFIX.length) : null;
}

/** The compact form of a resting snapshot; undefined for anything it cannot carry exactly (then kept whole). */
function compact(snapshot: unknown): CompactSaga | undefined {
  if (!isRecord(snapshot) || snapshot['status'] !== 'active' || !isRecord(snapshot['context'])) return undefined;
  if (isRecord(snapshot['children']) && Object.keys(snapshot['children']).length > 0) return undefined;
  const state = flatState(snapshot['value']);
  const resumeAt = resumeStepOf(snapshot['historyValue']);
  if (state === undefined || resumeAt === null) return undefined;
  return resumeAt === undefined ? { state, context: snapshot['context'] } : { state, resumeAt, context: snapshot['context'] };
}

/** The XState snapshot a compact record stands for (what getPersistedSnapshot() returned). */
function expand(saga: CompactSaga): unknown {
  const historyValue = saga.resumeAt === undefined ? {} : { [RESUME_HISTORY]: [{ id: `${RESUME_PREFIX}${saga.resumeAt}` }] };
  return { status: 'active', value: nestedState(saga.state), historyValue, context: saga.context, children: {} };
}

/** status.saga, typed; an absent or foreign one reads as empty (the saga then starts over). */
export function sagaRecordOf(status: EvaTenantStatus | undefined): SagaRecord {
  const stored: Readonly<Record<string, unknown>> = status?.saga ?? {};
  const { snapshot, specDigest, state, resumeAt, context } = stored;
  const digest = typeof specDigest === 'string' ? specDigest : undefined;
  if (snapshot !== undefined) return { snapshot, specDigest: digest };
  if (typeof state !== 'string' || !isRecord(context) || (resumeAt !== undefined && typeof resumeAt !== 'string')) return { snapshot: undefined, specDigest: digest };
  return { snapshot: expand(resumeAt === undefined ? { state, context } : { state, resumeAt, context }), specDigest: digest };
}

/** What status.saga stores: written by the status builder, read back by sagaRecordOf. */
export function sagaRecord(snapshot: unknown, specDigest: string): NonNullable<EvaTenantStatus['saga']> {
  const small = compact(snapshot);
  return small === undefined ? { snapshot, specDigest } : { ...small, specDigest };
}
