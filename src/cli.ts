#!/usr/bin/env node
/**
 * The `eva-operator` command.
 *   eva-operator [run]    run the operator (configuration from the environment; see docs/operator.md)
 *   eva-operator crd      print the EvaTenant CRD (generated from the TypeScript schema)
 *   eva-operator version  print the operator version
 *   eva-operator nats-bootstrap  generate the NATS operator, system account and the operator's Secret
 *   eva-operator preflight  check the cluster and NATS before installing (src/preflight/; the chart's `helm test`)
 *   eva-operator hub    on a multi-cluster hub: tenants' status onto their works; moves with their data (src/hub/)
 * Script helpers, hidden from --help (they are for scripts/, e.g. scripts/lib/eva-cli.sh, not for users):
 *   eva-operator images | semver | tenant-manifest | manifests | release ...  format logic the scripts call (src/script-commands/commands.ts)
 * Day-2 commands for users are the kubectl plugin kubectl-eva (src/kubectl-eva/, docs/cli.md).
 * The operator, the NATS bootstrap and the preflight's probes are imported when their command runs, so the small commands
 * scripts call start fast.
 */
import { Command } from 'commander';
import { renderCrdYaml } from './api/crd.ts';
import { ConfigError, loadConfig, operatorVersionOf } from './config.ts';
import { createLogger } from './log.ts';
import { preflightCommand } from './preflight/command.ts';
import { hubCommand } from './hub/command.ts';
import { releaseCommands } from './script-commands/commands.ts';

async function run(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`eva-operator: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  const { startOperator } = await import('./operator.ts');
  const operator = await startOperator(config, log).catch((err: unknown) => {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`eva-operator: ${err.message}\n`);
    process.exit(2);
  });
  void operator.lostLeadership.then(() => {
    log.error('lost leadership; exiting so a fresh process can stand again');
    process.exit(1);
  });
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'signal received');
    operator.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => {
    stop('SIGTERM');
  });
  process.on('SIGINT', () => {
    stop('SIGINT');
  });
}

const program = new Command('eva-operator').description('Provisions one isolated tenant per EvaTenant.');
program
  .command('run', { isDefault: true })
  .description('run the operator (configured by environment variables)')
  .action(run);
program
  .command('crd')
  .description('print the EvaTenant CustomResourceDefinition')
  .action(() => {
    process.stdout.write(renderCrdYaml());
  });
program
  .command('version')
  .description('print the operator version (OPERATOR_VERSION, else the version it was built as)')
  .action(() => {
    process.stdout.write(`${operatorVersionOf()}\n`);
  });

program
  .command('nats-bootstrap')
  .description('generate the keys that put NATS in operator mode for eva-operator (no nsc needed)')
  .option('--out <dir>', 'folder to write into (created with mode 0700)', 'eva-nats-bootstrap')
  .option('--namespace <namespace>', "the operator's namespace, for its Secret", 'eva-system')
  .option('--secret-name <name>', "the name of the operator's NATS Secret", 'eva-operator-nats')
  .option('--operator-name <name>', 'the NATS operator name', 'eva')
  .option('--force', 'replace an earlier bootstrap in the folder (its accounts are then orphaned)', false)
  .action(async (options: { out: string; namespace: string; secretName: string; operatorName: string; force: boolean }) => {
    const { bootstrap, BootstrapRefused, summary } = await import('./nats-bootstrap.ts');
    try {
      process.stdout.write(summary(await bootstrap(options), options));
    } catch (err) {
      if (!(err instanceof BootstrapRefused)) throw err;
      process.stderr.write(`eva-operator nats-bootstrap: ${err.message}\n`);
      process.exit(1);
    }
  });

program.addCommand(preflightCommand());
program.addCommand(hubCommand());
for (const command of releaseCommands()) program.addCommand(command, { hidden: true });

await program.parseAsync();
