import { readFileSync } from 'node:fs';
import { connect, ErrorCode, NatsError } from 'nats';
import { describe, expect, it } from 'vitest';
import { testScope, useNatsServer, withAccount } from '../../test/support/fixtures.ts';
import { freePort } from '../../test/support/ports.ts';
import { createLogger } from '../log.ts';
import { DependencyError } from '../errors.ts';
import { createNatsClient, JS_ERR, jsErrCode, natsStepError, safeTarget, type UserCredentials } from './nats.ts';
import { NatsPool } from './nats-pool.ts';
import { newSeed, parseCreds, publicKeyOf, signAccount, signUser, UNLIMITED } from './nats-jwt.ts';

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected a failure'),
    (err: unknown) => err,
  );
}

describe('safeTarget', () => {
  it('drops credentials from every server URL', () => {
    expect(safeTarget('nats://eva:pw@nats-1:4222, tls://tok@nats-2:4222')).toBe('nats://nats-1:4222,tls://nats-2:4222');
    expect(safeTarget('nats://nats:4222')).toBe('nats://nats:4222');
  });
});

describe('natsStepError', () => {
  it('maps transport failures to NatsUnavailable and redacts secret-shaped text', () => {
    const seed = newSeed('user');
    const err = natsStepError(new NatsError(`refused for ${seed}`, ErrorCode.ConnectionRefused), 'nats://n:4222');
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

describe('NatsClient against a real nats-server in operator mode', () => {
  const f = useNatsServer();
  const systemCredentials = (): UserCredentials => parseCreds(readFileSync(f.server.auth.systemCredsFile, 'utf8'));
  const system = (log?: ReturnType<typeof createLogger>) =>
    createNatsClient({ url: f.server.url, jetStream: false, credentials: () => Promise.resolve(systemCredentials()), connectTimeoutMs: 1_000, ...(log ? { log } : {}) });

  it('refuses anonymous connections; the system user gets in (positive control)', async () => {
    const anonymous = await failure(connect({ servers: f.server.url, reconnect: false, timeout: 1_000 }));
    expect((anonymous as NatsError).code).toBe(ErrorCode.AuthorizationViolation);
    const client = system();
    expect(await client.run((s) => s.request('$SYS.REQ.SERVER.PING', ''))).toContain('"server"');
    await client.close();
  });

  it('connects lazily, once, and shares the connection', async () => {
    const client = system();
    const [a, b] = await Promise.all([client.session(), client.session()]);
    expect(a).toBe(b);
    expect(await client.session()).toBe(a);
    await client.close();
  });

  it('reports a user of an account the server does not know as NatsAuthFailed, naming no key', async () => {
    const [accountSeed, signingSeed, userSeed] = [newSeed('account'), newSeed('account'), newSeed('user')];
    const jwt = await signUser({ name: 'stranger', account: publicKeyOf(accountSeed, 'account') }, userSeed, signingSeed);
    const client = createNatsClient({ url: f.server.url, credentials: () => Promise.resolve({ jwt, seed: userSeed }) });
    const err = await failure(client.run((s) => s.jsm.getAccountInfo()));
    expect(err).toBeInstanceOf(DependencyError);
    expect((err as DependencyError).reason).toBe('NatsAuthFailed');
    expect(JSON.stringify({ m: (err as Error).message, err })).not.toContain(userSeed);
  });

  it('opens existing buckets read-only and creates them only through kv(), in a tenant account', async () => {
    const scope = testScope({ code: 'ADAPTR' });
    await withAccount(f.nats, scope);
    await f.nats.runInTenant(scope, async (session) => {
      expect(await session.existingKv('adapter-probe')).toBeUndefined();
      await expect(session.jsm.streams.info('KV_adapter-probe')).rejects.toThrow('stream not found');
      const kv = await session.kv('adapter-probe', { history: 2, max_bytes: 1024 * 1024 });
      await kv.put('k', 'v');
      const existing = await session.existingKv('adapter-probe');
      expect((await existing?.get('k'))?.string()).toBe('v');
      await kv.destroy();
    });
  });

  it('fails with NatsUnavailable while the server is down and connects afresh once it is back', async () => {
    const lines: string[] = [];
    const client = system(createLogger('debug', { write: (line: string) => void lines.push(line) }));
    const first = await client.session();
    await f.server.halt();
    const started = Date.now();
    const err = await failure(client.run((s) => s.request('$SYS.REQ.SERVER.PING', '')));
    expect(err).toBeInstanceOf(DependencyError);
    expect((err as DependencyError).reason).toBe('NatsUnavailable');
    expect(Date.now() - started).toBeLessThan(3_000);
    await f.server.restart();
    await expect.poll(() => client.run((s) => s.request('$SYS.REQ.SERVER.PING', '')).then(() => true, () => false), { timeout: 10_000 }).toBe(true);
    expect(await client.session()).not.toBe(first);
    await client.close();
    // The outage is visible in the logs; no key is.
    const events = lines.map((l) => JSON.parse(l) as { msg: string; nats?: string });
    expect(events[0]).toMatchObject({ msg: 'connected to NATS', nats: f.server.url });
    expect(events.map((e) => e.msg)).toContain('NATS connection lost; the next use reconnects');
    expect(lines.join('\n')).not.toContain(systemCredentials().seed);
  });
});

describe('NatsClient when NATS is unreachable', () => {
  it('throws DependencyError NatsUnavailable naming the URL, at once', async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const client = createNatsClient({ url, credentials: () => Promise.resolve({ jwt: 'unused', seed: newSeed('user') }) });
    const started = Date.now();
    const err = await failure(client.run((s) => s.jsm.getAccountInfo()));
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(err).toBeInstanceOf(DependencyError);
    expect((err as DependencyError).message).toBe(`cannot reach NATS at ${url}: CONNECTION_REFUSED`);
  });
});

describe('NatsPool', () => {
  const f = useNatsServer();
  const optionsFor = (name: string) => () => ({
    url: f.server.url,
    name,
    jetStream: false,
    credentials: (): Promise<UserCredentials> => Promise.resolve(parseCreds(readFileSync(f.server.auth.systemCredsFile, 'utf8'))),
  });
  const ping = (s: { request(subject: string, body: string): Promise<string> }): Promise<string> => s.request('$SYS.REQ.SERVER.PING', '');

  it('keeps one client per key, closes idle ones and keeps at most maxOpen', async () => {
    const pool = new NatsPool({ idleMs: 1_000, maxOpen: 2 });
    try {
      await pool.run('a', optionsFor('a'), ping);
      await pool.run('a', optionsFor('a'), ping);
      expect(pool.size).toBe(1);
      await pool.run('b', optionsFor('b'), ping);
      await pool.run('c', optionsFor('c'), ping);
      await expect.poll(() => pool.size).toBe(2);
      await expect.poll(() => pool.size, { timeout: 5_000 }).toBe(0);
      expect(await pool.run('a', optionsFor('a'), ping)).toContain('"server"');
    } finally {
      await pool.close();
    }
  });
});

describe('NatsSystem against a real nats-server', () => {
  const f = useNatsServer();

  it('pushes, looks up and deletes an account; an account signed by a foreign key is stored but nobody gets in', async () => {
    const [accountSeed, signingSeed, userSeed] = [newSeed('account'), newSeed('account'), newSeed('user')];
    const account = publicKeyOf(accountSeed, 'account');
    const claims = { account, name: 'PROBE', signingKeys: [publicKeyOf(signingSeed, 'account')], limits: { ...UNLIMITED, diskStorage: 1024 * 1024, maxBytesRequired: true }, revocations: {} };
    const user = async (): Promise<UserCredentials> => ({ jwt: await signUser({ name: 'probe', account }, userSeed, signingSeed), seed: userSeed });
    expect(await f.nats.system.lookupAccount(account)).toBeUndefined();
    // The system user may store anything (nats-server's full resolver does not check the issuer)...
    await f.nats.system.pushAccount(account, await signAccount(claims, newSeed('operator')));
    expect(await f.nats.system.lookupAccount(account)).toMatch(/^eyJ/);
    // ...but an account not signed by the operator is not trusted: its users are refused.
    expect(await f.nats.accepts(await user())).toBe(false);
    // ensureAccount sees the foreign issuer and replaces it with ours; then the same user gets in.
    expect(await f.nats.ensureAccount(claims)).toBe(true);
    expect(await f.nats.ensureAccount(claims)).toBe(false);
    expect(await f.nats.accepts(await user())).toBe(true);
    await f.nats.deleteAccount(account);
    expect(await f.nats.system.lookupAccount(account)).toBeUndefined();
    expect(await f.nats.accepts(await user())).toBe(false);
  });

  it('refuses a deletion the operator did not sign, with the server\'s words', async () => {
    const account = publicKeyOf(newSeed('account'), 'account');
    await expect(f.nats.system.deleteAccounts([account], 'not-a-jwt')).rejects.toMatchObject({ reason: 'AccountRejected', message: expect.stringMatching(/^NATS refused the deletion of account A[A-Z2-7]+: .+/) as string });
  });
});
