/**
 * NATS decentralised auth: the JWTs of the operator -> account -> user chain, credentials files, and
 * (re-exported) the nkeys of nats-keys.ts, so callers import NATS auth from one module. With
 * nats-keys.ts, the only modules that import @nats-io/jwt and @nats-io/nkeys (whose README calls the
 * JWT API unsupported), so a change there is a change here only.
 *
 * Nothing here logs or throws a seed: errors name the kind of key, never its value. Every JWT is signed
 * and verified through OpenSSL (nats-keys.ts says why).
 */
import {
  Algorithms,
  type Account,
  encodeAccount,
  encodeGeneric,
  encodeOperator,
  encodeUser,
  fmtCreds,
  type Operator,
  type OperatorLimits,
  type Permissions,
  type User,
} from '@nats-io/jwt';
import { decodeVerified, keyPair, NatsKeyError, newSeed, publicKeyOf } from './nats-keys.ts';

export { isPublicKey, type KeyKind, NatsKeyError, newSeed, OpenSslKeyPair, publicKeyOf, signNonce } from './nats-keys.ts';

const OPTIONS = { algorithm: Algorithms.v2 } as const;

/**
 * @nats-io/jwt does not fill in the "unlimited" (-1) defaults the Go library does: an account JWT
 * without `conn` allows zero connections. Every core limit is therefore always written.
 */
export interface AccountLimits {
  readonly connections: number;
  readonly subscriptions: number;
  /** Largest message in bytes (-1: the server's max_payload). */
  readonly payload: number;
  /** Leaf node connections; tenants get none. */
  readonly leafNodes: number;
  /** JetStream: memory and file storage in bytes (0 memory + >0 file = file only; -1 unlimited). */
  readonly memoryStorage: number;
  readonly diskStorage: number;
  readonly streams: number;
  readonly consumers: number;
  /** Every stream must declare max_bytes, which the server reserves against diskStorage. */
  readonly maxBytesRequired: boolean;
}

export const UNLIMITED: AccountLimits = {
  connections: -1,
  subscriptions: -1,
  payload: -1,
  leafNodes: -1,
  memoryStorage: -1,
  diskStorage: -1,
  streams: -1,
  consumers: -1,
  maxBytesRequired: false,
};

function jwtLimits(limits: AccountLimits): OperatorLimits {
  return {
    conn: limits.connections,
    subs: limits.subscriptions,
    data: -1,
    payload: limits.payload,
    // No imports or exports: an account boundary that nothing crosses.
    imports: 0,
    exports: 0,
    leaf: limits.leafNodes,
    wildcards: true,
    mem_storage: limits.memoryStorage,
    disk_storage: limits.diskStorage,
    streams: limits.streams,
    consumer: limits.consumers,
    max_bytes_required: limits.maxBytesRequired,
  };
}

export interface AccountClaims {
  /** The account's identity (public key, A...). */
  readonly account: string;
  readonly name: string;
  /** Public keys allowed to sign its users (strict signing key usage: the identity key may not). */
  readonly signingKeys: readonly string[];
  readonly limits: AccountLimits;
  /** User public key -> unix seconds: users issued at or before that time are refused. */
  readonly revocations: Readonly<Record<string, number>>;
  readonly tags?: readonly string[];
}

/** Signs an account JWT with an operator (signing) key. The account's own seed is not needed. */
export async function signAccount(claims: AccountClaims, operatorSigningSeed: string): Promise<string> {
  const body: Partial<Account> = {
    signing_keys: [...claims.signingKeys],
    limits: jwtLimits(claims.limits),
    revocations: { ...claims.revocations },
    ...(claims.tags ? { tags: [...claims.tags] } : {}),
  };
  return encodeAccount(claims.name, claims.account, body, { ...OPTIONS, signer: keyPair(operatorSigningSeed, 'operator') });
}

/** An absent limit means 0 to the server (that is why jwtLimits writes every one). */
function limitsOf(l: OperatorLimits): AccountLimits {
  const n = (value: number | undefined): number => value ?? 0;
  return {
    connections: n(l.conn),
    subscriptions: n(l.subs),
    payload: n(l.payload),
    leafNodes: n(l.leaf),
    memoryStorage: n(l.mem_storage),
    diskStorage: n(l.disk_storage),
    streams: n(l.streams),
    consumers: n(l.consumer),
    maxBytesRequired: l.max_bytes_required === true,
  };
}

/** The claims of an account JWT as the server holds it, in the shape signAccount takes. */
export function readAccount(token: string): AccountClaims & { readonly issuer: string; readonly issuedAt: number } {
  const claims = decodeVerified<Account>(token);
  const nats = claims.nats;
  const limits = limitsOf(nats.limits ?? {});
  const signingKeys = (nats.signing_keys ?? []).map((k) => (typeof k === 'string' ? k : k.key));
  return {
    account: claims.sub,
    name: claims.name,
    signingKeys,
    limits,
    revocations: nats.revocations ?? {},
    ...(nats.tags ? { tags: nats.tags } : {}),
    issuer: claims.iss,
    issuedAt: claims.iat,
  };
}

export interface UserClaims {
  readonly name: string;
  /** The account the user belongs to (its identity, A...). */
  readonly account: string;
  readonly permissions?: Permissions;
  /** Unix seconds after which the server refuses the JWT (and drops its connections). */
  readonly expires?: number;
}

/** Signs a user JWT with the account's signing key; the user's seed stays with the caller. */
export async function signUser(claims: UserClaims, userSeed: string, accountSigningSeed: string): Promise<string> {
  // Issued for the account, signed by its signing key: encodeUser then sets issuer_account itself.
  return encodeUser(claims.name, keyPair(userSeed, 'user'), claims.account, { ...(claims.permissions ?? {}) }, {
    ...OPTIONS,
    signer: keyPair(accountSigningSeed, 'account'),
    ...(claims.expires !== undefined ? { exp: claims.expires } : {}),
  });
}

export interface ReadUser {
  readonly user: string;
  readonly name: string;
  readonly account: string;
  readonly issuer: string;
  readonly issuedAt: number;
  readonly permissions: Permissions;
}

export function readUser(token: string): ReadUser {
  const claims = decodeVerified<User>(token);
  const { pub, sub, resp } = claims.nats;
  const permissions: Permissions = { ...(pub ? { pub } : {}), ...(sub ? { sub } : {}), ...(resp ? { resp } : {}) };
  return {
    user: claims.sub,
    name: claims.name,
    account: claims.nats.issuer_account ?? claims.iss,
    issuer: claims.iss,
    issuedAt: claims.iat,
    permissions,
  };
}

/** A standard NATS credentials file: the user JWT and the user's seed. */
export function formatCreds(userJwt: string, userSeed: string): string {
  return new TextDecoder().decode(fmtCreds(userJwt, keyPair(userSeed, 'user')));
}

const CREDS_BLOCK = /-{3,}BEGIN ([A-Z ]+)-{3,}\s*\n\s*([^\s-][^\n]*)\s*\n\s*-{3,}END \1-{3,}/g;

/** The JWT and seed of a credentials file; NatsKeyError when either block is missing or malformed. */
export function parseCreds(text: string): { jwt: string; seed: string; user: ReadUser } {
  const blocks = new Map([...text.matchAll(CREDS_BLOCK)].map((m) => [m[1] ?? '', (m[2] ?? '').trim()]));
  const jwt = blocks.get('NATS USER JWT');
  const seed = blocks.get('USER NKEY SEED');
  if (jwt === undefined || seed === undefined) throw new NatsKeyError('not a NATS credentials file (a user JWT and a user nkey seed)');
  let user: ReadUser;
  try {
    user = readUser(jwt);
  } catch {
    throw new NatsKeyError('the credentials file holds no readable user JWT');
  }
  if (publicKeyOf(seed, 'user') !== user.user) throw new NatsKeyError('the seed of the credentials file does not belong to its user JWT');
  return { jwt, seed, user };
}

/** The request body of $SYS.REQ.CLAIMS.DELETE: which accounts to delete, signed by the operator. */
export function signAccountDeletion(accounts: readonly string[], operatorSigningSeed: string): Promise<string> {
  return encodeGeneric('delete', keyPair(operatorSigningSeed, 'operator'), 'generic', { accounts: [...accounts] }, { ...OPTIONS, aud: 'delete' });
}

// ---- bootstrap: the operator identity and the system account --------------------------------------

export interface OperatorIdentity {
  /** The operator's identity seed: signs the operator JWT only; keep it offline. */
  readonly operatorSeed: string;
  readonly operatorJwt: string;
  /** Signs account JWTs (and their deletion); the eva-operator pod holds it. */
  readonly operatorSigningSeed: string;
  readonly systemAccount: string;
  readonly systemAccountJwt: string;
  /** Signs system users; keep it offline (only needed to mint another system user). */
  readonly systemSigningSeed: string;
  /** The system user's credentials file: the eva-operator pod holds it. */
  readonly systemCreds: string;
}

export async function newOperatorIdentity(name: string): Promise<OperatorIdentity> {
  const operatorSeed = newSeed('operator');
  const operatorSigningSeed = newSeed('operator');
  const systemAccountSeed = newSeed('account');
  const systemSigningSeed = newSeed('account');
  const systemAccount = publicKeyOf(systemAccountSeed, 'account');
  // strict_signing_key_usage: accounts only from the signing key, so the identity seed can stay offline.
  const operator: Partial<Operator> & { strict_signing_key_usage: boolean } = {
    signing_keys: [publicKeyOf(operatorSigningSeed, 'operator')],
    system_account: systemAccount,
    strict_signing_key_usage: true,
  };
  const operatorJwt = await encodeOperator(name, keyPair(operatorSeed, 'operator'), operator, OPTIONS);
  const systemClaims: AccountClaims = {
    account: systemAccount,
    name: 'SYS',
    signingKeys: [publicKeyOf(systemSigningSeed, 'account')],
    // The system account cannot have JetStream.
    limits: { ...UNLIMITED, memoryStorage: 0, diskStorage: 0, streams: 0, consumers: 0 },
    revocations: {},
  };
  const systemAccountJwt = await signAccount(systemClaims, operatorSigningSeed);
  const systemUserSeed = newSeed('user');
  const systemUserJwt = await signUser({ name: 'eva-operator-system', account: systemAccount }, systemUserSeed, systemSigningSeed);
  return {
    operatorSeed,
    operatorJwt,
    operatorSigningSeed,
    systemAccount,
    systemAccountJwt,
    systemSigningSeed,
    systemCreds: formatCreds(systemUserJwt, systemUserSeed),
  };
}

/** The operator JWT's public facts: which operator, which keys may sign accounts, which account is the system one. */
export function readOperator(token: string): { operator: string; signingKeys: string[]; systemAccount?: string } {
  const claims = decodeVerified<Operator>(token);
  const signingKeys = (claims.nats.signing_keys ?? []).map((k) => (typeof k === 'string' ? k : k.key));
  return { operator: claims.sub, signingKeys, ...(claims.nats.system_account ? { systemAccount: claims.nats.system_account } : {}) };
}
