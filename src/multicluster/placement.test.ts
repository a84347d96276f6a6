import { describe, expect, it } from 'vitest';
import { decidedCluster, MEMBER_DOWN_TAINTS, placementSummary, tenantPlacement, unplacedConditions } from './placement.ts';

const placement = tenantPlacement('acme', 'eva-tenants', 'eva-members', { region: 'eu' });

describe("a tenant's Placement", () => {
  it('chooses one member of the set by its labels, tolerates a member that is down and keeps the member decided', () => {
    expect(placement.spec.numberOfClusters).toBe(1);
    expect(placement.spec.predicates).toEqual([{ requiredClusterSelector: { labelSelector: { matchLabels: { region: 'eu' } } } }]);
    expect(placement.spec.tolerations.map((t) => t.key)).toEqual([...MEMBER_DOWN_TAINTS]);
    expect(placement.spec.prioritizerPolicy).toEqual({ mode: 'Exact', configurations: [{ scoreCoordinate: { builtIn: 'Steady' }, weight: 1 }] });
  });

  it('has decided when its decisions name exactly one member', () => {
    expect(decidedCluster([{ metadata: {}, status: { decisions: [{ clusterName: 'member-eu' }] } }])).toBe('member-eu');
    expect(decidedCluster([{ metadata: {}, status: { decisions: [] } }])).toBeUndefined();
    expect(decidedCluster([])).toBeUndefined();
  });

  it('is Stalled with the engine message when the engine placed it nowhere, and says nothing while it decides', () => {
    const nowhere = { ...placement, status: { conditions: [{ type: 'PlacementSatisfied', status: 'False', reason: 'NoManagedClusterMatched', message: 'No ManagedCluster matches any of the cluster predicate' }] } };
    expect(unplacedConditions(nowhere)?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Ready', 'False', 'NoMemberMatches'],
      ['Stalled', 'True', 'NoMemberMatches'],
    ]);
    expect(unplacedConditions(nowhere)?.[0]?.message).toBe('the engine placed tenant-acme on no member: No ManagedCluster matches any of the cluster predicate');
    expect(unplacedConditions(placement)).toBeUndefined();
    expect(unplacedConditions({ ...placement, status: { conditions: [{ type: 'PlacementSatisfied', status: 'True' }] } })).toBeUndefined();
  });

  it("carries that summary at its generation for GitOps tools, and none once the engine decided", () => {
    const nowhere = { ...placement, metadata: { ...placement.metadata, generation: 3 }, status: { conditions: [{ type: 'PlacementSatisfied', status: 'False', reason: 'NoManagedClusterMatched', message: 'none' }] } };
    expect(placementSummary(nowhere).map((c) => `${c.type}=${c.status}/${String(c.reason)}@${String(c.observedGeneration)}`)).toEqual(['Ready=False/NoMemberMatches@3', 'Stalled=True/NoMemberMatches@3']);
    expect(placementSummary({ ...nowhere, status: { conditions: [{ type: 'PlacementSatisfied', status: 'True' }] } })).toEqual([]);
  });
});
