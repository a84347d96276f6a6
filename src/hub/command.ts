/**
 * `eva-operator mover`: the hub's mover (mover.ts), a pass every `--interval` until SIGTERM. It runs
 * on the hub with the hub's kubeconfig (in a pod: its ServiceAccount); one replica (a second would
 * race it: every write is judged again, but two passes could repeat a copy).
 */
import { Command, InvalidArgumentError } from 'commander';
import { Kube, loadKubeConfig } from '../adapters/kube.ts';
import { createLogger } from '../log.ts';
import { Mover } from './mover.ts';

const seconds = (value: string): number => {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0.2 || parsed > 600) throw new InvalidArgumentError('a number of seconds between 0.2 and 600');
  return parsed;
};

interface Options {
  namespace: string;
  tenantsNamespace: string;
  interval: number;
  logLevel: string;
}

async function runMover(options: Options): Promise<void> {
  const log = createLogger(options.logLevel).child({ component: 'eva-mover' });
  const mover = new Mover({ hub: new Kube(loadKubeConfig(), 'eva-mover'), namespace: options.namespace, tenantsNamespace: options.tenantsNamespace, log });
  const stopping = new AbortController();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => { stopping.abort(); });
  log.info({ namespace: options.namespace, tenantsNamespace: options.tenantsNamespace, intervalSeconds: options.interval }, 'mover started');
  while (!stopping.signal.aborted) {
    await mover.pass().catch((err: unknown) => { log.error({ err }, 'mover pass failed; retried on the next one'); });
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, options.interval * 1000);
      stopping.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  log.info('mover stopped');
}

export function moverCommand(): Command {
  return new Command('mover')
    .description("run on a multi-cluster hub: moves tenants whose placement changed to another member, with their data (docs/multi-cluster.md)")
    .option('--namespace <namespace>', "the mover's namespace: the members' access Secrets and the move records", 'eva-hub')
    .option('--tenants-namespace <namespace>', "where the portal writes the tenants' Placements", 'eva-tenants')
    .option('--interval <seconds>', 'seconds between passes', seconds, 2)
    .option('--log-level <level>', 'debug, info, warn or error', 'info')
    .action(runMover);
}
