/**
 * Where the keys of each NATS account live: one Secret per account in the operator's own namespace
 * (`eva-nats-account-<code>`, and `eva-nats-account-operator` for the operator's registry account),
 * never in a tenant namespace. A restart re-signs the same identities from them, so credentials
 * handed to modules keep working.
 *
 * What is kept: the account's public key (its identity seed is thrown away at creation: account JWTs
 * are signed by the operator, users by the account's signing key, so nothing needs it), the account
 * signing key, the modules' user key, and the rotation state (a user being retired, revocations).
 * Writes are create-only (two replicas racing keep the winner's keys) or guarded by resourceVersion.
 */
import { LABELS, MANAGED_BY, RESTORED_FROM_UID_ANNOTATION, RETAINED_MARKS } from '../api/constants.ts';
import type { V1Secret } from '@kubernetes/client-node';
import { Reason } from '../api/reasons.ts';
import { DependencyError } from '../errors.ts';
import { type CachingInformer, restartingInformer } from '../runtime/informers.ts';
import { isConflict, isNotFound, type Kube, MERGE_PATCH, readOptional } from '../adapters/kube.ts';
import type { Logger } from '../log.ts';
import { isPublicKey, NatsKeyError, newSeed, publicKeyOf } from '../adapters/nats-jwt.ts';
import type { Custody, Retention } from '../tenancy/ownership.ts';

export interface AccountKeys {
  /** The account's identity (public key, A...). */
  readonly account: string;
  /** Signs the account's users (account seed, SA...). */
  readonly signingSeed: string;
  /** The modules' current user (user seed, SU...); the registry account has none. */
  readonly userSeed?: string;
  /** The public key of a user a rotation replaced, until it is revoked. */
  readonly retiringUser?: string;
  /** User public key -> unix seconds: revoked users (kept in every JWT signed from now on). */
  readonly revocations: Readonly<Record<string, number>>;
  /** The value of the rotate annotation the current user was minted for. */
  readonly rotation?: string;
}

/** The keys with their custody (owner label; restored-from and retained-* annotations). */
export interface StoredAccountKeys extends Custody {
  readonly keys: AccountKeys;
  /** Precondition of the next update. */
  readonly version: string;
}

export interface AccountKeyStore {
  read(name: string): Promise<StoredAccountKeys | undefined>;
  /** Creates the entry, or returns the one a concurrent writer created first (its keys win). */
  create(name: string, owner: string, keys: AccountKeys): Promise<StoredAccountKeys>;
  /**
   * Replaces the keys (and the whole custody, when given: retaining marks the data, a restore takes it
   * over) if nobody wrote since `stored` was read; else DependencyError (retry re-reads).
   */
  update(name: string, stored: StoredAccountKeys, keys: AccountKeys, custody?: Custody): Promise<StoredAccountKeys>;
  /** Deletes the entry if `owner` owns it; absent is fine. */
  remove(name: string, owner: string): Promise<void>;
}

/** The operator's own registry account (a tenant code has six letters, so no tenant is named like it). */
export const REGISTRY_KEYS = 'eva-nats-account-operator';
export const accountKeysName = (code: string): string => `eva-nats-account-${code.toLowerCase()}`;

/** Fresh keys for a new account (with a modules user unless it is the operator's own account). */
export function newAccountKeys(withUser: boolean, rotation?: string): AccountKeys {
  return {
    account: publicKeyOf(newSeed('account'), 'account'),
    signingSeed: newSeed('account'),
    ...(withUser ? { userSeed: newSeed('user') } : {}),
    revocations: {},
    ...(rotation !== undefined ? { rotation } : {}),
  };
}

// ---- the Secret -----------------------------------------------------------------------------------

const KEY = { account: 'account', signing: 'signing.nk', user: 'user.nk', state: 'state.json' } as const;
const ACCOUNT_LABEL = 'eva.aidonow.com/nats-account';

interface State {
  retiringUser?: string;
  revocations?: Record<string, number>;
  rotation?: string;
}

function secretData(keys: AccountKeys): Record<string, string> {
  const state: State = { revocations: { ...keys.revocations } };
  if (keys.retiringUser !== undefined) state.retiringUser = keys.retiringUser;
  if (keys.rotation !== undefined) state.rotation = keys.rotation;
  const data: Record<string, string> = { [KEY.account]: keys.account, [KEY.signing]: keys.signingSeed, [KEY.state]: JSON.stringify(state) };
  if (keys.userSeed !== undefined) data[KEY.user] = keys.userSeed;
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
}

function corrupt(name: string, problem: string): DependencyError {
  return new DependencyError(Reason.AccountKeysCorrupt, `Secret ${name} (NATS account keys) ${problem}; restore it from a backup`);
}

/** The keys in a Secret, checked: a hand-edited or truncated Secret is reported, never half-used. */
export function keysFromSecret(secret: V1Secret): StoredAccountKeys {
  const name = secret.metadata?.name ?? '?';
  const data = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
  const keys = { ...checkedKeys(name, data), ...stateOf(name, data[KEY.state]) };
  return { keys, ...custodyOf(secret), version: secret.metadata?.resourceVersion ?? '' };
}

function custodyOf(secret: V1Secret): Custody {
  const annotations = secret.metadata?.annotations ?? {};
  const { [RETAINED_MARKS.fromUid]: uid, [RETAINED_MARKS.code]: code, [RETAINED_MARKS.at]: at, [RESTORED_FROM_UID_ANNOTATION]: restoredFrom } = annotations;
  // A partial mark (edited by hand) is no mark: a restore of it is refused.
  const retained: Retention | undefined = uid && code && at ? { uid, code, at } : undefined;
  return { owner: secret.metadata?.labels?.[LABELS.tenantUid] ?? '', ...(restoredFrom ? { restoredFrom } : {}), ...(retained ? { retained } : {}) };
}

/** The custody as a merge patch of the Secret's metadata: what it does not hold is removed (null). */
function custodyPatch({ owner, restoredFrom, retained }: Custody): { labels: Record<string, string>; annotations: Record<string, string | null> } {
  return {
    labels: { [LABELS.tenantUid]: owner },
    annotations: {
      [RESTORED_FROM_UID_ANNOTATION]: restoredFrom ?? null,
      [RETAINED_MARKS.fromUid]: retained?.uid ?? null,
      [RETAINED_MARKS.code]: retained?.code ?? null,
      [RETAINED_MARKS.at]: retained?.at ?? null,
    },
  };
}

function checkedKeys(name: string, data: Record<string, string>): Pick<AccountKeys, 'account' | 'signingSeed' | 'userSeed'> {
  const { [KEY.account]: account = '', [KEY.signing]: signingSeed = '', [KEY.user]: userSeed } = data;
  if (!isPublicKey(account, 'account')) throw corrupt(name, `has no valid ${KEY.account}`);
  try {
    publicKeyOf(signingSeed, 'account');
    if (userSeed !== undefined) publicKeyOf(userSeed, 'user');
  } catch (err) {
    throw corrupt(name, `holds a bad key (${err instanceof NatsKeyError ? err.message : 'unreadable'})`);
  }
  return { account, signingSeed, ...(userSeed !== undefined ? { userSeed } : {}) };
}

function stateOf(name: string, text: string | undefined): Pick<AccountKeys, 'retiringUser' | 'revocations' | 'rotation'> {
  let state: State;
  try {
    state = JSON.parse(text ?? '{}') as State;
  } catch {
    throw corrupt(name, `has an unreadable ${KEY.state}`);
  }
  const { retiringUser, revocations = {}, rotation } = state;
  return { revocations, ...(retiringUser !== undefined ? { retiringUser } : {}), ...(rotation !== undefined ? { rotation } : {}) };
}

/**
 * The Kubernetes implementation: Secrets in the operator's namespace, read from a watch cache once
 * start() ran (every NATS step reads its tenant's keys; a GET each time would be most of the step's
 * API traffic). Writes go to the API and into a small overlay read first, so keys written in this
 * reconcile are read back at once; the overlay entry goes as soon as the watch reports that Secret.
 */
export class KubeAccountKeyStore implements AccountKeyStore {
  private readonly kube: Kube;
  private readonly namespace: string;
  private informer: CachingInformer<V1Secret> | undefined;
  private readonly written = new Map<string, V1Secret | null>();
  private stopped = false;

  constructor(kube: Kube, namespace: string) {
    this.kube = kube;
    this.namespace = namespace;
  }

  /** Serves reads from a watch of the account key Secrets from now on. */
  async start(log: Logger): Promise<void> {
    const informer = restartingInformer<V1Secret>({
      config: this.kube.config,
      path: `/api/v1/namespaces/${this.namespace}/secrets`,
      list: () => this.kube.core.listNamespacedSecret({ namespace: this.namespace, labelSelector: ACCOUNT_LABEL }),
      labelSelector: ACCOUNT_LABEL,
      log,
      stopping: () => this.stopped,
    });
    const seen = (secret: V1Secret): void => {
      this.written.delete(secret.metadata?.name ?? '');
    };
    informer.on('add', seen);
    informer.on('update', seen);
    informer.on('delete', seen);
    await informer.start();
    this.informer = informer;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer?.stop();
  }

  async read(name: string): Promise<StoredAccountKeys | undefined> {
    const secret = await this.secret(name);
    return secret === undefined ? undefined : keysFromSecret(secret);
  }

  async create(name: string, owner: string, keys: AccountKeys): Promise<StoredAccountKeys> {
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name, namespace: this.namespace, labels: { [LABELS.managedBy]: MANAGED_BY, [ACCOUNT_LABEL]: keys.account, [LABELS.tenantUid]: owner } },
      data: secretData(keys),
    };
    try {
      return keysFromSecret(this.remember(name, await this.kube.core.createNamespacedSecret({ namespace: this.namespace, body })));
    } catch (err) {
      if (!isConflict(err)) throw err;
      const winner = await this.fetch(name);
      if (winner === undefined) throw err;
      return keysFromSecret(this.remember(name, winner));
    }
  }

  async update(name: string, stored: StoredAccountKeys, keys: AccountKeys, custody?: Custody): Promise<StoredAccountKeys> {
    if (keys.account !== stored.keys.account) throw new Error(`Secret ${name}: an account's identity never changes`);
    // One guarded write: keys and custody change together or not at all.
    const body = { metadata: { resourceVersion: stored.version, ...(custody === undefined ? {} : custodyPatch(custody)) }, data: secretData(keys) };
    try {
      return keysFromSecret(this.remember(name, await this.kube.core.patchNamespacedSecret({ name, namespace: this.namespace, body }, MERGE_PATCH)));
    } catch (err) {
      if (!isConflict(err)) throw err;
      this.written.delete(name);
      throw new DependencyError(Reason.AccountKeysCorrupt, `Secret ${name} changed while being updated; retrying`, { cause: err });
    }
  }

  async remove(name: string, owner: string): Promise<void> {
    // Judged by the label, not the content: a corrupt Secret of ours is still ours to delete.
    const secret = await this.fetch(name);
    if (secret === undefined || (secret.metadata?.labels?.[LABELS.tenantUid] ?? '') !== owner) return;
    try {
      await this.kube.core.deleteNamespacedSecret({ name, namespace: this.namespace, body: { preconditions: { uid: secret.metadata?.uid } } });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.written.set(name, null);
  }

  private remember(name: string, secret: V1Secret): V1Secret {
    this.written.set(name, secret);
    return secret;
  }

  /** What this process wrote last, else the watch cache, else (no watch yet) the API. */
  private async secret(name: string): Promise<V1Secret | undefined> {
    const written = this.written.get(name);
    if (written !== undefined) return written ?? undefined;
    if (this.informer === undefined) return this.fetch(name);
    return this.informer.get(name, this.namespace);
  }

  private fetch(name: string): Promise<V1Secret | undefined> {
    return readOptional(() => this.kube.core.readNamespacedSecret({ name, namespace: this.namespace }));
  }
}
