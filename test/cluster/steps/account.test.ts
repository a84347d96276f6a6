/**
 * Steps account, revoke and network against the real API server and a real nats-server in operator
 * mode. The crash tests stop a run at each side effect in turn (a pod killed at that line), run the
 * step again, and check what a crash must never leave: an account on the server without keys, two
 * keys for one tenant, two live credential sets after a rotation, an account that survives deletion.
 */
import { connect, jwtAuthenticator } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROTATE_NATS_CREDENTIALS_ANNOTATION } from '../../../src/api/constants.ts';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import type { UserCredentials } from '../../../src/adapters/nats.ts';
import { parseCreds } from '../../../src/adapters/nats-jwt.ts';
import { NATS_CREDENTIALS_SECRET, NATS_CREDS_KEY, accountStep } from '../../../src/steps/account.ts';
import { type AccountKeyStore, accountKeysName, KubeAccountKeyStore } from '../../../src/nats/account-keys.ts';
import type { NatsAccounts } from '../../../src/nats/accounts.ts';
import { desiredNetworkPolicy, NETWORK_POLICY_NAME, networkStep } from '../../../src/steps/network.ts';
import { revokeStep } from '../../../src/steps/revoke.ts';
import { READY } from '../../../src/steps/step.ts';
import type { TenantScope } from '../../../src/tenancy/scope.ts';
import type { NetworkPolicySettings } from '../../../src/config.ts';
import { testAccounts, testScope } from '../../support/fixtures.ts';
import { apiKube } from '../../support/api-reads.ts';
import { startNatsServer, type TestNatsServer } from '../../support/nats-server.ts';
import { capsuleCodes, runLetters } from '../../support/random.ts';
import { Crash, crashing, withParts } from '../../support/faults.ts';

const runId = runLetters();
const keysNamespace = `eva-test-keys-${runId.toLowerCase()}`;
let kube: Kube;
let server: TestNatsServer;
let store: KubeAccountKeyStore;
let nats: NatsAccounts;
const namespaces: string[] = [keysNamespace];

/** Codes no other file running at once uses (test/support/random.ts). */
const nextCode = capsuleCodes('Y');

async function tenant(options: Partial<Parameters<typeof testScope>[0]> = {}): Promise<TenantScope> {
  const scope = testScope({ code: nextCode(), tier: 'Starter', ...options });
  await kube.core.createNamespace({ body: { metadata: { name: scope.namespace } } });
  namespaces.push(scope.namespace);
  return scope;
}

const deps = () => ({ nats, ...apiKube(kube) });

// ---- fault injection ------------------------------------------------------------------------------

/** The step's deps where the side effects (key writes, account pushes and deletions, Secret writes) crash on cue. */
function crashingDeps(plan: { at: number; calls: number }) {
  const keys = crashing<AccountKeyStore>(store, ['create', 'update', 'remove'], plan);
  const system = crashing(nats.system, ['pushAccount', 'deleteAccounts'], plan);
  const replaced: Record<string | symbol, unknown> = { keys, system };
  const faultyNats = withParts(nats, replaced);
  const faultyKube = crashing(withParts(kube, { core: crashing(kube.core, ['deleteNamespacedSecret'], plan) }), ['apply'], plan);
  return { nats: faultyNats, ...apiKube(faultyKube) };
}

/** How many side effects a clean run of `run` makes (so every one of them can be crashed). */
async function sideEffects(run: (d: ReturnType<typeof crashingDeps>) => Promise<unknown>): Promise<number> {
  const plan = { at: 0, calls: 0 };
  await run(crashingDeps(plan));
  return plan.calls;
}

// ---- what the server and the store hold -------------------------------------------------------------

/** Account JWTs the server's resolver holds, the system account's and the registry's aside. */
async function serverAccounts(): Promise<string[]> {
  const registry = (await store.read('eva-nats-account-operator'))?.keys.account;
  const system = JSON.parse(await (await fetch(`${server.monitorUrl}/varz`)).text()) as { system_account?: string };
  return (await nats.system.listAccounts()).filter((a) => a !== system.system_account && a !== registry).sort();
}

async function moduleCredentials(scope: TenantScope): Promise<UserCredentials | undefined> {
  const secret = await kube.core.readNamespacedSecret({ name: NATS_CREDENTIALS_SECRET, namespace: scope.namespace }).catch(() => undefined);
  const creds = secret?.data?.[NATS_CREDS_KEY];
  return creds === undefined ? undefined : parseCreds(Buffer.from(creds, 'base64').toString('utf8'));
}

async function accepted(credentials: UserCredentials): Promise<boolean> {
  try {
    const nc = await connect({ servers: server.url, reconnect: false, timeout: 2_000, authenticator: jwtAuthenticator(credentials.jwt, new TextEncoder().encode(credentials.seed)) });
    await nc.close();
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  kube = new Kube(loadKubeConfig());
  await kube.core.createNamespace({ body: { metadata: { name: keysNamespace } } });
  server = await startNatsServer();
  store = new KubeAccountKeyStore(kube, keysNamespace);
  nats = testAccounts(server, store);
});

afterAll(async () => {
  await nats.close();
  await store.stop();
  await server.stop();
  for (const name of namespaces) await kube.core.deleteNamespace({ name }).catch(() => undefined);
});

describe('step account (real API server, real nats-server)', () => {
  it('creates keys, the account and Secret eva-nats; a repeat changes nothing; verify agrees', async () => {
    const scope = await tenant();
    expect(await accountStep.verify(scope, deps())).toMatchObject({ ready: false, reason: 'AccountMissing' });
    await accountStep.ensure(scope, deps());
    expect(await accountStep.verify(scope, deps())).toEqual(READY);
    const keys = (await store.read(accountKeysName(scope.code)))?.keys;
    const before = await kube.core.readNamespacedSecret({ name: NATS_CREDENTIALS_SECRET, namespace: scope.namespace });
    expect(await sideEffects((d) => accountStep.ensure(scope, d))).toBe(0);
    const after = await kube.core.readNamespacedSecret({ name: NATS_CREDENTIALS_SECRET, namespace: scope.namespace });
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect((await store.read(accountKeysName(scope.code)))?.keys).toEqual(keys);
    expect(await serverAccounts()).toContain(keys?.account);
    const creds = await moduleCredentials(scope);
    expect(creds && (await accepted(creds))).toBe(true);
    // The keys are in the operator's namespace, not the tenant's: nothing there but eva-nats.
    const tenantSecrets = await kube.core.listNamespacedSecret({ namespace: scope.namespace });
    expect(tenantSecrets.items.map((s) => s.metadata?.name)).toEqual([NATS_CREDENTIALS_SECRET]);
    expect(JSON.stringify(tenantSecrets.items)).not.toContain(Buffer.from(keys?.signingSeed ?? '?').toString('base64'));
  });

  it('repairs drift: an account deleted on the server, a tampered eva-nats', async () => {
    const scope = await tenant();
    await accountStep.ensure(scope, deps());
    const keys = (await store.read(accountKeysName(scope.code)))?.keys;
    await nats.deleteAccount(keys?.account ?? '');
    expect(await accountStep.verify(scope, deps())).toMatchObject({ ready: false, reason: 'AccountMissing' });
    await kube.core.patchNamespacedSecret(
      { name: NATS_CREDENTIALS_SECRET, namespace: scope.namespace, body: [{ op: 'replace', path: '/data/url', value: Buffer.from('nats://elsewhere:4222').toString('base64') }] },
    );
    await accountStep.ensure(scope, deps());
    expect(await accountStep.verify(scope, deps())).toEqual(READY);
    const creds = await moduleCredentials(scope);
    expect(creds && (await accepted(creds))).toBe(true);
  });

  it('refuses a capsule code whose account belongs to another tenant, and leaves it untouched', async () => {
    const owner = await tenant();
    await accountStep.ensure(owner, deps());
    const intruder = testScope({ code: owner.code, uid: 'uid-intruder', tier: 'Enterprise' });
    await expect(accountStep.ensure(intruder, deps())).rejects.toMatchObject({ reason: 'CapsuleCodeInUse' });
    await accountStep.remove(intruder, deps());
    expect(await accountStep.verifyRemoved(intruder, deps())).toEqual(READY);
    expect(await accountStep.verify(owner, deps())).toEqual(READY);
  });

  it('a crash before any side effect of account creation converges on one account and one set of keys', async () => {
    const probe = await tenant();
    const total = await sideEffects((d) => accountStep.ensure(probe, d));
    expect(total).toBeGreaterThanOrEqual(3);
    for (let at = 1; at <= total; at += 1) {
      const scope = await tenant();
      await expect(accountStep.ensure(scope, crashingDeps({ at, calls: 0 }))).rejects.toBeInstanceOf(Crash);
      await accountStep.ensure(scope, deps());
      expect(await accountStep.verify(scope, deps()), `crash at side effect ${at}`).toEqual(READY);
    }
    // Every account on the server has its keys in the store: nothing orphaned.
    const stored = await store.read(accountKeysName(probe.code));
    expect(stored).toBeDefined();
    const known = new Set<string>();
    for (const name of namespaces.slice(1)) {
      const keys = await store.read(accountKeysName(name.replace('eva-tenant-', '')));
      if (keys) known.add(keys.keys.account);
    }
    expect((await serverAccounts()).filter((a) => !known.has(a))).toEqual([]);
  });
});

describe('rotation (account + revoke)', () => {
  async function rotate(scope: TenantScope, value: string, d = deps()): Promise<TenantScope> {
    const rotating = { ...scope, tenant: { ...scope.tenant, metadata: { ...scope.tenant.metadata, annotations: { [ROTATE_NATS_CREDENTIALS_ANNOTATION]: value } } } };
    await accountStep.ensure(rotating, d);
    await revokeStep.ensure(rotating, d);
    return rotating;
  }

  it('mints new credentials, keeps the old ones until step revoke, then refuses them and drops their live connection', async () => {
    const scope = await tenant();
    await accountStep.ensure(scope, deps());
    const old = await moduleCredentials(scope);
    if (!old) throw new Error('no credentials');
    const live = await connect({ servers: server.url, reconnect: false, authenticator: jwtAuthenticator(old.jwt, new TextEncoder().encode(old.seed)) });
    const rotating = { ...scope, tenant: { ...scope.tenant, metadata: { ...scope.tenant.metadata, annotations: { [ROTATE_NATS_CREDENTIALS_ANNOTATION]: 'r1' } } } };
    expect(await accountStep.verify(rotating, deps())).toMatchObject({ ready: false, reason: 'NatsCredentialsRotating' });
    await accountStep.ensure(rotating, deps());
    const fresh = await moduleCredentials(scope);
    if (!fresh) throw new Error('no credentials');
    expect(fresh.seed).not.toBe(old.seed);
    // Both work while the modules roll over (step modules runs between account and revoke).
    expect(await accepted(old)).toBe(true);
    expect(await accepted(fresh)).toBe(true);
    expect(await revokeStep.verify(rotating, deps())).toMatchObject({ ready: false, reason: 'NatsCredentialsRotating' });
    await revokeStep.ensure(rotating, deps());
    expect(await revokeStep.verify(rotating, deps())).toEqual(READY);
    expect(await accountStep.verify(rotating, deps())).toEqual(READY);
    expect(await accepted(old)).toBe(false);
    expect(await accepted(fresh)).toBe(true);
    // The server drops the revoked user's live connection (no reconnect here, so it closes).
    await expect.poll(() => live.isClosed(), { timeout: 5_000 }).toBe(true);
  });

  it('a crash before any side effect of a rotation converges: only the newest credentials work', async () => {
    const probe = await tenant();
    await accountStep.ensure(probe, deps());
    const total = await sideEffects((d) => rotate(probe, 'probe', d));
    expect(total).toBeGreaterThanOrEqual(3);
    for (let at = 1; at <= total; at += 1) {
      const scope = await tenant();
      await accountStep.ensure(scope, deps());
      const old = await moduleCredentials(scope);
      await expect(rotate(scope, `r-${String(at)}`, crashingDeps({ at, calls: 0 }))).rejects.toBeInstanceOf(Crash);
      const rotated = await rotate(scope, `r-${String(at)}`);
      expect(await accountStep.verify(rotated, deps()), `crash at side effect ${at}`).toEqual(READY);
      expect(await revokeStep.verify(rotated, deps())).toEqual(READY);
      const fresh = await moduleCredentials(scope);
      expect(old && (await accepted(old)), `old credentials after a crash at ${at}`).toBe(false);
      expect(fresh && (await accepted(fresh))).toBe(true);
    }
  });
});

describe('deletion', () => {
  it('deletes the streams first, then the account, refuses the credentials, and forgets the keys last', async () => {
    const scope = await tenant();
    await accountStep.ensure(scope, deps());
    const keys = (await store.read(accountKeysName(scope.code)))?.keys;
    const creds = await moduleCredentials(scope);
    await nats.runInTenant(scope, (s) => s.jsm.streams.add({ name: 'leftover', subjects: [`capsule.${scope.code}.x.>`], max_bytes: 1024 * 1024 }));
    expect(await accountStep.verifyRemoved(scope, deps())).toMatchObject({ ready: false });
    await accountStep.remove(scope, deps());
    expect(await accountStep.verifyRemoved(scope, deps())).toEqual(READY);
    expect(await serverAccounts()).not.toContain(keys?.account);
    expect(creds && (await accepted(creds))).toBe(false);
    // Its JetStream data went first: pushing the account again brings back no stream.
    await nats.ensureAccount({ account: keys?.account ?? '', name: 'probe', signingKeys: [], limits: { connections: -1, subscriptions: -1, payload: -1, leafNodes: 0, memoryStorage: 0, diskStorage: 1 << 20, streams: -1, consumers: -1, maxBytesRequired: false }, revocations: {} });
    const jsz = (await (await fetch(`${server.monitorUrl}/jsz?accounts=true&streams=true`)).text());
    expect(jsz).not.toContain('leftover');
    await nats.deleteAccount(keys?.account ?? '');
  });

  it('a crash before any side effect of deletion converges on nothing left', async () => {
    const probe = await tenant();
    await accountStep.ensure(probe, deps());
    const total = await sideEffects((d) => accountStep.remove(probe, d));
    expect(total).toBeGreaterThanOrEqual(3);
    for (let at = 1; at <= total; at += 1) {
      const scope = await tenant();
      await accountStep.ensure(scope, deps());
      const account = (await store.read(accountKeysName(scope.code)))?.keys.account;
      await expect(accountStep.remove(scope, crashingDeps({ at, calls: 0 }))).rejects.toBeInstanceOf(Crash);
      await accountStep.remove(scope, deps());
      expect(await accountStep.verifyRemoved(scope, deps()), `crash at side effect ${at}`).toEqual(READY);
      expect(await serverAccounts()).not.toContain(account);
    }
  });
});

describe('step network', () => {
  const settings: NetworkPolicySettings = {
    enabled: true,
    ingressNamespaces: { 'kubernetes.io/metadata.name': 'ingress-nginx' },
    nats: { namespaces: { 'kubernetes.io/metadata.name': 'eva-system' }, pods: { 'app.kubernetes.io/component': 'nats' }, port: 4222 },
    dns: { namespaces: { 'kubernetes.io/metadata.name': 'kube-system' }, pods: { 'k8s-app': 'kube-dns' } },
    removeForeign: false,
  };
  const networkDeps = (enabled = true) => ({ ...apiKube(kube), config: { networkPolicy: { ...settings, enabled } } });

  it('applies the isolation policy (only NATS\'s client port, not its monitoring port), repairs drift, removes it', async () => {
    const scope = await tenant();
    expect(await networkStep.verify(scope, networkDeps())).toMatchObject({ ready: false, reason: 'NetworkPolicyMissing' });
    await networkStep.ensure(scope, networkDeps());
    expect(await networkStep.verify(scope, networkDeps())).toEqual(READY);
    const policy = await kube.networking.readNamespacedNetworkPolicy({ name: NETWORK_POLICY_NAME, namespace: scope.namespace });
    expect(policy.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
    const natsRule = policy.spec?.egress?.find((rule) => rule.to?.some((peer) => peer.podSelector?.matchLabels?.['app.kubernetes.io/component'] === 'nats'));
    expect(natsRule?.ports).toEqual([{ protocol: 'TCP', port: 4222 }]);
    expect(JSON.stringify(policy.spec)).not.toContain('8222');
    expect(desiredNetworkPolicy(scope, settings).spec?.podSelector).toEqual({});
    // Widened by hand: verify sees it, ensure puts it back.
    await kube.networking.patchNamespacedNetworkPolicy(
      { name: NETWORK_POLICY_NAME, namespace: scope.namespace, body: [{ op: 'add', path: '/spec/egress/-', value: {} }] },
    );
    expect(await networkStep.verify(scope, networkDeps())).toMatchObject({ ready: false, reason: 'NetworkPolicyDrifted' });
    await networkStep.ensure(scope, networkDeps());
    expect(await networkStep.verify(scope, networkDeps())).toEqual(READY);
    // Turned off: ensure removes it; remove is idempotent.
    await networkStep.ensure(scope, networkDeps(false));
    expect(await networkStep.verify(scope, networkDeps(false))).toEqual(READY);
    await networkStep.remove(scope, networkDeps());
    expect(await networkStep.verifyRemoved(scope, networkDeps())).toEqual(READY);
  });

  it('reports a NetworkPolicy it did not write, naming it (policies add up), and deletes it only when told to', async () => {
    const scope = await tenant();
    await networkStep.ensure(scope, networkDeps());
    expect(await networkStep.verify(scope, networkDeps()), 'only its own policy: ready (the control)').toEqual(READY);
    const allowAll = { metadata: { name: 'allow-all' }, spec: { podSelector: {}, policyTypes: ['Ingress', 'Egress'], ingress: [{}], egress: [{}] } };
    await kube.networking.createNamespacedNetworkPolicy({ namespace: scope.namespace, body: allowAll });
    const foreign = { ready: false, reason: 'NetworkPolicyForeign', message: expect.stringContaining(`NetworkPolicy ${scope.namespace}/allow-all was not written by the operator`) as unknown };
    expect(await networkStep.verify(scope, networkDeps())).toMatchObject(foreign);
    expect(await networkStep.ensure(scope, networkDeps()), 'not removed unless asked').toMatchObject(foreign);
    await kube.networking.readNamespacedNetworkPolicy({ name: 'allow-all', namespace: scope.namespace });
    const removing = { ...apiKube(kube), config: { networkPolicy: { ...settings, removeForeign: true } } };
    expect(await networkStep.ensure(scope, removing)).toEqual(READY);
    expect(await networkStep.verify(scope, networkDeps())).toEqual(READY);
    const left = await kube.networking.listNamespacedNetworkPolicy({ namespace: scope.namespace });
    expect(left.items.map((p) => p.metadata?.name)).toEqual([NETWORK_POLICY_NAME]);
  });
});
