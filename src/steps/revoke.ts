/**
 * Step 'revoke' (after 'modules'): the user a credentials rotation replaced is revoked in the tenant's
 * account JWT once every module runs with the new credentials (step 'modules' rolled them and waited
 * for the rollout). The server then refuses the old credentials and drops their live connections.
 * The revocation is written to the account's keys first and pushed after, so a crash in between is
 * completed by the next ensure (and the drift check sees an account JWT without it).
 */
import { Reason } from '../api/reasons.ts';
import { type AccountKeys, accountKeysName } from '../nats/account-keys.ts';
import type { NatsStepDeps } from './step.ts';
import { tenantClaims } from '../nats/accounts.ts';
import { notReady, READY, type Step, type Verdict } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';

/** The keys once the retiring user is revoked (as of `now`, unix seconds). */
export function revoked(keys: AccountKeys, user: string, now: number): AccountKeys {
  const next: AccountKeys = { account: keys.account, signingSeed: keys.signingSeed, revocations: { ...keys.revocations, [user]: now } };
  return { ...next, ...(keys.userSeed !== undefined ? { userSeed: keys.userSeed } : {}), ...(keys.rotation !== undefined ? { rotation: keys.rotation } : {}) };
}

async function ensure(scope: TenantScope, deps: NatsStepDeps): Promise<Verdict> {
  const stored = await deps.nats.tenantKeys(scope);
  if (stored === undefined) return READY;
  let { keys } = stored;
  const retiring = keys.retiringUser;
  if (retiring !== undefined) {
    keys = revoked(keys, retiring, Math.floor(Date.now() / 1000));
    await deps.nats.keys.update(accountKeysName(scope.code), stored, keys);
  }
  if (await deps.nats.ensureAccount(tenantClaims(scope, keys))) {
    scope.log.info({ step: 'revoke', account: keys.account, revoked: retiring }, 'replaced NATS user revoked');
  }
  return READY;
}

async function verify(scope: TenantScope, deps: NatsStepDeps): Promise<Verdict> {
  const retiring = (await deps.nats.tenantKeys(scope))?.keys.retiringUser;
  if (retiring !== undefined) return notReady(Reason.NatsCredentialsRotating, `the replaced NATS user ${retiring} is not revoked yet`);
  return READY;
}

/** Nothing of its own to remove: step 'account' deletes the whole account. */
const nothing = (): Promise<void> => Promise.resolve();

export const revokeStep: Step<NatsStepDeps> = { name: 'revoke', ensure, verify, remove: nothing, verifyRemoved: () => Promise.resolve(READY) };
