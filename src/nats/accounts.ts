/**
 * The operator's view of NATS in operator mode: which account holds what, how each is signed, and how
 * the operator gets in.
 *
 *   operator (identity kept offline) --signing key (this pod)--> account JWTs
 *     SYS account ............ the system user (this pod): pushes, looks up and deletes account JWTs
 *     eva-operator account ... the `eva-tenants` registry; the operator's own, out of every tenant's reach
 *     one account per tenant . its streams and seed bucket, limits by tier, no imports or exports;
 *                              its modules' user (Secret eva-nats) and the operator's short-lived user
 *
 * The operator logs into an account as a user it mints itself (signed by the account's signing key,
 * expiring after an hour) and keeps one pooled connection per account. Before connecting it makes sure
 * the server knows the account (a NATS restarted empty forgets every pushed account), so the same
 * identities come back with the same credentials.
 */
import type { Permissions } from '@nats-io/jwt';
import { ACCOUNT_BY_TIER } from '../api/tiers.ts';
import { Reason } from '../api/reasons.ts';
import { canonicalJson } from '../canonical-json.ts';
import { DependencyError, InputError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { StreamInfo } from 'nats';
import { createNatsClient, JS_ERR, jsErrCode, type NatsClientOptions, type NatsSession, type UserCredentials } from '../adapters/nats.ts';
import type { NatsPool } from '../adapters/nats-pool.ts';
import {
  type AccountClaims,
  type AccountLimits,
  formatCreds,
  newSeed,
  publicKeyOf,
  readAccount,
  signAccount,
  signAccountDeletion,
  signUser,
  UNLIMITED,
} from '../adapters/nats-jwt.ts';
import { NatsSystem } from '../adapters/nats-system.ts';
import { type AccountKeys, type AccountKeyStore, accountKeysName, newAccountKeys, REGISTRY_KEYS, type StoredAccountKeys } from './account-keys.ts';
import { commandsStream, dataBucket, eventsStream, inboxPrefix, kvStream, tenantSubjects } from '../tenancy/names.ts';
import { codeInUse, type Custody, tenantUid } from '../tenancy/ownership.ts';
import { isHibernated, type TenantScope } from '../tenancy/scope.ts';

/** The operator's own users live this long; a reconnect after that mints a new one. */
const OPERATOR_USER_SECONDS = 3600;
const REGISTRY_ACCOUNT_NAME = 'eva-operator';

export interface NatsAccountsOptions {
  /** Where the operator connects (no credentials in it). */
  readonly url: string;
  /** What modules are told to connect to (a tenant namespace may reach NATS by another name). */
  readonly moduleUrl: string;
  readonly systemCredentials: UserCredentials;
  readonly operatorSigningSeed: string;
  readonly keys: AccountKeyStore;
  readonly pool: NatsPool;
  readonly log?: Logger;
  /** Connection timings (tests shorten them). */
  readonly timings?: Pick<NatsClientOptions, 'connectTimeoutMs' | 'requestTimeoutMs'>;
}

/** The account limits of a tier, as signed into the tenant's account JWT. */
function tenantLimits(scope: TenantScope): AccountLimits {
  const tier = ACCOUNT_BY_TIER[scope.tenant.spec.tier];
  return {
    connections: tier.connections,
    subscriptions: tier.subscriptions,
    payload: tier.payload,
    leafNodes: 0,
    memoryStorage: 0,
    diskStorage: tier.diskStorage,
    streams: tier.streams,
    consumers: tier.consumers,
    maxBytesRequired: true,
  };
}

/**
 * A revocation time no user JWT is issued after (9999-12-31T23:59:59Z): NATS refuses every JWT of a
 * user revoked at or after its issue time, so the modules' user is refused whatever credentials it
 * holds, until the entry goes. Kept out of the stored revocations: resuming only drops it.
 */
export const REFUSED_UNTIL_RESUMED = 253_402_300_799;

/**
 * The revocations to sign: the stored ones, plus the modules' current user while the tenant must not
 * connect (hibernated, or decommissioned with its data retained). The account, its JetStream data and
 * the operator's own (freshly minted) users stay as they are, so nothing is lost and resuming is one push.
 */
function revocationsOf(keys: AccountKeys, refuseModules: boolean): Readonly<Record<string, number>> {
  if (!refuseModules) return keys.revocations;
  // A user a rotation is retiring is still the modules' until step revoke: refused as well.
  const users = [keys.userSeed === undefined ? undefined : publicKeyOf(keys.userSeed, 'user'), keys.retiringUser].filter((u) => u !== undefined);
  return { ...keys.revocations, ...Object.fromEntries(users.map((user) => [user, REFUSED_UNTIL_RESUMED])) };
}

export function tenantClaims(scope: TenantScope, keys: AccountKeys, refuseModules = isHibernated(scope)): AccountClaims {
  return {
    account: keys.account,
    name: scope.code,
    signingKeys: [publicKeyOf(keys.signingSeed, 'account')],
    limits: tenantLimits(scope),
    revocations: revocationsOf(keys, refuseModules),
    tags: ['eva-tenant', `tier:${scope.tenant.spec.tier.toLowerCase()}`],
  };
}

function registryClaims(keys: AccountKeys): AccountClaims {
  return {
    account: keys.account,
    name: REGISTRY_ACCOUNT_NAME,
    signingKeys: [publicKeyOf(keys.signingSeed, 'account')],
    limits: { ...UNLIMITED, leafNodes: 0 },
    revocations: keys.revocations,
    tags: ['eva-operator'],
  };
}

/**
 * The narrowest permissions a module needs: its tenant's subjects, read and consume (never create,
 * change, purge or delete) its own streams, read and write its seed bucket, replies only under its
 * own inbox prefix. Named streams only, although nothing else exists in the account.
 */
export function modulePermissions(code: string): Permissions {
  const bucket = dataBucket(code);
  const streams = [eventsStream(code), commandsStream(code), kvStream(bucket)];
  const perStream = (s: string): string[] => [
    `$JS.API.STREAM.INFO.${s}`,
    `$JS.API.STREAM.MSG.GET.${s}`,
    `$JS.API.DIRECT.GET.${s}`,
    `$JS.API.DIRECT.GET.${s}.>`,
    `$JS.API.CONSUMER.CREATE.${s}`,
    `$JS.API.CONSUMER.CREATE.${s}.>`,
    `$JS.API.CONSUMER.DURABLE.CREATE.${s}.*`,
    `$JS.API.CONSUMER.INFO.${s}.*`,
    `$JS.API.CONSUMER.MSG.NEXT.${s}.*`,
    `$JS.API.CONSUMER.DELETE.${s}.*`,
    `$JS.API.CONSUMER.NAMES.${s}`,
    `$JS.API.CONSUMER.LIST.${s}`,
    `$JS.ACK.${s}.>`,
    `$JS.FC.${s}.>`,
  ];
  return {
    pub: { allow: [tenantSubjects(code), '$JS.API.INFO', '$JS.API.STREAM.NAMES', '$JS.API.STREAM.LIST', ...streams.flatMap(perStream), `$KV.${bucket}.>`] },
    sub: { allow: [tenantSubjects(code), `${inboxPrefix(code)}.>`] },
  };
}

/** The claims this operator sets, in a comparable form (when it was signed is not one of them). */
/** An account JWT as the server holds it: its claims and who signed it. */
export type HeldClaims = AccountClaims & { readonly issuer: string };

const comparable = (claims: AccountClaims, issuer: string): string =>
  canonicalJson({
    account: claims.account,
    name: claims.name,
    signingKeys: [...claims.signingKeys].sort(),
    limits: claims.limits,
    revocations: claims.revocations,
    tags: [...(claims.tags ?? [])].sort(),
    issuer,
  });

export class NatsAccounts {
  readonly system: NatsSystem;
  readonly keys: AccountKeyStore;
  readonly moduleUrl: string;
  private readonly options: NatsAccountsOptions;
  private readonly operatorSigningKey: string;

  constructor(options: NatsAccountsOptions) {
    this.options = options;
    this.keys = options.keys;
    this.moduleUrl = options.moduleUrl;
    this.operatorSigningKey = publicKeyOf(options.operatorSigningSeed, 'operator');
    this.system = new NatsSystem(
      createNatsClient({
        url: options.url,
        name: 'eva-operator-system',
        jetStream: false,
        credentials: () => Promise.resolve(options.systemCredentials),
        ...this.timings(),
        ...(options.log ? { log: options.log } : {}),
      }),
    );
  }

  /** The server address, without credentials: safe for messages. */
  get target(): string {
    return this.system.target;
  }

  // ---- accounts on the server -----------------------------------------------------------------------

  /** The claims the server holds for an account, or undefined when it holds none. */
  async serverClaims(account: string): Promise<HeldClaims | undefined> {
    const token = await this.system.lookupAccount(account);
    return token === undefined ? undefined : readAccount(token);
  }

  /** Whether `held` (what the server holds, from serverClaims) is exactly `claims`, signed by our operator signing key. */
  matches(held: HeldClaims | undefined, claims: AccountClaims): boolean {
    return held !== undefined && comparable(held, held.issuer) === comparable(claims, this.operatorSigningKey);
  }

  /** Whether the server holds exactly these claims, signed by our operator signing key. */
  async inSync(claims: AccountClaims): Promise<boolean> {
    return this.matches(await this.serverClaims(claims.account), claims);
  }

  /** Signs and pushes the claims unless `held` (looked up when not given) is them already; true when it pushed. */
  async ensureAccount(claims: AccountClaims, held?: HeldClaims): Promise<boolean> {
    if (this.matches(held ?? (await this.serverClaims(claims.account)), claims)) return false;
    await this.system.pushAccount(claims.account, await signAccount(claims, this.options.operatorSigningSeed));
    return true;
  }

  /** Deletes an account JWT from the server (its JetStream data must be gone first). */
  async deleteAccount(account: string): Promise<void> {
    await this.system.deleteAccounts([account], await signAccountDeletion([account], this.options.operatorSigningSeed));
    await this.options.pool.evict(account);
  }

  // ---- the operator's own registry account ----------------------------------------------------------

  /** Runs `fn` in the operator's registry account (the eva-tenants bucket), creating the account on first use. */
  runInRegistry<T>(fn: (session: NatsSession) => Promise<T>): Promise<T> {
    return this.options.pool.run(REGISTRY_KEYS, () => this.clientOptions('eva-operator-registry', () => this.registryCredentials()), fn);
  }

  private async registryCredentials(): Promise<UserCredentials> {
    const stored = (await this.keys.read(REGISTRY_KEYS)) ?? (await this.keys.create(REGISTRY_KEYS, '', newAccountKeys(false)));
    await this.ensureAccount(registryClaims(stored.keys));
    return this.operatorUser(stored.keys);
  }

  // ---- tenant accounts ----------------------------------------------------------------------------

  /**
   * The tenant's account keys, if the tenant has an account: keys whose record names another owner
   * are refused (CapsuleCodeInUse), whatever the tenant's annotations say; only step 'account' takes
   * retained keys over, by proof.
   */
  async tenantKeys(scope: TenantScope): Promise<StoredAccountKeys | undefined> {
    const stored = await this.keys.read(accountKeysName(scope.code));
    if (stored !== undefined && stored.owner !== tenantUid(scope)) throw codeInUse(scope, `NATS account ${stored.keys.account}`, stored.owner);
    return stored;
  }

  /**
   * Runs `fn` in the tenant's account as the operator, with the custody its keys record proves;
   * DependencyError when the account step has not run.
   */
  async runInTenant<T>(scope: TenantScope, fn: (session: NatsSession, custody: Custody) => Promise<T>): Promise<T> {
    const stored = await this.tenantKeys(scope);
    if (stored === undefined) {
      throw new DependencyError(Reason.AccountMissing, `tenant ${scope.code} has no NATS account yet (step account comes first)`);
    }
    return this.runIn(scope, stored, fn);
  }

  /**
   * As runInTenant, but for remove and verifyRemoved: undefined (nothing run) when the tenant has no
   * account of its own or the server holds none. Never puts an account back: decommissioning must not
   * resurrect what an earlier attempt already deleted.
   */
  async runInTenantIfAny<T>(scope: TenantScope, fn: (session: NatsSession, custody: Custody) => Promise<T>): Promise<T | undefined> {
    let stored: StoredAccountKeys | undefined;
    try {
      stored = await this.tenantKeys(scope);
    } catch (err) {
      // The code's account belongs to another tenant: nothing of this tenant's is in it.
      if (err instanceof InputError) return undefined;
      throw err;
    }
    if (stored === undefined || (await this.system.lookupAccount(stored.keys.account)) === undefined) return undefined;
    return this.runIn(scope, stored, fn, false);
  }

  private runIn<T>(scope: TenantScope, stored: StoredAccountKeys, fn: (session: NatsSession, custody: Custody) => Promise<T>, restore = true): Promise<T> {
    const { keys } = stored;
    const credentials = async (): Promise<UserCredentials> => {
      // A server restarted empty has forgotten the account: put it back before logging in.
      if (restore && (await this.system.lookupAccount(keys.account)) === undefined) await this.ensureAccount(tenantClaims(scope, keys));
      return this.operatorUser(keys);
    };
    return this.options.pool.run(keys.account, () => this.clientOptions(`eva-operator-${scope.code}`, credentials), (session) => fn(session, stored));
  }

  /**
   * Copies stream `name` of the tenant's account from another cluster's NATS server (`sourceUrl`,
   * where the account is retained) into `into` (this server, the same account): a snapshot there,
   * restored here. The account's keys (this cluster's copy of its keys Secret) sign a user that the
   * source accepts whatever operator signed the account there; the source is only read. undefined
   * when the source has no such stream (nothing to carry); JetStreamApiError 10058 when `into` has
   * one of that name already (a concurrent copy won).
   */
  async copyStreamFrom(scope: TenantScope, sourceUrl: string, name: string, into: NatsSession): Promise<StreamInfo | undefined> {
    const stored = await this.tenantKeys(scope);
    if (stored === undefined) throw new DependencyError(Reason.AccountMissing, `tenant ${scope.code} has no NATS account yet (step account comes first)`);
    const source = createNatsClient({ url: sourceUrl, name: `eva-operator-${scope.code}-restore`, credentials: () => this.operatorUser(stored.keys), ...this.timings(), ...(this.options.log ? { log: this.options.log } : {}) });
    try {
      return await source.run(async (from) => {
        try {
          return await into.restore(await from.snapshot(name));
        } catch (err) {
          if (jsErrCode(err) === JS_ERR.streamNotFound) return undefined;
          throw err;
        }
      });
    } finally {
      await source.close();
    }
  }

  /** The modules' credentials file (user JWT + seed) for the tenant's current user. */
  async moduleCredentials(scope: TenantScope, keys: AccountKeys): Promise<string> {
    if (keys.userSeed === undefined) throw new DependencyError(Reason.AccountKeysCorrupt, `the NATS account keys of ${scope.code} hold no user`);
    const token = await signUser({ name: `${scope.code}-modules`, account: keys.account, permissions: modulePermissions(scope.code) }, keys.userSeed, keys.signingSeed);
    return formatCreds(token, keys.userSeed);
  }

  /** Logs in with the given credentials once: whether the server accepts them (for checks, not for work). */
  async accepts(credentials: UserCredentials): Promise<boolean> {
    const probe = createNatsClient({ url: this.options.url, name: 'eva-operator-probe', jetStream: false, credentials: () => Promise.resolve(credentials), ...this.timings() });
    try {
      await probe.session();
      return true;
    } catch (err) {
      if (err instanceof DependencyError && err.reason === Reason.NatsAuthFailed) return false;
      throw err;
    } finally {
      await probe.close();
    }
  }

  async close(): Promise<void> {
    await this.options.pool.close();
    await this.system.close();
  }

  // ---- helpers ------------------------------------------------------------------------------------

  private async operatorUser(keys: AccountKeys): Promise<UserCredentials> {
    const seed = newSeed('user');
    const expires = Math.floor(Date.now() / 1000) + OPERATOR_USER_SECONDS;
    return { jwt: await signUser({ name: 'eva-operator', account: keys.account, expires }, seed, keys.signingSeed), seed };
  }

  private clientOptions(name: string, credentials: () => Promise<UserCredentials>): NatsClientOptions {
    return { url: this.options.url, name, credentials, ...this.timings(), ...(this.options.log ? { log: this.options.log } : {}) };
  }

  private timings(): NonNullable<NatsAccountsOptions['timings']> {
    return this.options.timings ?? {};
  }
}
