/**
 * `eva-operator preflight`: what the cluster and NATS must offer before the operator is installed, as a
 * table of checks (exit 0: none failed, warnings allowed; 1: a check failed; 2: a usage error). With
 * no flags it checks the operator's own settings from the environment (the chart's `helm test` pod);
 * each flag stands for one of those variables and is read by the same reader. The cluster and NATS
 * code is imported when the command runs, so the other commands start fast.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError, preflightSettingsOf } from '../config.ts';
import { OUTPUT_FORMATS, type OutputFormat, render } from './render.ts';
import { exitCodeOf } from './result.ts';

/** Each flag, the operator variable it sets, and the variable it replaces (the TLS settings exclude each other). */
const FLAGS = [
  { flag: '--nats-url <url>', key: 'natsUrl', variable: 'NATS_URL', about: 'NATS, without credentials (chart value nats.url)' },
  { flag: '--nats-creds <file>', key: 'natsCreds', variable: 'NATS_SYSTEM_CREDS_FILE', about: "the system user's credentials: system.creds of `eva-operator nats-bootstrap`" },
  { flag: '--ingress-class <name>', key: 'ingressClass', variable: 'INGRESS_CLASS', about: 'the IngressClass of tenant Ingresses (ingressClass)' },
  {
    flag: '--ingress-namespaces <selector>',
    key: 'ingressNamespaces',
    variable: 'NETWORK_POLICY_INGRESS_NAMESPACES',
    about: "the ingress controller's namespaces as a label selector (networkPolicy.ingressNamespaces), e.g. kubernetes.io/metadata.name=traefik",
  },
  { flag: '--tls-issuer <name>', key: 'tlsIssuer', variable: 'INGRESS_TLS_ISSUER', replaces: 'INGRESS_TLS_SECRET', about: 'a cert-manager ClusterIssuer (ingressTls.clusterIssuer)' },
  { flag: '--tls-secret <namespace/name>', key: 'tlsSecret', variable: 'INGRESS_TLS_SECRET', replaces: 'INGRESS_TLS_ISSUER', about: 'a kubernetes.io/tls Secret (ingressTls.secret)' },
] as const;

type FlagKey = (typeof FLAGS)[number]['key'];
type Options = Partial<Record<FlagKey, string>> & { output: OutputFormat; timeout: number };

/** The flags given, as the variables they stand for; a TLS flag also unsets the other TLS variable. */
function overridesOf(options: Options): Record<string, string | undefined> {
  const given = FLAGS.filter((f) => options[f.key] !== undefined);
  const replaced = given.flatMap((f) => ('replaces' in f ? [[f.replaces, undefined] as const] : []));
  return { ...Object.fromEntries(replaced), ...Object.fromEntries(given.map((f) => [f.variable, options[f.key]])) };
}

/** A problem about a variable a flag set names the flag too. */
function withFlags(problem: string, options: Options): string {
  const flag = FLAGS.find((f) => options[f.key] !== undefined && problem.startsWith(f.variable));
  return flag ? `${flag.flag.split(' ')[0] ?? ''} (${flag.variable})${problem.slice(flag.variable.length)}` : problem;
}

function usageError(message: string): never {
  process.stderr.write(`eva-operator preflight: ${message}\n`);
  process.exit(2);
}

function seconds(raw: string): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 300) throw new InvalidArgumentError('an integer from 1 to 300');
  return value;
}

async function run(options: Options): Promise<void> {
  let settings;
  try {
    settings = preflightSettingsOf(overridesOf(options));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    usageError(`invalid settings:\n${err.problems.map((p) => `  - ${withFlags(p, options)}`).join('\n')}`);
  }
  const { runPreflight } = await import('./preflight.ts');
  const results = await runPreflight(settings, options.timeout * 1000);
  process.stdout.write(render(results, options.output));
  // Exit now: a probe that timed out may still hold a socket open.
  process.exit(exitCodeOf(results));
}

export function preflightCommand(): Command {
  const command = new Command('preflight').description('check that the cluster and NATS are ready for eva-operator (run before installing; `helm test` runs it in the cluster)');
  for (const f of FLAGS) command.option(f.flag, `${f.about} [${f.variable}]`);
  command
    .addOption(new Option('--output <format>', 'table or json').choices(OUTPUT_FORMATS).default('table'))
    .option('--timeout <seconds>', 'how long each check may take', seconds, 10)
    // Usage errors exit 2, as the other commands' do; help exits 0.
    .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2))
    .action(run);
  return command;
}
