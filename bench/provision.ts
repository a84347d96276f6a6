/**
 * Provisioning benchmark on the local control plane (a benchmark that prints figures, not a test).
 *
 *   npm run bench:provision -- [--tier Starter] [--count 1] [--concurrency 16] [--keep] [--as-image [--memory-limit MiB]]
 *                               [--steady-minutes M] [--restart] [--helm-concurrency N]
 * --as-image runs the operator as the image does: the bundle (`npm run build`) with the Dockerfile's
 * NODE_OPTIONS, the old-space share taken of --memory-limit (the container's limit; default: the
 * chart's resources.limits.memory) as V8 takes it of the cgroup's limit in a pod.
 *
 * Starts the real operator as a process, creates `count` tenants of `tier` at once, waits until all
 * are Active, then prints per-condition times (from status.elapsedSeconds), the wall time to the last
 * Active, releases per second, API writes per tenant (from the API server's audit log, by client),
 * and the operator's resident memory. --steady-minutes then watches the fleet sit still for M minutes
 * at the default drift interval (API requests, writes, NATS messages, helm processes, CPU), and
 * --restart stops the operator (SIGTERM) and starts it again (time until every tenant is checked,
 * writes, peak request rate, tenants that left Active); see bench/steady.ts. Tenants are pinned to the benchmark's own operator version
 * and deleted afterwards (with --keep they stay, for a look, until the next run removes them).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { GROUP, PLURAL, TIERS, type Tier, VERSION as API_VERSION } from '../src/api/constants.ts';
import { MODULES_BY_TIER } from '../src/api/modules.ts';
import { STEP_NAMES } from '../src/steps/step.ts';
import { metricSum, scrape } from '../test/support/metrics.ts';
import { adminOperatorEnv, type OperatorProcess, startOperator } from '../test/support/operator.ts';
import { waitForGone } from '../test/support/tenants.ts';
import setupCluster from '../test/support/cluster-setup.ts';
import { kubectlOk, tenantManifest } from '../test/support/kubectl.ts';
import { repoRoot } from '../test/support/tools.ts';
import { difference, helmProcessSampler, natsMessagesIn, phaseWatcher, pollMetrics, requestsByMethod, show, etcdBytes, objectsOfTenant, total } from './steady.ts';

const VERSION = '9.9.0';
const CONDITIONS = ['NamespaceReady', 'Provisioned', 'SeedLoaded', 'ModulesDeployed', 'IngressReady', 'Ready'] as const;

interface Options {
  tier: Tier;
  count: number;
  concurrency: number;
  /** Leave the tenants (and the operator's work) in place to look at them; the next run removes them. */
  keep: boolean;
  /** Run the bundle with the image's NODE_OPTIONS, in a container of this memory limit (MiB). */
  asImage: { memoryLimit: number } | undefined;
  steadyMinutes: number;
  restart: boolean;
  /** HELM_CONCURRENCY for the operator (its default when unset). */
  helmConcurrency: string | undefined;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      tier: { type: 'string', default: 'Starter' },
      count: { type: 'string', default: '1' },
      concurrency: { type: 'string', default: '16' },
      keep: { type: 'boolean', default: false },
      'as-image': { type: 'boolean', default: false },
      'memory-limit': { type: 'string' },
      'steady-minutes': { type: 'string', default: '0' },
      restart: { type: 'boolean', default: false },
      'helm-concurrency': { type: 'string' },
    },
  });
  const tier = values.tier as Tier;
  if (!TIERS.includes(tier)) throw new Error(`--tier must be one of ${TIERS.join(', ')}`);
  const memoryLimit = values['memory-limit'] !== undefined ? Number(values['memory-limit']) : chartMemoryLimitMiB();
  return {
    tier,
    count: Number(values.count),
    concurrency: Number(values.concurrency),
    keep: values.keep,
    asImage: values['as-image'] ? { memoryLimit } : undefined,
    steadyMinutes: Number(values['steady-minutes']),
    restart: values.restart,
    helmConcurrency: values['helm-concurrency'],
  };
}

/** Codes BAAAAA, BAAAAB, ... (another first letter for another workload): six uppercase letters, unique per index. */
export function codeFor(index: number, prefix = 'B'): string {
  let n = index;
  let suffix = '';
  for (let i = 0; i < 5; i += 1) {
    suffix = String.fromCharCode(65 + (n % 26)) + suffix;
    n = Math.floor(n / 26);
  }
  return `${prefix}${suffix}`;
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

function auditLogPath(): string {
  const kubeconfig = process.env['KUBECONFIG'] ?? '';
  return join(kubeconfig, '..', 'kwok', 'clusters', 'eva', 'logs', 'audit.log');
}

interface AuditLine {
  verb: string;
  userAgent?: string;
  objectRef?: { resource?: string; namespace?: string; name?: string; subresource?: string };
}

export function clientOf(userAgent = ''): string {
  if (userAgent.startsWith('Helm/')) return 'helm';
  if (userAgent.startsWith('kubectl/')) return 'kubectl';
  if (userAgent.startsWith('kube-') || userAgent.startsWith('kwok')) return 'control-plane';
  if (userAgent.startsWith('eva-operator/')) return 'operator';
  return `other (${userAgent.split(' ')[0] ?? ''})`;
}

/** The tenant an audited write concerns (its namespace, its EvaTenant or its Namespace object). */
function tenantOf(ref: NonNullable<AuditLine['objectRef']>): string | undefined {
  const prefix = 'eva-tenant-';
  if (ref.namespace?.startsWith(prefix)) return ref.namespace.slice(prefix.length).toUpperCase();
  if (ref.resource === 'evatenants') return ref.name?.toUpperCase();
  if (ref.resource === 'namespaces' && ref.name?.startsWith(prefix)) return ref.name.slice(prefix.length).toUpperCase();
  return undefined;
}

/** Writes concerning the benchmark's tenants, by client, read from the audit log after `offset`. */
function auditWrites(offset: number, codes: Set<string>): Record<string, number> {
  const counts: Record<string, number> = {};
  const log = readFileSync(auditLogPath());
  // A log shorter than the offset was recreated (a new cluster): read it whole.
  const text = log.subarray(offset <= log.length ? offset : 0).toString('utf8');
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    const event = JSON.parse(line) as AuditLine;
    const code = tenantOf(event.objectRef ?? {});
    if (!code || !codes.has(code)) continue;
    const key = `${clientOf(event.userAgent)}${event.objectRef?.subresource === 'status' ? ' (status)' : ''}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** CPU seconds (user + system) of a process and of its reaped children, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): { own: number; children: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const ticks = (i: number): number => Number(fields[i - 3] ?? 0);
  const hz = 100; // USER_HZ on Linux
  return { own: (ticks(14) + ticks(15)) / hz, children: (ticks(16) + ticks(17)) / hz };
}

/** Control-plane and NATS processes of the local cluster, by short name. */
function clusterProcesses(): Map<string, number[]> {
  const byName = new Map<string, number[]>();
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')[0] ?? '';
    } catch {
      continue;
    }
    const name = ['kube-apiserver', 'etcd', 'kube-controller-manager', 'kube-scheduler', 'kwok-controller', 'nats-server'].find((n) => cmd.endsWith(`/${n}`));
    if (name) byName.set(name, [...(byName.get(name) ?? []), Number(entry)]);
  }
  return byName;
}

function clusterCpu(): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const [name, pids] of clusterProcesses()) {
    totals[name] = pids.reduce((sum, pid) => {
      try {
        return sum + cpuSeconds(pid).own;
      } catch {
        return sum;
      }
    }, 0);
  }
  return totals;
}

function cpuReport(before: Record<string, number>, after: Record<string, number>): string {
  return Object.entries(after)
    .map(([name, seconds]) => `${name} ${(seconds - (before[name] ?? 0)).toFixed(1)}`)
    .join(', ');
}

export function rssMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

interface TenantItem {
  spec: { capsuleCode: string };
  status?: { phase?: string; elapsedSeconds?: Record<string, number> };
}

/**
 * Waits until every tenant is Active (or 10 minutes pass) through ONE watch in this process: polling
 * with kubectl would start a process four times a second and steal the CPU being measured.
 */
export async function waitAllActive(codes: string[]): Promise<{ elapsed: Record<string, number[]>; pending: Set<string> }> {
  const pending = new Set(codes);
  const elapsed: Record<string, number[]> = Object.fromEntries(CONDITIONS.map((c) => [c, []]));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const watch = new Watch(kubeConfig);
  let request: AbortController | undefined;
  const done = new Promise<void>((resolve) => {
    const onEvent = (_type: string, item: TenantItem): void => {
      const code = item.spec.capsuleCode;
      if (!pending.has(code) || item.status?.phase !== 'Active') return;
      pending.delete(code);
      for (const c of CONDITIONS) elapsed[c]?.push(item.status.elapsedSeconds?.[c] ?? Number.NaN);
      if (pending.size === 0) resolve();
    };
    // Without a resourceVersion the watch first replays every existing tenant as ADDED: a restarted
    // watch (it ends now and then) misses nothing.
    const start = (): void => {
      void watch.watch(`/apis/${GROUP}/${API_VERSION}/${PLURAL}`, {}, onEvent, () => {
        if (pending.size > 0) setTimeout(start, 100);
      }).then((controller) => (request = controller));
    };
    start();
  });
  const deadline = new Promise<void>((resolve) => setTimeout(resolve, 600_000).unref());
  await Promise.race([done, deadline]);
  request?.abort();
  return { elapsed, pending };
}

function report(title: string, wall: number, releases: number, elapsed: Record<string, number[]>, extra: string[]): void {
  console.log(`\n${title}`);
  console.log(`all Active after ${wall.toFixed(1)} s wall (${(releases / wall).toFixed(2)} releases/s)`);
  console.log('seconds from provisioning start to condition True (per tenant): median / p95 / max');
  for (const c of CONDITIONS) {
    const sorted = [...(elapsed[c] ?? [])].sort((a, b) => a - b);
    console.log(`  ${c.padEnd(16)} ${quantile(sorted, 0.5).toFixed(2)} / ${quantile(sorted, 0.95).toFixed(2)} / ${(sorted.at(-1) ?? Number.NaN).toFixed(2)}`);
  }
  for (const line of extra) console.log(line);
}

const RESULTS = ['success', 'requeue', 'error'] as const;

/** Mean seconds per run of each saga step during the benchmark (eva_saga_step_duration_seconds sum / count). */
function stepMeans(before: string, after: string): string {
  return STEP_NAMES.map((step) => {
    const delta = (suffix: string): number =>
      metricSum(after, `eva_saga_step_duration_seconds_${suffix}`, `step="${step}"`) - metricSum(before, `eva_saga_step_duration_seconds_${suffix}`, `step="${step}"`);
    const runs = delta('count');
    return `${step} ${runs > 0 ? ((delta('sum') / runs) * 1000).toFixed(0) : '-'}`;
  }).join(', ');
}

function reconcileCounts(metrics: string): Record<(typeof RESULTS)[number], number> {
  const count = (result: string): number => metricSum(metrics, 'eva_reconcile_total', `result="${result}"`);
  return { success: count('success'), requeue: count('requeue'), error: count('error') };
}

/** The chart's operator memory limit in MiB (values.yaml resources.limits.memory, e.g. 384Mi or 1Gi). */
export function chartMemoryLimitMiB(): number {
  const values = parse(readFileSync(join(repoRoot, 'charts/eva-operator/values.yaml'), 'utf8')) as { resources: { limits: { memory: string } } };
  const match = /^(\d+)(Mi|Gi)$/.exec(values.resources.limits.memory);
  if (!match) throw new Error(`cannot read the chart's memory limit ${values.resources.limits.memory}`);
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
}

/**
 * The image's runtime: the bundle, and the Dockerfile's NODE_OPTIONS with the old-space percentage
 * applied to `memoryLimit` (V8 applies it to the cgroup's limit in a pod; this process has none).
 */
export function imageRuntime(memoryLimit: number): { entry: string; nodeOptions: string } {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: repoRoot, stdio: 'inherit' });
  const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
  const options = /NODE_OPTIONS="([^"]*)"/.exec(dockerfile)?.[1];
  if (options === undefined) throw new Error('no NODE_OPTIONS in the Dockerfile');
  const nodeOptions = options.replace(/--max-old-space-size-percentage=(\d+)/, (_, percent: string) => `--max-old-space-size=${Math.floor((memoryLimit * Number(percent)) / 100)}`);
  return { entry: 'dist/cli.js', nodeOptions };
}

/** One `kubectl apply --server-side -f -`, without blocking the event loop (the watch keeps reading). */
function applyAsync(manifests: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(process.env['EVA_TOOLS_DIR'] ?? '', 'kubectl'), ['apply', '--server-side', '-f', '-'], { env: process.env, stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (status) => {
      if (status === 0) resolve();
      else reject(new Error(`kubectl apply failed (${String(status)}): ${stderr}`));
    });
    child.stdin.end(manifests);
  });
}

/** Applies the tenants in slices of 100, four at once: one kubectl with a thousand objects outlasts its timeout. */
export async function applyInSlices(manifests: readonly string[]): Promise<void> {
  const slices: string[] = [];
  for (let i = 0; i < manifests.length; i += 100) slices.push(manifests.slice(i, i + 100).join('\n'));
  for (let i = 0; i < slices.length; i += 4) await Promise.all(slices.slice(i, i + 4).map(applyAsync));
}

/** `kubectl delete` in slices of 100 names: one call with a thousand takes kubectl minutes. */
function deleteTenants(names: readonly string[]): void {
  for (let i = 0; i < names.length; i += 100) kubectlOk(['delete', 'evt', ...names.slice(i, i + 100), '--wait=false']);
}

interface Run {
  count: number;
  codes: string[];
  env: Record<string, string>;
  entry: string;
  operator: OperatorProcess;
}

const cpuNow = (operator: OperatorProcess): Record<string, number> => ({
  ...clusterCpu(),
  operator: cpuSeconds(operator.pid).own,
  'helm (operator children)': cpuSeconds(operator.pid).children,
});

/**
 * The render guard's cost per release, as the guard measured itself (its client process, on and
 * waiting for the CPU until it sent the manifests, plus the check served in the operator; wall and
 * CPU) and the operator logged it with each release, beside the whole helm call's time.
 */
function renderGuardCost(logs: string): string {
  const releases = logs.split('\n').flatMap((line) => {
    if (!line.includes('"msg":"module installed"') && !line.includes('"msg":"module upgraded"')) return [];
    const entry = JSON.parse(line) as { ms?: number; guardMs?: number; guardCpuMs?: number };
    return entry.guardMs === undefined ? [] : [{ helm: entry.ms ?? Number.NaN, wall: entry.guardMs, cpu: entry.guardCpuMs ?? Number.NaN }];
  });
  if (releases.length === 0) return 'render guard: no release logged its cost';
  const sorted = (values: number[]): number[] => [...values].sort((a, b) => a - b);
  const [wall, cpu, helm] = [sorted(releases.map((r) => r.wall)), sorted(releases.map((r) => r.cpu)), sorted(releases.map((r) => r.helm))];
  const mean = (values: number[]): number => values.reduce((a, b) => a + b, 0) / values.length;
  return (
    `render guard per release (${String(releases.length)} releases; helm's post-renderer client and the check served by the operator): ` +
    `${quantile(wall, 0.5).toFixed(1)} ms wall median, ${quantile(wall, 0.95).toFixed(1)} p95; ${mean(cpu).toFixed(1)} ms CPU mean ` +
    `(the whole helm call: ${quantile(helm, 0.5).toFixed(0)} ms median)`
  );
}

async function provision(run: Run, tier: Tier, concurrency: number): Promise<number> {
  const { count, codes, operator } = run;
  const logOffset = operator.logs().length;
  const auditOffset = existsSync(auditLogPath()) ? statSync(auditLogPath()).size : 0;
  const cpuBefore = cpuNow(operator);
  const etcdBefore = etcdBytes();
  const metricsBefore = await scrape(operator);
  const reconcilesBefore = reconcileCounts(metricsBefore);
  const helm = helmProcessSampler(() => operator.pid);
  const started = Date.now();
  // One JSON object per line: kubectl applies a stream of concatenated JSON documents.
  const manifests = codes.map((code) => tenantManifest(code.toLowerCase(), { capsuleCode: code, tier, seedsVersion: '1.0.0', operatorVersion: VERSION }));
  await applyInSlices(manifests);
  const { elapsed, pending } = await waitAllActive(codes);
  const wall = (Date.now() - started) / 1000;
  const memory = rssMiB(operator.pid);
  const pod = helm.stop();
  const cpuAfter = cpuNow(operator);
  const objects = objectsOfTenant(codes[0] ?? '');
  const metricsAfter = await scrape(operator);
  const reconcilesAfter = reconcileCounts(metricsAfter);
  const requests = difference(requestsByMethod(metricsAfter), requestsByMethod(metricsBefore));
  const heapUsedMiB = metricSum(metricsAfter, 'eva_operator_nodejs_heap_size_used_bytes') / 2 ** 20;
  const writes = auditWrites(auditOffset, new Set(codes));
  report(`${count} × ${tier} (${count * MODULES_BY_TIER[tier].length} releases), operator concurrency ${concurrency}`, wall, count * MODULES_BY_TIER[tier].length, elapsed, [
    `not Active: ${pending.size}`,
    `API writes per tenant (audit log, by client): ${show(writes, count)}`,
    `operator API requests per tenant (by method): ${show(requests, count)}; ${(total(requests) / count).toFixed(1)} in all`,
    `milliseconds per saga step run (mean; ensure + verify): ${stepMeans(metricsBefore, metricsAfter)}`,
    `reconciles per tenant (eva_reconcile_total, by result): ${RESULTS.map((r) => `${r} ${((reconcilesAfter[r] - reconcilesBefore[r]) / count).toFixed(1)}`).join(', ')}`,
    `operator resident memory: ${memory.rss.toFixed(0)} MiB at the end, ${memory.peak.toFixed(0)} MiB peak; V8 heap in use ${heapUsedMiB.toFixed(0)} MiB`,
    `with its helm children (what the pod's memory limit holds): ${pod.peakPodPssMiB.toFixed(0)} MiB peak proportional (Pss), ${pod.peakPodMiB.toFixed(0)} MiB resident summed (sampled every 100 ms; ${pod.processes} helm processes)`,
    `CPU seconds used during the run (${String(availableParallelism())} cores = ${(availableParallelism() * wall).toFixed(0)} available): ${cpuReport(cpuBefore, cpuAfter)}`,
    `API objects of one tenant: ${total(objects)} (${show(objects, 1, 0)}); etcd database ${(etcdBytes() / 2 ** 20).toFixed(0)} MiB (${(etcdBefore / 2 ** 20).toFixed(0)} MiB before)`,
    renderGuardCost(operator.logs().slice(logOffset)),
    `secret values files left: ${operator.secretFilesLeft().length}`,
  ]);
  return pending.size;
}

/** Nothing changes for `minutes`: what the operator still asks of the API server and NATS. */
async function steadyState(run: Run, minutes: number): Promise<void> {
  const { count, codes, operator } = run;
  const driftSeconds = 300; // the operator's default DRIFT_INTERVAL_SECONDS, which the benchmark keeps
  const auditOffset = statSync(auditLogPath()).size;
  const metricsBefore = await scrape(operator);
  const natsBefore = await natsMessagesIn();
  const cpuBefore = cpuSeconds(operator.pid).own;
  const helm = helmProcessSampler(() => operator.pid);
  const phases = phaseWatcher(new Set(codes));
  await new Promise((resolve) => setTimeout(resolve, minutes * 60_000));
  const helmProcesses = helm.stop().processes;
  const leftActive = phases.stop();
  const seconds = minutes * 60;
  const metricsAfter = await scrape(operator);
  const requests = difference(requestsByMethod(metricsAfter), requestsByMethod(metricsBefore));
  const reconciles = total(reconcileCounts(metricsAfter)) - total(reconcileCounts(metricsBefore));
  const writes = auditWrites(auditOffset, new Set(codes));
  const cpu = cpuSeconds(operator.pid).own - cpuBefore;
  const intervals = seconds / driftSeconds;
  console.log(`\nsteady state: ${count} Active tenants, ${minutes} min, drift interval ${driftSeconds} s`);
  const perTenant = (n: number): string => (n / count / intervals).toFixed(2);
  // With no write for any tenant (below), the PUTs are the leader's Lease renewals: a fixed cost, not a tenant's.
  console.log(`  operator API requests: ${(total(requests) / seconds).toFixed(2)}/s (${show(requests, 1, 0)}); per tenant per drift interval ${perTenant(total(requests))}, ${perTenant(total(requests) - (requests['PUT'] ?? 0))} without the Lease renewals`);
  console.log(`  reconciles: ${reconciles} (${(reconciles / count / intervals).toFixed(2)} per tenant per drift interval)`);
  console.log(`  API writes for the tenants (audit log, any client): ${total(writes)} (${show(writes, 1, 0)})`);
  console.log(`  NATS messages received by the server: ${(((await natsMessagesIn()) - natsBefore) / seconds).toFixed(2)}/s`);
  console.log(`  helm processes started: ${helmProcesses}`);
  console.log(`  operator CPU: ${cpu.toFixed(1)} s (${((cpu / seconds) * 100).toFixed(1)} % of one core); resident memory ${rssMiB(operator.pid).rss.toFixed(0)} MiB`);
  console.log(`  tenants seen leaving Active: ${leftActive.size}`);
}

/** SIGTERM with every tenant Active, then a new process: until each tenant has been reconciled once. */
async function restartOperator(run: Run): Promise<void> {
  const { count, codes } = run;
  const auditOffset = statSync(auditLogPath()).size;
  const phases = phaseWatcher(new Set(codes));
  const stopped = Date.now();
  await run.operator.stop();
  const stopSeconds = (Date.now() - stopped) / 1000;
  const started = Date.now();
  run.operator = startOperator(run.env, undefined, run.entry);
  await run.operator.ready(120_000);
  const readySeconds = (Date.now() - started) / 1000;
  // The informer enqueues every tenant at start: each reconcile is one tenant checked (drift included).
  const { peakPerSecond, timedOut } = await pollMetrics(run.operator, (m) => total(reconcileCounts(m)) >= count, 900_000);
  const checkedSeconds = (Date.now() - started) / 1000;
  const metrics = await scrape(run.operator);
  const requests = requestsByMethod(metrics);
  await new Promise((resolve) => setTimeout(resolve, 2_000)); // audit lines are written when requests complete
  const writes = auditWrites(auditOffset, new Set(codes));
  const leftActive = phases.stop();
  console.log(`\nrestart with ${count} Active tenants (SIGTERM, then a new process)`);
  console.log(`  old process stopped in ${stopSeconds.toFixed(1)} s; new one leading (ready) after ${readySeconds.toFixed(1)} s`);
  console.log(`  every tenant checked after ${checkedSeconds.toFixed(1)} s from start${timedOut ? ' (TIMED OUT)' : ''}`);
  console.log(`  operator API requests: ${total(requests)} (${show(requests, 1, 0)}), ${(total(requests) / count).toFixed(2)} per tenant; peak ${peakPerSecond}/s (client rate limit ${process.env['KUBE_API_QPS'] ?? 'default'} QPS)`);
  console.log(`  API writes for the tenants (audit log, any client): ${total(writes)} (${show(writes, 1, 0)})`);
  console.log(`  tenants seen leaving Active: ${leftActive.size}; resident memory ${rssMiB(run.operator.pid).rss.toFixed(0)} MiB`);
}

export function operatorEnv(concurrency: number, helmConcurrency: string | undefined, nodeOptions: string | undefined): Record<string, string> {
  return {
    ...adminOperatorEnv(),
    OPERATOR_VERSION: VERSION,
    MAX_WAVE: '0',
    RECONCILE_CONCURRENCY: String(concurrency),
    ...(helmConcurrency !== undefined ? { HELM_CONCURRENCY: helmConcurrency } : {}),
    ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
  };
}

async function main(): Promise<void> {
  const { tier, count, concurrency, keep, asImage, steadyMinutes, restart, helmConcurrency } = options();
  setupCluster();
  kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
  const runtime = asImage ? imageRuntime(asImage.memoryLimit) : { entry: 'src/cli.ts', nodeOptions: process.env['EVA_OPERATOR_NODE_OPTIONS'] };
  console.log(`operator: node ${runtime.nodeOptions ?? ''} ${runtime.entry}`.replace(/ +/g, ' '));
  const env = operatorEnv(concurrency, helmConcurrency, runtime.nodeOptions);
  const codes = Array.from({ length: count }, (_, i) => codeFor(i));
  const run: Run = { count, codes, env, entry: runtime.entry, operator: startOperator(env, undefined, runtime.entry) };
  await run.operator.ready();
  // Leftovers of an interrupted run would read as instantly Active: remove them first.
  // (Only those that exist: a delete of 1,000 names takes kubectl minutes even when none exists.)
  const existing = new Set(kubectlOk(['get', 'evt', '-o', 'name']).split('\n').map((line) => line.replace(/^.*\//, '')));
  const leftovers = codes.map((c) => c.toLowerCase()).filter((name) => existing.has(name));
  deleteTenants(leftovers);
  for (const name of leftovers) await waitForGone(name, 180_000);

  const notActive = await provision(run, tier, concurrency);
  if (steadyMinutes > 0 && notActive === 0) await steadyState(run, steadyMinutes);
  if (restart && notActive === 0) await restartOperator(run);

  if (!keep) {
    deleteTenants(codes.map((c) => c.toLowerCase()));
    for (const code of codes) await waitForGone(code.toLowerCase(), 180_000);
  }
  await run.operator.stop();
  if (notActive > 0) process.exitCode = 1;
}

// Only when run (npm run bench:provision), not when another script imports the helpers above.
if (import.meta.main) await main();
