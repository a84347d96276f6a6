/**
 * The NATS adapter: the only module that opens NATS connections. One connection is opened lazily
 * (the operator starts even when NATS is down) and shared by every step; it reconnects forever on its
 * own, so a NATS restart costs retries, never an operator restart. Every failure to reach NATS leaves
 * this module as DependencyError(Reason.NatsUnavailable) with the server address stripped of credentials.
 */
import { Reason } from '../api/reasons.ts';
import {
  connect,
  ErrorCode,
  Events,
  NatsError,
  type ConnectionOptions,
  type JetStreamClient,
  type JetStreamManager,
  type KV,
  type KvOptions,
  type NatsConnection,
} from 'nats';
import type { NatsSettings } from '../config.ts';
import type { Logger } from '../log.ts';
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

/** What the NATS-backed steps (streams, record, seed) receive. */
export interface NatsStepDeps {
  readonly nats: NatsClient;
  readonly seedsBasePath: string;
}

export interface NatsClientOptions {
  /** How long the first connect may take before NATS counts as unreachable. */
  readonly connectTimeoutMs?: number;
  /** Pause between reconnect attempts (which never stop). */
  readonly reconnectWaitMs?: number;
  /** Timeout of each JetStream API request. */
  readonly requestTimeoutMs?: number;
  readonly log?: Logger;
}

const DEFAULTS = { connectTimeoutMs: 2_000, reconnectWaitMs: 2_000, requestTimeoutMs: 5_000 } as const;

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

export function createNatsClient(settings: NatsSettings, options: NatsClientOptions = {}): NatsClient {
  return new LazyNatsClient(settings, { ...DEFAULTS, ...options });
}

/** The API error code of a JetStream failure, if it is one. */
export function jsErrCode(err: unknown): number | undefined {
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
export function natsStepError(err: unknown, target: string, secrets: readonly string[] = []): unknown {
  if (err instanceof StepError || !(err instanceof NatsError) || err.api_error !== undefined) return err;
  const reason = scrub(err.message || err.code, secrets);
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

/** Belt and braces: a server error may echo what it was given, so known secrets are blanked too. */
function scrub(text: string, secrets: readonly string[]): string {
  const blanked = secrets.reduce((acc, secret) => (secret === '' ? acc : acc.split(secret).join('[REDACTED]')), text);
  return redactSecrets(blanked);
}

interface Connected {
  readonly nc: NatsConnection;
  readonly session: NatsSession;
  /** Between a disconnect and the matching reconnect. */
  down: boolean;
}

type Resolved = Required<Omit<NatsClientOptions, 'log'>> & Pick<NatsClientOptions, 'log'>;

class LazyNatsClient implements NatsClient {
  readonly target: string;
  private readonly settings: NatsSettings;
  private readonly options: Resolved;
  private current: Connected | undefined;
  private pending: Promise<NatsSession> | undefined;

  constructor(settings: NatsSettings, options: Resolved) {
    this.settings = settings;
    this.options = options;
    this.target = safeTarget(settings.url);
  }

  session(): Promise<NatsSession> {
    const current = this.current;
    if (current && !current.nc.isClosed()) {
      // While the client reconnects, requests would sit in its buffer until they time out (and the
      // first one after the reconnect still does): failing now frees the worker and says why.
      if (current.down) return Promise.reject(this.lost());
      return Promise.resolve(current.session);
    }
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
    let nc: NatsConnection;
    try {
      nc = await connect(this.connectOptions());
    } catch (err) {
      throw this.unreachable(err);
    }
    try {
      const session = await newSession(nc, this.options.requestTimeoutMs);
      const connected: Connected = { nc, session, down: false };
      this.current = connected;
      this.watch(connected);
      this.options.log?.info({ nats: this.target }, 'connected to NATS');
      return session;
    } catch (err) {
      await nc.close();
      throw this.mapped(err);
    }
  }

  private connectOptions(): ConnectionOptions {
    const { user, password, token, url } = this.settings;
    return {
      servers: url.split(',').map((one) => one.trim()),
      name: 'eva-operator',
      timeout: this.options.connectTimeoutMs,
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: this.options.reconnectWaitMs,
      waitOnFirstConnect: false,
      ...(user !== undefined ? { user } : {}),
      ...(password !== undefined ? { pass: password } : {}),
      ...(token !== undefined ? { token } : {}),
    };
  }

  private secrets(): string[] {
    return [this.settings.password, this.settings.token].filter((s): s is string => s !== undefined);
  }

  private mapped(err: unknown): unknown {
    return natsStepError(err, this.target, this.secrets());
  }

  /** Any failure to open the first connection (DNS, TLS, refused) means NATS is unreachable. */
  private unreachable(err: unknown): unknown {
    const mapped = this.mapped(err);
    if (mapped instanceof StepError) return mapped;
    const reason = scrub(err instanceof Error ? err.message : String(err), this.secrets());
    return new DependencyError(Reason.NatsUnavailable, `cannot reach NATS at ${this.target}: ${reason}`, { cause: err });
  }

  private lost(): DependencyError {
    return new DependencyError(Reason.NatsUnavailable, `cannot reach NATS at ${this.target}: connection lost, reconnecting`);
  }

  /** Tracks whether the connection is up, and logs disconnects and reconnects (an outage's only trace). */
  private watch(connected: Connected): void {
    const log = this.options.log;
    void (async () => {
      for await (const status of connected.nc.status()) {
        if (status.type === Events.Disconnect) connected.down = true;
        if (status.type === Events.Reconnect) connected.down = false;
        log?.info({ nats: this.target, event: status.type }, 'NATS connection status changed');
      }
    })().catch(() => undefined);
  }
}

async function newSession(nc: NatsConnection, timeout: number): Promise<NatsSession> {
  // jetstreamManager() asks for the account info, so a server without JetStream fails here, once.
  const jsm = await nc.jetstreamManager({ timeout });
  const js = nc.jetstream({ timeout });
  return {
    jsm,
    js,
    kv: (bucket, opts) => js.views.kv(bucket, { timeout, ...opts }),
    existingKv: (bucket) => openExisting(jsm, js, bucket, timeout),
  };
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
