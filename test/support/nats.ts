/**
 * Looking into NATS as a cluster administrator can: the operator keeps each account's keys in a
 * Secret of its namespace (the tests' operators: the release namespace of
 * test/support/operator-identity.ts), so a test mints itself a user of any tenant's account (or of
 * the registry account) and reads what is there. A tenant's modules get only Secret eva-nats in
 * their namespace; `moduleCredentials` reads that, as a module's pod would.
 */
import { connect, jwtAuthenticator, NatsError, type JetStreamClient, type JetStreamManager, type KV, type NatsConnection } from 'nats';
import { parseCreds, signUser, newSeed } from '../../src/adapters/nats-jwt.ts';
import { keysFromSecret } from '../../src/nats/account-keys.ts';
import { inboxPrefix } from '../../src/tenancy/names.ts';
import { kubectl } from './kubectl.ts';
import { operatorNamespace } from './operator-identity.ts';
import { testAccounts } from './fixtures.ts';
import type { NatsAccounts } from '../../src/nats/accounts.ts';

export interface NatsTarget {
  readonly url: string;
  /** Where the operator keeps account keys. */
  readonly keysNamespace?: string;
}

const target = (t?: NatsTarget): Required<NatsTarget> => ({
  url: t?.url ?? process.env['NATS_URL'] ?? '',
  keysNamespace: t?.keysNamespace ?? operatorNamespace(),
});

export interface AccountSession {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly js: JetStreamClient;
  /** A bucket that exists, or undefined (never creates one). */
  existingKv(bucket: string): Promise<KV | undefined>;
}

function secretKeys(name: string, namespace: string): ReturnType<typeof keysFromSecret> | undefined {
  const result = kubectl(['get', 'secret', name, '-n', namespace, '-o', 'json']);
  return result.status === 0 ? keysFromSecret(JSON.parse(result.stdout) as Parameters<typeof keysFromSecret>[0]) : undefined;
}

/** The public key of a tenant's account (from the operator's key Secret), if it has one. */
export function tenantAccount(code: string, t?: NatsTarget): string | undefined {
  return tenantAccountIn(`eva-nats-account-${code.toLowerCase()}`, target(t).keysNamespace);
}

/** The account public key in a key Secret, if it exists. */
export function tenantAccountIn(secretName: string, namespace: string): string | undefined {
  return secretKeys(secretName, namespace)?.keys.account;
}

/** The operator's view of the dev cluster's NATS (the files `dev-cluster.sh env` exports). */
export function clusterAccounts(): NatsAccounts {
  const auth = {
    dir: '',
    systemCredsFile: process.env['NATS_SYSTEM_CREDS_FILE'] ?? '',
    operatorSigningKeyFile: process.env['NATS_OPERATOR_SIGNING_KEY_FILE'] ?? '',
  };
  return testAccounts({ url: target().url, auth });
}

async function openAs(url: string, jwt: string, seed: string, prefix?: string): Promise<AccountSession> {
  const nc = await connect({ servers: url, reconnect: false, timeout: 3_000, authenticator: jwtAuthenticator(jwt, new TextEncoder().encode(seed)), ...(prefix ? { inboxPrefix: prefix } : {}) });
  const jsm = await nc.jetstreamManager({ checkAPI: false });
  const js = nc.jetstream();
  const existingKv = async (bucket: string): Promise<KV | undefined> => {
    const info = await jsm.streams.info(`KV_${bucket}`).catch(() => undefined);
    return info ? js.views.kv(bucket, { bindOnly: true, allow_direct: info.config.allow_direct }) : undefined;
  };
  return { nc, jsm, js, existingKv };
}

async function inAccount<T>(secretName: string, fn: (s: AccountSession) => Promise<T>, t?: NatsTarget): Promise<T | undefined> {
  const { url, keysNamespace } = target(t);
  const stored = secretKeys(secretName, keysNamespace);
  if (stored === undefined) return undefined;
  const seed = newSeed('user');
  const jwt = await signUser({ name: 'e2e-admin', account: stored.keys.account, expires: Math.floor(Date.now() / 1000) + 600 }, seed, stored.keys.signingSeed);
  let session: AccountSession;
  try {
    session = await openAs(url, jwt, seed);
  } catch (err) {
    // Keys, but no account on the server (restarted empty, or deleted): nothing there to look at.
    if (err instanceof NatsError && err.isAuthError()) return undefined;
    throw err;
  }
  try {
    return await fn(session);
  } finally {
    await session.nc.close();
  }
}

/** Runs `fn` as an administrator in the tenant's account; undefined when the tenant has no account. */
export const inTenant = <T>(code: string, fn: (s: AccountSession) => Promise<T>, t?: NatsTarget): Promise<T | undefined> =>
  inAccount(`eva-nats-account-${code.toLowerCase()}`, fn, t);

/** Runs `fn` in the operator's own account (the eva-tenants registry). */
export async function inRegistry<T>(fn: (s: AccountSession) => Promise<T>, t?: NatsTarget): Promise<T> {
  const result = await inAccount('eva-nats-account-operator', async (s) => ({ value: await fn(s) }), t);
  if (result === undefined) throw new Error('the operator has no registry account yet');
  return result.value;
}

/** The names of the streams in a tenant's account ([] when it has no account). */
export async function streamNames(code: string, t?: NatsTarget): Promise<string[]> {
  return (
    (await inTenant(code, async ({ jsm }) => {
      const names: string[] = [];
      for await (const name of jsm.streams.names()) names.push(name);
      return names.sort();
    }, t)) ?? []
  );
}

/** What a module's pod gets: Secret eva-nats in the tenant namespace. */
export function moduleCredentials(code: string): { url: string; creds: string } {
  const result = kubectl(['get', 'secret', 'eva-nats', '-n', `eva-tenant-${code.toLowerCase()}`, '-o', 'json']);
  if (result.status !== 0) throw new Error(`no Secret eva-nats for ${code}: ${result.stderr}`);
  const data = (JSON.parse(result.stdout) as { data: Record<string, string> }).data;
  const decode = (key: string): string => Buffer.from(data[key] ?? '', 'base64').toString('utf8');
  return { url: decode('url'), creds: decode('nats.creds') };
}

/** Connects as the tenant's modules do (their credentials file, their inbox prefix). */
export async function connectAsModule(code: string, credentials = moduleCredentials(code)): Promise<AccountSession> {
  const { jwt, seed } = parseCreds(credentials.creds);
  return openAs(credentials.url, jwt, seed, inboxPrefix(code));
}

export type Credentials = ReturnType<typeof moduleCredentials>;

/** Whether NATS refuses these module credentials (an authorization error); any other failure throws. */
export async function refused(code: string, credentials: Credentials): Promise<boolean> {
  try {
    const session = await connectAsModule(code, credentials);
    await session.nc.close();
    return false;
  } catch (err) {
    if (err instanceof NatsError && err.isAuthError()) return true;
    throw err;
  }
}

/** Where the subjects publishAsModule publishes on begin: apart from what a tenant's real modules publish in the same stream. */
const testSubjects = (code: string): string => `capsule.${code}.events.e2e.`;

/** Publishes as the tenant's modules do (on `session`, or a connection of its own); the events stream keeps what they publish. */
export async function publishAsModule(code: string, texts: readonly string[], session?: AccountSession): Promise<void> {
  const used = session ?? (await connectAsModule(code));
  try {
    for (const [i, text] of texts.entries()) await used.js.publish(`${testSubjects(code)}${String(i)}`, new TextEncoder().encode(text));
  } finally {
    if (session === undefined) await used.nc.close();
  }
}

/**
 * The first `count` messages publishAsModule published in the events stream, in the stream's order, read
 * with the modules' own credentials (the current ones, or `credentials`); what real modules publish
 * there between them (on a real node) is passed over, and a sequence missing from the stream throws.
 */
export async function readAsModule(code: string, count: number, credentials?: Credentials): Promise<string[]> {
  const session = await connectAsModule(code, credentials);
  try {
    const texts: string[] = [];
    for (let seq = 1; texts.length < count; seq += 1) {
      const message = await session.jsm.streams.getMessage(`eva-${code}-events`, { seq });
      if (message.subject.startsWith(testSubjects(code))) texts.push(new TextDecoder().decode(message.data));
    }
    return texts;
  } finally {
    await session.nc.close();
  }
}
