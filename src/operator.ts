/**
 * Wires the operator together and runs it until SIGTERM/SIGINT: configuration, adapters, metrics
 * server, controller. On a signal: stop watching, let each running reconcile finish its current step
 * and persist status, close connections, exit 0.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { Reason } from './api/reasons.ts';
import { DependencyError, messageOf } from './errors.ts';
import { MAX_WAVE_ANNOTATION } from './api/constants.ts';
import { ConfigError, type OperatorConfig } from './config.ts';
import { Controller } from './controller/controller.ts';
import { TenantInformer } from './controller/tenant-informer.ts';
import { TenantReconciler } from './controller/reconciler.ts';
import { operatorSteps } from './saga/tenant-steps.ts';
import { cacheFirstTenantStore, kubeTenantStore, type TenantStore } from './adapters/tenant-store.ts';
import { LeaderElector } from './runtime/leader-elector.ts';
import { leaseNameForVersion, ROLLOUTS_LEASE } from './controller/lease-names.ts';
import { RolloutController } from './controller/rollout-controller.ts';
import { ROLLOUTS_ELECTION, runRollouts } from './controller/rollout-runner.ts';
import { kubeRolloutApi } from './adapters/kube-rollouts.ts';
import { askPrometheus } from './rollout/observed.ts';
import { UnservedTenantReporter } from './controller/unserved-reporter.ts';
import type { Helm } from './adapters/helm.ts';
import { HelmCli } from './adapters/helm-cli.ts';
import { HelmServer } from './adapters/helm-server.ts';
import { loadBundle } from './bundle/bundle.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import { Kube, loadKubeConfig } from './adapters/kube.ts';
import { apiReads, TenantObjectCache } from './adapters/tenant-objects.ts';
import { kubeLeaseStore, listLeases } from './adapters/kube-leases.ts';
import { untilAborted } from './runtime/clock.ts';
import { annotatingLeaseStore } from './runtime/lease-store.ts';
import { RenderGuardServer } from './steps/render-guard/render-guard-server.ts';
import { ValuesSourceCache } from './adapters/values-sources.ts';
import { ValuesFromWatch } from './controller/values-from-watch.ts';
import { NatsPool } from './adapters/nats-pool.ts';
import { parseCreds } from './adapters/nats-jwt.ts';
import { assertSecretsDirIsTmpfs, removeStaleSecretFiles } from './adapters/secret-values-file.ts';
import type { Logger } from './log.ts';
import { countedHelm } from './metrics/counted-helm.ts';
import { OperatorMetrics, startMetricsServer } from './metrics/metrics.ts';
import { KubeAccountKeyStore } from './nats/account-keys.ts';
import { NatsAccounts } from './nats/accounts.ts';
import { type OperatorDeps, WAKE_ON } from './steps/registry.ts';

export interface RunningOperator {
  stop(): Promise<void>;
  metricsPort: number;
  /** Resolves if this replica loses leadership without being stopped, once its helm processes have ended: the process should exit. */
  lostLeadership: Promise<void>;
}

function prepareSecretsDir(config: OperatorConfig, log: Logger): void {
  mkdirSync(config.helmSecretsDir, { recursive: true, mode: 0o700 });
  assertSecretsDirIsTmpfs(config.helmSecretsDir, config.allowNonTmpfsSecrets, log);
  const stale = removeStaleSecretFiles(config.helmSecretsDir);
  if (stale > 0) log.warn({ count: stale }, 'removed secret values files left by an earlier crash');
}

/** NATS in operator mode: the system user and the operator signing key, read from their mounted files. */
function natsAccounts(config: OperatorConfig, keys: KubeAccountKeyStore, log: Logger): NatsAccounts {
  const { jwt, seed } = parseCreds(readFileSync(config.nats.systemCredsFile, 'utf8'));
  return new NatsAccounts({
    url: config.nats.url,
    moduleUrl: config.nats.moduleUrl,
    systemCredentials: { jwt, seed },
    operatorSigningSeed: readFileSync(config.nats.operatorSigningKeyFile, 'utf8').trim(),
    keys,
    pool: new NatsPool(),
    log,
  });
}

/**
 * Refuses to start with NATS credentials the server rejects, naming the setting (never its content).
 * A NATS that cannot be reached is no reason not to start: tenants report it in their conditions.
 */
async function checkNatsAccess(nats: NatsAccounts, log: Logger): Promise<void> {
  const refused = (err: unknown): boolean => err instanceof DependencyError && err.reason === Reason.NatsAuthFailed;
  try {
    await nats.system.ping();
  } catch (err) {
    if (refused(err)) throw new ConfigError([`NATS_SYSTEM_CREDS_FILE: NATS at ${nats.target} refuses the system user's credentials`]);
    log.warn({ nats: nats.target, problem: messageOf(err) }, 'NATS not reachable at start; tenants will report it until it is');
    return;
  }
  try {
    // The server stores an account JWT signed by any key; only a login into it shows whether it is trusted.
    await nats.runInRegistry((session) => session.jsm.getAccountInfo());
  } catch (err) {
    if (refused(err) || (err instanceof DependencyError && err.reason === Reason.AccountRejected)) {
      throw new ConfigError([`NATS_OPERATOR_SIGNING_KEY_FILE: NATS at ${nats.target} does not trust accounts signed with this key (${messageOf(err)})`]);
    }
    log.warn({ nats: nats.target, problem: messageOf(err) }, 'NATS registry account not ready at start; retried on use');
    return;
  }
  log.info({ nats: nats.target }, 'NATS accepts the system user and trusts the operator signing key');
}

/** The account key store (watching its Secrets) and NATS, checked: refuses to start on credentials NATS rejects. */
async function connectNats(config: OperatorConfig, kube: Kube, log: Logger): Promise<{ keys: KubeAccountKeyStore; nats: NatsAccounts }> {
  const keys = new KubeAccountKeyStore(kube, config.leaseNamespace);
  await keys.start(log);
  const nats = natsAccounts(config, keys, log);
  try {
    await checkNatsAccess(nats, log);
  } catch (err) {
    await nats.close();
    await keys.stop();
    throw err;
  }
  return { keys, nats };
}

/** The helm SDK process when the image has one (HELM_SERVER_BINARY), else a helm CLI process per release. */
function helmOf(config: OperatorConfig, log: Logger, metrics: OperatorMetrics): Helm {
  const helm = config.helmServerBinary === undefined
    ? new HelmCli({ binary: config.helmBinary, maxProcesses: config.helmConcurrency, pluginsDir: config.renderGuard.pluginsDir })
    : new HelmServer({ binary: config.helmServerBinary, runtimeDir: config.renderGuard.runtimeDir, maxConcurrent: config.helmConcurrency, logger: log });
  return countedHelm(helm, metrics);
}

/** What the steps are handed, from the parts started before them. */
interface StartedParts {
  kube: Kube;
  nats: NatsAccounts;
  objects: TenantObjectCache;
  valuesSources: ValuesSourceCache;
  renderGuard: RenderGuardServer;
}

function buildDeps(config: OperatorConfig, { kube, nats, objects, valuesSources, renderGuard }: StartedParts, log: Logger, metrics: OperatorMetrics): OperatorDeps {
  return {
    kube,
    reads: apiReads(kube),
    cachedReads: objects.reads,
    valuesSources,
    nats,
    helm: helmOf(config, log, metrics),
    renderGuard,
    // images.txt, the module charts and the seeds, read and fingerprinted here once.
    ...loadBundle(config),
    config,
  };
}

/** How often the leader judges every tenant against the Leases (between passes, tenant events are judged as they come). */
const UNSERVED_CHECK_MS = 30_000;

/** Requests name this version and shard, keep to the rate limit, and are counted. */
function operatorKubeConfig(config: OperatorConfig, metrics: OperatorMetrics): KubeConfig {
  return loadKubeConfig({
    operatorVersion: config.operatorVersion,
    shard: config.shard,
    rateLimit: config.kubeApi,
    onRequest: (method, waited) => {
      metrics.observeKubeRequest(method, waited);
    },
  });
}

/** The tenant informer first, then the reconciler and the controller that use it (callbacks given at construction). */
function buildController(
  config: OperatorConfig,
  log: Logger,
  metrics: OperatorMetrics,
  deps: OperatorDeps,
  objects: TenantObjectCache,
  valuesFrom: ValuesFromWatch,
): { informer: TenantInformer; controller: Controller; tenants: TenantStore } {
  const { kube } = deps;
  const informer = new TenantInformer({
    kube,
    log,
    onPhaseCounts: (counts) => {
      metrics.setTenantsByPhase(counts);
    },
    onVersionCounts: (counts) => {
      metrics.setTenantsByOperatorVersion(counts);
    },
  });
  // The informer's cache answers for a tenant unchanged since this process last read or wrote it.
  const tenants = cacheFirstTenantStore(kubeTenantStore(kube), (name) => informer.cachedTenant(name));
  const onOwnWrite = (name: string, rv: string | undefined): void => {
    informer.noteOwnWrite(name, rv);
  };
  const reconciler = new TenantReconciler({ tenants, steps: operatorSteps(deps, metrics), config, log, metrics, onOwnWrite });
  const controller = new Controller({ tenants: informer, reconciler, operatorVersion: config.operatorVersion, concurrency: config.concurrency, log, metrics, objects, wakeOn: WAKE_ON, valuesFrom });
  return { informer, controller, tenants };
}

/** Reports the tenants no running operator serves: on the informer's events and every UNSERVED_CHECK_MS. */
function unservedReporter(
  config: OperatorConfig,
  kube: Kube,
  informer: TenantInformer,
  store: TenantStore,
  { lease, metrics, log }: { lease: string; metrics: OperatorMetrics; log: Logger },
): UnservedTenantReporter {
  const reporter = new UnservedTenantReporter({
    leases: () => listLeases(kube, config.leaseNamespace),
    namespace: config.leaseNamespace,
    tenants: () => informer.cachedTenants(),
    tenant: (name) => informer.cachedTenant(name),
    store,
    leaseName: lease,
    intervalMs: UNSERVED_CHECK_MS,
    metrics,
    log,
  });
  reporter.subscribeTo(informer);
  return reporter;
}

/** The rollout controller, run while this leader also holds the Lease eva-rollouts (controller/rollout-runner.ts). */
function rollouts(config: OperatorConfig, kube: Kube, informer: TenantInformer, { metrics, log }: { metrics: OperatorMetrics; log: Logger }, signal: AbortSignal): Promise<void> {
  const leases = (): ReturnType<typeof listLeases> => listLeases(kube, config.leaseNamespace);
  return runRollouts(signal, {
    elector: () => new LeaderElector({ store: kubeLeaseStore(kube, config.leaseNamespace, ROLLOUTS_LEASE), namespace: config.leaseNamespace, leaseName: ROLLOUTS_LEASE, identity: config.identity, log, ...ROLLOUTS_ELECTION }),
    work: () => new RolloutController({ kube, api: kubeRolloutApi(kube), tenants: informer, leases, ask: askPrometheus, log: log.child({ controller: 'rollouts' }), metrics: metrics.rollouts }),
    log,
  });
}

/**
 * Leadership lost: another replica may soon act on the same tenants, so the helm processes this one
 * started end before the loss is reported (the exit that follows would leave them running).
 */
function lossOfLeadership(helm: Helm, log: Logger): { readonly reported: Promise<void>; report(): void } {
  const reported = Promise.withResolvers<undefined>();
  return {
    reported: reported.promise,
    report: () => {
      helm.close().then(
        () => {
          reported.resolve(undefined);
        },
        (err: unknown) => {
          log.error({ err }, 'could not end the running helm processes');
          reported.resolve(undefined);
        },
      );
    },
  };
}

/** Built in dependency order: every part exists before the parts that use it. */
export async function startOperator(config: OperatorConfig, log: Logger): Promise<RunningOperator> {
  prepareSecretsDir(config, log);
  const metrics = new OperatorMetrics();
  const kube = new Kube(operatorKubeConfig(config, metrics), config.identity);
  const { keys, nats } = await connectNats(config, kube, log);
  const objects = new TenantObjectCache({ kube, log });
  const valuesSources = new ValuesSourceCache({ kube, log });
  // Served from start to stop: every release's render is checked here (steps/render-guard/render-guard-server.ts).
  const renderGuard = await RenderGuardServer.start(config.renderGuard.runtimeDir);
  const deps = buildDeps(config, { kube, nats, objects, valuesSources, renderGuard }, log, metrics);
  const valuesFrom = new ValuesFromWatch(valuesSources, config.leaseNamespace);
  const { informer, controller, tenants } = buildController(config, log, metrics, deps, objects, valuesFrom);
  // One active replica per operator version and shard: each has its own Lease.
  const lease = leaseNameForVersion(config.operatorVersion, config.shard);
  // The Lease publishes this operator's MAX_WAVE: the others tell from it a tenant no wave claims.
  const store = annotatingLeaseStore(kubeLeaseStore(kube, config.leaseNamespace, lease), { [MAX_WAVE_ANNOTATION]: String(config.maxWave) });
  const elector = new LeaderElector({ store, namespace: config.leaseNamespace, leaseName: lease, identity: config.identity, log });
  const unserved = unservedReporter(config, kube, informer, tenants, { lease, metrics, log });
  let leading = false;
  let stopping = false;
  const lost = lossOfLeadership(deps.helm, log);
  // A standby replica is ready (it serves metrics and waits); a leader once its informer synced.
  const server = await startMetricsServer({ port: config.metricsPort, host: config.metricsBindAddress, metrics, isReady: () => !leading || controller.hasSynced, log });
  elector
    .run({
      onStartedLeading: async (signal) => {
        leading = true;
        await controller.start();
        void unserved.runUntil(signal);
        const rolloutsEnded = rollouts(config, kube, informer, { metrics, log }, signal);
        log.info({ version: config.operatorVersion, shard: config.shard ?? '(default)', concurrency: config.concurrency, metricsPort: server.port, identity: config.identity }, 'eva-operator started');
        await untilAborted(signal);
        await rolloutsEnded;
        await controller.stop();
      },
      onStoppedLeading: () => {
        leading = false;
        if (!stopping) lost.report();
      },
    })
    .catch((err: unknown) => {
      log.error({ err }, 'leader election failed');
      lost.report();
    });
  log.info({ lease: `${config.leaseNamespace}/${lease}`, identity: config.identity }, 'waiting to lead');
  return {
    metricsPort: server.port,
    lostLeadership: lost.reported,
    async stop(): Promise<void> {
      stopping = true;
      log.info('stopping: finishing running steps');
      await elector.stop();
      await controller.stop();
      await deps.helm.close();
      await renderGuard.close();
      await deps.nats.close();
      await keys.stop();
      await server.close();
      log.info('stopped');
    },
  };
}
