/**
 * `eva-operator hub`: the hub controller (controller.ts), a pass every `--interval` until SIGTERM. It
 * runs on the hub with the hub's kubeconfig (in a pod: its ServiceAccount); one replica (a second would
 * race it: every write is judged again, but two passes could repeat a copy).
 */
import { Command, InvalidArgumentError } from 'commander';
import { Kube, loadKubeConfig } from '../adapters/kube.ts';
import { createLogger } from '../log.ts';
import { HubController } from './controller.ts';

const seconds = (value: string): number => {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0.2 || parsed > 600) throw new InvalidArgumentError('a number of seconds between 0.2 and 600');
  return parsed;
};

interface Options {
  namespace: string;
  tenantsNamespace: string;
  moves: boolean;
  interval: number;
  logLevel: string;
}

async function runHub(options: Options): Promise<void> {
  const log = createLogger(options.logLevel).child({ component: 'eva-hub' });
  const { namespace, tenantsNamespace, moves } = options;
  const controller = new HubController({ hub: new Kube(loadKubeConfig(), 'eva-hub'), namespace, tenantsNamespace, moves, log });
  const stopping = new AbortController();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => { stopping.abort(); });
  log.info({ namespace, tenantsNamespace, moves, intervalSeconds: options.interval }, 'hub controller started');
  while (!stopping.signal.aborted) {
    await controller.pass().catch((err: unknown) => { log.error({ err }, 'hub pass failed; retried on the next one'); });
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, options.interval * 1000);
      stopping.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  log.info('hub controller stopped');
}

export function hubCommand(): Command {
  return new Command('hub')
    .description("run on a multi-cluster hub: writes each tenant's status onto its ManifestWork for GitOps tools and, with --moves, moves tenants whose placement changed to another member with their data (docs/multi-cluster.md)")
    .option('--namespace <namespace>', "its own namespace: the members' access Secrets and the move records", 'eva-hub')
    .option('--tenants-namespace <namespace>', "where the portal writes the tenants' Placements", 'eva-tenants')
    .option('--moves', 'move tenants whose Placement decided another member (needs a Secret per member)', false)
    .option('--interval <seconds>', 'seconds between passes', seconds, 2)
    .option('--log-level <level>', 'debug, info, warn or error', 'info')
    .action(runHub);
}
