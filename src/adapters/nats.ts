/**
 * The NATS adapter: the only module that opens NATS connections. Every connection authenticates with
 * a user JWT and its nkey seed (NATS in operator mode; there is no anonymous access). A client
 * connects lazily (the operator starts even when NATS is down) and asks for its credentials on every
 * connect. A lost connection is not retried in the background with the credentials it had (after a
 * NATS restart those may name an account the server has forgotten): it is closed, and the next use
 * connects afresh, so a NATS restart costs one failed call, never an operator restart (nats-pool.ts
 * keeps one client per account and closes idle ones). Every failure to reach NATS leaves this module
 * as DependencyError('NatsUnavailable') with the server address only.
 */
import { Reason } from '../api/reasons.ts';
import {
  connect,
  ErrorCode,
  NatsError,
  type ConnectionOptions,
  type JetStreamClient,
  type JetStreamManager,
  type KV,
  type KvOptions,
  type NatsConnection,
  type StreamInfo,
} from 'nats';
import { JetStreamApiError, restoreStream, snapshotStream, type StreamSnapshot } from './nats-snapshot.ts';
import type { Logger } from '../log.ts';
import { signNonce } from './nats-jwt.ts';
import { redactSecrets } from '../log.ts';
import { DependencyError, StepError } from '../errors.ts';

/** JetStream API error codes (api_error.err_code) the steps act on. */
export const JS_ERR = {
  insufficientStorage: 10047,
  streamNameInUse: 10058,
  streamNotFound: 10059,
  subjectsOverlap: 10065,
  wrongLastSequence: 10071,
} as const;

/** What one connection offers the steps. */
export interface NatsSession {
  readonly jsm: JetStreamManager;
  readonly js: JetStreamClient;
  /** Opens a KV bucket, creating it with `opts` when missing (an existing bucket is left as is). */
  kv(bucket: string, opts?: Partial<KvOptions>): Promise<KV>;
  /** Opens a KV bucket only if it exists: never creates anything, for verify and remove. */
  existingKv(bucket: string): Promise<KV | undefined>;
  /** A core request/reply with a text body (e.g. the system account's $SYS.REQ.* API). */
  request(subject: string, body: string): Promise<string>;
  /** Starts a snapshot of a stream (nats-snapshot.ts); JetStreamApiError 10059 when it does not exist. */
  snapshot(stream: string): Promise<StreamSnapshot>;
  /** Restores a snapshot (from any server) as a new stream here; JetStreamApiError 10058 when the name is in use. */
  restore(snapshot: StreamSnapshot): Promise<StreamInfo>;
}

export interface NatsClient {
  /** The server address(es) without credentials: safe for messages and logs. */
  readonly target: string;
  /** Connects on first use and reuses the connection afterwards. */
  session(): Promise<NatsSession>;
  /** Runs `fn` on a session; transport failures come out as DependencyError(Reason.NatsUnavailable). */
  run<T>(fn: (session: NatsSession) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** A user's credentials: its JWT and its nkey seed (what a .creds file holds). */
export interface UserCredentials {
  readonly jwt: string;
  readonly seed: string;
}

export interface NatsClientOptions {
  /** Server URL(s), comma separated, without credentials. */
  readonly url: string;
  /** Asked on every connect; a rejected promise fails that attempt. */
  readonly credentials: () => Promise<UserCredentials>;
  /** The connection's name in the server's monitoring (connz). */
  readonly name?: string;
  /** Replies come to subjects under this prefix (a user whose permissions allow only its own inbox). */
  readonly inboxPrefix?: string;
  /** How long the first connect may take before NATS counts as unreachable. */
  readonly connectTimeoutMs?: number;
  /** Timeout of each JetStream API request. */
  readonly requestTimeoutMs?: number;
  /** Whether the account has JetStream (false for the system account). */
  readonly jetStream?: boolean;
  readonly log?: Logger;
}

const DEFAULTS = { connectTimeoutMs: 2_000, requestTimeoutMs: 5_000, name: 'eva-operator', jetStream: true } as const;

/** Error codes that mean "NATS is not there right now" rather than "NATS said no". */
const UNAVAILABLE_CODES: ReadonlySet<string> = new Set<string>([
  ErrorCode.ConnectionRefused,
  ErrorCode.ConnectionTimeout,
  ErrorCode.ConnectionClosed,
  ErrorCode.ConnectionDraining,
  ErrorCode.Disconnect,
  ErrorCode.Timeout,
  ErrorCode.NoResponders,
]);

export function createNatsClient(options: NatsClientOptions): NatsClient {
  return new LazyNatsClient({ ...DEFAULTS, ...options });
}

/** A stream's info, or undefined when the account has no stream of that name. */
export async function streamInfo(session: NatsSession, name: string): Promise<StreamInfo | undefined> {
  try {
    return await session.jsm.streams.info(name);
  } catch (err) {
    if (jsErrCode(err) === JS_ERR.streamNotFound) return undefined;
    throw err;
  }
}

/** The API error code of a JetStream failure, if it is one. */
export function jsErrCode(err: unknown): number | undefined {
  if (err instanceof JetStreamApiError) return err.errCode;
  return err instanceof NatsError ? err.api_error?.err_code : undefined;
}

/** Server URLs with any user:password@ part removed, e.g. for messages. */
export function safeTarget(url: string): string {
  return url
    .split(',')
    .map((one) => one.trim().replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1'))
    .join(',');
}

/**
 * Maps a failure to the error the saga routes on. Step errors pass through; transport failures become
 * NatsUnavailable, rejected credentials NatsAuthFailed; anything else (a JetStream API refusal, a
 * bug) is left for the caller, because only the step knows what that refusal means.
 */
export function natsStepError(err: unknown, target: string): unknown {
  if (err instanceof StepError || !(err instanceof NatsError) || err.api_error !== undefined) return err;
  const reason = redactSecrets(err.message || err.code);
  if (err.isAuthError()) {
    return new DependencyError(Reason.NatsAuthFailed, `NATS at ${target} rejected the operator's credentials: ${reason}`, {
      cause: err,
    });
  }
  if (UNAVAILABLE_CODES.has(err.code)) {
    return new DependencyError(Reason.NatsUnavailable, `cannot reach NATS at ${target}: ${reason}`, { cause: err });
  }
  return err;
}

interface Connected {
  readonly nc: NatsConnection;
  readonly session: NatsSession;
}

type Resolved = Required<Omit<NatsClientOptions, 'log' | 'inboxPrefix'>> & Pick<NatsClientOptions, 'log' | 'inboxPrefix'>;

class LazyNatsClient implements NatsClient {
  readonly target: string;
  private readonly options: Resolved;
  private current: Connected | undefined;
  private pending: Promise<NatsSession> | undefined;

  constructor(options: Resolved) {
    this.options = options;
    this.target = safeTarget(options.url);
  }

  session(): Promise<NatsSession> {
    const current = this.current;
    if (current && !current.nc.isClosed()) return Promise.resolve(current.session);
    // Concurrent callers share one connect attempt; a failed attempt is forgotten so the next call retries.
    this.pending ??= this.open().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  async run<T>(fn: (session: NatsSession) => Promise<T>): Promise<T> {
    try {
      return await fn(await this.session());
    } catch (err) {
      throw this.mapped(err);
    }
  }

  async close(): Promise<void> {
    await this.pending?.catch(() => undefined);
    const nc = this.current?.nc;
    this.current = undefined;
    if (nc && !nc.isClosed()) await nc.close();
  }

  private async open(): Promise<NatsSession> {
    const credentials = await this.options.credentials();
    let nc: NatsConnection;
    try {
      nc = await connect(this.connectOptions(credentials));
    } catch (err) {
      throw this.unreachable(err);
    }
    try {
      const session = await newSession(nc, this.options.requestTimeoutMs, this.options.jetStream);
      const connected: Connected = { nc, session };
      this.current = connected;
      this.watch(connected);
      this.options.log?.info({ nats: this.target }, 'connected to NATS');
      return session;
    } catch (err) {
      await nc.close();
      // Connected, yet no JetStream answers for this account: the server could not enable it for the
      // account (its storage cannot hold the account's limits) or runs without JetStream.
      if (err instanceof NatsError && err.code === (ErrorCode.NoResponders as string)) {
        throw new DependencyError(
          Reason.JetStreamUnavailable,
          `NATS at ${this.target} offers no JetStream to this account: its JetStream storage cannot hold the account's limits, or JetStream is off`,
          { cause: err },
        );
      }
      throw this.mapped(err);
    }
  }

  private connectOptions(credentials: UserCredentials): ConnectionOptions {
    return {
      servers: this.options.url.split(',').map((one) => one.trim()),
      name: this.options.name,
      timeout: this.options.connectTimeoutMs,
      reconnect: false,
      // An Error (with its stack) per request and per timer otherwise: about 3% of the operator's CPU
      // at 100 tenants. Our errors name the step, subject and server; the caller's stack adds nothing.
      noAsyncTraces: true,
      // As nats.js's jwtAuthenticator, but its nkeys derives the key with tweetnacl: 15 ms per connection.
      authenticator: (nonce?: string) => ({ jwt: credentials.jwt, ...(nonce ? signNonce(credentials.seed, nonce) : { nkey: '', sig: '' }) }),
      ...(this.options.inboxPrefix !== undefined ? { inboxPrefix: this.options.inboxPrefix } : {}),
    };
  }

  private mapped(err: unknown): unknown {
    return natsStepError(err, this.target);
  }

  /** Any failure to open the first connection (DNS, TLS, refused) means NATS is unreachable. */
  private unreachable(err: unknown): unknown {
    const mapped = this.mapped(err);
    if (mapped instanceof StepError) return mapped;
    const reason = redactSecrets(err instanceof Error ? err.message : String(err));
    return new DependencyError(Reason.NatsUnavailable, `cannot reach NATS at ${this.target}: ${reason}`, { cause: err });
  }

  /** Logs how a connection ended (an outage's only trace); the next use connects afresh. */
  private watch(connected: Connected): void {
    const log = this.options.log;
    void connected.nc.closed().then((err) => {
      // close() forgets the connection first: anything else that ends it is a loss worth a line.
      if (this.current !== connected) return;
      this.current = undefined;
      log?.info({ nats: this.target, ...(err ? { problem: redactSecrets(err.message) } : {}) }, 'NATS connection lost; the next use reconnects');
    });
  }
}

async function newSession(nc: NatsConnection, timeout: number, jetStream: boolean): Promise<NatsSession> {
  // jetstreamManager() asks for the account info, so an account without JetStream fails here, once;
  // the system account has none and asks for none.
  const jsm = jetStream ? await nc.jetstreamManager({ timeout }) : noJetStream();
  const js = jetStream ? nc.jetstream({ timeout }) : noJetStream();
  const decoder = new TextDecoder();
  return {
    jsm,
    js,
    kv: (bucket, opts) => js.views.kv(bucket, { timeout, ...opts }),
    existingKv: (bucket) => openExisting(jsm, js, bucket, timeout),
    request: async (subject, body) => decoder.decode((await nc.request(subject, new TextEncoder().encode(body), { timeout })).data),
    snapshot: (stream) => snapshotStream(nc, stream, timeout),
    restore: (snapshot) => restoreStream(nc, snapshot, timeout),
  };
}

/** A stand-in that fails loudly if JetStream is used where it was not asked for. */
function noJetStream(): JetStreamManager & JetStreamClient {
  return new Proxy({} as JetStreamManager & JetStreamClient, {
    get: () => {
      throw new Error('this NATS client was opened without JetStream');
    },
  });
}

async function openExisting(
  jsm: JetStreamManager,
  js: JetStreamClient,
  bucket: string,
  timeout: number,
): Promise<KV | undefined> {
  try {
    const info = await jsm.streams.info(`KV_${bucket}`);
    // bindOnly skips the create path; allow_direct must match the stream or reads go to a dead subject.
    return await js.views.kv(bucket, { bindOnly: true, allow_direct: info.config.allow_direct, timeout });
  } catch (err) {
    if (jsErrCode(err) === JS_ERR.streamNotFound) return undefined;
    throw err;
  }
}
