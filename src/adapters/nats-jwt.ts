/**
 * NATS decentralised auth: nkeys and the JWTs of the operator -> account -> user chain. The only
 * module that imports @nats-io/jwt and @nats-io/nkeys (whose README calls the JWT API unsupported),
 * so a change there is a change here only.
 *
 * Keys travel as seeds (strings beginning with SO, SA or SU); public keys begin with O, A or U.
 * Nothing here logs or throws a seed: errors name the kind of key, never its value.
 *
 * Signing runs on Node's own Ed25519 (OpenSSL) through OpenSslKeyPair: nkeys' pure-JS tweetnacl took
 * 4.5 ms to derive a public key and 10 ms per signature here, several of each per tenant (0.05 ms with
 * OpenSSL). Ed25519 is deterministic, so both produce the same bytes (nats-jwt.test.ts compares them);
 * nkeys still encodes and decodes every key and @nats-io/jwt still builds every JWT.
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign as ed25519Sign, verify as ed25519Verify } from 'node:crypto';
import { Codec } from '@nats-io/nkeys/lib/codec.js';
import { Prefix } from '@nats-io/nkeys/lib/nkeys.js';
import {
  Algorithms,
  type Account,
  type ClaimsData,
  createAccount,
  createOperator,
  createUser,
  encodeAccount,
  encodeGeneric,
  encodeOperator,
  encodeUser,
  fmtCreds,
  type KeyPair,
  type Operator,
  type OperatorLimits,
  type Permissions,
  type User,
} from '@nats-io/jwt';

export type KeyKind = 'operator' | 'account' | 'user';

const SEED_PREFIX: Readonly<Record<KeyKind, string>> = { operator: 'SO', account: 'SA', user: 'SU' };
const PUBLIC_PREFIX: Readonly<Record<KeyKind, string>> = { operator: 'O', account: 'A', user: 'U' };

export class NatsKeyError extends Error {
  override readonly name = 'NatsKeyError';
}

/** A new random seed of this kind. */
export function newSeed(kind: KeyKind): string {
  const pair = kind === 'operator' ? createOperator() : kind === 'account' ? createAccount() : createUser();
  return new TextDecoder().decode(pair.getSeed());
}

/** PKCS#8 DER of an Ed25519 private key is this prefix and the 32-byte seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** An nkeys KeyPair whose Ed25519 runs in OpenSSL (signing only: accounts, operators, users). */
export class OpenSslKeyPair implements KeyPair {
  readonly #seed: Uint8Array;
  readonly #prefix: Prefix;
  readonly #privateKey: KeyObject;
  readonly #publicKey: KeyObject;
  readonly #publicRaw: Buffer;

  constructor(seed: Uint8Array) {
    const { prefix, buf } = Codec.decodeSeed(seed);
    this.#seed = seed;
    this.#prefix = prefix;
    this.#privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, buf]), format: 'der', type: 'pkcs8' });
    this.#publicKey = createPublicKey(this.#privateKey);
    // The SPKI DER of an Ed25519 key ends with the 32 raw public key bytes.
    this.#publicRaw = this.#publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  }

  getPublicKey(): string {
    return new TextDecoder().decode(Codec.encode(this.#prefix, this.#publicRaw));
  }

  getPrivateKey(): Uint8Array {
    const { buf } = Codec.decodeSeed(this.#seed);
    return Codec.encode(Prefix.Private, new Uint8Array([...buf, ...this.#publicRaw]));
  }

  getSeed(): Uint8Array {
    return this.#seed;
  }

  sign(input: Uint8Array): Uint8Array {
    return new Uint8Array(ed25519Sign(null, input, this.#privateKey));
  }

  verify(input: Uint8Array, sig: Uint8Array): boolean {
    return ed25519Verify(null, input, this.#publicKey, sig);
  }

  clear(): void {
    this.#seed.fill(0);
  }

  seal(): Uint8Array {
    throw new NatsKeyError('only curve keys seal');
  }

  open(): Uint8Array | null {
    throw new NatsKeyError('only curve keys open');
  }
}

/** Key pairs by seed: making one (an OpenSSL key object) costs more than a signature. Bounded, oldest out. */
const keyPairs = new Map<string, KeyPair>();
const KEY_PAIRS_KEPT = 4096;

/** The key pair of a seed, checked to be of the expected kind (a user seed is no operator key). */
function keyPair(seed: string, kind: KeyKind): KeyPair {
  const text = seed.trim();
  if (!text.startsWith(SEED_PREFIX[kind])) throw new NatsKeyError(`not an nkey seed of an ${kind} (expected ${SEED_PREFIX[kind]}...)`);
  const known = keyPairs.get(text);
  if (known !== undefined) return known;
  let pair: KeyPair;
  try {
    pair = new OpenSslKeyPair(new TextEncoder().encode(text));
  } catch {
    throw new NatsKeyError(`not a valid ${kind} nkey seed`);
  }
  if (keyPairs.size >= KEY_PAIRS_KEPT) keyPairs.delete(keyPairs.keys().next().value ?? '');
  keyPairs.set(text, pair);
  return pair;
}

/** SPKI DER of an Ed25519 public key is this prefix and the 32 raw key bytes (RFC 8410). */
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PREFIX_OF: Readonly<Record<string, Prefix>> = { O: Prefix.Operator, A: Prefix.Account, U: Prefix.User };

/**
 * The claims of a NATS JWT, checked as @nats-io/jwt's decode checks them (three parts, a JWT of the
 * ed25519-nkey algorithm, signed by its issuer) but verified through OpenSSL: the library verifies
 * with tweetnacl, 10 ms a token here, and the operator reads one per account check.
 */
function decodeVerified<T>(token: string): ClaimsData<T> {
  const parts = token.split('.');
  if (parts.length !== 3) throw new NatsKeyError(`invalid jwt - ${String(parts.length)} chunks`);
  const [header, payload, signature] = parts as [string, string, string];
  const h = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { typ?: string; alg?: Algorithms };
  if (h.typ?.toLowerCase() !== 'jwt' || h.alg !== Algorithms.v2) throw new NatsKeyError(`not a nats jwt of algorithm ${Algorithms.v2}`);
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as ClaimsData<T>;
  if (!ed25519Verify(null, Buffer.from(`${header}.${payload}`), issuerKey(claims.iss), Buffer.from(signature, 'base64url'))) {
    throw new NatsKeyError('sig verification failed');
  }
  return claims;
}

function issuerKey(issuer: string): KeyObject {
  const prefix = PREFIX_OF[issuer.charAt(0)];
  if (prefix === undefined) throw new NatsKeyError('the issuer is not an operator, account or user key');
  const raw = Codec.decode(prefix, new TextEncoder().encode(issuer));
  return createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, raw]), format: 'der', type: 'spki' });
}

/**
 * The answer to a server's login challenge for a user: its public key and the nonce signed, as nats.js's
 * own jwtAuthenticator gives it (standard base64), but signed through OpenSSL.
 */
export function signNonce(userSeed: string, nonce: string): { nkey: string; sig: string } {
  const pair = keyPair(userSeed, 'user');
  return { nkey: pair.getPublicKey(), sig: Buffer.from(pair.sign(new TextEncoder().encode(nonce))).toString('base64') };
}

export const publicKeyOf = (seed: string, kind: KeyKind): string => keyPair(seed, kind).getPublicKey();

export const isPublicKey = (value: string, kind: KeyKind): boolean =>
  new RegExp(`^${PUBLIC_PREFIX[kind]}[A-Z2-7]{55}$`).test(value);

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
