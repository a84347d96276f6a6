/**
 * A tenant moved from another cluster (docs/multi-cluster.md, "Moving a tenant") restores data that
 * cluster retained: with restore-from-uid it names that cluster's NATS (restore-from-nats), and each
 * stream and seed bucket this cluster's NATS lacks is copied from there (JetStream snapshot and
 * restore, streams `nats-snapshot.ts`) before the streams and seed steps would create it empty. The
 * copy keeps the retained stamps, so the restore takes it over here exactly as in one cluster.
 *
 * Only in data this tenant's keys record proves it restored from the uid it names (the account step's
 * takeover ran), and only for the tenant's own stream names: the source is read, never changed. A copy
 * cut short leaves no stream (the server creates it at the end), so a crash is retried from the start.
 */
import { JS_ERR, jsErrCode, type NatsSession, streamInfo } from '../adapters/nats.ts';
import type { NatsAccounts } from '../nats/accounts.ts';
import { type Custody, restoreAskedFrom, restoreSourceOf } from '../tenancy/ownership.ts';
import type { TenantScope } from '../tenancy/scope.ts';

/** Copies stream `name` from the cluster the tenant moved from, when it asks so and lacks it here. */
export async function copyMovedStream(scope: TenantScope, nats: NatsAccounts, session: NatsSession, custody: Custody, name: string): Promise<void> {
  const source = restoreSourceOf(scope);
  const from = restoreAskedFrom(scope);
  if (source === undefined || from === undefined || custody.restoredFrom !== from || (await streamInfo(session, name)) !== undefined) return;
  try {
    const copied = await nats.copyStreamFrom(scope, source, name, session);
    if (copied === undefined) {
      scope.log.info({ stream: name, from: source }, 'the cluster the tenant moved from has no such stream: nothing to copy');
      return;
    }
    scope.log.info({ stream: name, from: source, messages: copied.state.messages, bytes: copied.state.bytes }, 'stream copied from the cluster the tenant moved from');
  } catch (err) {
    // A concurrent pass copied it first: what it restored is the stream.
    if (jsErrCode(err) !== JS_ERR.streamNameInUse) throw err;
  }
}
