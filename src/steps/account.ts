/**
 * Step 'account': the tenant's own NATS account and its modules' credentials.
 *
 * ensure: the account's keys exist (Secret eva-nats-account-<code> in the operator's namespace); a
 * rotation the tenant's annotation asks for is started (a new modules user; the old one is retired
 * by step 'revoke' once every module runs the new one); a tier change that would leave the account's
 * JetStream data above its new limits is refused before anything changes; the account JWT the server
 * holds carries the tier's limits and every revocation; the Secret `eva-nats` in the tenant namespace
 * holds `url` and `nats.creds` for the current user.
 *
 * remove deletes what is left in the account (its JetStream data first: a deleted account's data stays
 * on disk), deletes the account on the server, checks that the modules' credentials are refused, and
 * only then forgets the keys, so a crash at any point is retried without orphaning an account.
 */
import type { V1Secret } from '@kubernetes/client-node';
import { LABELS, MANAGED_BY, ROTATE_NATS_CREDENTIALS_ANNOTATION } from '../api/constants.ts';
import { Reason } from '../api/reasons.ts';
import { ACCOUNT_BY_TIER, STREAM_LIMITS_BY_TIER } from '../api/tiers.ts';
import { canonicalJson } from '../canonical-json.ts';
import type { AccountClaims } from '../adapters/nats-jwt.ts';
import { DependencyError, InputError } from '../errors.ts';
import { deleteIgnoringNotFound, type Kube } from '../adapters/kube.ts';
import type { KubeReads } from '../adapters/tenant-objects.ts';
import { NatsKeyError, newSeed, parseCreds, publicKeyOf, readUser } from '../adapters/nats-jwt.ts';
import { type AccountKeys, accountKeysName, newAccountKeys, type StoredAccountKeys } from '../nats/account-keys.ts';
import { type HeldClaims, modulePermissions, tenantClaims } from '../nats/accounts.ts';
import type { NatsStepDeps } from './step.ts';
import { codeInUse, restoreAskedFrom, restoreRefused, retentionOf, tenantUid, withRetention } from '../tenancy/ownership.ts';
import { notReady, READY, type Step, type Verdict } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';

export type AccountStepDeps = NatsStepDeps & { readonly kube: Kube; readonly reads: KubeReads };

/** The modules' NATS connection, in every tenant namespace (the module contract). */
export const NATS_CREDENTIALS_SECRET = 'eva-nats';
const NATS_URL_KEY = 'url';
export const NATS_CREDS_KEY = 'nats.creds';

const MIB = 1024 * 1024;
const mib = (bytes: number): string => `${(bytes / MIB).toFixed(1)} MiB`;

/** The rotation the tenant asks for (the annotation's value), if any. */
const rotationAsked = (scope: TenantScope): string | undefined =>
  scope.tenant.metadata.annotations?.[ROTATE_NATS_CREDENTIALS_ANNOTATION] || undefined;

// ---- keys -------------------------------------------------------------------------------------------

async function ensureKeys(scope: TenantScope, deps: AccountStepDeps): Promise<StoredAccountKeys> {
  const existing = await deps.nats.keys.read(accountKeysName(scope.code));
  const from = restoreAskedFrom(scope);
  if (existing === undefined) {
    // Fresh keys would hand an empty account to a tenant that expects its data back.
    if (from !== undefined) throw restoreRefused(scope, from, `capsule code ${scope.code} has no retained data (no Secret ${accountKeysName(scope.code)})`);
    return createKeys(scope, deps);
  }
  if (existing.owner === tenantUid(scope)) return existing.retained === undefined ? existing : usedAgain(scope, deps, existing);
  if (from === undefined) throw codeInUse(scope, `NATS account ${existing.keys.account}`, existing.owner);
  await assertRestorable(scope, deps, existing, from);
  return takeOver(scope, deps, existing, from);
}

async function createKeys(scope: TenantScope, deps: AccountStepDeps): Promise<StoredAccountKeys> {
  const created = await deps.nats.keys.create(accountKeysName(scope.code), tenantUid(scope), newAccountKeys(true, rotationAsked(scope)));
  // A lost race for the code: the winner's keys came back.
  if (created.owner !== tenantUid(scope)) throw codeInUse(scope, `NATS account ${created.keys.account}`, created.owner);
  scope.log.info({ step: 'account', account: created.keys.account }, 'NATS account keys created');
  return created;
}

/**
 * A restore is honoured only when the keys record proves it: owned by the uid named, marked retained
 * by that uid under this capsule code, and no EvaTenant of that uid exists any more (it could still
 * use or delete the data). Throws RestoreRefused naming the condition that failed.
 */
async function assertRestorable(scope: TenantScope, deps: AccountStepDeps, stored: StoredAccountKeys, from: string): Promise<void> {
  const refuse = (why: string): InputError => restoreRefused(scope, from, why);
  if (stored.owner !== from) throw refuse(`the NATS data of capsule code ${scope.code} belongs to uid ${stored.owner}, not to uid ${from}`);
  if (stored.retained?.uid !== from) throw refuse(`the data of uid ${from} is not marked retained (its tenant was not decommissioned with spec.dataRetention: Retain, or that has not finished)`);
  if (stored.retained.code !== scope.code) throw refuse(`the data was retained under capsule code ${stored.retained.code}`);
  const live = await deps.kube.tenantNameWithUid(from);
  if (live !== undefined) throw refuse(`EvaTenant ${live} (uid ${from}) still exists; its data can be restored only once it is deleted`);
}

/**
 * The takeover: ONE resourceVersion-guarded write of the keys record (owner -> this tenant, restored
 * from the old uid, retained mark cleared). Before it the old uid holds the data, after it this tenant
 * does; the streams and bucket still stamped with the old uid are this tenant's by that record.
 */
async function takeOver(scope: TenantScope, deps: AccountStepDeps, stored: StoredAccountKeys, from: string): Promise<StoredAccountKeys> {
  const taken = await deps.nats.keys.update(accountKeysName(scope.code), stored, stored.keys, { owner: tenantUid(scope), restoredFrom: from });
  scope.log.info({ step: 'account', account: stored.keys.account, from }, 'retained NATS account restored');
  return taken;
}

/** The tenant's own retained data in use again (a kept object set Active): the retained mark goes. */
function usedAgain(scope: TenantScope, deps: AccountStepDeps, stored: StoredAccountKeys): Promise<StoredAccountKeys> {
  return deps.nats.keys.update(accountKeysName(scope.code), stored, stored.keys, withRetention(stored, undefined));
}

/** A new modules user; the previous one is retired (revoked by step 'revoke' once the modules rolled). */
function rotatedKeys(keys: AccountKeys, rotation: string, now: number): AccountKeys {
  if (keys.userSeed === undefined) throw new Error('an account without a modules user cannot rotate');
  // A rotation asked again before the last one finished: the user that one retired goes at once.
  const revocations = keys.retiringUser === undefined ? keys.revocations : { ...keys.revocations, [keys.retiringUser]: now };
  return { ...keys, userSeed: newSeed('user'), retiringUser: publicKeyOf(keys.userSeed, 'user'), revocations, rotation };
}

async function rotateIfAsked(scope: TenantScope, deps: AccountStepDeps, stored: StoredAccountKeys): Promise<AccountKeys> {
  const asked = rotationAsked(scope);
  if (asked === undefined || asked === stored.keys.rotation) return stored.keys;
  const rotated = rotatedKeys(stored.keys, asked, Math.floor(Date.now() / 1000));
  await deps.nats.keys.update(accountKeysName(scope.code), stored, rotated);
  scope.log.info({ step: 'account', retiring: rotated.retiringUser, rotation: asked }, 'NATS credentials rotation started');
  return rotated;
}

// ---- a smaller tier: the data must fit, and the limits shrink after the streams ----------------------

interface StreamUse {
  readonly name: string;
  readonly bytes: number;
  readonly reserved: number;
}

/** What the account's streams hold and reserve (JetStream reserves each stream's max_bytes). */
async function streamUse(scope: TenantScope, deps: AccountStepDeps): Promise<{ streams: StreamUse[]; stored: number }> {
  return deps.nats.runInTenant(scope, async (session) => {
    const streams: StreamUse[] = [];
    for await (const info of session.jsm.streams.list()) streams.push({ name: info.config.name, bytes: info.state.bytes, reserved: Math.max(0, info.config.max_bytes) });
    return { streams, stored: (await session.jsm.getAccountInfo()).storage };
  });
}

/**
 * Refuses a tier whose limits are below what the account already stores: the server would keep the
 * data but refuse new writes, and shrinking a stream below its content discards messages. Nothing is
 * deleted here.
 */
function assertDataFits(scope: TenantScope, use: { streams: StreamUse[]; stored: number }): void {
  const tier = scope.tenant.spec.tier;
  const limits = { stream: STREAM_LIMITS_BY_TIER[tier].maxBytes, bucket: ACCOUNT_BY_TIER[tier].dataBucketBytes, account: ACCOUNT_BY_TIER[tier].diskStorage };
  const over = use.streams.flatMap(({ name, bytes }) => {
    const limit = name.startsWith('KV_') ? limits.bucket : limits.stream;
    return bytes > limit ? [`${name} holds ${mib(bytes)} (the ${tier} tier allows ${mib(limit)})`] : [];
  });
  if (use.stored > limits.account) over.push(`the account stores ${mib(use.stored)} (the ${tier} tier allows ${mib(limits.account)})`);
  if (over.length > 0) {
    throw new InputError(
      Reason.JetStreamUsageExceedsTier,
      `the tenant's NATS data does not fit the ${tier} tier: ${over.join('; ')}. Nothing was changed or deleted; delete data or keep the larger tier`,
    );
  }
}

/**
 * The claims to hold now. Moving to a smaller tier, the account keeps storage for what its streams
 * still reserve: with the tier's limit at once, JetStream refuses to shrink any stream (the others'
 * old reservations alone exceed it). The streams and seed steps shrink them next; step revoke, after
 * them, pushes the tier's own limits.
 */
async function claimsNow(scope: TenantScope, deps: AccountStepDeps, keys: AccountKeys, held: HeldClaims | undefined, checkData: boolean): Promise<AccountClaims> {
  const desired = tenantClaims(scope, keys);
  if (held === undefined || held.limits.diskStorage <= desired.limits.diskStorage) return desired;
  const use = await streamUse(scope, deps);
  if (checkData) assertDataFits(scope, use);
  const reserved = use.streams.reduce((sum, s) => sum + s.reserved, 0);
  const diskStorage = Math.min(held.limits.diskStorage, Math.max(desired.limits.diskStorage, reserved));
  return { ...desired, limits: { ...desired.limits, diskStorage } };
}

// ---- the modules' credentials Secret ----------------------------------------------------------------

const readCredentialsSecret = (reads: KubeReads, scope: TenantScope): Promise<V1Secret | undefined> =>
  reads.get('Secret', scope.namespace, NATS_CREDENTIALS_SECRET);

const decoded = (secret: V1Secret, key: string): string | undefined => {
  const value = secret.data?.[key];
  return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
};

/** What is wrong with the Secret's credentials for the current user, or undefined when they are right. */
function credentialsProblem(secret: V1Secret | undefined, scope: TenantScope, keys: AccountKeys, url: string): string | undefined {
  if (secret === undefined) return `Secret ${NATS_CREDENTIALS_SECRET} does not exist`;
  if (decoded(secret, NATS_URL_KEY) !== url) return `Secret ${NATS_CREDENTIALS_SECRET} names another NATS URL`;
  let creds: ReturnType<typeof parseCreds>;
  try {
    creds = parseCreds(decoded(secret, NATS_CREDS_KEY) ?? '');
  } catch (err) {
    return `Secret ${NATS_CREDENTIALS_SECRET}: ${err instanceof NatsKeyError ? err.message : 'unreadable credentials'}`;
  }
  const { user } = creds;
  const current = keys.userSeed === undefined ? undefined : publicKeyOf(keys.userSeed, 'user');
  if (user.user !== current || creds.seed !== keys.userSeed) return `Secret ${NATS_CREDENTIALS_SECRET} holds another user than the current one`;
  if (user.account !== keys.account || user.issuer !== publicKeyOf(keys.signingSeed, 'account')) {
    return `Secret ${NATS_CREDENTIALS_SECRET} holds a user of another account or signer`;
  }
  if (canonicalJson(user.permissions) !== canonicalJson(modulePermissions(scope.code))) return `Secret ${NATS_CREDENTIALS_SECRET} holds other permissions`;
  return undefined;
}

async function ensureCredentialsSecret(scope: TenantScope, deps: AccountStepDeps, keys: AccountKeys): Promise<void> {
  const existing = await readCredentialsSecret(deps.reads, scope);
  if (credentialsProblem(existing, scope, keys, deps.nats.moduleUrl) === undefined) return;
  const creds = await deps.nats.moduleCredentials(scope, keys);
  await deps.kube.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: NATS_CREDENTIALS_SECRET,
      namespace: scope.namespace,
      labels: { [LABELS.managedBy]: MANAGED_BY, [LABELS.capsuleCode]: scope.code, [LABELS.tenantUid]: tenantUid(scope) },
    },
    data: { [NATS_URL_KEY]: Buffer.from(deps.nats.moduleUrl).toString('base64'), [NATS_CREDS_KEY]: Buffer.from(creds).toString('base64') },
  });
  scope.log.info({ step: 'account', user: readUser(parseCreds(creds).jwt).user }, `Secret ${NATS_CREDENTIALS_SECRET} written`);
}

const isOurs = (secret: V1Secret | undefined, scope: TenantScope): secret is V1Secret =>
  secret?.metadata?.labels?.[LABELS.tenantUid] === tenantUid(scope);

// ---- the step -------------------------------------------------------------------------------------

async function ensure(scope: TenantScope, deps: AccountStepDeps): Promise<Verdict> {
  const stored = await ensureKeys(scope, deps);
  const keys = await rotateIfAsked(scope, deps, stored);
  const held = await deps.nats.serverClaims(keys.account);
  const claims = await claimsNow(scope, deps, keys, held, true);
  if (await deps.nats.ensureAccount(claims, held)) {
    scope.log.info({ step: 'account', account: keys.account, tier: scope.tenant.spec.tier }, 'NATS account JWT pushed');
  }
  await ensureCredentialsSecret(scope, deps, keys);
  return READY;
}

async function verify(scope: TenantScope, deps: AccountStepDeps): Promise<Verdict> {
  const stored = await deps.nats.tenantKeys(scope);
  if (stored === undefined) return notReady(Reason.AccountMissing, `tenant ${scope.code} has no NATS account keys`);
  if (stored.retained !== undefined) return notReady(Reason.AccountDrifted, `Secret ${accountKeysName(scope.code)} is still marked retained`);
  const { keys } = stored;
  const asked = rotationAsked(scope);
  if (asked !== undefined && asked !== keys.rotation) return notReady(Reason.NatsCredentialsRotating, `a rotation of the NATS credentials (${asked}) is requested`);
  const held = await deps.nats.serverClaims(keys.account);
  if (held === undefined) return notReady(Reason.AccountMissing, `NATS does not know account ${keys.account}`);
  if (!deps.nats.matches(held, await claimsNow(scope, deps, keys, held, false))) return notReady(Reason.AccountDrifted, `the JWT of account ${keys.account} on NATS differs from the ${scope.tenant.spec.tier} tier`);
  const secret = await readCredentialsSecret(deps.reads, scope);
  const problem = credentialsProblem(secret, scope, keys, deps.nats.moduleUrl);
  if (problem !== undefined) return notReady(secret === undefined ? Reason.NatsCredentialsMissing : Reason.NatsCredentialsDrifted, problem);
  return READY;
}

async function removeCredentialsSecret(scope: TenantScope, { kube, reads }: AccountStepDeps): Promise<void> {
  if (!isOurs(await readCredentialsSecret(reads, scope), scope)) return;
  await deleteIgnoringNotFound(() => kube.core.deleteNamespacedSecret({ name: NATS_CREDENTIALS_SECRET, namespace: scope.namespace }));
}

/** The tenant's keys for remove and verifyRemoved; undefined when it has none or the code's account is another tenant's. */
async function ownKeys(scope: TenantScope, deps: AccountStepDeps): Promise<StoredAccountKeys | undefined> {
  try {
    return await deps.nats.tenantKeys(scope);
  } catch (err) {
    if (err instanceof InputError) return undefined;
    throw err;
  }
}

async function remove(scope: TenantScope, deps: AccountStepDeps): Promise<void> {
  const stored = await ownKeys(scope, deps);
  await removeCredentialsSecret(scope, deps);
  if (stored === undefined) return;
  const { keys } = stored;
  // Data first: deleting the account JWT would leave its streams on the server's disk. An account the
  // server no longer holds was deleted by an earlier attempt, after its data.
  const deleted = await deps.nats.runInTenantIfAny(scope, async (session) => {
    for await (const name of session.jsm.streams.names()) await session.jsm.streams.delete(name);
    return true;
  });
  if (deleted === true) await deps.nats.deleteAccount(keys.account);
  await assertGone(scope, deps, keys);
  // tenantKeys vouched for the owner: this tenant (a takeover it never completed left it nothing here).
  await deps.nats.keys.remove(accountKeysName(scope.code), stored.owner);
  scope.log.info({ step: 'account', account: keys.account }, 'NATS account deleted');
}

/** The keys are forgotten only once the server has no account and refuses the modules' credentials. */
async function assertGone(scope: TenantScope, deps: AccountStepDeps, keys: AccountKeys): Promise<void> {
  if ((await deps.nats.serverClaims(keys.account)) !== undefined) {
    throw new DependencyError(Reason.AccountPresent, `NATS still holds account ${keys.account} after its deletion`);
  }
  await assertModulesRefused(scope, deps, keys);
}

async function verifyRemoved(scope: TenantScope, deps: AccountStepDeps): Promise<Verdict> {
  const secret = await readCredentialsSecret(deps.reads, scope);
  if (isOurs(secret, scope)) return notReady(Reason.NatsCredentialsPresent, `Secret ${NATS_CREDENTIALS_SECRET} still exists`);
  const stored = await ownKeys(scope, deps);
  if (stored !== undefined) return notReady(Reason.AccountKeysPresent, `account ${stored.keys.account} is not deleted yet (its keys remain)`);
  return READY;
}

// ---- decommissioned with its data retained (spec.dataRetention Retain) --------------------------------

async function assertModulesRefused(scope: TenantScope, deps: AccountStepDeps, keys: AccountKeys): Promise<void> {
  const { jwt, seed } = parseCreds(await deps.nats.moduleCredentials(scope, keys));
  if (await deps.nats.accepts({ jwt, seed })) {
    throw new DependencyError(Reason.NatsCredentialsStillAccepted, `NATS still accepts the modules' credentials of account ${keys.account}`);
  }
}

/**
 * Instead of remove: the account stays on the server with its JetStream data, its modules' user
 * refused, and its keys stay where they are (a restore or a purge signs with them), marked retained
 * by this tenant under its code (what a restore must find); only the modules' Secret goes with the
 * namespace.
 */
async function disable(scope: TenantScope, deps: AccountStepDeps): Promise<void> {
  const stored = await ownKeys(scope, deps);
  await removeCredentialsSecret(scope, deps);
  if (stored === undefined) return;
  const { keys } = stored;
  if (!retainedByThis(scope, stored)) {
    // restoredFrom stays: streams not yet re-stamped from it remain this tenant's, and so its restorer's.
    await deps.nats.keys.update(accountKeysName(scope.code), stored, keys, withRetention(stored, retentionOf(scope, new Date().toISOString())));
    scope.log.info({ step: 'account', account: keys.account }, 'NATS account keys marked retained');
  }
  if (await deps.nats.ensureAccount(tenantClaims(scope, keys, true))) {
    scope.log.info({ step: 'account', account: keys.account }, 'NATS account disabled; its data is retained');
  }
  await assertModulesRefused(scope, deps, keys);
}

async function verifyDisabled(scope: TenantScope, deps: AccountStepDeps): Promise<Verdict> {
  if (isOurs(await readCredentialsSecret(deps.reads, scope), scope)) return notReady(Reason.NatsCredentialsPresent, `Secret ${NATS_CREDENTIALS_SECRET} still exists`);
  const stored = await ownKeys(scope, deps);
  if (stored === undefined) return READY;
  const { keys } = stored;
  if (!retainedByThis(scope, stored)) return notReady(Reason.RetentionPending, `Secret ${accountKeysName(scope.code)} is not marked retained yet`);
  if (!deps.nats.matches(await deps.nats.serverClaims(keys.account), tenantClaims(scope, keys, true))) {
    return notReady(Reason.AccountDrifted, `account ${keys.account} is not disabled on NATS yet`);
  }
  return READY;
}

const retainedByThis = (scope: TenantScope, stored: StoredAccountKeys): boolean => stored.retained?.uid === tenantUid(scope) && stored.retained.code === scope.code;

/** The account step's remove and verifyRemoved when the tenant's data is retained. */
export const retainedAccount: Pick<Step<AccountStepDeps>, 'remove' | 'verifyRemoved'> = { remove: disable, verifyRemoved: verifyDisabled };

export const accountStep: Step<AccountStepDeps> = { name: 'account', ensure, verify, remove, verifyRemoved };
