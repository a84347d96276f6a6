import { describe, expect, it } from 'vitest';
import { compareVersions, isSemver, kubeVersionSatisfies } from './versions.ts';

describe('compareVersions', () => {
  it('orders by semver precedence, not by text', () => {
    const sorted = ['1.10.0', '1.2.0', '1.2.0-rc.1', '1.2.0-rc.10', '1.2.0-rc.2', '1.2.0-beta', 'custom', '0.9.9'].sort(compareVersions);
    expect(sorted).toEqual(['custom', '0.9.9', '1.2.0-beta', '1.2.0-rc.1', '1.2.0-rc.2', '1.2.0-rc.10', '1.2.0', '1.10.0']);
  });

  it('ignores build metadata and orders labels that are not semver by text, below every version', () => {
    expect(compareVersions('1.0.0+a', '1.0.0+b')).toBe(0);
    expect(['zeta', 'alpha', '0.0.1'].sort(compareVersions)).toEqual(['alpha', 'zeta', '0.0.1']);
  });

  it('knows semver from what is not', () => {
    expect(['1.4.0', '1.4.0-rc.1+build.5', '1.4', 'v1.4.0', 'latest'].map(isSemver)).toEqual([true, true, false, false, false]);
  });
});

describe('kubeVersionSatisfies (the chart kubeVersion range, as helm checks it)', () => {
  it.each([
    ['v1.30.0', true],
    ['v1.36.4', true],
    ['v1.31.2-eks-7f9249a', true],
    ['v1.30.1+k3s1', true],
    ['v1.29.15', false],
    ['v1.29.15-gke.1', false],
  ])('%s against >=1.30.0-0: %s', (version, expected) => {
    expect(kubeVersionSatisfies(version, '>=1.30.0-0')).toBe(expected);
  });

  it('a version that is not one is undefined, not a pass', () => {
    expect(kubeVersionSatisfies('latest', '>=1.30.0-0')).toBeUndefined();
  });
});
