/**
 * Isolation on the message bus, attacked as a tenant's own pod would: with nothing but tenant A's
 * Secret eva-nats (what its modules mount), try to see, read, write, subscribe to and delete what is
 * not A's. Every attack has a positive control showing the same move works on A's own things, so a
 * refusal is the permission, not a broken connection. Against the real operator process and the dev
 * cluster's nats-server in operator mode.
 *
 * Isolation of the test itself (the cluster is shared): its own operator version, only tenants pinned
 * to it, deleted at the end.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection, type Msg, StringCodec } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROTATE_NATS_CREDENTIALS_ANNOTATION } from '../src/api/constants.ts';
import { formatCreds, newSeed, publicKeyOf, signUser } from '../src/adapters/nats-jwt.ts';
import { kubectl, kubectlOk, requiredEnv } from '../test/support/kubectl.ts';
import { repoRoot } from '../test/support/tools.ts';
import { confinedIdentity } from '../test/support/operator-identity.ts';
import { type AccountSession, clusterAccounts, connectAsModule, inRegistry, inTenant, moduleCredentials, streamNames, tenantAccount, tenantAccountIn } from '../test/support/nats.ts';
import { type OperatorProcess, operatorEnv, removeSecretsDir, startOperator } from '../test/support/operator.ts';
import { applyTenant, conditionFalse, isActive, waitForGone, waitForTenant } from '../test/support/tenants.ts';

const VERSION = '9.10.0';
const A = 'ISOAAA';
const B = 'ISOBBB';
const sc = StringCodec();
const name = (code: string): string => code.toLowerCase();
const monitor = (): string => requiredEnv('EVA_NATS_MONITOR_URL');

let operator: OperatorProcess;
let a: AccountSession;
const opened: NatsConnection[] = [];

/** Resolves with what happened to a request: its reply, or the refusal. */
const attempt = <T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: string }> =>
  promise.then((value) => ({ ok: true as const, value }), (err: unknown) => ({ ok: false as const, error: String(err) }));

async function eventsCount(code: string): Promise<number | undefined> {
  return inTenant(code, async ({ jsm }) => (await jsm.streams.info(`eva-${code}-events`)).state.messages);
}

function create(code: string, tier = 'Starter'): void {
  applyTenant(name(code), { capsuleCode: code, tier, seedsVersion: '1.0.0', wave: 1, operatorVersion: VERSION });
}

/** Collects what a subscription receives, and the permission error if the server refused it. */
function collect(nc: NatsConnection, subject: string): { messages: string[]; errors: string[] } {
  const seen = { messages: [] as string[], errors: [] as string[] };
  nc.subscribe(subject, {
    callback: (err: Error | null, msg: Msg) => {
      if (err) seen.errors.push(err.message);
      else seen.messages.push(msg.subject);
    },
  });
  return seen;
}

beforeAll(async () => {
  operator = startOperator({ OPERATOR_VERSION: VERSION, MAX_WAVE: '0' });
  await operator.ready();
  create(A);
  create(B);
  for (const code of [A, B]) await waitForTenant(name(code), 'Active', isActive, 120_000);
  a = await connectAsModule(A);
  opened.push(a.nc);
}, 180_000);

afterAll(async () => {
  for (const nc of opened) await nc.close().catch(() => undefined);
  for (const code of [A, B, 'ISODWN']) kubectl(['delete', 'evt', name(code), '--ignore-not-found', '--wait=false']);
  for (const code of [A, B, 'ISODWN']) await waitForGone(name(code), 120_000);
  await operator.stop();
  removeSecretsDir(operator);
}, 300_000);

describe('with tenant A\'s own credentials (Secret eva-nats)', () => {
  it('nobody gets in without credentials; A\'s credentials do (control)', async () => {
    expect((await attempt(connect({ servers: process.env['NATS_URL'], reconnect: false, timeout: 2_000 }))).ok).toBe(false);
    expect(a.nc.isClosed()).toBe(false);
  });

  it('lists only A\'s own streams', async () => {
    const names: string[] = [];
    for await (const info of a.jsm.streams.list()) names.push(info.config.name);
    expect(names.sort()).toEqual([`KV_eva-${A}-data`, `eva-${A}-commands`, `eva-${A}-events`]);
    // B's streams exist (control): the operator sees them in B's account.
    expect(await streamNames(B)).toEqual([`KV_eva-${B}-data`, `eva-${B}-commands`, `eva-${B}-events`]);
  });

  it('cannot read B\'s stream info, messages or bucket; reads A\'s own (control)', async () => {
    await inTenant(B, ({ js }) => js.publish(`capsule.${B}.events.secret`, sc.encode('B-only')));
    expect((await attempt(a.jsm.streams.info(`eva-${B}-events`))).ok).toBe(false);
    expect((await attempt(a.jsm.streams.getMessage(`eva-${B}-events`, { last_by_subj: `capsule.${B}.events.secret` }))).ok).toBe(false);
    expect((await attempt(a.js.views.kv(`eva-${B}-data`, { bindOnly: true }).then((kv) => kv.get('orbit-crm.pipeline.stages')))).ok).toBe(false);
    await a.js.publish(`capsule.${A}.events.mine`, sc.encode('A-only'));
    expect((await a.jsm.streams.getMessage(`eva-${A}-events`, { last_by_subj: `capsule.${A}.events.mine` })).string()).toBe('A-only');
    const ownBucket = await a.existingKv(`eva-${A}-data`);
    expect((await ownBucket?.get('orbit-crm.pipeline.stages'))?.json()).toBeDefined();
  });

  it('receives nothing of B\'s traffic on ">" while B publishes; its own subjects arrive (control)', async () => {
    const everything = collect(a.nc, '>');
    const own = collect(a.nc, `capsule.${A}.>`);
    // The operator's own user in A's account may subscribe to ">": the account boundary alone hides B.
    const admin = await inTenant(A, async (s) => {
      const seen = collect(s.nc, '>');
      const b = await connectAsModule(B);
      opened.push(b.nc);
      await s.nc.flush();
      for (let i = 0; i < 20; i += 1) b.nc.publish(`capsule.${B}.events.tick`, sc.encode(String(i)));
      await b.nc.flush();
      a.nc.publish(`capsule.${A}.events.tick`, sc.encode('own'));
      await a.nc.flush();
      await new Promise((resolve) => setTimeout(resolve, 500));
      return seen;
    });
    expect(everything.messages).toEqual([]);
    expect(everything.errors.join(' ')).toMatch(/permissions violation/i);
    expect(own.messages).toContain(`capsule.${A}.events.tick`);
    expect(admin?.messages.filter((s) => s.includes(B))).toEqual([]);
    expect(admin?.messages).toContain(`capsule.${A}.events.tick`);
  });

  it('cannot publish into B\'s stream; its own publish lands (control)', async () => {
    const before = await eventsCount(B);
    const refused = await attempt(a.js.publish(`capsule.${B}.events.forged`, sc.encode('x'), { timeout: 2_000 }));
    expect(refused.ok).toBe(false);
    expect(await eventsCount(B)).toBe(before);
    const ack = await a.js.publish(`capsule.${A}.events.fine`, sc.encode('x'));
    expect(ack.stream).toBe(`eva-${A}-events`);
  });

  it('cannot reach the operator\'s eva-tenants registry, which holds A\'s record (control)', async () => {
    expect((await attempt(a.jsm.streams.info('KV_eva-tenants'))).ok).toBe(false);
    expect((await attempt(a.js.views.kv('eva-tenants', { bindOnly: true }).then((kv) => kv.get(A)))).ok).toBe(false);
    const record = await inRegistry(async ({ js }) => (await (await js.views.kv('eva-tenants', { bindOnly: true })).get(A))?.json<{ code: string }>());
    expect(record?.code).toBe(A);
  });

  it('cannot delete, purge, reconfigure or create streams: permission violation, stream intact', async () => {
    const before = await eventsCount(A);
    expect((await attempt(a.jsm.streams.delete(`eva-${A}-events`))).ok).toBe(false);
    expect((await attempt(a.jsm.streams.purge(`eva-${A}-events`))).ok).toBe(false);
    const config = (await a.jsm.streams.info(`eva-${A}-events`)).config;
    expect((await attempt(a.jsm.streams.update(config.name, { ...config, max_msgs: 1 }))).ok).toBe(false);
    expect((await attempt(a.jsm.streams.add({ name: 'mine', subjects: [`capsule.${A}.mine.>`], max_bytes: 1024 }))).ok).toBe(false);
    expect(await eventsCount(A)).toBe(before);
    expect((await a.jsm.streams.info(`eva-${A}-events`)).config.max_msgs).toBe(config.max_msgs);
  });

  it('credentials of A forged for B\'s account are refused (a user signed by A\'s key for B\'s account)', async () => {
    const accountB = tenantAccount(B) ?? '';
    const seed = newSeed('user');
    const forgedJwt = await signUser({ name: 'forged', account: accountB }, seed, newSeed('account'));
    const forged = { url: moduleCredentials(A).url, creds: formatCreds(forgedJwt, seed) };
    expect((await attempt(connectAsModule(B, forged))).ok).toBe(false);
    expect(publicKeyOf(seed, 'user')).toMatch(/^U/);
  });
});

describe('JetStream limits of the tier, enforced by the server', () => {
  it('a message above the tier\'s payload is refused; one below lands (control)', async () => {
    const module = await connectAsModule(A);
    opened.push(module.nc);
    const small = await attempt(module.js.publish(`capsule.${A}.events.small`, new Uint8Array(200 * 1024)));
    expect(small.ok).toBe(true);
    const big = await attempt(module.js.publish(`capsule.${A}.events.big`, new Uint8Array(300 * 1024)));
    expect(big.ok).toBe(false);
    expect(big.ok ? '' : big.error).toMatch(/MAX_PAYLOAD|payload/i);
  });

  it('a stream beyond the tier\'s storage is refused by the server, even for the operator', async () => {
    const refused = await inTenant(A, (s) => attempt(s.jsm.streams.add({ name: 'extra', subjects: [`capsule.${A}.extra.>`], max_bytes: 100 * 1024 * 1024 })));
    expect(refused?.ok).toBe(false);
    expect(refused?.ok === false ? refused.error : '').toMatch(/insufficient|maximum number of streams/i);
  });

  it('a tier downgrade the data does not fit: a clear condition, nothing deleted; back to the tier, Active', async () => {
    const code = 'ISODWN';
    create(code, 'Customer');
    await waitForTenant(name(code), 'Active', isActive, 120_000);
    const module = await connectAsModule(code);
    opened.push(module.nc);
    for (let i = 0; i < 150; i += 1) await module.js.publish(`capsule.${code}.events.bulk`, new Uint8Array(500 * 1024));
    const stored = await eventsCount(code);
    expect(stored).toBe(150);
    kubectlOk(['patch', 'evt', name(code), '--type', 'merge', '-p', JSON.stringify({ spec: { tier: 'Starter' } })]);
    const { tenant } = await waitForTenant(name(code), 'Provisioned False JetStreamUsageExceedsTier', conditionFalse('Provisioned', 'JetStreamUsageExceedsTier'), 60_000);
    expect(tenant.conditions['Provisioned']?.message).toMatch(/eva-ISODWN-events holds 7\d\.\d MiB \(the Starter tier allows 64\.0 MiB\).*Nothing was changed or deleted/);
    expect(await eventsCount(code)).toBe(150);
    kubectlOk(['patch', 'evt', name(code), '--type', 'merge', '-p', JSON.stringify({ spec: { tier: 'Customer' } })]);
    await waitForTenant(name(code), 'Active', isActive, 120_000);
    expect(await eventsCount(code)).toBe(150);
  });
});

describe('rotation and deletion', () => {
  it('rotation: new credentials in eva-nats, the modules rolled exactly once, the old credentials refused', async () => {
    const namespace = `eva-tenant-${name(A)}`;
    const generations = (): Record<string, number> =>
      Object.fromEntries(
        (JSON.parse(kubectlOk(['get', 'deployments', '-n', namespace, '-o', 'json'])) as { items: { metadata: { name: string; generation: number } }[] }).items.map(
          (d) => [d.metadata.name, d.metadata.generation],
        ),
      );
    const before = generations();
    const old = moduleCredentials(A);
    const started = Date.now();
    kubectlOk(['annotate', 'evt', name(A), `${ROTATE_NATS_CREDENTIALS_ANNOTATION}=${String(started)}`]);
    await waitForTenant(name(A), 'rotated and Active', (t) => isActive(t) && moduleCredentials(A).creds !== old.creds, 120_000);
    await expect.poll(async () => (await attempt(connectAsModule(A, old))).ok, { timeout: 30_000 }).toBe(false);
    console.log(`rotation: new credentials, modules rolled and old user revoked in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const fresh = await connectAsModule(A);
    opened.push(fresh.nc);
    expect(generations()).toEqual(Object.fromEntries(Object.entries(before).map(([n, g]) => [n, g + 1])));
    // The connection opened with the old credentials at the start was dropped by the server.
    await expect.poll(() => a.nc.isClosed(), { timeout: 10_000 }).toBe(true);
  });

  it('after A is deleted its credentials are refused and /jsz shows none of its streams; B is untouched (control)', async () => {
    const last = moduleCredentials(A);
    kubectlOk(['delete', 'evt', name(A), '--wait=false']);
    expect(await waitForGone(name(A), 120_000)).toBe(true);
    expect((await attempt(connectAsModule(A, last))).ok).toBe(false);
    const jsz = await (await fetch(`${monitor()}/jsz?accounts=true&streams=true`)).text();
    expect(jsz).not.toContain(A);
    expect(jsz).toContain(`eva-${B}-events`);
    expect(tenantAccount(A)).toBeUndefined();
    const b = await connectAsModule(B);
    opened.push(b.nc);
    expect((await b.js.publish(`capsule.${B}.events.still`, sc.encode('ok'))).stream).toBe(`eva-${B}-events`);
  });
});

describe('the operator refuses to start with NATS credentials the server rejects, naming the setting', () => {
  const dir = mkdtempSync(join(tmpdir(), 'eva-bad-nats-'));
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  function run(env: Record<string, string>): { status: number | null; output: string } {
    const result = spawnSync(process.execPath, [join(repoRoot, 'src/cli.ts'), 'run'], {
      cwd: repoRoot,
      encoding: 'utf8',
      timeout: 60_000,
      env: operatorEnv({ OPERATOR_VERSION: '9.10.1', MAX_WAVE: '0', HELM_SECRETS_ALLOW_NON_TMPFS: 'true', ...env }, dir),
    });
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  }

  it('a system user of another operator: exit 2, NATS_SYSTEM_CREDS_FILE named, no key printed', async () => {
    const account = newSeed('account');
    const user = newSeed('user');
    const file = join(dir, 'foreign.creds');
    writeFileSync(file, formatCreds(await signUser({ name: 'x', account: publicKeyOf(account, 'account') }, user, account), user));
    const { status, output } = run({ NATS_SYSTEM_CREDS_FILE: file });
    expect(status).toBe(2);
    expect(output).toContain('NATS_SYSTEM_CREDS_FILE: NATS at');
    expect(output).not.toContain(user);
  });

  it('a signing key the operator JWT does not list: exit 2, NATS_OPERATOR_SIGNING_KEY_FILE named, no key printed', async () => {
    const seed = newSeed('operator');
    const file = join(dir, 'foreign.nk');
    writeFileSync(file, seed);
    // Its own key store namespace, so the real registry account's Secret is not the one re-signed:
    // a second release of the chart's confinement, as a second operator release would have.
    const foreign = await confinedIdentity({ release: 'eva-e2e-foreign-key', namespace: 'eva-e2e-foreign-key' }, dir);
    const { status, output } = run({ NATS_OPERATOR_SIGNING_KEY_FILE: file, KUBECONFIG: foreign.kubeconfig, POD_NAMESPACE: foreign.namespace });
    expect(status).toBe(2);
    expect(output).toContain('NATS_OPERATOR_SIGNING_KEY_FILE: NATS at');
    expect(output).not.toContain(seed);
    // The untrusted account it pushed is deleted with the real signing key, its keys with it.
    const stray = tenantAccountIn('eva-nats-account-operator', foreign.namespace);
    const accounts = clusterAccounts();
    if (stray) await accounts.deleteAccount(stray).finally(() => accounts.close());
    kubectl(['delete', '-f', '-', '--ignore-not-found', '--wait=false'], foreign.rendered);
    kubectl(['delete', 'namespace', foreign.namespace, '--ignore-not-found', '--wait=false']);
  });

  it('with the right files it starts (control)', async () => {
    const ok = startOperator({ OPERATOR_VERSION: '9.6.2', MAX_WAVE: '0' });
    await ok.ready();
    expect(ok.logs()).toContain('NATS accepts the system user and trusts the operator signing key');
    await ok.stop();
    removeSecretsDir(ok);
  });
});
