/**
 * JetStream's stream snapshot and restore API ($JS.API.STREAM.SNAPSHOT / RESTORE), which the `nats`
 * client does not wrap: how a tenant's streams and seed bucket travel to another cluster's NATS with
 * everything in them (messages with their sequence numbers and times, consumers and their state).
 *
 * The snapshot arrives as chunks on an inbox; the server sends more only as chunks are acknowledged
 * (a reply to each), and ends with an empty message (an error status header when it gave up). A
 * restore is staged by the server from chunks sent as requests (each answered when stored), and
 * created only at the empty request that ends it: a transfer cut short leaves no stream behind.
 * The copy is streamed: each chunk is acknowledged to the source only after the destination stored
 * it, so neither side holds more than the server's flow-control window.
 */
import { createInbox, type NatsConnection, type StreamConfig, type StreamInfo, type StreamState, type Subscription } from 'nats';

/** What the source answered to the snapshot request, and the chunks that follow it. */
export interface StreamSnapshot {
  readonly config: StreamConfig;
  readonly state: StreamState;
  /** Each chunk is acknowledged to the source when the consumer asks for the next one. */
  readonly chunks: AsyncIterable<Uint8Array>;
}

/** A JetStream API error as the server words it (err_code: 10059 stream not found, 10058 name in use). */
export class JetStreamApiError extends Error {
  override readonly name = 'JetStreamApiError';
  readonly errCode: number;
  constructor(errCode: number, description: string) {
    super(description);
    this.errCode = errCode;
  }
}

interface ApiResponse {
  error?: { code: number; err_code?: number; description?: string };
}

const CHUNK_BYTES = 128 * 1024;
/** The end of a restore: the server checks and rebuilds the whole stream before it answers. */
const RESTORE_END_MS = 120_000;

/** The API's answer, or JetStreamApiError when it is an error. */
function answer(what: string, data: Uint8Array): unknown {
  const parsed = JSON.parse(new TextDecoder().decode(data)) as ApiResponse;
  if (parsed.error !== undefined) throw new JetStreamApiError(parsed.error.err_code ?? parsed.error.code, `${what}: ${parsed.error.description ?? `error ${parsed.error.code}`}`);
  return parsed;
}

const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

/** Starts a snapshot of `stream` (consumers included); JetStreamApiError 10059 when it does not exist. */
export async function snapshotStream(nc: NatsConnection, stream: string, timeoutMs: number): Promise<StreamSnapshot> {
  const inbox = createInbox();
  const sub = nc.subscribe(inbox);
  try {
    const reply = await nc.request(`$JS.API.STREAM.SNAPSHOT.${stream}`, encode({ deliver_subject: inbox, chunk_size: CHUNK_BYTES }), { timeout: timeoutMs });
    const { config, state } = answer(`snapshot of stream ${stream}`, reply.data) as { config: StreamConfig; state: StreamState };
    return { config, state, chunks: chunksOf(stream, sub) };
  } catch (err) {
    sub.unsubscribe();
    throw err;
  }
}

async function* chunksOf(stream: string, sub: Subscription): AsyncIterable<Uint8Array> {
  try {
    for await (const msg of sub) {
      if (msg.data.length === 0) {
        if (msg.headers?.hasError === true) throw new Error(`the snapshot of stream ${stream} was cut off by its server: ${msg.headers.code} ${msg.headers.description}`);
        return;
      }
      yield msg.data;
      msg.respond();
    }
    throw new Error(`the snapshot of stream ${stream} ended before its last chunk`);
  } finally {
    sub.unsubscribe();
  }
}

/** Restores a snapshot as a new stream (its own name and configuration); JetStreamApiError 10058 when one of that name exists. */
export async function restoreStream(nc: NatsConnection, snapshot: StreamSnapshot, timeoutMs: number): Promise<StreamInfo> {
  const name = snapshot.config.name;
  const started = await nc.request(`$JS.API.STREAM.RESTORE.${name}`, encode({ config: snapshot.config, state: snapshot.state }), { timeout: timeoutMs });
  const { deliver_subject: deliver } = answer(`restore of stream ${name}`, started.data) as { deliver_subject: string };
  for await (const chunk of snapshot.chunks) {
    const stored = await nc.request(deliver, chunk, { timeout: timeoutMs });
    // Each chunk is answered empty; anything else is the server refusing the restore.
    if (stored.data.length > 0) answer(`restore of stream ${name}`, stored.data);
  }
  const done = await nc.request(deliver, new Uint8Array(0), { timeout: RESTORE_END_MS });
  return answer(`restore of stream ${name}`, done.data) as StreamInfo;
}
