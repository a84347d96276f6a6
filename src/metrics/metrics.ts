/**
 * The operator's Prometheus metrics and the small HTTP server that exposes them with the health
 * probes. The registry is the operator's own (not prom-client's global one), so tests and embedders
 * can create several without metric-name clashes.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { PHASES, type Phase, type Tier } from '../api/constants.ts';
import type { Reason } from '../api/reasons.ts';
import type { Logger } from '../log.ts';
import type { StepName } from '../steps/step.ts';
import { RolloutMetrics } from './rollout-metrics.ts';

export type ReconcileResult = 'success' | 'requeue' | 'error';

/** A reconcile is mostly API reads; a slow one waits on helm or NATS. */
const RECONCILE_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** 10 ms (a Kubernetes read) up to 120 s (a helm install that waits for rollout). */
const STEP_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120];
/** From an already-provisioned tenant (sub-second) to a slow full provisioning (10 min). */
const TIME_TO_ACTIVE_BUCKETS = [0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 180, 300, 450, 600];

export interface OperatorMetricsOptions {
  /**
   * Called on every scrape to refresh eva_tenants{phase}. The operator does not need it: its tenant
   * informer calls setTenantsByPhase whenever a count changes (controller/tenant-informer.ts).
   */
  readonly tenantsByPhase?: () => Readonly<Record<Phase, number>>;
}

function kubeRequestMetrics(registers: Registry[]): [Counter<'method'>, Counter] {
  return [
    new Counter({
      name: 'eva_kube_api_requests_total',
      help: "The operator's own API requests by HTTP method (watches not counted; helm's are its own).",
      labelNames: ['method'],
      registers,
    }),
    new Counter({
      name: 'eva_kube_api_rate_limit_wait_seconds_total',
      help: 'Seconds API requests waited for the client-side rate limit (KUBE_API_QPS, KUBE_API_BURST).',
      registers,
    }),
  ];
}

/** Why no running operator acts on a tenant (controller/unserved-reporter.ts): one gauge per cause. */
type Unserved = 'version' | 'shard' | 'owner' | 'wave';

function unservedTenantGauges(registers: Registry[]): Record<Unserved, Gauge> {
  const gauge = (name: string, help: string): Gauge => new Gauge({ name, help, registers });
  return {
    version: gauge('eva_tenants_pinned_to_absent_version', 'Tenants whose spec.operatorVersion names an operator version that is not running.'),
    shard: gauge('eva_tenants_in_absent_shard', 'Tenants whose label eva.aidonow.com/shard names a shard no running operator serves.'),
    owner: gauge('eva_tenants_owned_by_absent_operator', 'Tenants whose owner annotation eva.aidonow.com/operator-version names an operator that has not run for two minutes.'),
    wave: gauge('eva_tenants_above_max_wave', 'Unpinned tenants no operator owns yet whose spec.wave is above the MAX_WAVE of every running operator of their shard.'),
  };
}

export class OperatorMetrics {
  readonly registry: Registry;
  /** What the rollout controller records (eva_rollout_*). */
  readonly rollouts: RolloutMetrics;
  private readonly reconcileTotal: Counter<'result' | 'reason'>;
  private readonly reconcileDuration: Histogram<'result'>;
  private readonly stepDuration: Histogram<'step' | 'tier'>;
  private readonly timeToActive: Histogram<'tier'>;
  private readonly tenants: Gauge<'phase'>;
  private readonly tenantsByVersion: Gauge<'version'>;
  private readonly workqueueDepth: Gauge;
  private readonly unserved: Record<Unserved, Gauge>;
  private readonly kubeRequests: Counter<'method'>;
  private readonly kubeRateLimitWait: Counter;
  private readonly helmOperations: Counter<'operation' | 'result'>;
  private readonly queueDepth: Gauge<'capsule' | 'stream'>;
  /** Streams with a queue-depth series, per capsule code: prom-client removes series only by full label set. */
  private readonly queueDepthStreams = new Map<string, Set<string>>();

  constructor(options: OperatorMetricsOptions = {}) {
    this.registry = new Registry();
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'eva_operator_' });
    this.reconcileTotal = new Counter({
      name: 'eva_reconcile_total',
      help: 'Reconciles by result; errors by reason (a condition reason of the catalogue, bounded).',
      labelNames: ['result', 'reason'],
      registers,
    });
    this.reconcileDuration = new Histogram({
      name: 'eva_reconcile_duration_seconds',
      help: 'Duration of one reconcile, by result.',
      labelNames: ['result'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.stepDuration = new Histogram({
      name: 'eva_saga_step_duration_seconds',
      help: 'Duration of one saga step (ensure then verify), by step and tenant tier.',
      labelNames: ['step', 'tier'],
      buckets: STEP_BUCKETS,
      registers,
    });
    this.timeToActive = new Histogram({
      name: 'eva_time_to_active_seconds',
      help: 'Seconds from the start of provisioning until the tenant became Active, by tier.',
      labelNames: ['tier'],
      buckets: TIME_TO_ACTIVE_BUCKETS,
      registers,
    });
    this.tenants = this.tenantsGauge(registers, options.tenantsByPhase);
    this.tenantsByVersion = new Gauge({
      name: 'eva_tenants_by_operator_version',
      help: 'EvaTenants by the operator version that owns them (annotation eva.aidonow.com/operator-version, without its shard); tenants no operator owns are not counted.',
      labelNames: ['version'],
      registers,
    });
    this.workqueueDepth = new Gauge({ name: 'eva_workqueue_depth', help: 'Tenants waiting in the work queue.', registers });
    this.unserved = unservedTenantGauges(registers);
    [this.kubeRequests, this.kubeRateLimitWait] = kubeRequestMetrics(registers);
    this.helmOperations = new Counter({
      name: 'eva_helm_operations_total',
      help: 'Operations asked of helm (upgrade, uninstall, history, status) by result (ok, error).',
      labelNames: ['operation', 'result'],
      registers,
    });
    this.queueDepth = new Gauge({
      name: 'capsule_queue_depth',
      help: 'Messages in each JetStream stream of each Active tenant.',
      labelNames: ['capsule', 'stream'],
      registers,
    });
    this.rollouts = new RolloutMetrics(registers);
    // Every phase has a series from the start, so dashboards and alerts never see "no data".
    this.setTenantsByPhase({});
  }

  private tenantsGauge(registers: Registry[], source: OperatorMetricsOptions['tenantsByPhase']): Gauge<'phase'> {
    return new Gauge({
      name: 'eva_tenants',
      help: 'EvaTenants by status phase.',
      labelNames: ['phase'],
      registers,
      collect: (): void => {
        if (!source) return;
        // A failing count must not fail the whole scrape: the last values stay until the next one works.
        try {
          this.setTenantsByPhase(source());
        } catch {
          /* keep the previous values */
        }
      },
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  metricsText(): Promise<string> {
    return this.registry.metrics();
  }

  observeReconcile(result: ReconcileResult, seconds: number, reason?: Reason): void {
    this.reconcileTotal.inc({ result, reason: reason ?? '' });
    this.reconcileDuration.observe({ result }, seconds);
  }

  observeStep(step: StepName, tier: Tier, seconds: number): void {
    this.stepDuration.observe({ step, tier }, seconds);
  }

  /** A step timer bound to one tenant's tier, in the shape the step registry's runStep takes. */
  stepTimer(tier: Tier): { observe(step: StepName, seconds: number): void } {
    return {
      observe: (step, seconds): void => {
        this.observeStep(step, tier, seconds);
      },
    };
  }

  observeTimeToActive(tier: Tier, seconds: number): void {
    this.timeToActive.observe({ tier }, seconds);
  }

  /** Sets every phase, absent ones to 0, so a phase that empties out does not keep its old count. */
  setTenantsByPhase(counts: Readonly<Partial<Record<Phase, number>>>): void {
    for (const phase of PHASES) this.tenants.set({ phase }, counts[phase] ?? 0);
  }

  /** Only the versions that own tenants now: a version the fleet left has no series (an open set, unlike the phases). */
  setTenantsByOperatorVersion(counts: Readonly<Record<string, number>>): void {
    this.tenantsByVersion.reset();
    for (const [version, count] of Object.entries(counts)) this.tenantsByVersion.set({ version }, count);
  }

  setWorkqueueDepth(depth: number): void {
    this.workqueueDepth.set(depth);
  }

  setTenantsPinnedToAbsentVersion(count: number): void {
    this.unserved.version.set(count);
  }

  observeKubeRequest(method: string, waitedSeconds: number): void {
    this.kubeRequests.inc({ method });
    if (waitedSeconds > 0) this.kubeRateLimitWait.inc(waitedSeconds);
  }

  countHelmOperation(operation: string, result: 'ok' | 'error'): void {
    this.helmOperations.inc({ operation, result });
  }

  setTenantsInAbsentShard(count: number): void {
    this.unserved.shard.set(count);
  }

  setTenantsAboveMaxWave(count: number): void {
    this.unserved.wave.set(count);
  }

  setTenantsOwnedByAbsentOperator(count: number): void {
    this.unserved.owner.set(count);
  }

  setQueueDepth(code: string, stream: string, messages: number): void {
    this.queueDepth.set({ capsule: code, stream }, messages);
    const streams = this.queueDepthStreams.get(code) ?? new Set<string>();
    this.queueDepthStreams.set(code, streams.add(stream));
  }

  /** Drops one stream's series, e.g. when the stream no longer exists (a stale depth could keep an alert firing). */
  forgetQueueDepth(code: string, stream: string): void {
    const streams = this.queueDepthStreams.get(code);
    if (!streams?.delete(stream)) return;
    this.queueDepth.remove({ capsule: code, stream });
    if (streams.size === 0) this.queueDepthStreams.delete(code);
  }

  /** Drops every series of a tenant that went away (deleted, decommissioned, no longer Active). */
  forgetTenant(code: string): void {
    for (const stream of [...(this.queueDepthStreams.get(code) ?? [])]) this.forgetQueueDepth(code, stream);
  }
}

export interface MetricsServerOptions {
  /** 0 picks a free port (tests); the bound port is returned. */
  readonly port: number;
  readonly host: string;
  readonly metrics: OperatorMetrics;
  /** /readyz answers 200 while this returns true (e.g. informer synced, leader or standby ready). */
  readonly isReady: () => boolean;
  readonly log: Logger;
}

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

type Handler = (res: ServerResponse, options: MetricsServerOptions) => Promise<void> | void;

const ROUTES: Readonly<Record<string, Handler>> = {
  '/metrics': serveMetrics,
  '/healthz': (res) => {
    send(res, 200, 'ok\n');
  },
  '/readyz': (res, options) => {
    if (options.isReady()) send(res, 200, 'ok\n');
    else send(res, 503, 'not ready\n');
  },
};

async function serveMetrics(res: ServerResponse, options: MetricsServerOptions): Promise<void> {
  try {
    const body = await options.metrics.metricsText();
    send(res, 200, body, options.metrics.contentType);
  } catch (err) {
    options.log.warn({ err }, 'collecting metrics failed');
    send(res, 500, 'collecting metrics failed\n');
  }
}

function send(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
  res.end(body);
}

function route(req: IncomingMessage, res: ServerResponse, options: MetricsServerOptions): void {
  // Only the path matters: scrapers and probes may add query strings.
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  const handler = ROUTES[path];
  if (!handler) {
    send(res, 404, 'not found\n');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    send(res, 405, 'method not allowed\n');
    return;
  }
  Promise.resolve(handler(res, options)).catch((err: unknown) => {
    options.log.warn({ err, path }, 'metrics server handler failed');
    if (!res.headersSent) send(res, 500, 'internal error\n');
  });
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) => {
      if (err) reject(err);
      else resolve();
    });
    // Idle keep-alive connections from scrapers would otherwise hold close() open.
    server.closeIdleConnections();
  });
}

/** Serves /metrics, /healthz (always 200 while the process runs) and /readyz (200 or 503). */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    route(req, res, options);
  });
  const port = await listen(server, options.port, options.host);
  server.on('error', (err) => {
    options.log.error({ err }, 'metrics server error');
  });
  options.log.info({ host: options.host, port }, 'metrics server listening');
  return { port, close: () => closeServer(server) };
}
