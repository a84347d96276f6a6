/**
 * Crash safety with the real operator process: SIGKILL it at the worst moments (right after a
 * condition turns True, in the middle of a helm install with helm killed too), SIGTERM it while it
 * provisions, take its Lease away while helm runs, restart it on the same secrets folder, and check that
 * every tenant converges to Active with exactly one of everything and no secret values file left behind.
 *
 * Isolation (the cluster is shared): one operator process with its own version, only tenants pinned
 * to that version, unique capsule codes, all deleted again at the end.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODULES_BY_TIER } from '../src/api/modules.ts';
import type { Tier } from '../src/api/constants.ts';
import { sagaRecordOf } from '../src/status/saga-record.ts';
import { tenantNamespace } from '../src/tenancy/names.ts';
import { leaseNameForVersion } from '../src/controller/lease-names.ts';
import { eventually, kubectl, kubectlOk, tenantManifest } from '../test/support/kubectl.ts';
import { processAlive, processStat, repoRoot } from '../test/support/tools.ts';
import { helmProcesses, helmServerPids } from '../test/support/helm.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../test/support/operator.ts';
import { readTenant, waitForGone, waitForPhase } from '../test/support/tenants.ts';
import { expectConverged, helm, helmList, tenantObject } from '../test/support/converged.ts';

const OPERATOR_VERSION = '9.2.0';
/** MAX_WAVE 0: this operator claims only the tenants pinned to it, never another test's. */
const OPERATOR_ENV = { OPERATOR_VERSION, MAX_WAVE: '0' };
const ACTIVE_TIMEOUT_MS = 240_000;
/** Fresh tenants for the mid-helm kill; the window is short, so a missed one is retried with the next code. */
const MID_HELM_CODES = ['CHAOSC', 'CHAOSD', 'CHAOSE', 'CHAOSF'] as const;

const created = new Set<string>();
let secretsDir: string;
let operator: OperatorProcess;
/** Set while our operator is killed or stopped, so afterAll restarts it (its finalizer must come off). */
let operatorDown = false;

const nameOf = (code: string): string => code.toLowerCase();

function startOurOperator(): OperatorProcess {
  operator = startOperator(OPERATOR_ENV, secretsDir);
  operatorDown = false;
  return operator;
}

async function killOperator(): Promise<void> {
  operatorDown = true;
  await operator.kill();
}

async function stopOperator(): Promise<number | null> {
  operatorDown = true;
  return operator.stop();
}

function applyTenant(code: string, tier: Tier): void {
  const name = nameOf(code);
  created.add(name);
  kubectlOk(['apply', '-f', '-'], tenantManifest(name, { capsuleCode: code, tier, seedsVersion: '1.0.0', wave: 1, operatorVersion: OPERATOR_VERSION }));
}

// ---- watching without blocking the event loop -----------------------------------------------------

interface LineWatch {
  /** The first line the predicate accepts, or undefined on timeout / when kubectl ended. */
  readonly line: Promise<string | undefined>;
  stop(): void;
}

/**
 * Streams `kubectl ... --watch` and resolves on the first matching line. Async on purpose: a polling
 * loop of spawnSync calls would block the event loop for ~100 ms at a time and miss short windows.
 */
function watchLines(args: readonly string[], accept: (line: string) => boolean, timeoutMs: number): LineWatch {
  const child: ChildProcess = spawn(join(process.env['EVA_TOOLS_DIR'] ?? '', 'kubectl'), args, {
    env: { ...process.env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let buffer = '';
  const line = new Promise<string | undefined>((resolve) => {
    const timer = setTimeout(() => {
      resolve(undefined);
    }, timeoutMs);
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      const hit = lines.find((l) => accept(l.trim()));
      if (hit !== undefined) {
        clearTimeout(timer);
        resolve(hit.trim());
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(undefined);
    });
  });
  return {
    line,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** Resolves when the tenant's condition `type` is True (watched, not polled). */
function watchCondition(name: string, type: string, timeoutMs: number): LineWatch {
  return watchLines(
    ['get', 'evt', '--field-selector', `metadata.name=${name}`, '--watch', '-o', `jsonpath={.status.conditions[?(@.type=="${type}")].status}{"\\n"}`],
    (line) => line === 'True',
    timeoutMs,
  );
}

/** Resolves with the name of the first helm release Secret of the namespace that is pending-install. */
function watchPendingInstall(namespace: string, timeoutMs: number): LineWatch {
  return watchLines(
    ['get', 'secret', '-n', namespace, '-l', 'owner=helm,status=pending-install', '--watch', '-o', 'name'],
    (line) => line.startsWith('secret/'),
    timeoutMs,
  );
}

// ---- what a converged tenant looks like: test/support/converged.ts --------------------------------------

/** pids of what runs the namespace's helm upgrades: helm CLI processes, or our operator's helm server. */
const helmUpgradePids = (namespace: string): number[] => [
  ...helmProcesses(namespace).filter((p) => p.argv[1] === 'upgrade').map((p) => p.pid),
  ...helmServerPids(operator.pid),
];

/**
 * Keeps the pids of the namespace's running helm upgrades at hand, so the kill needs no look-up: the
 * pending-install window of a release is a few hundred ms at most, a pgrep would eat much of it.
 */
function trackHelmUpgrades(namespace: string): { latest(): number[]; stop(): void } {
  let latest: number[] = [];
  const timer = setInterval(() => {
    latest = helmUpgradePids(namespace);
  }, 20);
  return {
    latest: () => latest,
    stop: () => {
      clearInterval(timer);
    },
  };
}

function sigkill(pid: number): boolean {
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false; // already exited
  }
}

function pendingReleaseSecrets(namespace: string): string[] {
  return kubectlOk(['get', 'secret', '-n', namespace, '-l', 'owner=helm,status=pending-install', '-o', 'name']).split('\n').filter((l) => l !== '');
}



/** The operator's running `helm upgrade` processes: its children, read from /proc. */
function helmUpgradeChildren(operatorPid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      if (processStat(pid)?.ppid !== operatorPid) return false;
      try {
        return readFileSync(`/proc/${String(pid)}/cmdline`, 'utf8').split('\0').includes('upgrade');
      } catch {
        return false; // gone meanwhile
      }
    });
}

/**
 * A helm CLI whose upgrades first wait 60 s (then run the pinned helm): an install still runs when the
 * Lease is taken, whatever the machine's speed. SIGTERM ends it like a real helm.
 */
function slowUpgradeHelm(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'eva-e2e-chaos-helm-')), 'helm');
  const realHelm = join(process.env['EVA_TOOLS_DIR'] ?? '', 'helm');
  writeFileSync(file, `#!/usr/bin/env bash\nif [[ $1 == upgrade ]]; then sleep 60 & wait $!; fi\nexec ${JSON.stringify(realHelm)} "$@"\n`);
  chmodSync(file, 0o755);
  return file;
}

/** Someone else holds our Lease from now on, for an hour (as a replica that took it over would). */
function takeLease(): { namespace: string; name: string } {
  const name = leaseNameForVersion(OPERATOR_VERSION);
  const namespace = kubectlOk(['get', 'lease', '-A', '--field-selector', `metadata.name=${name}`, '-o', 'jsonpath={.items[0].metadata.namespace}']);
  const spec = { holderIdentity: 'chaos-intruder', leaseDurationSeconds: 3600, renewTime: new Date().toISOString().replace('Z', '000Z') };
  kubectlOk(['patch', 'lease', '-n', namespace, name, '--type', 'merge', '-p', JSON.stringify({ spec })]);
  return { namespace, name };
}

/** Restarts the operator on the same secrets folder and times how long the tenant takes to be Active. */
async function restartAndTimeToActive(code: string, label: string): Promise<number> {
  const started = Date.now();
  startOurOperator();
  await waitForPhase(nameOf(code), 'Active', ACTIVE_TIMEOUT_MS);
  const seconds = (Date.now() - started) / 1000;
  console.log(`[chaos] ${label}: ${code} Active ${seconds.toFixed(1)} s after the restart`);
  return seconds;
}

async function deleteTenants(names: Iterable<string>): Promise<void> {
  const list = [...names];
  for (const name of list) kubectl(['delete', 'evt', name, '--wait=false']);
  for (const name of list) {
    if (!(await waitForGone(name, 180_000))) console.log(`[chaos] ${name} was not gone after 180 s: ${JSON.stringify(readTenant(name))}`);
  }
}

// ---- the cases ---------------------------------------------------------------------------------------

describe('crash safety of the real operator process', () => {
  beforeAll(async () => {
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    secretsDir = mkdtempSync('/dev/shm/eva-e2e-chaos-');
    startOurOperator();
    // Leftovers of an interrupted earlier run (our names, pinned to our version) go first.
    const leftovers = ['CHAOSA', 'CHAOSB', ...MID_HELM_CODES, 'CHAOSG', 'CHAOSH', 'CHAOSI'].map(nameOf).filter(
      (name) => kubectl(['get', 'evt', name, '-o', 'jsonpath={.spec.operatorVersion}']).stdout === OPERATOR_VERSION,
    );
    await deleteTenants(leftovers);
  });

  // A case that failed with our operator killed must not fail the next ones for want of it.
  beforeEach(() => {
    if (operatorDown) startOurOperator();
  });

  afterAll(async () => {
    try {
      // Deletion needs the operator (finalizer): make sure ours runs while our tenants go.
      if (operatorDown) startOurOperator();
      await deleteTenants(created);
    } finally {
      await operator.stop();
      removeSecretsDir(operator);
    }
  });

  it.each([
    { code: 'CHAOSA', condition: 'NamespaceReady' },
    { code: 'CHAOSB', condition: 'Provisioned' },
  ])('SIGKILL right after $condition turns True: converges with one of everything', async ({ code, condition }) => {
    const tier = 'Customer';
    const watch = watchCondition(nameOf(code), condition, ACTIVE_TIMEOUT_MS);
    applyTenant(code, tier);
    const seen = await watch.line;
    await killOperator();
    watch.stop();
    expect(seen, `${condition} never turned True`).toBe('True');
    const atKill = readTenant(nameOf(code));
    console.log(`[chaos] killed after ${condition}: phase ${atKill?.phase}, ${conditionSummary(atKill?.conditions)}`);
    expect(atKill?.phase).not.toBe('Active');
    await restartAndTimeToActive(code, `SIGKILL after ${condition}`);
    await expectConverged(code, tier, () => operator.secretFilesLeft());
  }, 400_000);

  it('SIGKILL (operator and helm) in the middle of a helm install: the pending release is recovered without a human', async () => {
    const tier = 'Enterprise';
    let hit: { code: string; pending: string[] } | undefined;
    for (const [attempt, code] of MID_HELM_CODES.entries()) {
      const namespace = tenantNamespace(code);
      const watch = watchPendingInstall(namespace, ACTIVE_TIMEOUT_MS);
      const helmTracker = trackHelmUpgrades(namespace);
      applyTenant(code, tier);
      const seen = await watch.line;
      // Helm first, from the pids already at hand: an orphaned helm would finish the install meanwhile.
      const killed = new Set(seen === undefined ? [] : helmTracker.latest().filter(sigkill));
      const killing = killOperator();
      helmTracker.stop();
      // Whatever started since the last scan (the operator is dead now: nothing new can start).
      for (const pid of helmUpgradePids(namespace)) if (sigkill(pid)) killed.add(pid);
      await killing;
      watch.stop();
      const helmPids = [...killed];
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const pending = seen === undefined ? [] : pendingReleaseSecrets(namespace);
      console.log(
        `[chaos] mid-helm attempt ${attempt + 1} (${code}): saw ${seen ?? 'nothing'}, killed ${helmPids.length} helm process(es), ` +
          `pending now: ${pending.join(', ') || 'none'}, secret values files left by the crash: ${operator.secretFilesLeft().length}`,
      );
      expect([...helmUpgradePids(namespace), ...helmPids.filter(processAlive)], 'a helm process of the tenant survived').toEqual([]);
      if (pending.length > 0) {
        hit = { code, pending };
        break;
      }
      // Missed the window: restart and try again with a fresh tenant (this one converges meanwhile).
      startOurOperator();
      }
    expect(hit, `no helm release was ever caught pending-install in ${MID_HELM_CODES.length} attempts`).toBeDefined();
    if (hit === undefined) return;
    const namespace = tenantNamespace(hit.code);
    const stuck = helmList(namespace, ['--pending']);
    expect(stuck.length, 'helm itself reports the release pending').toBeGreaterThan(0);
    for (const release of stuck) {
      expect(release.status).toBe('pending-install');
      // What a human would hit: helm refuses to touch the release (a client-side dry run changes nothing).
      const refused = helm(['upgrade', release.name, join(repoRoot, 'charts/modules', release.name), '-n', namespace, '--dry-run=client']);
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain('another operation (install/upgrade/rollback) is in progress');
    }
    console.log(`[chaos] left pending by the kill: ${stuck.map((r) => `${r.name}@${r.revision}`).join(', ')}`);
    await restartAndTimeToActive(hit.code, 'SIGKILL mid helm install');
    await expectConverged(hit.code, tier, () => operator.secretFilesLeft());
    const recovered = operator.logs().split('\n').filter((l) => l.includes('recovered a release left pending by an interrupted helm'));
    console.log(`[chaos] the restarted operator says:\n${recovered.join('\n')}`);
    expect(recovered.length, 'the operator did not report a recovery').toBeGreaterThan(0);
    for (const release of stuck) expect(recovered.some((l) => l.includes(`"module":"${release.name}"`)), release.name).toBe(true);
  }, 900_000);

  it('SIGTERM while provisioning: finishes the running step, persists status, exits 0; a restart completes it', async () => {
    const code = 'CHAOSG';
    const tier = 'Customer';
    const namespace = tenantNamespace(code);
    // A release Secret appearing means the modules step (helm) is running right now.
    const watch = watchLines(['get', 'secret', '-n', namespace, '-l', 'owner=helm', '--watch', '-o', 'name'], (l) => l.startsWith('secret/'), ACTIVE_TIMEOUT_MS);
    applyTenant(code, tier);
    const seen = await watch.line;
    watch.stop();
    expect(seen, 'helm never started for the tenant').toBeDefined();
    const servers = helmServerPids(operator.pid);
    const stopping = Date.now();
    const exitCode = await stopOperator();
    console.log(`[chaos] SIGTERM during helm: exited ${exitCode} after ${((Date.now() - stopping) / 1000).toFixed(1)} s`);
    expect(exitCode, operator.logs().slice(-4000)).toBe(0);
    expect([...helmUpgradePids(namespace), ...servers.filter(processAlive)], 'helm still running after a graceful stop').toEqual([]);
    expect(pendingReleaseSecrets(namespace), 'a graceful stop left a release pending').toEqual([]);
    expect(operator.secretFilesLeft()).toEqual([]);
    const status = tenantObject(nameOf(code)).status;
    const snapshot = sagaRecordOf(status).snapshot as { value?: unknown; historyValue?: unknown } | undefined;
    console.log(`[chaos] status after SIGTERM: phase ${status?.phase}, saga ${JSON.stringify(snapshot?.value)}, ${conditionSummary(readTenant(nameOf(code))?.conditions)}`);
    expect(['Provisioning', 'Active']).toContain(status?.phase);
    // At a step boundary: the saga rests (no step invoked) in the snapshot the restart resumes from.
    expect(['interrupted', 'waiting', 'active']).toContain(snapshot?.value);
    // The step that was running (modules: every helm install starts at once) ran to its end.
    const releases = helmList(namespace);
    expect(releases.map((r) => r.name).sort()).toEqual([...MODULES_BY_TIER[tier]].sort());
    for (const release of releases) expect(release.status, release.name).toBe('deployed');
    expect(operator.logs()).toContain('"msg":"stopped"');
    await restartAndTimeToActive(code, 'SIGTERM during provisioning');
    await expectConverged(code, tier, () => operator.secretFilesLeft());
  }, 400_000);

  it('SIGTERM between two steps: the saga rests interrupted, keeps what is done, and resumes at the next step', async () => {
    const code = 'CHAOSH';
    const tier = 'Starter';
    const name = nameOf(code);
    const watch = watchCondition(name, 'NamespaceReady', ACTIVE_TIMEOUT_MS);
    applyTenant(code, tier);
    const seen = await watch.line;
    watch.stop();
    expect(seen, 'NamespaceReady never turned True').toBe('True');
    const exitCode = await stopOperator();
    expect(exitCode, operator.logs().slice(-4000)).toBe(0);
    const status = tenantObject(name).status;
    const snapshot = sagaRecordOf(status).snapshot as { value?: unknown; historyValue?: unknown } | undefined;
    const view = readTenant(name);
    console.log(`[chaos] status after SIGTERM between steps: phase ${status?.phase}, saga ${JSON.stringify(snapshot?.value)} history ${JSON.stringify(snapshot?.historyValue)}, ${conditionSummary(view?.conditions)}`);
    expect(status?.phase).toBe('Provisioning');
    expect(['interrupted', 'waiting']).toContain(snapshot?.value);
    // What was done stays reported as done: a graceful stop is no reason for a condition to regress.
    expect(view?.conditions['NamespaceReady']?.status).toBe('True');
    await restartAndTimeToActive(code, 'SIGTERM between steps');
    await expectConverged(code, tier, () => operator.secretFilesLeft());
  }, 400_000);

  it('the Lease taken while helm runs: the operator ends its helm processes, then exits 1; a restart completes the tenant', async () => {
    const code = 'CHAOSI';
    const tier = 'Customer';
    // The helm CLI: its processes are the operator's children, which the exit that follows a lost Lease would leave running.
    await operator.ready();
    const exitCode = await stopOperator();
    expect(exitCode, operator.logs().slice(-4000)).toBe(0);
    operator = startOperator({ ...OPERATOR_ENV, HELM_SERVER_BINARY: '', HELM_BINARY: slowUpgradeHelm() }, secretsDir);
    operatorDown = false;
    await operator.ready();
    applyTenant(code, tier);
    expect(await eventually(() => helmUpgradeChildren(operator.pid).length > 0, ACTIVE_TIMEOUT_MS, 100), 'helm never started for the tenant').toBe(true);
    const running = helmUpgradeChildren(operator.pid);
    const lease = takeLease();
    operatorDown = true;
    try {
      const lostAt = Date.now();
      const exitAfterLoss = await operator.exited();
      console.log(`[chaos] Lease taken with ${String(running.length)} helm upgrades running: exited ${String(exitAfterLoss)} after ${((Date.now() - lostAt) / 1000).toFixed(1)} s`);
      expect(exitAfterLoss, operator.logs().slice(-4000)).toBe(1);
      expect(operator.logs()).toContain('lost leadership; exiting');
      expect(running.filter(processAlive), 'a helm process outlived the operator that lost its Lease').toEqual([]);
    } finally {
      // Given back whatever happened: no later case (nor afterAll's deletions) could lead otherwise.
      kubectlOk(['delete', 'lease', '-n', lease.namespace, lease.name]);
    }
    await restartAndTimeToActive(code, 'Lease taken while helm ran');
    await expectConverged(code, tier, () => operator.secretFilesLeft());
  }, 400_000);
});

function conditionSummary(conditions: Record<string, { status: string; reason: string }> | undefined): string {
  return Object.entries(conditions ?? {}).map(([type, c]) => `${type}=${c.status}/${c.reason}`).join(' ');
}
