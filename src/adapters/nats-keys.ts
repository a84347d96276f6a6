/**
 * NATS nkeys: seeds and public keys of operators, accounts and users, and Ed25519 through Node's own
 * OpenSSL. With nats-jwt.ts (the JWTs of the operator -> account -> user chain, which re-exports what
 * callers use from here), the only modules that import @nats-io/nkeys and @nats-io/jwt.
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
import { Algorithms, type ClaimsData, createAccount, createOperator, createUser, type KeyPair } from '@nats-io/jwt';

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
export function keyPair(seed: string, kind: KeyKind): KeyPair {
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
export function decodeVerified<T>(token: string): ClaimsData<T> {
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
