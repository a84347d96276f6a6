/**
 * Where a tenant goes: an Open Cluster Management Placement that picks one member cluster by the
 * labels platforms decide on (region, capacity), and never changes its mind by itself. A tenant has
 * data (streams, a seed bucket): the engine's rescheduling would recreate it elsewhere, empty, while
 * the old member still holds the customer's data. So the decision tolerates the engine's taints for
 * an unreachable or unavailable member (the tenant waits for it; no failover) and prefers the cluster
 * already decided (the Steady prioritizer alone); and the tenant's ManifestWork is written once into
 * the decided member's namespace, so a later decision (labels changed) moves nothing: a move is an
 * explicit, data-carrying operation.
 */
import { atGeneration, summaryConditions, TENANT_WORK_LABEL, type WorkCondition } from './manifest-work.ts';

export const PLACEMENT_API_VERSION = 'cluster.open-cluster-management.io/v1beta1';
/** The engine's taints on a member it cannot reach or that says it is not available. */
export const MEMBER_DOWN_TAINTS = ['cluster.open-cluster-management.io/unreachable', 'cluster.open-cluster-management.io/unavailable'] as const;

export interface Placement {
  apiVersion: typeof PLACEMENT_API_VERSION;
  kind: 'Placement';
  metadata: { name: string; namespace: string; labels: Record<string, string>; generation?: number; resourceVersion?: string };
  status?: PlacementStatus;
  spec: {
    numberOfClusters: 1;
    clusterSets: string[];
    predicates: { requiredClusterSelector: { labelSelector: { matchLabels: Record<string, string> } } }[];
    tolerations: { key: string; operator: 'Exists' }[];
    prioritizerPolicy: { mode: 'Exact'; configurations: { scoreCoordinate: { builtIn: 'Steady' }; weight: number }[] };
  };
}

/** The engine's PlacementSatisfied condition, as the Placement's status has it. */
export interface PlacementStatus {
  conditions?: WorkCondition[];
}

export interface PlacementDecision {
  metadata: { labels?: Record<string, string> };
  status?: { decisions?: { clusterName: string }[] };
}

export const placementName = (tenant: string): string => `tenant-${tenant}`;

/** The Placement choosing one member of `clusterSet` whose labels match `labels`, for `tenant`. */
export function tenantPlacement(tenant: string, namespace: string, clusterSet: string, labels: Record<string, string>): Placement {
  return {
    apiVersion: PLACEMENT_API_VERSION,
    kind: 'Placement',
    metadata: { name: placementName(tenant), namespace, labels: { [TENANT_WORK_LABEL]: tenant } },
    spec: {
      numberOfClusters: 1,
      clusterSets: [clusterSet],
      predicates: [{ requiredClusterSelector: { labelSelector: { matchLabels: labels } } }],
      tolerations: MEMBER_DOWN_TAINTS.map((key) => ({ key, operator: 'Exists' as const })),
      prioritizerPolicy: { mode: 'Exact', configurations: [{ scoreCoordinate: { builtIn: 'Steady' }, weight: 1 }] },
    },
  };
}

/** The member the engine decided on, if it has decided (the decisions of one Placement). */
export function decidedCluster(decisions: readonly PlacementDecision[]): string | undefined {
  const clusters = decisions.flatMap((d) => d.status?.decisions ?? []).map((d) => d.clusterName);
  return clusters.length === 1 ? clusters[0] : undefined;
}

/**
 * Why the engine placed the tenant nowhere, as summarize() words it (Ready False, Stalled, reason
 * NoMemberMatches and the engine's own message); undefined while it decides or once it has.
 */
export function unplacedConditions(placement: Pick<Placement, 'metadata' | 'status'>): WorkCondition[] | undefined {
  const satisfied = placement.status?.conditions?.find((c) => c.type === 'PlacementSatisfied');
  if (satisfied?.status !== 'False') return undefined;
  const message = `the engine placed ${placement.metadata.name} on no member: ${satisfied.message ?? satisfied.reason ?? 'not satisfied'}`;
  return summaryConditions({ kind: 'unplaced', message });
}

/**
 * The summary the hub controller writes on a tenant's Placement (src/hub/reporter.ts), so that a
 * GitOps tool reading it sees a tenant placed nowhere as Stalled: unplacedConditions at the
 * Placement's generation, nothing once the engine decided (the tenant's health is then its work's).
 */
export function placementSummary(placement: Pick<Placement, 'metadata' | 'status'>): WorkCondition[] {
  return atGeneration(unplacedConditions(placement) ?? [], placement.metadata.generation);
}
