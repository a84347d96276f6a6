/**
 * `kubectl eva`: the day-2 operations on EvaTenants that need no checkout, as a kubectl plugin
 * (docs/cli.md). `npm run build:cli` makes it one executable with Node inside (dist/kubectl-eva);
 * `node src/kubectl-eva/main.ts` runs it from the sources.
 *   status NAME                                 phase, owner, conditions with their age, the troubleshooting entry of every reason not True, modules, URL, Events
 *   retained                                    the data decommissions with dataRetention Retain kept (account keys Secrets marked retained)
 *   restore NAME --code CODE --from-uid UID     the EvaTenant that restores retained data
 *   purge CODE --from-uid UID                   restore, then delete with dataRetention Delete, waiting until gone
 *   force NAME --past STEP[,STEP]               annotation force-decommission (platform administrators only)
 *   rotate NAME                                 annotation rotate-nats-credentials
 *   version                                     the version it was built as
 * Exit status: 0 done, 1 refused or failed (the API server's message is printed), 2 a usage error.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { FORCE_DECOMMISSION_ANNOTATION, ROTATE_NATS_CREDENTIALS_ANNOTATION, TIERS } from '../api/constants.ts';
import { Cluster, CommandFailed, type ConnectOptions } from './cluster.ts';
import { ALL_STEPS, forceValue, STEPS, UnknownSteps } from './force.ts';
import { isCapsuleCode, parseTimeout, type RestoreRequest, restoreManifest, restoreOrRefuse, waitUntil } from './restore.ts';
import { renderRetained, retainedData } from './retained.ts';
import { renderStatus, statusView } from './status-view.ts';
import { builtVersion } from './version.ts';

const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

/** Runs an action; a refusal or failure is printed as the API server said it, exit 1. */
const guarded =
  <A extends unknown[]>(action: (...args: A) => Promise<void>) =>
  async (...args: A): Promise<void> => {
    try {
      await action(...args);
    } catch (err) {
      if (!(err instanceof CommandFailed || err instanceof UnknownSteps)) throw err;
      process.stderr.write(`kubectl eva: ${err.message}\n`);
      process.exitCode = 1;
    }
  };

const program = new Command('kubectl eva')
  .description('Day-2 operations on EvaTenants (eva-operator): status explained, retained data, restore, purge, force, rotate.')
  .option('--kubeconfig <file>', 'the kubeconfig to use (default: KUBECONFIG, else ~/.kube/config)')
  .option('--context <name>', 'the kubeconfig context to use')
  .option('--as <user>', 'act as this user, as kubectl --as does (to check what someone else may do)')
  .showHelpAfterError();

const clusterOf = (command: Command): Cluster => new Cluster(command.optsWithGlobals<ConnectOptions>());

const pinned = ({ operatorVersion }: { operatorVersion?: string }): Pick<RestoreRequest, 'operatorVersion'> => (operatorVersion === undefined ? {} : { operatorVersion });
const code = (raw: string): string => {
  if (!isCapsuleCode(raw)) throw new InvalidArgumentError('six uppercase letters, e.g. ACMECO');
  return raw;
};
const tierOption = (): Option => new Option('--tier <tier>', 'the tier of the restored tenant').choices(TIERS).default('Starter');
const pinOption = (): Option => new Option('--operator-version <semver>', 'pin the restored tenant to this operator version (spec.operatorVersion), as tenants are pinned in a blue/green upgrade');

program
  .command('status')
  .description("what a tenant's status says: phase, owner, conditions and their age, the troubleshooting entry of each reason not True, modules, URL, recent Events")
  .argument('<name>', 'the EvaTenant')
  .addOption(new Option('-o, --output <format>', 'text, or json for machines').choices(['text', 'json']).default('text'))
  .action(
    guarded(async (name: string, options: { output: string }, command: Command) => {
      const cluster = clusterOf(command);
      const tenant = await cluster.existingTenant(name);
      const view = statusView(tenant, await cluster.events(tenant), new Date());
      process.stdout.write(options.output === 'json' ? `${JSON.stringify(view, null, 2)}\n` : renderStatus(view));
    }),
  );

program
  .command('retained')
  .description('retained tenant data: the account keys Secrets marked retained, by capsule code and former uid')
  .option('-n, --namespace <namespace>', "the operator's namespace (where the keys Secrets are)", 'eva-system')
  .addOption(new Option('-o, --output <format>', 'text, or json for machines').choices(['text', 'json']).default('text'))
  .action(
    guarded(async (options: { namespace: string; output: string }, command: Command) => {
      const cluster = clusterOf(command);
      const data = retainedData(await cluster.keysSecrets(options.namespace), await cluster.tenantsByUid());
      process.stdout.write(options.output === 'json' ? `${JSON.stringify(data, null, 2)}\n` : renderRetained(data, new Date()));
    }),
  );

program
  .command('restore')
  .description('create the EvaTenant that takes over retained data (annotation restore-from-uid; platform administrators only)')
  .argument('<name>', 'the new EvaTenant')
  .requiredOption('--code <CODE>', 'the capsule code the data was retained under', code)
  .requiredOption('--from-uid <uid>', 'the uid of the deleted EvaTenant (kubectl eva retained)')
  .addOption(tierOption())
  .addOption(pinOption())
  .action(
    guarded(async (name: string, options: { code: string; fromUid: string; tier: RestoreRequest['tier']; operatorVersion?: string }, command: Command) => {
      const cluster = clusterOf(command);
      const request: RestoreRequest = { name, code: options.code, fromUid: options.fromUid, tier: options.tier, ...pinned(options) };
      await restoreOrRefuse(cluster, request);
      await cluster.apply(restoreManifest(request));
      say(`EvaTenant ${name} applied: capsule code ${request.code}, restoring from uid ${request.fromUid}.`);
      say(`The operator honours it only for data retained by that uid under that code; follow it with: kubectl eva status ${name}`);
    }),
  );

program
  .command('purge')
  .description('delete retained data for good: restore it, wait until Active, delete with dataRetention Delete, wait until gone')
  .argument('<CODE>', 'the capsule code the data was retained under', code)
  .requiredOption('--from-uid <uid>', 'the uid of the deleted EvaTenant (kubectl eva retained)')
  .option('--name <name>', 'the name of the EvaTenant the purge creates (default: the code in lower case)')
  .addOption(tierOption())
  .addOption(pinOption())
  .option('--timeout <duration>', 'how long each wait may take (90s, 10m, 1h)', '15m')
  .action(
    guarded(async (capsule: string, options: { fromUid: string; name?: string; tier: RestoreRequest['tier']; operatorVersion?: string; timeout: string }, command: Command) => {
      const cluster = clusterOf(command);
      const timeoutMs = parseTimeout(options.timeout);
      const request: RestoreRequest = { name: options.name ?? capsule.toLowerCase(), code: capsule, fromUid: options.fromUid, tier: options.tier, ...pinned(options), dataRetention: 'Delete' };
      const waiting = { read: () => cluster.tenant(request.name), say, timeoutMs };
      await restoreOrRefuse(cluster, request);
      say(`restoring ${capsule} from uid ${request.fromUid} as EvaTenant ${request.name} (dataRetention Delete)`);
      await cluster.apply(restoreManifest(request));
      await waitUntil(`EvaTenant ${request.name} Active`, (t) => t?.status?.phase === 'Active', waiting);
      say(`deleting EvaTenant ${request.name}: the decommission removes every trace and verifies it`);
      await cluster.deleteTenant(request.name);
      await waitUntil(`EvaTenant ${request.name} gone`, (t) => t === undefined, waiting);
      say(`purged: ${capsule} (retained from uid ${request.fromUid}) is gone`);
    }),
  );

program
  .command('force')
  .description('force a decommission past steps that can never finish (annotation force-decommission; platform administrators only)')
  .argument('<name>', 'the EvaTenant being decommissioned')
  .requiredOption('--past <steps>', `comma-separated steps, or ${ALL_STEPS}: ${STEPS.join(', ')}`)
  .action(
    guarded(async (name: string, options: { past: string }, command: Command) => {
      forceValue(options.past, undefined); // a misspelt step is refused before anything is read
      const cluster = clusterOf(command);
      const tenant = await cluster.existingTenant(name);
      const current = tenant.metadata.annotations?.[FORCE_DECOMMISSION_ANNOTATION];
      const value = forceValue(options.past, current);
      await cluster.annotate(name, { [FORCE_DECOMMISSION_ANNOTATION]: value });
      say(`EvaTenant ${name}: ${FORCE_DECOMMISSION_ANNOTATION}=${value}${current === undefined || current === value ? '' : ` (was ${current})`}`);
      const decommissioning = tenant.metadata.deletionTimestamp !== undefined || tenant.spec.lifecycle === 'Decommissioned';
      if (!decommissioning) say('It is not being decommissioned: the annotation takes effect when it is (kubectl delete evt, or lifecycle Decommissioned).');
    }),
  );

program
  .command('rotate')
  .description("rotate the tenant's NATS credentials (annotation rotate-nats-credentials set to the current time)")
  .argument('<name>', 'the EvaTenant')
  .action(
    guarded(async (name: string, _options: unknown, command: Command) => {
      const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      await clusterOf(command).annotate(name, { [ROTATE_NATS_CREDENTIALS_ANNOTATION]: at });
      say(`EvaTenant ${name}: ${ROTATE_NATS_CREDENTIALS_ANNOTATION}=${at}; new credentials, the modules rolled once, then the old user revoked`);
    }),
  );

program
  .command('version')
  .description('print the version kubectl-eva was built as')
  .action(() => {
    say(builtVersion());
  });

program.parseAsync().catch((err: unknown) => {
  process.stderr.write(`kubectl eva: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
