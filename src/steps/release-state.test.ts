import { describe, expect, it } from 'vitest';
import { fakeHelm } from '../../test/support/fake-helm.ts';
import { Helm, type ReleaseRecord } from '../adapters/helm.ts';
import { actionFor, lastGoodRevision, problemFor, recoverPendingRelease, releaseProblems, type ReleaseState, releaseState, undesiredReleases, VALUES_HASH_LABEL } from './release-state.ts';

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

describe('unlocking a release a dead helm left pending', () => {
  const history = (statuses: string[]): string =>
    JSON.stringify(statuses.map((status, i) => ({ revision: i + 1, status, chart: 'c-1.0.0', app_version: '1', description: '' })));
  const pending = (status: string, version: number): ReleaseRecord => ({ name: 'r', version, status, labels: {} });

  it('uninstalls a release stuck in pending-install', async () => {
    const fake = fakeHelm();
    expect(await recoverPendingRelease(new Helm({ binary: fake.binary }), 'n', pending('pending-install', 1))).toBe('uninstalled');
    expect(fake.calls().map((c) => c.args[0])).toEqual(['uninstall']);
  });

  it('rolls a pending upgrade back to the deployed revision', async () => {
    const fake = fakeHelm({ history: { stdout: history(['superseded', 'deployed', 'failed', 'pending-upgrade']) } });
    expect(await recoverPendingRelease(new Helm({ binary: fake.binary }), 'n', pending('pending-upgrade', 4))).toBe('rolled-back');
    expect(fake.calls().map((c) => c.args.slice(0, 3))).toEqual([['history', 'r', '--namespace'], ['rollback', 'r', '2']]);
  });

  it('uninstalls a pending rollback with no good revision to return to', async () => {
    const fake = fakeHelm({ history: { stdout: history(['failed', 'pending-rollback']) } });
    expect(await recoverPendingRelease(new Helm({ binary: fake.binary }), 'n', pending('pending-rollback', 2))).toBe('uninstalled');
  });

  it('leaves a settled release alone', async () => {
    const fake = fakeHelm();
    expect(await recoverPendingRelease(new Helm({ binary: fake.binary }), 'n', pending('deployed', 3))).toBe('none');
  });

  it('finds the last good revision before a pending one', () => {
    const entries = (statuses: string[]) => statuses.map((status, i) => ({ revision: i + 1, status, chart: '', appVersion: '', description: '' }));
    expect(lastGoodRevision(entries(['superseded', 'deployed', 'pending-upgrade']), 3)).toBe(2);
    expect(lastGoodRevision(entries(['superseded', 'superseded', 'failed', 'pending-upgrade']), 4)).toBe(2);
    expect(lastGoodRevision(entries(['failed', 'pending-upgrade']), 2)).toBeUndefined();
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
