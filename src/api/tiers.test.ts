import { describe, expect, it } from 'vitest';
import { type Tier, TIERS } from './constants.ts';
import { MODULES_BY_TIER } from './modules.ts';
import { MODULE_BOUNDS_BY_TIER, QUOTA_BY_TIER, RELEASE_HISTORY_MAX } from './tiers.ts';

/** What a tier's namespace holds at most, as the comment above QUOTA_BY_TIER counts it. */
function need(tier: Tier): Record<'secrets' | 'configmaps' | 'services' | 'pods', number> {
  const modules = MODULES_BY_TIER[tier].length;
  const replicas = MODULE_BOUNDS_BY_TIER[tier].maxReplicas;
  return {
    secrets: modules * (1 + RELEASE_HISTORY_MAX) + 4,
    configmaps: modules + 3,
    services: modules,
    pods: modules * (replicas + Math.ceil(replicas / 4)),
  };
}

describe('the tier quotas', () => {
  it.each(TIERS)('%s: every object count is bounded, at least twice what the tier needs; no PVC, NodePort or LoadBalancer', (tier) => {
    const quota = QUOTA_BY_TIER[tier];
    for (const [key, count] of Object.entries(need(tier))) {
      expect(Number(quota[key as keyof typeof quota]), key).toBeGreaterThanOrEqual(2 * count);
    }
    expect(quota).toMatchObject({ persistentvolumeclaims: '0', 'services.nodeports': '0', 'services.loadbalancers': '0' });
  });

  it('bounds CPU and memory for Starter and Customer only', () => {
    expect(TIERS.filter((tier) => QUOTA_BY_TIER[tier]['requests.cpu'] !== undefined)).toEqual(['Starter', 'Customer']);
    expect(TIERS.filter((tier) => QUOTA_BY_TIER[tier]['requests.memory'] !== undefined)).toEqual(['Starter', 'Customer']);
  });
});
