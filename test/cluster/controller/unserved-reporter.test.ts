/**
 * The unserved-tenant reporter against the real API server and a real tenant informer: a tenant
 * pinned to a version no operator runs gets its Stalled status as it appears, from the informer's
 * event, though the reporter's next full pass is an hour away. The positive control: the same
 * reporter without the events leaves such a tenant without status (kstatus would call it Current).
 * Only this file's tenants are judged and written (the cluster is shared), Leases in a namespace of
 * this run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvaTenant } from '../../../src/api/evatenant.ts';
import { listLeases } from '../../../src/adapters/kube-leases.ts';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import { leaseNameForVersion } from '../../../src/controller/lease-names.ts';
import { TenantInformer } from '../../../src/controller/tenant-informer.ts';
import { kubeTenantStore } from '../../../src/adapters/tenant-store.ts';
import { UnservedTenantReporter } from '../../../src/controller/unserved-reporter.ts';
import { createLogger } from '../../../src/log.ts';
import { repoRoot } from '../../support/tools.ts';
import { eventually, kubectl, kubectlOk, tenantManifest } from '../../support/kubectl.ts';

const run = Date.now().toString(36);
const leaseNamespace = `unserved-${run}`;
const OWN_VERSION = '7.7.0';
const ABSENT_VERSION = '7.7.1-absent';
const HOUR_MS = 3_600_000;
const log = createLogger('silent');
const noGauges = {
  setTenantsPinnedToAbsentVersion: () => undefined,
  setTenantsInAbsentShard: () => undefined,
  setTenantsAboveMaxWave: () => undefined,
  setTenantsOwnedByAbsentOperator: () => undefined,
};
const created: string[] = [];

/** A reporter of this file's tenants named `prefix…`, its first full pass done; with or without the informer's events. */
async function startReporter(prefix: string, events: boolean): Promise<() => Promise<void>> {
  const kube = new Kube(loadKubeConfig());
  const informer = new TenantInformer({ kube, log });
  const ours = (tenant: EvaTenant | undefined): EvaTenant | undefined => (tenant?.metadata.name.startsWith(prefix) === true ? tenant : undefined);
  const firstPass = Promise.withResolvers<undefined>();
  const reporter = new UnservedTenantReporter({
    leases: async () => {
      const leases = await listLeases(kube, leaseNamespace);
      firstPass.resolve(undefined);
      return leases;
    },
    namespace: leaseNamespace,
    tenants: () => informer.cachedTenants().filter((tenant) => ours(tenant) !== undefined),
    tenant: (name) => ours(informer.cachedTenant(name)),
    store: kubeTenantStore(kube),
    leaseName: leaseNameForVersion(OWN_VERSION),
    intervalMs: HOUR_MS,
    metrics: noGauges,
    log,
  });
  if (events) reporter.subscribeTo(informer);
  await informer.start();
  const stop = new AbortController();
  const running = reporter.runUntil(stop.signal);
  await firstPass.promise;
  return async () => {
    stop.abort();
    await running;
    await informer.stop();
  };
}

function applyPinnedToAbsent(name: string, capsuleCode: string): void {
  created.push(name);
  kubectlOk(['apply', '-f', '-'], tenantManifest(name, { capsuleCode, tier: 'Starter', operatorVersion: ABSENT_VERSION }));
}

const stalledReason = (name: string): string =>
  kubectlOk(['get', 'evt', name, '-o', 'jsonpath={.status.conditions[?(@.type=="Stalled")].reason}']);

beforeAll(() => {
  kubectlOk(['apply', '-f', `${repoRoot}crds`]);
  kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
  kubectlOk(['create', 'namespace', leaseNamespace]);
  // Our own operator's Lease, live for an hour: this reporter is the one status writer, and no Lease runs ABSENT_VERSION.
  const renewTime = new Date().toISOString().replace('Z', '000Z');
  const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: leaseNameForVersion(OWN_VERSION), namespace: leaseNamespace }, spec: { holderIdentity: 'test', leaseDurationSeconds: HOUR_MS / 1000, renewTime } };
  kubectlOk(['apply', '-f', '-'], JSON.stringify(lease));
});

afterAll(() => {
  if (created.length > 0) kubectl(['delete', 'evt', ...created, '--wait=false']);
  kubectl(['delete', 'namespace', leaseNamespace, '--wait=false']);
});

describe('the unserved-tenant reporter on the tenant informer', () => {
  it('a new tenant pinned to a version nobody runs is Stalled as it appears, not at the next pass (an hour away)', async () => {
    const prefix = `unserved-${run}-events`;
    const stop = await startReporter(prefix, true);
    try {
      const appeared = Date.now();
      applyPinnedToAbsent(`${prefix}-a`, 'UNSEVA');
      const stalled = await eventually(() => stalledReason(`${prefix}-a`) === 'OperatorVersionAbsent', 20_000, 200);
      console.log(`[unserved] Stalled OperatorVersionAbsent ${String(Date.now() - appeared)} ms after the tenant appeared`);
      expect(stalled, 'no Stalled OperatorVersionAbsent within 20 s').toBe(true);
      const message = kubectlOk(['get', 'evt', `${prefix}-a`, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].message}']);
      expect(message).toContain(`spec.operatorVersion ${ABSENT_VERSION} is not running (no live Lease ${leaseNameForVersion(ABSENT_VERSION)} in ${leaseNamespace})`);
    } finally {
      await stop();
    }
  }, 60_000);

  it('positive control: without the events, the same tenant waits for the next pass, without status', async () => {
    const prefix = `unserved-${run}-timer`;
    const stop = await startReporter(prefix, false);
    try {
      applyPinnedToAbsent(`${prefix}-a`, 'UNSEVB');
      expect(await eventually(() => stalledReason(`${prefix}-a`) !== '', 10_000, 500), 'a status came without the events').toBe(false);
      expect(kubectlOk(['get', 'evt', `${prefix}-a`, '-o', 'jsonpath={.status}'])).toBe('');
    } finally {
      await stop();
    }
  }, 60_000);
});
