/**
 * What a fleet costs once provisioned, for bench/provision.ts (`--steady-minutes`, `--restart`):
 * the steady state (nothing changes; drift checks run at the operator's interval) and a restart of
 * the operator with every tenant Active. Figures are printed, nothing is asserted.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION as API_VERSION } from '../src/api/constants.ts';
import { metricSum, scrape } from '../test/support/metrics.ts';
import type { OperatorProcess } from '../test/support/operator.ts';
import { kubectlOk } from '../test/support/kubectl.ts';

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** The operator's API requests by HTTP method (its eva_kube_api_requests_total). */
export function requestsByMethod(metrics: string): Record<string, number> {
  return Object.fromEntries(METHODS.map((m) => [m, metricSum(metrics, 'eva_kube_api_requests_total', `method="${m}"`)]));
}

export function difference(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([key, value]) => [key, value - (before[key] ?? 0)]));
}

export const total = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);

export const show = (counts: Record<string, number>, divisor = 1, digits = 1): string =>
  Object.entries(counts)
    .filter(([, n]) => n !== 0)
    .map(([key, n]) => `${key} ${(n / divisor).toFixed(digits)}`)
    .join(', ') || 'none';

/** Messages the NATS server received (its /varz in_msgs): every request the operator makes is one. */
export async function natsMessagesIn(): Promise<number> {
  const url = process.env['EVA_NATS_MONITOR_URL'];
  if (url === undefined) throw new Error('EVA_NATS_MONITOR_URL is not set (the cluster setup exports it)');
  const varz = (await (await fetch(`${url}/varz`)).json()) as { in_msgs: number };
  return varz.in_msgs;
}

/** etcd's database size, as the API server reports it (apiserver_storage_size_bytes). */
export function etcdBytes(): number {
  return kubectlOk(['get', '--raw', '/metrics'])
    .split('\n')
    .filter((l) => l.startsWith('apiserver_storage_size_bytes'))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

/** Every API object in a tenant's namespace (Events included), plus its Namespace and EvaTenant. */
export function objectsOfTenant(code: string): Record<string, number> {
  // events.events.k8s.io are the core Events again, seen through another API group.
  const kinds = kubectlOk(['api-resources', '--namespaced=true', '--verbs=list', '-o', 'name']).split('\n').filter((k) => k !== '' && k !== 'events.events.k8s.io');
  const names = kubectlOk(['get', kinds.join(','), '-n', `eva-tenant-${code.toLowerCase()}`, '-o', 'name', '--ignore-not-found']).split('\n').filter((n) => n !== '');
  const counts: Record<string, number> = { namespaces: 1, evatenants: 1 };
  for (const name of names) {
    const kind = name.split('/')[0] ?? '?';
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return counts;
}

/** The children of `pid` (every thread's): /proc/<pid>/task/<tid>/children. */
function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${String(pid)}/task`).flatMap((tid) =>
    readFileSync(`/proc/${String(pid)}/task/${tid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number),
  );
}

/**
 * Samples (every 100 ms) the helm processes the operator starts: how many, and the peak memory of the
 * operator and its helm children together, which is what a pod's memory limit holds. Two sums: resident
 * (VmRSS, each process's shared pages counted in full: helm's binary once per process) and proportional
 * (Pss: a page shared by n processes counts 1/n in each), the one a container's memory accounting is
 * close to (it charges a page once). Pss costs the kernel a walk of each process's page tables
 * (milliseconds for the operator's large address space), so it is read only when the resident sum
 * reaches a new peak: the sampler itself must not slow the system it measures.
 */
const HELM_COMMS = new Set(['helm', 'eva-helm-server']);

export function helmProcessSampler(operatorPid: () => number): { stop(): { processes: number; peakPodMiB: number; peakPodPssMiB: number } } {
  const seen = new Set<number>();
  let peakKiB = 0;
  let peakPssKiB = 0;
  const field = (path: string, name: string): number => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(readFileSync(path, 'utf8'))?.[1] ?? 0);
  const sum = (pids: number[], file: string, name: string): number => pids.reduce((total, pid) => total + field(`/proc/${String(pid)}/${file}`, name), 0);
  const timer = setInterval(() => {
    try {
      const operator = operatorPid();
      // helm CLI processes, or the one helm server (its comm, 15 characters, is its whole name).
      const helm = childrenOf(operator).filter((pid) => HELM_COMMS.has(readFileSync(`/proc/${String(pid)}/comm`, 'utf8').trim()));
      for (const pid of helm) seen.add(pid);
      const pod = [operator, ...helm];
      const rss = sum(pod, 'status', 'VmRSS');
      if (rss <= peakKiB) return;
      peakKiB = rss;
      peakPssKiB = Math.max(peakPssKiB, sum(pod, 'smaps_rollup', 'Pss'));
    } catch {
      // a helm process gone between the listing and the read, or the operator restarting: the next sample counts
    }
  }, 100);
  return {
    stop: () => {
      clearInterval(timer);
      return { processes: seen.size, peakPodMiB: peakKiB / 1024, peakPodPssMiB: peakPssKiB / 1024 };
    },
  };
}

/** Tenants of `codes` seen in any phase but Active while it runs (one watch, from now on). */
export function phaseWatcher(codes: ReadonlySet<string>): { stop(): Set<string> } {
  const left = new Set<string>();
  const config = new KubeConfig();
  config.loadFromDefault();
  let request: AbortController | undefined;
  let stopped = false;
  const start = (resourceVersion: string): void => {
    void new Watch(config)
      .watch(`/apis/${GROUP}/${API_VERSION}/${PLURAL}`, { resourceVersion }, (_type: string, item: { spec: { capsuleCode: string }; status?: { phase?: string } }) => {
        if (codes.has(item.spec.capsuleCode) && item.status?.phase !== 'Active') left.add(item.spec.capsuleCode);
      }, () => {
        if (!stopped) start(resourceVersion);
      })
      .then((controller) => (request = controller));
  };
  start(kubectlOk(['get', 'evt', '-o', 'jsonpath={.metadata.resourceVersion}']));
  return {
    stop: () => {
      stopped = true;
      request?.abort();
      return left;
    },
  };
}

/** Polls the operator's metrics every second until `done` says so; the peak request rate seen. */
export async function pollMetrics(op: OperatorProcess, done: (metrics: string) => boolean, timeoutMs: number): Promise<{ peakPerSecond: number; timedOut: boolean }> {
  let previous = total(requestsByMethod(await scrape(op)));
  let peak = 0;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const metrics = await scrape(op);
    const now = total(requestsByMethod(metrics));
    peak = Math.max(peak, now - previous);
    previous = now;
    if (done(metrics)) return { peakPerSecond: peak, timedOut: false };
    if (Date.now() > deadline) return { peakPerSecond: peak, timedOut: true };
  }
}
