import { ErrorCode, NatsError } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type TestNatsServer } from '../../test/support/nats-server.ts';
import { createLogger } from '../log.ts';
import { DependencyError } from '../errors.ts';
import { createNatsClient, JS_ERR, jsErrCode, natsStepError, safeTarget } from './nats.ts';

const USER = 'eva';
const PASSWORD = 'pw-Xq81-very-secret';

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected a failure'),
    (err: unknown) => err,
  );
}

function expectNoSecrets(err: unknown): void {
  const text = err instanceof Error ? `${err.message} ${JSON.stringify(err)}` : String(err);
  expect(text).not.toContain(PASSWORD);
}

describe('safeTarget', () => {
  it('drops credentials from every server URL', () => {
    expect(safeTarget('nats://eva:pw@nats-1:4222, tls://tok@nats-2:4222')).toBe('nats://nats-1:4222,tls://nats-2:4222');
    expect(safeTarget('nats://nats:4222')).toBe('nats://nats:4222');
  });
});

describe('natsStepError', () => {
  it('maps transport failures to NatsUnavailable and scrubs known secrets', () => {
    const err = natsStepError(new NatsError(`refused for ${PASSWORD}`, ErrorCode.ConnectionRefused), 'nats://n:4222', [PASSWORD]);
    expect(err).toBeInstanceOf(DependencyError);
    expect((err as DependencyError).reason).toBe('NatsUnavailable');
    expect((err as DependencyError).message).toBe('cannot reach NATS at nats://n:4222: refused for [REDACTED]');
  });

  it('maps rejected credentials to NatsAuthFailed', () => {
    const err = natsStepError(new NatsError('Authorization Violation', ErrorCode.AuthorizationViolation), 'nats://n:4222');
    expect((err as DependencyError).reason).toBe('NatsAuthFailed');
  });

  it('leaves JetStream API refusals to the step', () => {
    const refusal = new NatsError('stream not found', '404');
    refusal.api_error = { code: 404, err_code: JS_ERR.streamNotFound, description: 'stream not found' };
    expect(natsStepError(refusal, 'x')).toBe(refusal);
    expect(jsErrCode(refusal)).toBe(JS_ERR.streamNotFound);
    expect(jsErrCode(new Error('x'))).toBeUndefined();
  });
});

describe('NatsClient against a real nats-server with user/password auth', () => {
  let server: TestNatsServer;
  beforeAll(async () => {
    server = await startNatsServer({ user: USER, pass: PASSWORD });
  });
  afterAll(async () => {
    await server.stop();
  });

  const settings = (): { url: string; user: string; password: string } => ({ url: server.url, user: USER, password: PASSWORD });

  it('connects lazily, once, and shares the connection', async () => {
    const client = createNatsClient(settings());
    const [a, b] = await Promise.all([client.session(), client.session()]);
    expect(a).toBe(b);
    expect(await client.session()).toBe(a);
    expect((await a.jsm.getAccountInfo()).streams).toBeGreaterThanOrEqual(0);
    await client.close();
  });

  it('opens existing buckets read-only and creates them only through kv()', async () => {
    const client = createNatsClient(settings());
    const session = await client.session();
    expect(await session.existingKv('adapter-probe')).toBeUndefined();
    await expect(session.jsm.streams.info('KV_adapter-probe')).rejects.toThrow('stream not found');
    const kv = await session.kv('adapter-probe', { history: 2 });
    await kv.put('k', 'v');
    const existing = await session.existingKv('adapter-probe');
    expect((await existing?.get('k'))?.string()).toBe('v');
    await kv.destroy();
    await client.close();
  });

  it('reports wrong credentials as NatsAuthFailed without echoing them', async () => {
    const client = createNatsClient({ ...settings(), password: `${PASSWORD}-wrong` });
    const err = await failure(client.run((s) => s.jsm.getAccountInfo()));
    expect(err).toBeInstanceOf(DependencyError);
    expect((err as DependencyError).reason).toBe('NatsAuthFailed');
    expectNoSecrets(err);
  });

  it('reports an unresolvable host as NatsUnavailable', async () => {
    const client = createNatsClient({ url: 'nats://eva:pw@nats.invalid:4222' });
    const err = await failure(client.session());
    expect((err as DependencyError).reason).toBe('NatsUnavailable');
    expect((err as DependencyError).message).toMatch(/^cannot reach NATS at nats:\/\/nats\.invalid:4222: /);
  });

  it('fails with NatsUnavailable while the server is down and recovers once it is back', async () => {
    const lines: string[] = [];
    const log = createLogger('debug', { write: (line: string) => void lines.push(line) });
    const client = createNatsClient(settings(), { reconnectWaitMs: 100, requestTimeoutMs: 1_000, log });
    const session = await client.session();
    await server.halt();
    const started = Date.now();
    const err = await failure(client.run((s) => s.jsm.getAccountInfo()));
    const failedAfterMs = Date.now() - started;
    expect(err).toBeInstanceOf(DependencyError);
    expect((err as DependencyError).reason).toBe('NatsUnavailable');
    expect(failedAfterMs).toBeLessThan(3_000);
    expectNoSecrets(err);
    // Once the client knows it is disconnected it fails at once instead of waiting for a timeout.
    const again = Date.now();
    await expect(client.run((s) => s.jsm.getAccountInfo())).rejects.toMatchObject({
      reason: 'NatsUnavailable',
      message: `cannot reach NATS at ${server.url}: connection lost, reconnecting`,
    });
    expect(Date.now() - again).toBeLessThan(100);

    await server.restart();
    // The same connection reconnects on its own: no new session, no operator restart.
    await expect.poll(() => client.run((s) => s.jsm.getAccountInfo()).then(() => true, () => false), { timeout: 10_000 }).toBe(true);
    expect(await client.session()).toBe(session);
    await client.close();

    // The outage is visible in the logs, the credentials are not.
    const events = lines.map((l) => JSON.parse(l) as { msg: string; event?: string; nats?: string });
    expect(events[0]).toMatchObject({ msg: 'connected to NATS', nats: server.url });
    expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(['disconnect', 'reconnect']));
    expect(lines.join('\n')).not.toContain(PASSWORD);
  });
});

describe('NatsClient when NATS is unreachable', () => {
  it('throws DependencyError NatsUnavailable naming the URL without credentials', async () => {
    const server = await startNatsServer({ user: USER, pass: PASSWORD });
    const url = server.url;
    await server.stop();
    const client = createNatsClient({ url, user: USER, password: PASSWORD });
    const started = Date.now();
    const err = await failure(client.run((s) => s.jsm.getAccountInfo()));
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(err).toBeInstanceOf(DependencyError);
    expect((err as DependencyError).reason).toBe('NatsUnavailable');
    expect((err as DependencyError).message).toBe(`cannot reach NATS at ${url}: CONNECTION_REFUSED`);
    expectNoSecrets(err);
    expect((err as DependencyError).message).not.toContain(USER);
  });
});

