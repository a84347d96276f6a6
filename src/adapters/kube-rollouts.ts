/**
 * What the rollout controller reads and writes on the API: EvaRollouts (list, status), a tenant's
 * pin (a merge patch carrying the resourceVersion that was read, so a tenant changed meanwhile fails
 * with 409), a tenant namespace's module pods, and Events on a rollout.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { GROUP, MODULE_LABEL, PLURAL, VERSION } from '../api/constants.ts';
import type { EvaRollout, EvaRolloutStatus } from '../api/evarollout.ts';
import { ROLLOUT_KIND, ROLLOUT_PLURAL } from '../api/evarollout.ts';
import type { Reason } from '../api/reasons.ts';
import { type EventType, FIELD_MANAGER, type Kube, MERGE_PATCH } from './kube.ts';

export interface RolloutApi {
  listRollouts(): Promise<{ items: unknown[]; resourceVersion: string }>;
  patchTenant(name: string, patch: object): Promise<void>;
  writeStatus(rollout: EvaRollout, status: EvaRolloutStatus): Promise<void>;
  modulePods(namespace: string): Promise<V1Pod[]>;
  recordEvent(rollout: EvaRollout, type: EventType, reason: Reason, message: string): Promise<void>;
}

export function kubeRolloutApi(kube: Pick<Kube, 'custom' | 'core' | 'recordEventOn'>): RolloutApi {
  return {
    async listRollouts() {
      const list = (await kube.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: ROLLOUT_PLURAL })) as { items?: unknown[]; metadata?: { resourceVersion?: string } };
      return { items: list.items ?? [], resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    async patchTenant(name, patch) {
      await kube.custom.patchClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name, body: patch, fieldManager: FIELD_MANAGER }, MERGE_PATCH);
    },
    async writeStatus(rollout, status) {
      // Guarded by the resourceVersion read: a rollout changed meanwhile (paused, say) is read again.
      const body = { metadata: { resourceVersion: rollout.metadata.resourceVersion }, status };
      await kube.custom.patchClusterCustomObjectStatus({ group: GROUP, version: VERSION, plural: ROLLOUT_PLURAL, name: rollout.metadata.name, body, fieldManager: FIELD_MANAGER }, MERGE_PATCH);
    },
    async modulePods(namespace) {
      return (await kube.core.listNamespacedPod({ namespace, labelSelector: MODULE_LABEL })).items;
    },
    async recordEvent(rollout, type, reason, message) {
      await kube.recordEventOn({ kind: ROLLOUT_KIND, ...rollout.metadata }, type, reason, message.slice(0, 1024));
    },
  };
}
