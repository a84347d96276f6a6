/**
 * Feeds capsule_queue_depth (what the queue-depth alert rules watch) from the tenant's two streams.
 * Read-only and best effort: the drift check calls it for each Active tenant, and a metrics refresh
 * must never make that check fail, so every NATS failure becomes `false` instead of an error.
 */
import type { NatsSession } from '../adapters/nats.ts';
import type { NatsAccounts } from '../nats/accounts.ts';
import { JS_ERR, jsErrCode } from '../adapters/nats.ts';
import type { TenantScope } from '../tenancy/scope.ts';
import { STREAM_KINDS, streamName } from '../tenancy/names.ts';

/** Where the depths go: the operator's metrics (metrics/metrics.ts). */
export interface QueueDepthSink {
  setQueueDepth(code: string, stream: string, messages: number): void;
  forgetQueueDepth(code: string, stream: string): void;
}

/** Message count of a stream, or undefined when the stream does not exist. */
async function messages(session: NatsSession, name: string): Promise<number | undefined> {
  try {
    return (await session.jsm.streams.info(name)).state.messages;
  } catch (err) {
    if (jsErrCode(err) === JS_ERR.streamNotFound) return undefined;
    throw err;
  }
}

/**
 * Sets the depth of both streams; true when both were read. A missing stream loses its series (a
 * stale depth could keep an alert firing); when NATS cannot be asked, the last values stay, since
 * nothing newer is known.
 */
export async function refreshQueueDepth(scope: TenantScope, nats: NatsAccounts, metrics: QueueDepthSink): Promise<boolean> {
  try {
    return await nats.runInTenant(scope, async (session) => {
      let complete = true;
      for (const kind of STREAM_KINDS) {
        const name = streamName(scope.code, kind);
        const count = await messages(session, name);
        if (count === undefined) {
          metrics.forgetQueueDepth(scope.code, name);
          complete = false;
        } else {
          metrics.setQueueDepth(scope.code, name, count);
        }
      }
      return complete;
    });
  } catch (err) {
    scope.log.debug({ err }, 'queue depth not refreshed');
    return false;
  }
}
