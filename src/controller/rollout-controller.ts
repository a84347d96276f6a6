/**
 * The rollout controller: EvaRollouts from their own informer, into a work queue, one pass per
 * rollout at a time (rollout-reconciler.ts), each pass's answer its requeue. A tenant event wakes
 * the rollouts in progress (a moved tenant turning Ready is what a rollout waits for). It runs while
 * this operator holds the Lease `eva-rollouts` (rollout-runner.ts), in any version that knows EvaRollout.
 */
import type { KubernetesListObject, KubernetesObject, V1Lease } from '@kubernetes/client-node';
import { GROUP, VERSION } from '../api/constants.ts';
import { type EvaRollout, ROLLOUT_PLURAL } from '../api/evarollout.ts';
import { parseEvaRollout } from '../api/parse-rollout.ts';
import type { RolloutApi } from '../adapters/kube-rollouts.ts';
import type { Kube } from '../adapters/kube.ts';
import type { Logger } from '../log.ts';
import type { QueryAnswer } from '../rollout/gates.ts';
import { type CachingInformer, restartingInformer } from '../runtime/informers.ts';
import { WorkQueue } from '../runtime/workqueue.ts';
import type { RolloutMetricsSink } from './metrics-sink.ts';
import { reconcileRollout } from './rollout-reconciler.ts';
import type { TenantInformer } from './tenant-informer.ts';

export interface RolloutControllerOptions {
  kube: Pick<Kube, 'config'>;
  api: RolloutApi;
  tenants: TenantInformer;
  leases: () => Promise<V1Lease[]>;
  ask: (url: string, query: string) => Promise<QueryAnswer>;
  log: Logger;
  metrics?: RolloutMetricsSink;
}

const IN_PROGRESS = new Set(['Pending', 'Moving', 'Baking', 'RollingBack']);

export class RolloutController {
  private readonly options: RolloutControllerOptions;
  private readonly queue = new WorkQueue({ onHandlerError: (key, err) => { this.options.log.error({ err, rollout: key }, 'rollout pass failed'); } });
  private informer: CachingInformer<KubernetesObject> | undefined;
  private stopping = false;
  private running: Promise<void> | undefined;

  constructor(options: RolloutControllerOptions) {
    this.options = options;
  }

  async start(): Promise<void> {
    const { api, kube, log } = this.options;
    this.informer = restartingInformer<KubernetesObject>({
      config: kube.config,
      path: `/apis/${GROUP}/${VERSION}/${ROLLOUT_PLURAL}`,
      list: async () => {
        const { items, resourceVersion } = await api.listRollouts();
        return { items: items as KubernetesObject[], metadata: { resourceVersion } } satisfies KubernetesListObject<KubernetesObject>;
      },
      log,
      stopping: () => this.stopping,
    });
    // A deleted rollout's pass finds it gone and drops its gauges (after a pass in flight, which the queue lets finish).
    for (const event of ['add', 'update', 'delete'] as const) this.informer.on(event, (obj) => { this.enqueue(obj.metadata?.name); });
    this.options.tenants.on('update', () => {
      this.wakeInProgress();
    });
    await this.informer.start();
    this.running = this.queue.run(1, (name) => this.pass(name));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.informer?.stop();
    await this.queue.shutDown();
    await this.running;
    // Whoever runs rollouts next reports them; gauges left here would be a second, stale account.
    for (const obj of this.informer?.list() ?? []) if (obj.metadata?.name !== undefined) this.options.metrics?.forgetRollout(obj.metadata.name);
  }

  private enqueue(name: string | undefined): void {
    if (name !== undefined) this.queue.add(name);
  }

  private rollouts(): EvaRollout[] {
    return (this.informer?.list() ?? []).flatMap((obj) => {
      try {
        return [parseEvaRollout(obj)];
      } catch {
        return []; // refused at apply by its schema; one that slips through is reported by its own pass
      }
    });
  }

  private wakeInProgress(): void {
    for (const rollout of this.rollouts()) if (IN_PROGRESS.has(rollout.status?.phase ?? 'Pending')) this.enqueue(rollout.metadata.name);
  }

  private async pass(name: string): Promise<void> {
    const raw = this.informer?.get(name);
    if (raw === undefined) {
      this.queue.forget(name);
      this.options.metrics?.forgetRollout(name);
      return;
    }
    const { api, tenants, leases, ask, metrics } = this.options;
    const rollout = parseEvaRollout(raw);
    try {
      const again = await reconcileRollout(rollout, {
        tenants: () => tenants.cachedTenants(),
        rollouts: () => this.rollouts(),
        leases,
        modulePods: (namespace) => api.modulePods(namespace),
        ask,
        patchTenant: (tenant, patch) => api.patchTenant(tenant, patch),
        writeStatus: (r, status) => api.writeStatus(r, status),
        recordEvent: (r, type, reason, message) => api.recordEvent(r, type, reason, message),
        now: () => Date.now(),
        metrics,
      });
      this.queue.forget(name);
      if (again !== undefined) this.queue.addAfter(name, again * 1000);
    } catch (err) {
      this.options.log.warn({ err, rollout: name }, 'rollout pass failed; retrying with backoff');
      this.queue.addRateLimited(name);
    }
  }
}
