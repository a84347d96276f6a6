/**
 * The render guard served warm by the operator process: helm's post-renderer
 * (helm-plugins/eva-render-guard/guard-client.pl) is a tiny client that sends the rendered manifests
 * here over a unix socket and prints only what comes back. A node process per release cost about
 * 70 ms of CPU (node's own start is most of it); the client costs a few, the check itself about one.
 *
 * Who may ask: the socket lives in a private folder (mode 0700, made by mkdtemp) that only the
 * operator's user can enter, and a request names a one-time token the operator registered for one
 * release with its policy (namespace, release, catalogue images). The policy never leaves this
 * process: the client holds nothing but the token, so no environment or request can widen it.
 *
 * The exchange (one connection per post-render):
 *   request   `<token> <client ns on CPU> <client ns waiting for CPU>[ json-lines]\n<manifests>`, then end
 *             of input: YAML as helm rendered it (the CLI plugin), or one JSON document per line (the
 *             helm server, adapters/helm-server.ts, converts with helm's own YAML reader)
 *   reply     `allow <bytes>\n<exactly that many bytes of checked JSON documents>`, or `refuse\n<why>\n`
 * The client prints the allowed bytes only when all of them arrived; anything else (a refusal, an
 * unknown token, an operator that died mid-check, a short reply) makes it exit non-zero, and helm
 * then applies nothing. So a crash on either side fails closed (steps/render-guard/render-guard-run.ts).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { checkRender, refusalMessage, type Refusal, type RenderPolicy } from './render-guard.ts';

/** What one guarded post-render cost, in milliseconds (logged with each release; bench:provision prints it). */
export interface GuardCost {
  /** The client's time on and waiting for the CPU until it sent the manifests, plus the check's wall time here. */
  readonly ms: number;
  /** clientCpuMs + checkCpuMs. */
  readonly cpuMs: number;
  /** The post-renderer process (perl) on the CPU, from its start until it sent the manifests. */
  readonly clientCpuMs: number;
  /** Reading, checking and printing back the manifests in the operator. */
  readonly checkCpuMs: number;
}

/** What a release's helm call needs of the guard: where to ask, and a token for its policy. */
export type RenderGuard = Pick<RenderGuardServer, 'socketPath' | 'register'>;

/** One release's registration: its token, and what the guard found once helm asked. */
export class GuardCall implements Disposable {
  readonly token = randomBytes(32).toString('hex');
  readonly policy: RenderPolicy;
  refusals: readonly Refusal[] = [];
  cost: GuardCost | undefined;
  private readonly forget: (token: string) => void;

  constructor(policy: RenderPolicy, forget: (token: string) => void) {
    this.policy = policy;
    this.forget = forget;
  }

  /** The token stops working: a post-renderer that asks later is refused (unknown token). */
  [Symbol.dispose](): void {
    this.forget(this.token);
  }
}

/** A rendered release is kilobytes; this only bounds what a stray client can make the operator hold. */
const MAX_REQUEST_BYTES = 32 * 2 ** 20;
/** A client that stops talking is dropped (its helm then applies nothing). */
const IDLE_MS = 120_000;
/** sun_path holds 108 bytes on Linux, the terminating NUL included. */
const MAX_SOCKET_PATH_BYTES = 107;
const SOCKET_NAME = 'guard.sock';

const refuse = (why: string): string => `refuse\n${why.replaceAll('\n', ' ')}\n`;

function allow(output: string): Buffer {
  const body = Buffer.from(output, 'utf8');
  return Buffer.concat([Buffer.from(`allow ${String(body.length)}\n`, 'latin1'), body]);
}

const cpuMsSince = (before: NodeJS.CpuUsage): number => {
  const { user, system } = process.cpuUsage(before);
  return (user + system) / 1000;
};

const hundredths = (ms: number): number => Math.round(ms * 100) / 100;

/** Nanoseconds as milliseconds; anything that is not a count (a client without /proc) counts as 0. */
const nsToMs = (text: string | undefined): number => (/^\d{1,18}$/.test(text ?? '') ? Number(text) / 1e6 : 0);

export class RenderGuardServer {
  readonly socketPath: string;
  private readonly dir: string;
  private readonly server: Server;
  private readonly calls = new Map<string, GuardCall>();

  private constructor(dir: string, server: Server) {
    this.dir = dir;
    this.socketPath = join(dir, SOCKET_NAME);
    this.server = server;
  }

  /** Listens on `<parent>/eva-render-guard-XXXXXX/guard.sock`, the folder private to this user. */
  static async start(parent: string): Promise<RenderGuardServer> {
    const dir = mkdtempSync(join(parent, 'eva-render-guard-'));
    chmodSync(dir, 0o700);
    // Half-open: the client ends its side to say "that was all", and still reads the reply.
    const guard = new RenderGuardServer(dir, createServer({ allowHalfOpen: true }));
    try {
      if (Buffer.byteLength(guard.socketPath) > MAX_SOCKET_PATH_BYTES) throw new Error(`the render guard socket path ${guard.socketPath} is too long for a unix socket (set TMPDIR shorter)`);
      guard.server.on('connection', (socket) => { guard.serve(socket); });
      await new Promise<void>((resolve, reject) => {
        guard.server.once('error', reject);
        guard.server.listen(guard.socketPath, resolve);
      });
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    // The socket alone never keeps the operator (or a test) running; its folder goes with the process.
    guard.server.unref();
    process.once('exit', () => { rmSync(dir, { recursive: true, force: true }); });
    return guard;
  }

  /** A token for one release's post-render, valid until the returned call is disposed. */
  register(policy: RenderPolicy): GuardCall {
    const call = new GuardCall(policy, (token) => this.calls.delete(token));
    this.calls.set(call.token, call);
    return call;
  }

  /** Stops listening and removes the socket's folder. */
  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => { resolve(); }));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private serve(socket: Socket): void {
    const started = performance.now();
    const chunks: Buffer[] = [];
    let size = 0;
    socket.setTimeout(IDLE_MS, () => socket.destroy());
    // A client gone mid-exchange: nothing to answer, and its helm applies nothing.
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      if (size > MAX_REQUEST_BYTES) return;
      size += chunk.length;
      chunks.push(chunk);
      if (size <= MAX_REQUEST_BYTES) return;
      chunks.length = 0;
      socket.end(refuse(`the rendered manifests exceed ${String(MAX_REQUEST_BYTES)} bytes`));
    });
    socket.on('end', () => {
      if (size <= MAX_REQUEST_BYTES) socket.end(this.answer(Buffer.concat(chunks), started));
    });
  }

  /** The reply to one request; records the verdict and its cost on the release's call. */
  private answer(request: Buffer, started: number): string | Buffer {
    const newline = request.indexOf(0x0a);
    const [token, clientRunNs, clientWaitNs, format] = request.subarray(0, Math.max(newline, 0)).toString('latin1').split(' ');
    const call = newline === -1 || token === undefined ? undefined : this.calls.get(token);
    if (call === undefined) return refuse('an unknown or expired render guard token: the operator registered no such release');
    const cpuBefore = process.cpuUsage();
    let reply: string | Buffer;
    try {
      const verdict = checkRender(request.subarray(newline + 1).toString('utf8'), call.policy, format === 'json-lines' ? 'json-lines' : 'yaml');
      if (verdict.allowed) reply = allow(verdict.output);
      else {
        call.refusals = verdict.refusals;
        reply = refuse(refusalMessage(verdict.refusals));
      }
    } catch (err) {
      // Not the tenant's refusal: the guard could not judge, helm fails and the release is retried.
      reply = refuse(`the render guard could not judge: ${err instanceof Error ? err.message : String(err)}`);
    }
    const clientCpuMs = nsToMs(clientRunNs);
    const checkCpuMs = cpuMsSince(cpuBefore);
    const ms = clientCpuMs + nsToMs(clientWaitNs) + (performance.now() - started);
    call.cost = { ms: hundredths(ms), cpuMs: hundredths(clientCpuMs + checkCpuMs), clientCpuMs: hundredths(clientCpuMs), checkCpuMs: hundredths(checkCpuMs) };
    return reply;
  }
}
