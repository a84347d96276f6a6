/**
 * An in-memory world for one rollout pass (controller/rollout-reconciler.ts's RolloutPorts): tenants,
 * Leases and a Prometheus answer given, the patches, statuses, Events and questions it produced
 * recorded. Shared by the pass's unit test and the tests that judge the statuses a pass writes.
 */
import { V1MicroTime, type V1Lease } from '@kubernetes/client-node';
import { API_VERSION, KIND, OWNER_ANNOTATION } from '../../src/api/constants.ts';
import type { EvaTenant } from '../../src/api/evatenant.ts';
import { type EvaRollout, type EvaRolloutSpec, type EvaRolloutStatus, ROLLOUT_ANNOTATIONS, ROLLOUT_KIND } from '../../src/api/evarollout.ts';
import type { RolloutPorts } from '../../src/controller/rollout-reconciler.ts';
import type { QueryAnswer } from '../../src/rollout/gates.ts';

export const NOW = Date.parse('2030-01-01T00:10:00Z');
export const OLD = '1.4.0';
export const NEW = '1.5.0';

const readyCondition = (status: 'True' | 'False'): NonNullable<NonNullable<EvaTenant['status']>['conditions']>[number] => ({
  type: 'Ready',
  status,
  reason: status === 'True' ? 'Provisioned' : 'Progressing',
  message: '',
  lastTransitionTime: '2030-01-01T00:00:00Z',
});

/** A Ready tenant of `wave` owned by OLD. */
export const tenant = (name: string, wave: number): EvaTenant => ({
  apiVersion: API_VERSION,
  kind: KIND,
  metadata: { name, generation: 1, resourceVersion: `${name}-rv`, annotations: { [OWNER_ANNOTATION]: OLD } },
  spec: { capsuleCode: name.toUpperCase().padEnd(6, 'X').slice(0, 6), tier: 'Starter', lifecycle: 'Active', wave },
  status: { observedGeneration: 1, conditions: [readyCondition('True')] },
});

/**
 * The tenant as rollout `r` left it after moving it from OLD in its wave's batch `batch`: pinned to
 * `pin` (NEW, or OLD once returned), owned by `owner` (the pin once handed over), Ready or not there.
 */
export function movedTenant(t: EvaTenant, { batch = 1, pin = NEW, owner = pin, ready = true }: { batch?: number; pin?: string; owner?: string; ready?: boolean } = {}): EvaTenant {
  const record = { [ROLLOUT_ANNOTATIONS.rollout]: 'r', [ROLLOUT_ANNOTATIONS.wave]: String(t.spec.wave), [ROLLOUT_ANNOTATIONS.batch]: String(batch), [ROLLOUT_ANNOTATIONS.from]: OLD };
  return {
    ...t,
    metadata: { ...t.metadata, annotations: { [OWNER_ANNOTATION]: owner, ...record } },
    spec: { ...t.spec, operatorVersion: pin },
    status: { observedGeneration: 1, conditions: [readyCondition(ready ? 'True' : 'False')] },
  };
}

export const lease = (version: string): V1Lease => ({
  metadata: { name: `eva-operator-${version.replaceAll('.', '-')}` },
  spec: { holderIdentity: 'pod', leaseDurationSeconds: 15, renewTime: new V1MicroTime(NOW - 1000) },
});

/** Rollout `name` to NEW: wave 1 in batches of 2 baked 60 s, then wave 2 at once; judged by a Prometheus query. */
export const rollout = (name: string, status?: EvaRolloutStatus, created = '2030-01-01T00:00:00Z', spec: Partial<EvaRolloutSpec> = {}): EvaRollout => ({
  apiVersion: API_VERSION,
  kind: ROLLOUT_KIND,
  metadata: { name, generation: 1, creationTimestamp: created },
  spec: {
    targetVersion: NEW,
    waves: [{ wave: 1, batch: { count: 2 }, bakeSeconds: 60 }, { wave: 2, batch: { percent: 100 } }],
    gates: { prometheus: { url: 'http://127.0.0.1:9', query: 'sum(errors)', max: 0 } },
    ...spec,
  },
  ...(status === undefined ? {} : { status }),
});

export interface Recorded {
  readonly patches: { name: string; patch: object }[];
  readonly statuses: EvaRolloutStatus[];
  readonly events: string[];
  readonly asked: string[];
}

export interface WorldOptions {
  /** The versions whose Leases are held (default OLD and NEW). */
  versions?: string[];
  rollouts?: EvaRollout[];
  /** Prometheus's answer (default: unreachable). */
  answer?: QueryAnswer;
}

export function ports(tenants: EvaTenant[], options: WorldOptions = {}): RolloutPorts & Recorded {
  const recorded: Recorded = { patches: [], statuses: [], events: [], asked: [] };
  return {
    ...recorded,
    tenants: () => tenants,
    rollouts: () => options.rollouts ?? [],
    leases: () => Promise.resolve((options.versions ?? [OLD, NEW]).map(lease)),
    modulePods: () => Promise.resolve([]),
    ask: (_url, query) => {
      recorded.asked.push(query);
      return Promise.resolve(options.answer ?? { error: 'connection refused' });
    },
    patchTenant: (name, patch) => {
      recorded.patches.push({ name, patch });
      return Promise.resolve();
    },
    writeStatus: (_r, status) => {
      recorded.statuses.push(status);
      return Promise.resolve();
    },
    recordEvent: (_r, type, reason, message) => {
      recorded.events.push(`${type} ${reason}: ${message}`);
      return Promise.resolve();
    },
    now: () => NOW,
  };
}

/** A condition of a status as `Status/Reason`. */
export const condition = (status: EvaRolloutStatus | undefined, type: string): string | undefined => {
  const c = status?.conditions?.find((x) => x.type === type);
  return c === undefined ? undefined : `${c.status}/${c.reason}`;
};
