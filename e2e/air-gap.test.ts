/**
 * Air gap: the local control plane, NATS and the operator run in a network namespace with no route
 * beyond loopback (scripts/lib/air-gap-netns.sh), and provisioning a Starter tenant to Active makes
 * zero attempts to reach any other address (iptables and ip6tables OUTPUT counters) and zero DNS
 * lookups of external names (a recording DNS server on 127.0.0.53 is the namespace's only resolver).
 * Everything the tenant needs comes from the bundled charts and seeds. Positive controls show that
 * both counts see what they must: loopback traffic is counted, and an external-looking name looked up
 * after the tenant is Active is recorded. Needs root (unshare, iptables), as CI has.
 *
 * This file starts its own control plane in its own namespace; the shared local cluster that the
 * project's globalSetup brings up is not used.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { CONDITION_TYPES } from '../src/api/constants.ts';
import { MODULES_BY_TIER } from '../src/api/modules.ts';
import { repoRoot } from '../test/support/tools.ts';
import { type AirGapSummary, isLocalName, summaryFromOutput } from '../test/support/air-gap.ts';

const RUN_TIMEOUT_MS = 280_000;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs the script (it enters its namespaces itself), its progress echoed to this process's stderr. */
function runAirGap(): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(repoRoot, 'scripts/lib/air-gap-netns.sh'), '--code', 'AIRGAP', '--timeout', '180'], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // SIGKILL: unshare ignores SIGTERM while it waits; once it is dead, --kill-child kills PID 1 of the
    // namespace, and every process in it dies with it.
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      process.stderr.write(chunk);
    });
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** `<name>-<version>` of the bundled chart of a module, as helm lists it. */
function bundledChart(module: string): string {
  const chart = parseYaml(readFileSync(join(repoRoot, 'charts/modules', module, 'Chart.yaml'), 'utf8')) as { name: string; version: string };
  return `${chart.name}-${chart.version}`;
}

const names = (queries: AirGapSummary['dns']['provisioning']): string[] => queries.map((q) => `${q.type} ${q.name} (${q.transport})`);

describe('air gap: provisioning with no route beyond loopback', () => {
  let run: Run;
  let summary: AirGapSummary;
  /** Everything a failure message needs: the counters, the names, the script's error. */
  let evidence: string;

  /** Entries of the host's /run before and after: the run must not leave even an empty mount point there. */
  let runBefore: string[];
  let runAfter: string[];

  beforeAll(async () => {
    runBefore = readdirSync('/run').sort();
    run = await runAirGap();
    runAfter = readdirSync('/run').sort();
    const parsed = summaryFromOutput(run.stdout);
    if (!parsed) throw new Error(`the air-gap script printed no summary (exit ${String(run.status)}):\n${run.stderr.slice(-4000)}`);
    summary = parsed;
    evidence = JSON.stringify({ error: summary.error, firewall: summary.firewall, dns: summary.dns, tenant: summary.tenant?.phase }, null, 1);
    console.log(`air gap: ${(run.ms / 1000).toFixed(1)} s in all; phases (ms) ${JSON.stringify(summary.durationsMs)}; ` +
      `firewall ${JSON.stringify(summary.firewall)}; DNS questions during provisioning ${String(summary.dns.provisioning.length)}, ` +
      `after ${JSON.stringify(names(summary.dns.afterSnapshot))}`);
  }, RUN_TIMEOUT_MS + 10_000);

  it('leaves nothing on the host\'s /run (its files were on a tmpfs private to its namespaces)', () => {
    expect(runAfter.filter((entry) => !runBefore.includes(entry))).toEqual([]);
  });

  it('runs every step (sealed network, loopback DNS, control plane, operator, tenant)', () => {
    expect(summary.error, `${evidence}\noperator log:\n${summary.operatorLogTail.join('\n')}\n${run.stderr.slice(-3000)}`).toBeUndefined();
    expect(run.status).toBe(0);
  });

  it('provisions the Starter tenant to Active, every condition True', () => {
    const tenant = summary.tenant;
    expect(tenant?.phase, `${JSON.stringify(tenant)}\n${summary.operatorLogTail.join('\n')}`).toBe('Active');
    expect(tenant?.observedGeneration).toBe(tenant?.generation);
    for (const type of CONDITION_TYPES) expect(tenant?.conditions[type]?.status, `${type}: ${JSON.stringify(tenant?.conditions[type])}`).toBe('True');
  });

  it('installs the Starter modules from the bundled charts', () => {
    const expected = [...MODULES_BY_TIER.Starter].sort().map((module) => ({ name: module, chart: bundledChart(module), status: 'deployed' }));
    expect(summary.releases).toEqual(expected);
  });

  it('sends not one packet to a non-loopback address (IPv4 and IPv6 OUTPUT drop counters are 0)', () => {
    const { provisioning, afterControl } = summary.firewall;
    expect(provisioning, evidence).not.toBeNull();
    expect(afterControl, evidence).not.toBeNull();
    expect(provisioning?.ipv4.other, evidence).toEqual({ packets: 0, bytes: 0 });
    expect(provisioning?.ipv6.other, evidence).toEqual({ packets: 0, bytes: 0 });
    expect(afterControl?.ipv4.other, evidence).toEqual({ packets: 0, bytes: 0 });
    expect(afterControl?.ipv6.other, evidence).toEqual({ packets: 0, bytes: 0 });
  });

  it('counts packets at all: loopback traffic shows in the IPv4 and IPv6 accept counters', () => {
    const { provisioning, afterControl } = summary.firewall;
    expect(provisioning?.ipv4.loopback.packets, evidence).toBeGreaterThan(0);
    // The IPv6 control connects to [::1]:53 after the snapshot.
    expect(afterControl?.ipv6.loopback.packets ?? 0, evidence).toBeGreaterThan(provisioning?.ipv6.loopback.packets ?? 0);
  });

  it('looks up no external name while provisioning', () => {
    const external = summary.dns.provisioning.filter((q) => !isLocalName(q.name));
    expect(names(external), evidence).toEqual([]);
  });

  it('records DNS lookups: the control name looked up after Active reached the loopback server, and nothing else did', () => {
    const { afterSnapshot, controlName, controlExit } = summary.dns;
    expect(controlName).toBe('registry.example.invalid');
    expect(controlExit, 'getent must report the name as not found (exit 2)').toBe(2);
    expect(afterSnapshot.some((q) => q.name === controlName), evidence).toBe(true);
    expect(names(afterSnapshot.filter((q) => q.name !== controlName && !isLocalName(q.name))), evidence).toEqual([]);
  });
});
