/**
 * Ownership of NATS data by proof (issue 26), with the steps against the real API server (the account
 * keys Secrets, EvaTenants) and a real nats-server in operator mode:
 * - the attack: a second EvaTenant with a live tenant's code naming its uid in restore-from-uid gets
 *   nothing and, decommissioned, removes nothing (positive control: the owner's own removal deletes);
 * - the decommission that retains marks the keys record, streams and bucket; a restore is honoured only
 *   when the data is retained, by the uid named, under the same code, and no EvaTenant of that uid
 *   exists; each failing condition is refused by name (positive control: the honoured restore);
 * - a crash before each side effect of a takeover or a retention leaves the old owner or the new one
 *   holding the data, never both and never none, and a retry converges.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, GROUP, PLURAL, RESTORE_FROM_ANNOTATION, RETAINED_MARKS, VERSION } from '../../../src/api/constants.ts';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import type { NatsSession } from '../../../src/adapters/nats.ts';
import { NatsPool } from '../../../src/adapters/nats-pool.ts';
import { SeedCatalog } from '../../../src/bundle/seeds.ts';
import { type AccountKeyStore, accountKeysName, KubeAccountKeyStore, type StoredAccountKeys } from '../../../src/nats/account-keys.ts';
import type { NatsAccounts } from '../../../src/nats/accounts.ts';
import { accountStep, retainedAccount } from '../../../src/steps/account.ts';
import { recordStep } from '../../../src/steps/record.ts';
import { retainedSeed, seedStep } from '../../../src/steps/seed/seed.ts';
import { READY } from '../../../src/steps/step.ts';
import { retainedStreams, streamsStep } from '../../../src/steps/streams.ts';
import { dataBucket, eventsStream, kvStream } from '../../../src/tenancy/names.ts';
import type { TenantScope } from '../../../src/tenancy/scope.ts';
import { withRetention } from '../../../src/tenancy/ownership.ts';
import { apiKube } from '../../support/api-reads.ts';
import { Crash, crashing, withParts } from '../../support/faults.ts';
import { testAccounts, testScope } from '../../support/fixtures.ts';
import { startNatsServer, type TestNatsServer } from '../../support/nats-server.ts';
import { capsuleCodes, runLetters } from '../../support/random.ts';
import { kubectlOk } from '../../support/kubectl.ts';
import { repoRoot } from '../../support/tools.ts';

const SEEDS = SeedCatalog.load(fileURLToPath(new URL('../../../seeds', import.meta.url)));
const runId = runLetters();
const keysNamespace = `eva-test-restore-${runId.toLowerCase()}`;
let kube: Kube;
let server: TestNatsServer;
let store: KubeAccountKeyStore;
let nats: NatsAccounts;
const namespaces: string[] = [keysNamespace];

/** Sessions of the operator's pool run through this, so a test can make their stream writes crash. */
let wrapSession = (session: NatsSession): NatsSession => session;
class WrappingPool extends NatsPool {
  override run<T>(...[key, options, fn]: Parameters<NatsPool['run']>): Promise<T> {
    return super.run(key, options, (session) => fn(wrapSession(session)) as Promise<T>);
  }
}

/** Codes no other file running at once uses (test/support/random.ts). */
const nextCode = capsuleCodes('X');
/** Numbers the restoring scopes' uids. */
let counter = 0;

async function ensureNamespace(scope: TenantScope): Promise<void> {
  if (namespaces.includes(scope.namespace)) return;
  await kube.core.createNamespace({ body: { metadata: { name: scope.namespace } } });
  namespaces.push(scope.namespace);
}

const deps = () => ({ nats, ...apiKube(kube), seeds: SEEDS });
type Deps = ReturnType<typeof deps>;

// ---- what tenants do --------------------------------------------------------------------------------

const MESSAGES = ['m-1', 'm-2', 'm-3'];
const KV_VALUE = 'kept in the bucket';

/** What provisioning does on NATS and in the operator's namespace (account, streams, record, seed). */
async function provision(scope: TenantScope, d: Deps = deps()): Promise<void> {
  await ensureNamespace(scope);
  await accountStep.ensure(scope, d);
  await streamsStep.ensure(scope, d);
  await recordStep.ensure(scope, d);
  await seedStep.ensure(scope, d);
}

/** A provisioned tenant with messages in its events stream and a value of its own in its bucket. */
async function withData(scope: TenantScope): Promise<TenantScope> {
  await provision(scope);
  await nats.runInTenant(scope, async (session) => {
    for (const text of MESSAGES) await session.js.publish(`capsule.${scope.code}.events.t`, new TextEncoder().encode(text));
    const kv = await session.existingKv(dataBucket(scope.code));
    await kv?.put('t.kept', KV_VALUE);
  });
  return scope;
}

/** The decommission's NATS part (seed, streams, record, account: their order), with Retain or Delete. */
async function decommission(scope: TenantScope, retain: boolean, d: Deps = deps()): Promise<void> {
  const removals = retain ? [retainedSeed, retainedStreams, recordStep, retainedAccount] : [seedStep, streamsStep, recordStep, accountStep];
  for (const step of removals) await step.remove(scope, d);
  for (const step of removals) expect(await step.verifyRemoved(scope, d)).toEqual(READY);
}

const restoring = (code: string, from: string, uid = `uid-${runId}-${String(++counter)}`): TenantScope =>
  testScope({ code, uid, annotations: { [RESTORE_FROM_ANNOTATION]: from } });

// ---- what the store and the server hold ----------------------------------------------------------------

const keysOf = (scope: TenantScope): Promise<StoredAccountKeys | undefined> => store.read(accountKeysName(scope.code));

/** What an administrator of the account sees of the data, whoever owns it (the keys are read from the store). */
async function dataOf(code: string): Promise<{ messages: string[]; kv: string | undefined; owners: (string | undefined)[] }> {
  const stored = await store.read(accountKeysName(code));
  if (!stored) throw new Error(`no keys for ${code}`);
  const holder = testScope({ code, uid: stored.owner });
  return nats.runInTenant(holder, async (session) => {
    const messages: string[] = [];
    for (let seq = 1; seq <= MESSAGES.length; seq += 1) messages.push(new TextDecoder().decode((await session.jsm.streams.getMessage(eventsStream(code), { seq })).data));
    const kv = (await (await session.existingKv(dataBucket(code)))?.get('t.kept'))?.string();
    const owners = await Promise.all([eventsStream(code), kvStream(dataBucket(code))].map(async (name) => (await session.jsm.streams.info(name)).config.metadata?.['eva.aidonow.com/tenant-uid']));
    return { messages, kv, owners };
  });
}

const intact = { messages: MESSAGES, kv: KV_VALUE };

/** An EvaTenant in the API (pinned to a version no operator runs): its uid is a live tenant's. */
async function liveTenant(code: string): Promise<{ uid: string; remove: () => Promise<void> }> {
  const name = `restore-${code.toLowerCase()}`;
  const body = { apiVersion: API_VERSION, kind: 'EvaTenant', metadata: { name }, spec: { capsuleCode: code, tier: 'Starter', operatorVersion: '0.0.0-nobody' } };
  const created = (await kube.custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, body })) as { metadata: { uid: string } };
  const remove = async (): Promise<void> => {
    await kube.custom.deleteClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name });
  };
  return { uid: created.metadata.uid, remove };
}

// ---- fault injection --------------------------------------------------------------------------------

/** The deps where every side effect on custody crashes on cue: key writes, account pushes, Secret writes, stream updates and deletions. */
function crashingDeps(plan: { at: number; calls: number }): Deps {
  const keys = crashing<AccountKeyStore>(store, ['create', 'update', 'remove'], plan);
  const system = crashing(nats.system, ['pushAccount', 'deleteAccounts'], plan);
  const faultyKube = crashing(withParts(kube, { core: crashing(kube.core, ['deleteNamespacedSecret'], plan) }), ['apply'], plan);
  wrapSession = (session) => withParts(session, { jsm: withParts(session.jsm, { streams: crashing(session.jsm.streams, ['update', 'delete'], plan) }) });
  return { ...deps(), nats: withParts(nats, { keys, system }), ...apiKube(faultyKube) };
}

async function sideEffects(run: (d: Deps) => Promise<unknown>): Promise<number> {
  const plan = { at: 0, calls: 0 };
  try {
    await run(crashingDeps(plan));
  } finally {
    wrapSession = (session) => session;
  }
  return plan.calls;
}

async function crashAt(at: number, run: (d: Deps) => Promise<unknown>): Promise<void> {
  try {
    await expect(run(crashingDeps({ at, calls: 0 }))).rejects.toBeInstanceOf(Crash);
  } finally {
    wrapSession = (session) => session;
  }
}

beforeAll(async () => {
  kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
  kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
  kube = new Kube(loadKubeConfig());
  await kube.core.createNamespace({ body: { metadata: { name: keysNamespace } } });
  server = await startNatsServer();
  store = new KubeAccountKeyStore(kube, keysNamespace);
  nats = testAccounts(server, store, new WrappingPool({ idleMs: 5_000 }));
});

afterAll(async () => {
  await nats.close();
  await store.stop();
  await server.stop();
  for (const name of namespaces) await kube.core.deleteNamespace({ name }).catch(() => undefined);
});

describe('a second tenant naming a live tenant\'s uid (issue 26)', () => {
  it('gets nothing and, decommissioned, removes nothing; the owner\'s own decommission removes it all (the control)', async () => {
    const victim = await withData(testScope({ code: nextCode(), uid: `uid-victim-${runId}` }));
    const before = await keysOf(victim);
    const attacker = restoring(victim.code, `uid-victim-${runId}`);
    await expect(accountStep.ensure(attacker, deps())).rejects.toMatchObject({ reason: 'RestoreRefused', message: expect.stringContaining('is not marked retained') as unknown });
    await expect(streamsStep.ensure(attacker, deps())).rejects.toMatchObject({ reason: 'CapsuleCodeInUse' });
    await expect(seedStep.ensure(attacker, deps())).rejects.toMatchObject({ reason: 'CapsuleCodeInUse' });
    // Its decommission, with Delete and with Retain: nothing of its own, so nothing done.
    await decommission(attacker, false);
    await decommission(attacker, true);
    expect(await keysOf(victim)).toEqual(before);
    expect(await dataOf(victim.code)).toMatchObject({ ...intact, owners: [victim.tenant.metadata.uid, victim.tenant.metadata.uid] });
    for (const step of [accountStep, streamsStep, seedStep]) expect(await step.verify(victim, deps()), step.name).toEqual(READY);
    // The control: the same removal by the owner deletes its data.
    await decommission(victim, false);
    expect(await keysOf(victim)).toBeUndefined();
  });
});

describe('retention marks and the conditions of a restore', () => {
  it('the retaining decommission marks the keys record, streams and bucket (verifyRemoved waits for the marks); a repeat writes nothing', async () => {
    const owner = await withData(testScope({ code: nextCode() }));
    const uid = owner.tenant.metadata.uid ?? '';
    for (const step of [retainedSeed, retainedStreams]) expect(await step.verifyRemoved(owner, deps())).toMatchObject({ ready: false, reason: 'RetentionPending' });
    await kube.core.deleteNamespacedSecret({ name: 'eva-nats', namespace: owner.namespace });
    expect(await retainedAccount.verifyRemoved(owner, deps())).toMatchObject({ ready: false, reason: 'RetentionPending' });
    await decommission(owner, true);
    const marked = await keysOf(owner);
    expect(marked).toMatchObject({ owner: uid, retained: { uid, code: owner.code } });
    const metadata = await nats.runInTenant(owner, (s) => s.jsm.streams.info(eventsStream(owner.code)).then((i) => i.config.metadata));
    expect(metadata).toMatchObject({ [RETAINED_MARKS.fromUid]: uid, [RETAINED_MARKS.code]: owner.code, [RETAINED_MARKS.at]: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown });
    expect(await sideEffects((d) => decommission(owner, true, d))).toBe(0);
    expect((await keysOf(owner))?.version).toBe(marked?.version);
  });

  it('refuses a restore, naming the failed condition and touching nothing, unless the data is retained by that uid under that code and its tenant is gone; then takes it over', async () => {
    // No retained data for the code at all: refused, no fresh (empty) account made.
    const fresh = restoring(nextCode(), 'uid-nobody');
    await expect(accountStep.ensure(fresh, deps())).rejects.toMatchObject({ reason: 'RestoreRefused', message: expect.stringContaining('has no retained data') as unknown });
    expect(await keysOf(fresh)).toBeUndefined();

    // Data of a tenant decommissioned without Retain (keys left, not marked): refused.
    const unmarked = await withData(testScope({ code: nextCode() }));
    await expect(accountStep.ensure(restoring(unmarked.code, unmarked.tenant.metadata.uid ?? ''), deps())).rejects.toMatchObject({ reason: 'RestoreRefused', message: expect.stringContaining('not marked retained') as unknown });

    // Retained by a tenant that still exists in the API: refused until it is deleted.
    const code = nextCode();
    const live = await liveTenant(code);
    const retainer = await withData(testScope({ code, uid: live.uid }));
    await decommission(retainer, true);
    const retainedKeys = await keysOf(retainer);
    const restorer = restoring(code, live.uid);
    await expect(accountStep.ensure(restorer, deps())).rejects.toMatchObject({ reason: 'RestoreRefused', message: expect.stringContaining(`EvaTenant restore-${code.toLowerCase()} (uid ${live.uid}) still exists`) as unknown });
    // Another uid than the retained one: refused.
    await expect(accountStep.ensure(restoring(code, 'uid-someone-else'), deps())).rejects.toMatchObject({ reason: 'RestoreRefused', message: expect.stringContaining(`belongs to uid ${live.uid}`) as unknown });
    // A mark of another code (as a hand edit would leave it): refused.
    const setCode = async (value: string): Promise<void> => {
      const stored = await keysOf(retainer);
      if (stored?.retained === undefined) throw new Error('not retained');
      await store.update(accountKeysName(code), stored, stored.keys, withRetention(stored, { ...stored.retained, code: value }));
    };
    await live.remove();
    await setCode('OTHERS');
    await expect(accountStep.ensure(restorer, deps())).rejects.toMatchObject({ reason: 'RestoreRefused', message: expect.stringContaining('retained under capsule code OTHERS') as unknown });
    await setCode(code);
    expect((await keysOf(retainer))?.owner).toBe(retainedKeys?.owner);

    // Every condition holds (the control): taken over, the data the restorer's, stamped with its uid, marks gone.
    const restorerUid = restorer.tenant.metadata.uid ?? '';
    await provision(restorer);
    expect(await keysOf(restorer)).toMatchObject({ owner: restorerUid, restoredFrom: live.uid, keys: { account: retainedKeys?.keys.account } });
    expect((await keysOf(restorer))?.retained).toBeUndefined();
    expect(await dataOf(code)).toEqual({ ...intact, owners: [restorerUid, restorerUid] });
    for (const step of [accountStep, streamsStep, seedStep]) expect(await step.verify(restorer, deps()), step.name).toEqual(READY);
    // Taken over: naming the old uid again gets nothing.
    await expect(accountStep.ensure(restoring(code, live.uid), deps())).rejects.toMatchObject({ reason: 'RestoreRefused', message: expect.stringContaining(`belongs to uid ${restorerUid}`) as unknown });
  });
});

describe('crashes of a takeover and of a retention', () => {
  /** A tenant retained and gone (its uid is in no EvaTenant), and the scope that restores it. */
  async function retainedAndGone(): Promise<{ from: string; restorer: TenantScope }> {
    const old = await withData(testScope({ code: nextCode() }));
    await decommission(old, true);
    const from = old.tenant.metadata.uid ?? '';
    return { from, restorer: restoring(old.code, from) };
  }

  it('a crash before each side effect of a takeover leaves exactly one holder, and a retry converges', async () => {
    const probe = await retainedAndGone();
    const total = await sideEffects((d) => provision(probe.restorer, d));
    expect(total).toBeGreaterThanOrEqual(4);
    const holders = { old: 0, new: 0 };
    for (let at = 1; at <= total; at += 1) {
      const { from, restorer } = await retainedAndGone();
      const uid = restorer.tenant.metadata.uid ?? '';
      await crashAt(at, (d) => provision(restorer, d));
      const held = await keysOf(restorer);
      if (held?.owner === from) {
        // Not taken over: still the old uid's, retained; the restorer may act on nothing.
        holders.old += 1;
        expect(held.retained?.uid, `crash at ${String(at)}`).toBe(from);
        await expect(streamsStep.ensure(restorer, deps())).rejects.toMatchObject({ reason: 'CapsuleCodeInUse' });
      } else {
        // Taken over: the restorer's by its record, which no other restore of the old uid gets past.
        holders.new += 1;
        expect(held, `crash at ${String(at)}`).toMatchObject({ owner: uid, restoredFrom: from });
        await expect(accountStep.ensure(restoring(restorer.code, from), deps())).rejects.toMatchObject({ reason: 'RestoreRefused' });
      }
      expect(await dataOf(restorer.code), `crash at ${String(at)}`).toMatchObject(intact);
      await provision(restorer);
      expect(await dataOf(restorer.code), `retry after a crash at ${String(at)}`).toEqual({ ...intact, owners: [uid, uid] });
      for (const step of [accountStep, streamsStep, seedStep]) expect(await step.verify(restorer, deps()), `${step.name} after a crash at ${String(at)}`).toEqual(READY);
    }
    // Crashes fell on both sides of the takeover's one write.
    expect(holders.old).toBeGreaterThanOrEqual(1);
    expect(holders.new).toBeGreaterThanOrEqual(3);
  });

  it('a crash before each side effect of a retaining decommission is completed by the retry: retained, marked, restorable', async () => {
    const probe = await withData(testScope({ code: nextCode() }));
    const total = await sideEffects((d) => decommission(probe, true, d));
    expect(total).toBeGreaterThanOrEqual(5);
    for (let at = 1; at <= total; at += 1) {
      const scope = await withData(testScope({ code: nextCode() }));
      await crashAt(at, (d) => decommission(scope, true, d));
      await decommission(scope, true);
      expect(await keysOf(scope), `crash at ${String(at)}`).toMatchObject({ retained: { uid: scope.tenant.metadata.uid, code: scope.code } });
      expect(await dataOf(scope.code)).toMatchObject(intact);
    }
  });
});
