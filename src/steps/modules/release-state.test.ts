import { describe, expect, it } from 'vitest';
import type { ReleaseRecord } from '../../adapters/helm.ts';
import { actionFor, problemFor, releaseProblems, type ReleaseState, releaseState, undesiredReleases, VALUES_HASH_LABEL } from './release-state.ts';

const release = (status: string, hash = 'h1', version = 3): ReleaseRecord => ({ name: 'orbit-crm', version, status, labels: { [VALUES_HASH_LABEL]: hash } });

describe('releaseState, and what ensure and verify make of it (the decision table)', () => {
  it.each<[string, ReleaseRecord | undefined, boolean, ReleaseState['kind'], ReturnType<typeof actionFor>, string | undefined]>([
    ['no release', undefined, false, 'Absent', 'upgrade', 'ReleaseMissing'],
    ['pending-install (a killed helm)', release('pending-install'), true, 'Locked', 'unlock-then-upgrade', 'ReleaseNotDeployed'],
    ['pending-upgrade', release('pending-upgrade'), true, 'Locked', 'unlock-then-upgrade', 'ReleaseNotDeployed'],
    ['pending-rollback', release('pending-rollback'), true, 'Locked', 'unlock-then-upgrade', 'ReleaseNotDeployed'],
    ['failed', release('failed'), true, 'Failed', 'upgrade', 'ReleaseNotDeployed'],
    ['uninstalled', release('uninstalled'), false, 'Failed', 'upgrade', 'ReleaseNotDeployed'],
    ['deployed with other values', release('deployed', 'old'), true, 'OutOfSync', 'upgrade', 'ReleaseOutdated'],
    ['deployed with other values and no Deployment', release('deployed', 'old'), false, 'OutOfSync', 'upgrade', 'ReleaseOutdated'],
    ['deployed as wanted, Deployment deleted', release('deployed'), false, 'Drifted', 'upgrade', 'DeploymentMissing'],
    ['deployed as wanted', release('deployed'), true, 'InSync', 'none', undefined],
  ])('%s', (_what, current, deploymentPresent, kind, action, reason) => {
    const state = releaseState('h1', current, deploymentPresent);
    expect(state.kind).toBe(kind);
    expect(actionFor(state)).toBe(action);
    expect(problemFor('orbit-crm', state)?.reason).toBe(reason);
  });

  it('names the module and revision in what verify reports', () => {
    expect(problemFor('orbit-crm', releaseState('h1', release('pending-upgrade', 'h1', 7), true))?.message).toBe('orbit-crm revision 7 is pending-upgrade');
  });
});

describe('release checks', () => {
  const ours = { 'app.kubernetes.io/managed-by': 'eva-operator' };
  const desired = new Map([['orbit-crm', 'h1'], ['orbit-itsm', 'h2']] as const);

  it('accepts deployed releases with the desired hashes', () => {
    const releases = [
      { name: 'orbit-crm', version: 1, status: 'deployed', labels: { ...ours, [VALUES_HASH_LABEL]: 'h1' } },
      { name: 'orbit-itsm', version: 4, status: 'deployed', labels: { ...ours, [VALUES_HASH_LABEL]: 'h2' } },
      { name: 'someone-elses', version: 1, status: 'deployed', labels: {} },
    ];
    expect(releaseProblems(desired, releases, new Set(['orbit-crm', 'orbit-itsm']))).toEqual([]);
  });

  it('reports missing, unsettled, outdated and undesired releases', () => {
    const releases = [
      { name: 'orbit-crm', version: 2, status: 'pending-upgrade', labels: { ...ours, [VALUES_HASH_LABEL]: 'h1' } },
      { name: 'eva-shell', version: 1, status: 'deployed', labels: ours },
    ];
    expect(releaseProblems(desired, releases, new Set(['orbit-crm'])).map((p) => p.reason)).toEqual(['ReleaseNotDeployed', 'ReleaseMissing', 'UndesiredRelease']);
    const outdated = [{ name: 'orbit-crm', version: 1, status: 'deployed', labels: { ...ours, [VALUES_HASH_LABEL]: 'old' } }];
    expect(releaseProblems(new Map([['orbit-crm', 'h1']]), outdated, new Set(['orbit-crm']))[0]?.reason).toBe('ReleaseOutdated');
  });

  it('only calls the operator’s own module releases undesired', () => {
    const releases = [
      { name: 'eva-shell', version: 1, status: 'deployed', labels: ours },
      { name: 'eva-shell-x', version: 1, status: 'deployed', labels: ours },
      { name: 'eva-forge', version: 1, status: 'deployed', labels: {} },
    ];
    expect(undesiredReleases(new Set(['orbit-crm']), releases).map((r) => r.name)).toEqual(['eva-shell']);
  });
});
