/**
 * What the hub controller reads of the engine's objects on the hub: the tenants' ManifestWorks (in
 * every member's namespace), their Placements and the members' availability. One listing of each per
 * pass, shared by the reporter and the mover.
 */
import type { Kube } from '../adapters/kube.ts';
import { MANAGED_CLUSTER_API_VERSION, type ManagedCluster, type ManifestWork, memberAvailability, type MemberAvailability, TENANT_WORK_LABEL, WORK_API_VERSION } from '../multicluster/manifest-work.ts';
import { type Placement, PLACEMENT_API_VERSION } from '../multicluster/placement.ts';

export const [WORK_GROUP, WORK_VERSION] = WORK_API_VERSION.split('/') as [string, string];
export const [PLACEMENT_GROUP, PLACEMENT_VERSION] = PLACEMENT_API_VERSION.split('/') as [string, string];
const [CLUSTER_GROUP, CLUSTER_VERSION] = MANAGED_CLUSTER_API_VERSION.split('/') as [string, string];

/** Every tenant's work, those being deleted included (a source's work is gone only once its agent removed the member's copy). */
export async function listTenantWorks(hub: Kube): Promise<ManifestWork[]> {
  const list = (await hub.custom.listCustomObjectForAllNamespaces({ group: WORK_GROUP, version: WORK_VERSION, resourcePlural: 'manifestworks', labelSelector: TENANT_WORK_LABEL })) as { items: ManifestWork[] };
  return list.items;
}

/** The tenants' Placements in `namespace` (where the portal writes them). */
export async function listTenantPlacements(hub: Kube, namespace: string): Promise<Placement[]> {
  const list = (await hub.custom.listNamespacedCustomObject({ group: PLACEMENT_GROUP, version: PLACEMENT_VERSION, namespace, plural: 'placements', labelSelector: TENANT_WORK_LABEL })) as { items: Placement[] };
  return list.items;
}

/** The engine's word on each member, by ManagedCluster name. */
export async function listMemberAvailability(hub: Kube): Promise<Map<string, MemberAvailability>> {
  const list = (await hub.custom.listClusterCustomObject({ group: CLUSTER_GROUP, version: CLUSTER_VERSION, plural: 'managedclusters' })) as { items: ManagedCluster[] };
  return new Map(list.items.map((cluster) => [cluster.metadata.name, memberAvailability(cluster)]));
}
