import { randomBytes } from 'node:crypto';
import { decode } from '@nats-io/jwt';
import { fromSeed } from '@nats-io/nkeys';
import { describe, expect, it } from 'vitest';
import {
  formatCreds,
  isPublicKey,
  NatsKeyError,
  newOperatorIdentity,
  newSeed,
  OpenSslKeyPair,
  parseCreds,
  publicKeyOf,
  readAccount,
  readOperator,
  readUser,
  signAccount,
  signAccountDeletion,
  signNonce,
  signUser,
  UNLIMITED,
} from './nats-jwt.ts';

const KINDS = ['operator', 'account', 'user'] as const;
const encode = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('OpenSslKeyPair against nkeys (tweetnacl), the reference implementation', () => {
  it.each(KINDS)('%s keys: the same public key, byte-identical signatures, each verifies the other\'s', (kind) => {
    for (let i = 0; i < 25; i += 1) {
      const seed = encode(newSeed(kind));
      const ours = new OpenSslKeyPair(seed);
      const reference = fromSeed(seed);
      expect(ours.getPublicKey()).toBe(reference.getPublicKey());
      expect(ours.getPrivateKey()).toEqual(reference.getPrivateKey());
      const data = randomBytes(1 + i * 37);
      const signature = ours.sign(data);
      expect(signature).toEqual(reference.sign(data));
      expect(reference.verify(data, signature)).toBe(true);
      expect(ours.verify(data, reference.sign(data))).toBe(true);
      // Positive control for verify: one flipped bit is refused by both.
      const tampered = Uint8Array.from(data);
      tampered[0] = (tampered[0] ?? 0) ^ 1;
      expect(ours.verify(tampered, signature)).toBe(false);
      expect(reference.verify(tampered, signature)).toBe(false);
    }
  });

  it('refuses what is not a seed, and curve operations', () => {
    expect(() => new OpenSslKeyPair(encode('UABC'))).toThrow();
    const pair = new OpenSslKeyPair(encode(newSeed('user')));
    expect(() => pair.seal()).toThrow(NatsKeyError);
  });
});

describe('keys', () => {
  it('tells kinds apart and never puts a seed in an error', () => {
    const user = newSeed('user');
    expect(publicKeyOf(user, 'user')).toMatch(/^U[A-Z2-7]{55}$/);
    expect(isPublicKey(publicKeyOf(user, 'user'), 'user')).toBe(true);
    expect(isPublicKey(publicKeyOf(user, 'user'), 'account')).toBe(false);
    const err = ((): unknown => {
      try {
        return publicKeyOf(user, 'operator');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(NatsKeyError);
    expect((err as Error).message).toBe('not an nkey seed of an operator (expected SO...)');
    expect((err as Error).message).not.toContain(user);
    expect(() => publicKeyOf('SUNOTAVALIDSEED', 'user')).toThrow('not a valid user nkey seed');
  });
});

describe('JWTs', () => {
  const operatorSigning = newSeed('operator');
  const accountSeed = newSeed('account');
  const account = publicKeyOf(accountSeed, 'account');
  const signing = newSeed('account');

  it('signs account claims the way readAccount reads them back, with every core limit written', async () => {
    const claims = {
      account,
      name: 'ACMECO',
      signingKeys: [publicKeyOf(signing, 'account')],
      limits: { ...UNLIMITED, connections: 32, payload: 262_144, diskStorage: 1_000, streams: 3, consumers: 16, memoryStorage: 0, leafNodes: 0, maxBytesRequired: true },
      revocations: { [publicKeyOf(newSeed('user'), 'user')]: 1_700_000_000 },
      tags: ['eva-tenant'],
    };
    const token = await signAccount(claims, operatorSigning);
    const read = readAccount(token);
    expect(read).toMatchObject({ ...claims, issuer: publicKeyOf(operatorSigning, 'operator') });
    // @nats-io/jwt would leave out what we do not write: an account without conn allows no connection.
    const raw = decode<{ limits: Record<string, unknown> }>(token).nats.limits;
    expect(Object.keys(raw ?? {}).sort()).toEqual(
      ['conn', 'consumer', 'data', 'disk_storage', 'exports', 'imports', 'leaf', 'max_bytes_required', 'mem_storage', 'payload', 'streams', 'subs', 'wildcards'].sort(),
    );
    expect(raw).toMatchObject({ imports: 0, exports: 0 });
  });

  it('signs users for the account with its signing key, permissions kept, and formats and parses credentials', async () => {
    const userSeed = newSeed('user');
    const permissions = { pub: { allow: ['capsule.ACMECO.>'] }, sub: { allow: ['_INBOX_ACMECO.>'] } };
    const token = await signUser({ name: 'modules', account, permissions, expires: 2_000_000_000 }, userSeed, signing);
    const user = readUser(token);
    expect(user).toMatchObject({ user: publicKeyOf(userSeed, 'user'), account, issuer: publicKeyOf(signing, 'account'), permissions });
    expect(decode(token).exp).toBe(2_000_000_000);
    const creds = formatCreds(token, userSeed);
    expect(creds).toContain('-----BEGIN NATS USER JWT-----');
    expect(parseCreds(creds)).toMatchObject({ jwt: token, seed: userSeed, user: { user: user.user } });
  });

  it('parseCreds refuses a file without both blocks, or whose seed is not the JWT\'s user', async () => {
    const userSeed = newSeed('user');
    const token = await signUser({ name: 'x', account }, userSeed, signing);
    expect(() => parseCreds('nothing here')).toThrow('not a NATS credentials file');
    expect(() => parseCreds(formatCreds(token, userSeed).replace(userSeed, newSeed('user')))).toThrow('does not belong to its user JWT');
  });

  it('signs account deletions with the operator signing key', async () => {
    const token = await signAccountDeletion([account], operatorSigning);
    expect(decode<{ accounts: string[] }>(token)).toMatchObject({ iss: publicKeyOf(operatorSigning, 'operator'), aud: 'delete', nats: { accounts: [account] } });
  });

  it('bootstraps an operator whose signing key signs the system account, a system user and nothing secret in public parts', async () => {
    const identity = await newOperatorIdentity('eva');
    const operator = readOperator(identity.operatorJwt);
    expect(operator.operator).toBe(publicKeyOf(identity.operatorSeed, 'operator'));
    expect(operator.signingKeys).toEqual([publicKeyOf(identity.operatorSigningSeed, 'operator')]);
    expect(operator.systemAccount).toBe(identity.systemAccount);
    expect(decode<{ strict_signing_key_usage: boolean }>(identity.operatorJwt).nats.strict_signing_key_usage).toBe(true);
    expect(readAccount(identity.systemAccountJwt)).toMatchObject({ account: identity.systemAccount, issuer: operator.signingKeys[0] });
    expect(parseCreds(identity.systemCreds).user.account).toBe(identity.systemAccount);
    for (const seed of [identity.operatorSeed, identity.operatorSigningSeed, identity.systemSigningSeed]) {
      expect(identity.operatorJwt + identity.systemAccountJwt).not.toContain(seed);
    }
  });
});

describe('signNonce', () => {
  it('answers a login challenge exactly as nats.js does with nkeys (standard base64 of the signature)', () => {
    const seed = newSeed('user');
    const reference = fromSeed(new TextEncoder().encode(seed));
    const nonce = 'a1b2c3-server-nonce';
    expect(signNonce(seed, nonce)).toEqual({
      nkey: reference.getPublicKey(),
      sig: Buffer.from(reference.sign(new TextEncoder().encode(nonce))).toString('base64'),
    });
  });
});

describe('reading JWTs (signature verified through OpenSSL)', () => {
  it('reads what @nats-io/jwt\'s decode reads, and refuses what it refuses: a tampered payload, a foreign signature', async () => {
    const operatorSigning = newSeed('operator');
    const account = publicKeyOf(newSeed('account'), 'account');
    for (let i = 0; i < 20; i += 1) {
      const token = await signAccount({ account, name: `T${String(i)}`, signingKeys: [], limits: UNLIMITED, revocations: {} }, operatorSigning);
      expect(readAccount(token).name).toBe(decode(token).name);
      const [header = '', payload = '', signature = ''] = token.split('.');
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { name: string };
      const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, name: 'EVIL' })).toString('base64url')}.${signature}`;
      expect(() => decode(tampered)).toThrow('sig verification failed');
      expect(() => readAccount(tampered)).toThrow('sig verification failed');
      const foreign = (await signAccount({ account, name: 'X', signingKeys: [], limits: UNLIMITED, revocations: {} }, newSeed('operator'))).split('.')[2] ?? '';
      expect(() => readAccount(`${header}.${payload}.${foreign}`)).toThrow('sig verification failed');
    }
    expect(() => readAccount('a.b')).toThrow('invalid jwt');
  });
});
