/**
 * Leader election against the real API server: replicas are LeaderElectors in this process, each
 * with its own identity, racing on real coordination.k8s.io/v1 Leases in a namespace of this run.
 */
import { CoordinationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kube, loadKubeConfig } from '../../../src/adapters/kube.ts';
import { kubeLeaseStore } from '../../../src/adapters/kube-leases.ts';
import { LeaderElector } from '../../../src/runtime/leader-elector.ts';
import { leaseNameForVersion } from '../../../src/controller/lease-names.ts';
import { microTimeMs } from '../../../src/runtime/lease-math.ts';
import { createLogger } from '../../../src/log.ts';
import { kubectl, kubectlOk } from '../../support/kubectl.ts';

const ns = `le-test-${Date.now().toString(36)}`;
// LE_LOG_LEVEL=debug shows every attempt when a run needs explaining.
const log = createLogger(process.env['LE_LOG_LEVEL'] ?? 'silent');

interface Timing {
  readonly leaseDurationSeconds: number;
  readonly renewDeadlineSeconds: number;
  readonly retryPeriodSeconds: number;
}
/** Short, to see expiry happen. */
const FAST: Timing = { leaseDurationSeconds: 3, renewDeadlineSeconds: 2, retryPeriodSeconds: 0.5 };
/** A lease long enough that a takeover well under it cannot have come from expiry. */
const SLOW_EXPIRY: Timing = { leaseDurationSeconds: 10, renewDeadlineSeconds: 6, retryPeriodSeconds: 0.5 };

let kube: Kube;
let observer: CoordinationV1Api;
const electors: LeaderElector[] = [];
/** Per lease: replicas acting as leader now, and the most ever at once. */
const acting = new Map<string, { now: number; max: number }>();

interface Replica {
  readonly identity: string;
  readonly elector: LeaderElector;
  readonly run: Promise<void>;
  leading: boolean;
  startedAt: number | undefined;
  stoppedAt: number | undefined;
  leaders: string[];
}

function countActing(lease: string, delta: number): void {
  const entry = acting.get(lease) ?? { now: 0, max: 0 };
  entry.now += delta;
  entry.max = Math.max(entry.max, entry.now);
  acting.set(lease, entry);
}

function replica(leaseName: string, identity: string, timing: Timing): Replica {
  const elector = new LeaderElector({ store: kubeLeaseStore(kube, ns, leaseName), namespace: ns, leaseName, identity, log, ...timing });
  electors.push(elector);
  const self: Omit<Replica, 'run'> = { identity, elector, leading: false, startedAt: undefined, stoppedAt: undefined, leaders: [] };
  const run = elector.run({
    onStartedLeading: (signal) => {
      self.startedAt = performance.now();
      self.leading = true;
      countActing(leaseName, 1);
      // Acting ends when the signal aborts: that is the moment that must precede anyone else's start.
      signal.addEventListener('abort', () => {
        self.leading = false;
        countActing(leaseName, -1);
      });
    },
    onStoppedLeading: () => {
      self.stoppedAt = performance.now();
    },
    onNewLeader: (leader) => {
      self.leaders.push(leader);
    },
  });
  return Object.assign(self, { run });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check`; resolves with the ms it took, or fails the test after `timeoutMs`. */
async function waitFor(what: string, check: () => boolean, timeoutMs = 60_000): Promise<number> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
  return performance.now() - start;
}

interface LeaseSpecJson {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  leaseTransitions?: number;
  acquireTime?: string;
  renewTime?: string;
}

/**
 * The Lease as stored, read by a client of its own. Not kubectl: spawnSync would block the event
 * loop that every elector here runs on, long enough on a loaded machine to miss a renew deadline.
 */
async function leaseSpec(name: string): Promise<LeaseSpecJson> {
  const lease = await observer.readNamespacedLease({ name, namespace: ns });
  // client-node leaves MicroTimes as the wire strings; JSON keeps exactly what the server sent.
  return (JSON.parse(JSON.stringify(lease)) as { spec: LeaseSpecJson }).spec;
}

function leaderOf(replicas: readonly Replica[]): Replica | undefined {
  const leaders = replicas.filter((r) => r.leading);
  if (leaders.length > 1) throw new Error(`two leaders at once: ${leaders.map((r) => r.identity).join(', ')}`);
  return leaders[0];
}

/** Watches for `ms`: exactly one of `replicas` leads throughout, and it is always the same one. */
async function holdsSteady(replicas: readonly Replica[], ms: number): Promise<Replica> {
  const leader = leaderOf(replicas);
  if (!leader) throw new Error('no leader');
  const end = performance.now() + ms;
  while (performance.now() < end) {
    expect(leaderOf(replicas)?.identity).toBe(leader.identity);
    await sleep(50);
  }
  return leader;
}

const report = (line: string): void => {
  console.info(`[leader-election] ${line}`);
};

beforeAll(() => {
  kubectlOk(['create', 'namespace', ns]);
  kube = new Kube(loadKubeConfig());
  observer = kube.config.makeApiClient(CoordinationV1Api);
});

afterAll(async () => {
  await Promise.all(electors.map((e) => e.stop()));
  kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
});

describe('leader election on a real Lease', () => {
  it('lets exactly one of two replicas lead, and writes a well-formed Lease', async () => {
    const lease = 'one-of-two';
    const replicas = [replica(lease, 'one-of-two-a', FAST), replica(lease, 'one-of-two-b', FAST)];
    const took = await waitFor('a leader', () => leaderOf(replicas) !== undefined);
    report(`first acquisition (lease created): ${Math.round(took)} ms`);
    const leader = await holdsSteady(replicas, 3 * FAST.leaseDurationSeconds * 1000);

    const spec = await leaseSpec(lease);
    expect(spec).toMatchObject({ holderIdentity: leader.identity, leaseDurationSeconds: 3, leaseTransitions: 0 });
    // MicroTime on the wire: six fractional digits, as the API server requires.
    expect(spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(spec.acquireTime).toMatch(/\.\d{6}Z$/);
    // Renewed all along (every 0.5 s): the last renewal is recent, and later than the acquisition.
    const renewedAt = microTimeMs(spec.renewTime) ?? 0;
    expect(renewedAt).toBeGreaterThan(microTimeMs(spec.acquireTime) ?? Infinity);
    expect(Date.now() - renewedAt).toBeLessThan(FAST.renewDeadlineSeconds * 1000);
    // Both saw the same leader, and only that one.
    for (const r of replicas) expect(r.leaders).toEqual([leader.identity]);
    expect(acting.get(lease)?.max).toBe(1);
  });

  it('hands over within about a retryPeriod when the leader stops (releases the lease)', async () => {
    const lease = 'release';
    const first = replica(lease, 'release-a', SLOW_EXPIRY);
    await waitFor('the first replica to lead', () => first.leading);
    const second = replica(lease, 'release-b', SLOW_EXPIRY);
    await waitFor('the second replica to observe the leader', () => second.leaders.includes(first.identity));

    const stopCalled = performance.now();
    await first.elector.stop();
    const released = performance.now();
    expect((await leaseSpec(lease)).holderIdentity).not.toBe(first.identity);
    await waitFor('the second replica to take over', () => second.leading);
    const fromStop = (second.startedAt ?? NaN) - stopCalled;
    const fromRelease = (second.startedAt ?? NaN) - released;
    report(`takeover after stop(): ${Math.round(fromStop)} ms from stop(), ${Math.round(fromRelease)} ms after the release (retryPeriod 500 ms, lease 10 s)`);

    // Far below the 10 s lease: the release, not expiry, let it in.
    expect(fromStop).toBeLessThan(5000);
    expect(first.stoppedAt).toBeLessThanOrEqual(second.startedAt ?? -Infinity);
    expect(await leaseSpec(lease)).toMatchObject({ holderIdentity: second.identity, leaseTransitions: 1, leaseDurationSeconds: 10 });
    expect(acting.get(lease)?.max).toBe(1);
  });

  it('takes over only after the lease expires when the leader dies without releasing', async () => {
    const lease = 'crash';
    const first = replica(lease, 'crash-a', FAST);
    await waitFor('the first replica to lead', () => first.leading);
    const second = replica(lease, 'crash-b', FAST);
    await waitFor('the second replica to observe the leader', () => second.leaders.includes(first.identity));
    await sleep(1000); // a few renewals observed by the candidate

    expect(first.leading).toBe(true);
    first.elector.crash();
    const crashed = performance.now();
    const heldBy = (await leaseSpec(lease)).holderIdentity;
    await waitFor('the second replica to take over', () => second.leading);
    const takeover = (second.startedAt ?? NaN) - crashed;
    report(`takeover after crash(): ${Math.round(takeover)} ms (lease 3 s, last renewal at most ~0.5 s before the crash)`);

    expect(heldBy).toBe(first.identity); // nothing was released
    // The candidate counts the 3 s from when it saw the last renewal, sent at most a retryPeriod
    // (plus a request) before the crash: not sooner than ~2.5 s.
    expect(takeover).toBeGreaterThanOrEqual(2000);
    expect(takeover).toBeLessThan(15_000);
    expect(first.stoppedAt).toBeUndefined(); // a dead process runs no callback
    expect(await leaseSpec(lease)).toMatchObject({ holderIdentity: second.identity, leaseTransitions: 1 });
    expect(acting.get(lease)?.max).toBe(1);
  });

  it('elects one leader per version: two versions with two replicas each lead side by side', async () => {
    const versions = ['1.4.0', '1.5.0'];
    const groups = versions.map((version) => {
      const lease = leaseNameForVersion(version);
      return { lease, replicas: [replica(lease, `${lease}-r1`, FAST), replica(lease, `${lease}-r2`, FAST)] };
    });
    await waitFor('a leader for each version', () => groups.every((g) => leaderOf(g.replicas) !== undefined));
    const end = performance.now() + 2 * FAST.leaseDurationSeconds * 1000;
    while (performance.now() < end) {
      for (const g of groups) expect(leaderOf(g.replicas)).toBeDefined();
      await sleep(50);
    }
    for (const g of groups) {
      const leader = leaderOf(g.replicas);
      expect(await leaseSpec(g.lease)).toMatchObject({ holderIdentity: leader?.identity, leaseTransitions: 0 });
      expect(acting.get(g.lease)?.max).toBe(1);
    }
    expect(groups.map((g) => g.lease)).toEqual(['eva-operator-1-4-0', 'eva-operator-1-5-0']);
  });

  it('counts every change of holder in leaseTransitions', async () => {
    const lease = 'transitions';
    const chain = ['transitions-a', 'transitions-b', 'transitions-c'].map((id) => replica(lease, id, FAST));
    const seen: number[] = [];
    let previous: Replica | undefined;
    for (let handovers = 0; handovers < chain.length; handovers++) {
      await waitFor(`leader #${handovers + 1}`, () => ![undefined, previous].includes(leaderOf(chain)));
      const leader = leaderOf(chain);
      if (!leader) throw new Error('leader vanished');
      previous = leader;
      seen.push((await leaseSpec(lease)).leaseTransitions ?? -1);
      // Alternate the two ways a holder goes: released, then died.
      if (handovers % 2 === 0) await leader.elector.stop();
      else leader.elector.crash();
    }
    expect(seen).toEqual([0, 1, 2]);
    expect(acting.get(lease)?.max).toBe(1);
  });
});
