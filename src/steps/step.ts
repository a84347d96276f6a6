/**
 * The contract every provisioning step implements: one side effect, four idempotent operations.
 * `ensure` makes the world right (safe to repeat after a crash at any line) and says so when it knows;
 * `verify` only reads and says whether it is right (the drift check calls it, so it must not write or start helm);
 * `remove` undoes `ensure` (and tolerates `ensure` never having run); `verifyRemoved` only reads.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { TenantKind, TenantObjects } from '../adapters/tenant-objects.ts';
import type { Reason } from '../api/reasons.ts';
import type { NatsAccounts } from '../nats/accounts.ts';
import { isHibernated, type TenantScope } from '../tenancy/scope.ts';

export const STEP_NAMES = ['namespace', 'quotas', 'network', 'account', 'streams', 'alerts', 'record', 'seed', 'credentials', 'modules', 'revoke', 'ingress'] as const;
export type StepName = (typeof STEP_NAMES)[number];

export type Verdict = { ready: true } | { ready: false; reason: Reason; message: string };

export const READY: Verdict = { ready: true };
export const notReady = (reason: Reason, message: string): Verdict => ({ ready: false, reason, message });

/** What running one step (ensure, then verify) came to. */
export type StepOutcome = { kind: 'done' } | { kind: 'pending'; reason: Reason; message: string };

/**
 * What the read-only drift check saw. `drifted`: something is wrong that ensure can repair;
 * `unavailable`: the check itself could not run (e.g. NATS down), so the tenant is Degraded.
 */
export type DriftReport =
  | { inSync: true }
  | { inSync: false; step: StepName; reason: Reason; message: string; unavailable: boolean };

/**
 * Objects a step waits on (controller-runtime's Owns()): the controller's watch caches see them across
 * tenant namespaces, and the tenant whose namespace holds one is reconciled as soon as what `state`
 * reads of it changes, or it is deleted, instead of at the next poll.
 */
export interface WakeOn {
  readonly kind: TenantKind;
  /** The part of the object the step's verify judges, as a comparable string. */
  state(obj: KubernetesObject): string;
  /**
   * Whether the object is as the step waits for it (a Deployment Available). One turning so wakes its
   * tenant once every other one of the kind in the namespace is so too: the step waits for them all.
   * Any other change (a failure, a deletion) wakes at once. Absent: every change wakes.
   */
  ready?(obj: KubernetesObject): boolean;
}

export function wakeOn<K extends TenantKind>(kind: K, state: (obj: TenantObjects[K]) => string, ready?: (obj: TenantObjects[K]) => boolean): WakeOn {
  // The cache hands each kind's handlers only objects of that kind.
  return ready === undefined ? { kind, state } : { kind, state, ready };
}

export interface Step<Deps> {
  readonly name: StepName;
  /** Set when verify waits on objects someone else makes ready (Deployments, an ingress address). */
  readonly wakeOn?: WakeOn;
  /**
   * Returns the verdict when its own writes and reads already prove it (READY, usually), saving verify's
   * reads; undefined when what it waits on is someone else's to make ready (verify then judges).
   */
  ensure(scope: TenantScope, deps: Deps): Promise<Verdict | undefined>;
  verify(scope: TenantScope, deps: Deps): Promise<Verdict>;
  remove(scope: TenantScope, deps: Deps): Promise<void>;
  verifyRemoved(scope: TenantScope, deps: Deps): Promise<Verdict>;
}

/** What the NATS-backed steps (account, streams, record, seed, revoke) receive. */
export interface NatsStepDeps {
  readonly nats: NatsAccounts;
}

/** A step whose objects are withdrawn while the tenant hibernates (the Ingress): ensure removes, verify wants them gone. */
export function withdrawnWhileHibernated<Deps>(step: Step<Deps>): Step<Deps> {
  return {
    ...step,
    ensure: async (scope, deps) => {
      if (!isHibernated(scope)) return step.ensure(scope, deps);
      await step.remove(scope, deps);
      return step.verifyRemoved(scope, deps);
    },
    verify: (scope, deps) => (isHibernated(scope) ? step.verifyRemoved(scope, deps) : step.verify(scope, deps)),
  };
}
