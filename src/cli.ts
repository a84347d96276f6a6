#!/usr/bin/env node
/**
 * The `eva-operator` command.
 *   eva-operator [run]    run the operator (configuration from the environment; see README)
 *   eva-operator crd      print the EvaTenant CRD (generated from the TypeScript schema)
 *   eva-operator version  print the operator version
 */
import { Command } from 'commander';
import { renderCrdYaml } from './api/crd.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './log.ts';
import { startOperator } from './operator.ts';

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
  const operator = await startOperator(config, log);
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
  .description('print the operator version (OPERATOR_VERSION)')
  .action(() => {
    process.stdout.write(`${process.env['OPERATOR_VERSION'] ?? 'unknown'}\n`);
  });

await program.parseAsync();
