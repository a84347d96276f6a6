/**
 * Side by side on one machine (a benchmark that prints figures, not a test):
 *
 *   npm run bench:peers -- [--count 100,500] [--repeats 3] [--concurrency 10] [--systems eva,flux,flux-nowait,floor] [--no-image] [--audit-out DIR]
 *   (--systems may also name eva-helm-default: eva with helm at the operator's default HELM_CONCURRENCY, eva-cli:
 *   eva with a helm CLI process per release, no helm server, and floor-tenancy, below)
 *
 * For each count, `repeats` rounds; each round runs every system once, in turn (alternating), each on
 * a FRESH control plane of its own (scripts/dev-cluster.sh in this checkout's bench state folder, its
 * own NATS ports, an audit policy that records reads too; never the dev or the test cluster):
 *   eva          eva-operator, N Starter tenants, as the image runs it (`--as-image` of bench:provision;
 *                --no-image: the sources, labelled so)
 *   flux         Flux's source-controller and helm-controller (versions.env, built and cached by
 *                scripts/lib/build-components.sh flux), N x 2 HelmReleases of the same charts and values
 *                from a loopback HelmRepository, Flux's default wait
 *   flux-nowait  the same with install/upgrade.disableWait, Ready measured by this harness
 *   floor        the same rendered objects (helm template, before the clock) applied by one client
 *                (server-side apply), no helm, no controller: what the control plane alone costs
 *   floor-tenancy  the same per tenant, `concurrency` tenants at once, each with its namespace, ResourceQuota,
 *                LimitRange and NetworkPolicy (the operator's own builders) applied first, in the clock: what the
 *                control plane alone costs for a tenant made as eva makes it (eva/floor-tenancy is eva's own share)
 * Concurrency: `concurrency` releases in flight on every side (operator HELM_CONCURRENCY and
 * RECONCILE_CONCURRENCY, helm-controller and source-controller --concurrent, the floor's workers).
 * Ready: every Deployment Available and rolled out (src/steps/modules/modules.ts deploymentProblem; kwok makes
 * the pods Ready); for eva, every tenant Active (which includes it); for Flux also every HelmRelease Ready.
 * Namespaces (and Flux's credential Secrets) are made before the clock; eva makes its own in its clock.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type AuditEvent, auditEventsFrom, WRITE_VERBS } from '../test/support/audit.ts';
import { checkout, portOffset, removeCluster, useCluster, type ClusterSettings } from '../test/support/cluster-setup.ts';
import { repoRoot } from '../test/support/tools.ts';
import { fluxVersions } from './peers-flux.ts';
import { DEFAULT_SYSTEMS, MODULES, prepare, SYSTEMS, type PreparedSystem, type RunSettings, type SystemName } from './peers-systems.ts';
import { chartMemoryLimitMiB, clientOf, codeFor, cpuSeconds, imageRuntime, rssMiB } from './provision.ts';
import { helmProcessSampler } from './steady.ts';

interface Options {
  counts: number[];
  repeats: number;
  concurrency: number;
  systems: SystemName[];
  asImage: boolean;
  /** A folder for each run's audit events (metadata only: who, verb, what), one JSON line each. */
  auditOut: string | undefined;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', default: '100,500' },
      repeats: { type: 'string', default: '3' },
      concurrency: { type: 'string', default: '10' },
      systems: { type: 'string', default: DEFAULT_SYSTEMS.join(',') },
      'no-image': { type: 'boolean', default: false },
      'audit-out': { type: 'string' },
    },
  });
  const systems = values.systems.split(',');
  const unknown = systems.filter((s) => !(SYSTEMS as readonly string[]).includes(s));
  if (unknown.length > 0) throw new Error(`--systems: unknown ${unknown.join(', ')} (one of ${SYSTEMS.join(', ')})`);
  const positive = (text: string, name: string): number => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${text}`);
    return n;
  };
  return {
    counts: values.count.split(',').map((c) => positive(c, '--count')),
    repeats: positive(values.repeats, '--repeats'),
    concurrency: positive(values.concurrency, '--concurrency'),
    systems: systems as SystemName[],
    asImage: !values['no-image'],
    auditOut: values['audit-out'],
  };
}

/** The benchmark's own control plane: away from the dev cluster (14222) and the tests' (24222-25221). */
const BENCH_CLUSTER: ClusterSettings = {
  EVA_DEV_CLUSTER_DIR: join(process.env['XDG_STATE_HOME'] ?? join(homedir(), '.local/state'), `eva-operator/bench-peers-${checkout}`),
  // Below the ephemeral range (32768-60999), clear of the test planes (24222-31221) and the dev cluster's 14222/18222.
  EVA_NATS_PORT: String(16222 + portOffset),
  EVA_NATS_MONITOR_PORT: String(20222 + portOffset),
  EVA_DEV_CLUSTER_AUDIT_POLICY: join(repoRoot, 'bench/peers-audit-policy.yaml'),
};

function freshCluster(): void {
  removeCluster(BENCH_CLUSTER.EVA_DEV_CLUSTER_DIR);
  try {
    useCluster(BENCH_CLUSTER);
  } catch (err) {
    // On a loaded machine a start can outlast dev-cluster.sh's waits (seen: nats-server after 30 s);
    // `up` is idempotent, and a second failure is reported.
    console.log(`control plane did not come up (${(err as Error).message.split('\n')[0] ?? ''}); once more`);
    useCluster(BENCH_CLUSTER);
  }
}

/** The control plane's processes (kwokctl's pid files) and nats-server: only this cluster's. */
function controlPlanePids(): Record<string, number> {
  const state = BENCH_CLUSTER.EVA_DEV_CLUSTER_DIR;
  const pidsDir = join(state, 'kwok/clusters/eva/pids');
  const pids: Record<string, number> = {};
  for (const file of readdirSync(pidsDir).filter((f) => f.endsWith('.pid'))) pids[file.replace(/\.pid$/, '')] = Number(readFileSync(join(pidsDir, file), 'utf8').trim());
  pids['nats-server'] = Number(readFileSync(join(state, 'nats.pid'), 'utf8').trim());
  return pids;
}

interface Measured {
  system: SystemName;
  count: number;
  releases: number;
  wall: number;
  notReady: number;
  /** CPU seconds during the run, by process (control plane included). */
  cpu: Record<string, number>;
  /** The keys of `cpu` that are the system's own processes (eva: the operator, its helm server or helm children). */
  own: string[];
  /** VmHWM at the end, MiB, by the system's processes. */
  peakMiB: Record<string, number>;
  /** API requests and writes during the run, by client (audit log), Events apart. */
  requests: Record<string, number>;
  writes: Record<string, number>;
  /** Events created or updated, by client. */
  events: Record<string, number>;
  /** Requests by client, verb and resource ("helm create secrets"). */
  calls: Record<string, number>;
}

function cpuOf(pids: Record<string, number>, parent: string | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) {
    const { own, children } = cpuSeconds(pid);
    out[name] = own;
    if (name === parent) out[`${name}: helm children`] = children;
  }
  return out;
}

const minus = (after: Record<string, number>, before: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));

/** Client names for the table: the harness's watches and the floor's applier get their own rows. */
function clientName(userAgent = ''): string {
  if (userAgent.startsWith('eva-bench-floor')) return 'floor client';
  if (userAgent.startsWith('helm-controller/')) return 'helm-controller';
  if (userAgent.startsWith('source-controller/')) return 'source-controller';
  // The helm library inside helm-controller sends Go's default User-Agent (the helm CLI sends Helm/...).
  if (userAgent.startsWith('Go-http-client/')) return 'helm-controller (helm library)';
  if (userAgent.startsWith('kwok') || userAgent.startsWith('kube-')) return 'control-plane';
  if (userAgent === '' || userAgent.startsWith('undici') || userAgent.startsWith('node')) return 'bench harness (watch)';
  return clientOf(userAgent);
}

/** "(404)", "(409)": the mark callTarget puts after a refused request, and the pattern kindOf reads past. */
const refusedMark = (code: number): string => `(${code})`;
const REFUSED_SUFFIX = /\(\d+\)$/;

/**
 * What a request acted on: resource[/subresource], or its path when it has no object (discovery:
 * /api, /apis, /version...); a refused one (a 404, a 409 conflict) is its own row, "(code)" after it.
 */
function callTarget(event: AuditEvent): string {
  const { resource = event.requestURI?.split('?')[0] ?? '-', subresource } = event.objectRef ?? {};
  const code = event.responseStatus?.code ?? 200;
  return `${resource}${subresource === undefined ? '' : `/${subresource}`}${code >= 400 ? refusedMark(code) : ''}`;
}

function countByClient(audited: readonly AuditEvent[]): Pick<Measured, 'requests' | 'writes' | 'events' | 'calls'> {
  const requests: Record<string, number> = {};
  const writes: Record<string, number> = {};
  const events: Record<string, number> = {};
  const calls: Record<string, number> = {};
  const add = (counts: Record<string, number>, key: string): void => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  for (const event of audited) {
    const client = clientName(event.userAgent);
    if (event.objectRef?.resource === 'events') {
      if (WRITE_VERBS.has(event.verb)) add(events, client);
      continue;
    }
    add(requests, client);
    if (WRITE_VERBS.has(event.verb)) add(writes, client);
    add(calls, `${client} ${event.verb} ${callTarget(event)}`);
  }
  return { requests, writes, events, calls };
}

async function measure(system: SystemName, count: number, prepared: PreparedSystem, auditOut: string | undefined): Promise<Measured> {
  const pids = (): Record<string, number> => ({ ...controlPlanePids(), ...prepared.processes() });
  const parent = prepared.parentOfChildren();
  const operatorPid = parent === undefined ? undefined : prepared.processes()[parent];
  const pod = operatorPid === undefined ? undefined : helmProcessSampler(() => operatorPid);
  const cpuBefore = cpuOf(pids(), parent);
  const started = Date.now();
  await prepared.start();
  const notReady = await prepared.waitReady();
  const wall = (Date.now() - started) / 1000;
  const cpu = minus(cpuOf(pids(), parent), cpuBefore);
  const own = [...Object.keys(prepared.processes()), ...(parent === undefined ? [] : [`${parent}: helm children`])];
  const peakMiB = Object.fromEntries(Object.entries(prepared.processes()).map(([name, pid]) => [name, rssMiB(pid).peak]));
  const podPeak = pod?.stop();
  if (parent !== undefined && podPeak !== undefined) {
    peakMiB[`${parent} with helm children (sampled, RSS summed)`] = podPeak.peakPodMiB;
    peakMiB[`${parent} with helm children (sampled, PSS summed)`] = podPeak.peakPodPssMiB;
  }
  await new Promise((resolve) => setTimeout(resolve, 2_000)); // audit lines are written when requests complete
  const audited = auditEventsFrom(new Date(started));
  if (auditOut !== undefined) {
    mkdirSync(auditOut, { recursive: true });
    writeFileSync(join(auditOut, `${system}-${count}-${started}.jsonl`), audited.map((e) => JSON.stringify(e)).join('\n'));
  }
  return { system, count, releases: count * MODULES.length, wall, notReady, cpu, own, peakMiB, ...countByClient(audited) };
}

async function runOnce(system: SystemName, count: number, settings: RunSettings, auditOut: string | undefined): Promise<Measured> {
  freshCluster();
  const prepared = await prepare(system, settings);
  try {
    return await measure(system, count, prepared, auditOut);
  } finally {
    await prepared.stop();
  }
}

// ---- the table -------------------------------------------------------------------------------------

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};

const SYSTEM_CLIENTS: Record<SystemName, readonly string[]> = {
  eva: ['operator', 'helm'],
  'eva-helm-default': ['operator', 'helm'],
  'eva-cli': ['operator', 'helm'],
  flux: ['helm-controller', 'helm-controller (helm library)', 'source-controller'],
  'flux-nowait': ['helm-controller', 'helm-controller (helm library)', 'source-controller'],
  floor: ['floor client'],
  'floor-tenancy': ['floor client'],
};

const sumOf = (counts: Record<string, number>, keys: readonly string[]): number => keys.reduce((sum, k) => sum + (counts[k] ?? 0), 0);
const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const byKey = (records: Record<string, number>[], divisor: number, digits = 1): string => {
  const keys = [...new Set(records.flatMap((r) => Object.keys(r)))].sort();
  return keys.map((k) => `${k} ${fmt(median(records.map((r) => r[k] ?? 0)) / divisor, digits)}`).join(', ');
};

/** The calls of `client` alone ("helm-controller get x" is not "helm-controller (helm library) get x"): [verb, resource, count]. */
function callsOf(run: Measured, client: string): [string, string, number][] {
  return Object.entries(run.calls).flatMap(([key, n]) => {
    const [verb, resource, ...more] = key.startsWith(`${client} `) ? key.slice(client.length + 1).split(' ') : [];
    return verb === undefined || resource === undefined || more.length > 0 ? [] : [[verb, resource, n] as [string, string, number]];
  });
}

/** The system's own calls (client verb resource), per `unit` (release or tenant), the most frequent first. */
function topCalls(runs: Measured[], clients: readonly string[], divisor: number, limit = 12): string {
  const keys = [...new Set(runs.flatMap((r) => clients.flatMap((c) => callsOf(r, c).map(([verb, resource]) => `${c} ${verb} ${resource}`))))];
  return keys
    .map((k) => [k, median(runs.map((r) => r.calls[k] ?? 0)) / divisor] as const)
    .filter(([, n]) => n >= 0.05)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, limit)
    .map(([k, n]) => `${k} ${fmt(n)}`)
    .join(', ');
}

/** What a request is, for the summary by kind: a status write, another write, discovery (a path, no object), or its verb. */
function kindOf(verb: string, resource: string): string {
  if (WRITE_VERBS.has(verb)) return resource.replace(REFUSED_SUFFIX, '').endsWith('/status') ? 'status writes' : 'other writes';
  return resource.startsWith('/') ? 'discovery' : verb;
}

/** Per client of the system: its requests per `divisor` by kind (get, list, watch, discovery, status writes, other writes). */
function requestsByKind(runs: Measured[], clients: readonly string[], divisor: number): string {
  return clients
    .map((client) => {
      const perRun = runs.map((run) => {
        const kinds: Record<string, number> = {};
        for (const [verb, resource, n] of callsOf(run, client)) kinds[kindOf(verb, resource)] = (kinds[kindOf(verb, resource)] ?? 0) + n;
        return kinds;
      });
      return `${client}: ${byKey(perRun, divisor) || 'none'}`;
    })
    .join('; ');
}

interface Row {
  system: SystemName;
  wall: number;
  /** The system's processes' peak resident memory, summed (eva: the operator and its helm server). */
  memory: number;
  /** eva: the operator with its helm processes (sampled, proportional set sizes summed), what the pod's limit holds. */
  memoryWithChildren: number;
  /** CPU seconds per release: the system's own processes, the API server, etcd, every process. */
  cpuPerRelease: { own: number; apiserver: number; etcd: number; all: number };
}

/** CPU seconds per release (medians): the system's own processes, the API server, etcd, and every process. */
function cpuPerRelease(runs: Measured[]): Row['cpuPerRelease'] {
  const releases = runs[0]?.releases ?? 1;
  const per = (pick: (r: Measured) => number): number => median(runs.map(pick)) / releases;
  return {
    own: per((r) => r.own.reduce((sum, k) => sum + (r.cpu[k] ?? 0), 0)),
    apiserver: per((r) => r.cpu['kube-apiserver'] ?? 0),
    etcd: per((r) => r.cpu['etcd'] ?? 0),
    all: per((r) => Object.values(r.cpu).reduce((sum, v) => sum + v, 0)),
  };
}

function printSystem(system: SystemName, runs: Measured[]): Row {
  const releases = runs[0]?.releases ?? 0;
  const wall = median(runs.map((r) => r.wall));
  const ownMemory = (r: Measured): number => Object.entries(r.peakMiB).filter(([k]) => !k.includes('with helm children')).reduce((s, [, v]) => s + v, 0);
  const memory = median(runs.map(ownMemory));
  const memoryWithChildren = median(runs.map((r) => r.peakMiB['eva-operator with helm children (sampled, PSS summed)'] ?? ownMemory(r)));
  console.log(`\n${system}: ${runs.length} run(s), walls ${runs.map((r) => fmt(r.wall)).join(' / ')} s${runs.some((r) => r.notReady > 0) ? ` (NOT READY: ${runs.map((r) => r.notReady).join('/')})` : ''}`);
  console.log(`  wall to all Ready ${fmt(wall)} s (median); ${fmt(releases / wall, 2)} releases/s`);
  console.log(`  CPU seconds (median): ${byKey(runs.map((r) => r.cpu), 1)}`);
  const cpu = cpuPerRelease(runs);
  console.log(`  CPU seconds per release: its own processes ${fmt(cpu.own, 3)} (${runs[0]?.own.join(' + ') ?? ''}), kube-apiserver ${fmt(cpu.apiserver, 3)}, etcd ${fmt(cpu.etcd, 3)}, every process ${fmt(cpu.all, 3)}`);
  console.log(`  peak resident MiB (VmHWM, median): ${byKey(runs.map((r) => r.peakMiB), 1, 0)}`);
  const clients = SYSTEM_CLIENTS[system];
  console.log(`  API requests per release: ${fmt(median(runs.map((r) => sumOf(r.requests, clients))) / releases)} by ${clients.join(' + ')} (all clients: ${byKey(runs.map((r) => r.requests), releases)})`);
  console.log(`  API writes per release: ${fmt(median(runs.map((r) => sumOf(r.writes, clients))) / releases)} by ${clients.join(' + ')} (all clients: ${byKey(runs.map((r) => r.writes), releases)})`);
  console.log(`  Events written per release: ${fmt(median(runs.map((r) => sumOf(r.events, clients))) / releases)} by ${clients.join(' + ')} (all clients: ${byKey(runs.map((r) => r.events), releases)})`);
  console.log(`  its requests per release, most first: ${topCalls(runs, clients, releases)}`);
  const tenants = runs[0]?.count ?? 1;
  console.log(`  its requests per tenant (${releases / tenants} releases) by kind: ${requestsByKind(runs, clients, tenants)}`);
  console.log(`  its requests per tenant, every one: ${topCalls(runs, clients, tenants, Number.POSITIVE_INFINITY)}`);
  console.log(`  the control plane's requests per tenant, most first: ${topCalls(runs, ['control-plane'], tenants)}`);
  return { system, wall, memory, memoryWithChildren, cpuPerRelease: cpu };
}

const isEva = (system: SystemName): boolean => system.startsWith('eva');

/**
 * Each eva row against each peer: wall, its own CPU per release, and memory (the operator alone, and
 * the pod with its helm processes); eva-cli against eva; then how fast this machine is.
 */
function printRatios(rows: Row[]): void {
  for (const eva of rows.filter((r) => isEva(r.system))) {
    for (const other of rows.filter((r) => !isEva(r.system) || (eva.system === 'eva' && r.system === 'eva-cli'))) {
      const memory = isEva(other.system)
        ? `, peak memory with its helm processes (PSS) ${fmt(eva.memoryWithChildren / other.memoryWithChildren, 2)}`
        : `, peak memory ${fmt(eva.memory / other.memory, 2)} (its processes, VmHWM summed), ${fmt(eva.memoryWithChildren / other.memory, 2)} (the pod: sampled, PSS summed) against ${other.system}'s summed`;
      const cpu = `, own CPU per release ${fmt(eva.cpuPerRelease.own / other.cpuPerRelease.own, 2)}`;
      console.log(`  ${eva.system}/${other.system}: wall ${fmt(eva.wall / other.wall, 2)}${cpu}${other.system.startsWith('floor') ? '' : memory}`);
    }
  }
  // The floor's API server does the same work on every machine: its CPU per release says how fast this one is.
  const floor = rows.find((r) => r.system === 'floor');
  if (floor !== undefined) {
    console.log(`  machine calibration: the floor's kube-apiserver ${fmt(floor.cpuPerRelease.apiserver * 1000, 1)} ms CPU per release, etcd ${fmt(floor.cpuPerRelease.etcd * 1000, 1)} ms (docs/measurements.md records other machines)`);
    // A CPU-bound system's wall on another machine follows its CPU in these units, not in seconds.
    const units = rows.map((r) => `${r.system} ${fmt(r.cpuPerRelease.all / floor.cpuPerRelease.apiserver, 2)}`);
    console.log(`  every process's CPU per release in units of the calibration (compares across machines; the floor's was 1.6-1.7 on every one measured): ${units.join(', ')}`);
  }
}

async function main(): Promise<void> {
  try {
    await runAll(options());
  } finally {
    removeCluster(BENCH_CLUSTER.EVA_DEV_CLUSTER_DIR);
  }
}

async function runAll(opts: Options): Promise<void> {
  const runtime = opts.asImage ? imageRuntime(chartMemoryLimitMiB()) : { entry: 'src/cli.ts', nodeOptions: process.env['EVA_OPERATOR_NODE_OPTIONS'] };
  const versions = fluxVersions();
  console.log(`bench:peers: counts ${opts.counts.join(', ')}, ${opts.repeats} repeat(s), concurrency ${opts.concurrency} releases in flight on every side`);
  console.log(`  eva-operator: ${opts.asImage ? 'as the image runs it' : 'FROM THE SOURCES (--no-image), not the image runtime'}: node ${runtime.nodeOptions ?? ''} ${runtime.entry}`);
  console.log(`  Flux v${versions.flux}: source-controller v${versions['source-controller']}, helm-controller v${versions['helm-controller']}, GOMEMLIMIT as their manifests set it`);
  for (const count of opts.counts) {
    const codes = Array.from({ length: count }, (_, i) => codeFor(i, 'P'));
    const settings: RunSettings = { codes, concurrency: opts.concurrency, runtime };
    const results = new Map<SystemName, Measured[]>(opts.systems.map((s) => [s, []]));
    for (let round = 0; round < opts.repeats; round += 1) {
      for (const system of opts.systems) {
        const measured = await runOnce(system, count, settings, opts.auditOut).catch((err: unknown) => {
          // One system failing to start must not throw away the rounds measured so far: once more, on a fresh cluster.
          console.log(`[${count} tenants, round ${round + 1}] ${system}: failed (${err instanceof Error ? err.message.slice(0, 300) : String(err)}); once more`);
          return runOnce(system, count, settings, opts.auditOut);
        });
        console.log(`[${count} tenants, round ${round + 1}] ${system}: ${fmt(measured.wall)} s${measured.notReady > 0 ? `, ${measured.notReady} NOT READY` : ''}`);
        results.get(system)?.push(measured);
      }
    }
    console.log(`\n==== ${count} tenants (${count * MODULES.length} releases: ${MODULES.join(', ')}), concurrency ${opts.concurrency} ====`);
    const rows = [...results].map(([system, runs]) => printSystem(system, runs));
    console.log('\nratios (medians):');
    printRatios(rows);
    if ([...results.values()].flat().some((r) => r.notReady > 0)) process.exitCode = 1;
  }
}

await main();
