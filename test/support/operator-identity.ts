/**
 * The identity the tests' operators run as: the operator chart's own ServiceAccount, held to the
 * chart's RBAC (templates/rbac.yaml) and write-confinement admission policy
 * (templates/admission-policy.yaml), rendered by the pinned helm from charts/eva-operator and
 * applied server-side, with a ServiceAccount token from the TokenRequest API in a kubeconfig of the
 * test run's own (0600, in a temporary folder; same API server, same CA). A real token, not
 * impersonation: the operator and the helm processes it runs (they inherit KUBECONFIG) are that
 * ServiceAccount, so every suite that runs an operator proves the chart's RBAC and policy enough for
 * what it exercises. The tests keep the admin kubeconfig for their own kubectl calls.
 *
 * The default export is the `cluster` project's second globalSetup (after cluster-setup.ts): one
 * identity for the run, exported to the test workers as EVA_OPERATOR_KUBECONFIG and
 * EVA_OPERATOR_NAMESPACE, which test/support/operator.ts's startOperator uses by default. At the end
 * of the run it fails if the API server refused any write of that identity (the audit log): a
 * refusal the tests did not notice is still a permission the chart lacks or a write the operator
 * should not make.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { auditOffset, auditWritesSince } from './audit.ts';
import { type CommandResult, eventually, kubectl, kubectlOk, requiredEnv } from './kubectl.ts';
import { registerRunCheck } from './run-checks.ts';
import { repoRoot } from './tools.ts';

/** One install of the chart's confinement: its release (names the ServiceAccount and the policy) and release namespace. */
export interface ChartRelease {
  readonly release: string;
  readonly namespace: string;
}

/** The suite's operators: a release namespace of their own (Leases and NATS account keys go there; Events in `default`). */
export const SUITE_OPERATOR: ChartRelease = { release: 'eva-e2e', namespace: 'eva-e2e-operator' };

/** What the chart names the ServiceAccount, the ClusterRole and the policy after (templates/_helpers.tpl, fullname). */
export const fullnameOf = ({ release }: ChartRelease): string => (release.includes('eva-operator') ? release : `${release}-eva-operator`);
export const serviceAccountUser = (r: ChartRelease): string => `system:serviceaccount:${r.namespace}:${fullnameOf(r)}`;
export const policyOf = (r: ChartRelease): string => `${fullnameOf(r).slice(0, 44).replace(/-$/, '')}-write-confinement`;
/** How the API server says that `policy` refused a write. */
export const policyRefusal = (policy: string): string => `ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: eva-operator confinement`;

/**
 * The chart's `templates` (file names without .yaml) exactly as `helm template` renders them for the
 * release (the NATS address only satisfies the chart's required values).
 */
export function renderTemplates(r: ChartRelease, templates: readonly string[], values: readonly string[] = []): string {
  return renderChart('charts/eva-operator', r, ['--set', 'nats.url=nats://nats.example:4222', ...values, ...templates.flatMap((t) => ['--show-only', `templates/${t}.yaml`])]);
}

/** `helm template` of this checkout's `chart` (a path from the checkout's root) for release `r`, with `args`. */
export function renderChart(chart: string, r: ChartRelease, args: readonly string[]): string {
  const result = spawnSync(join(requiredEnv('EVA_TOOLS_DIR'), 'helm'), ['template', r.release, join(repoRoot, chart), '--namespace', r.namespace, ...args], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`helm template failed: ${result.stderr}`);
  return result.stdout;
}

/** The chart's ServiceAccount, RBAC and write-confinement policy exactly as `helm template` renders them. */
export const renderConfinement = (r: ChartRelease, values: readonly string[] = []): string => renderTemplates(r, ['serviceaccount', 'rbac', 'admission-policy'], values);

/** A ServiceAccount by namespace and name. */
export interface ServiceAccountRef {
  readonly namespace: string;
  readonly name: string;
}

/** The release's ServiceAccount (the chart names it after the release). */
export const chartServiceAccount = (r: ChartRelease): ServiceAccountRef => ({ namespace: r.namespace, name: fullnameOf(r) });

/** A kubeconfig authenticating as `account` (a bound token) on the plane of $KUBECONFIG, e.g. for the operator and its helm processes. */
export function serviceAccountKubeconfig(file: string, account: ServiceAccountRef, duration = '1h'): string {
  const admin = JSON.parse(kubectlOk(['config', 'view', '--raw', '--minify', '-o', 'json'])) as {
    clusters: { cluster: { server: string; 'certificate-authority'?: string; 'certificate-authority-data'?: string } }[];
  };
  const cluster = admin.clusters[0]?.cluster;
  if (!cluster) throw new Error('no cluster in the admin kubeconfig');
  const serviceAccount = account.name;
  const token = kubectlOk(['create', 'token', serviceAccount, '-n', account.namespace, '--duration', duration]).trim();
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster }],
    users: [{ name: serviceAccount, user: { token } }],
    contexts: [{ name: 'sa', context: { cluster: 'local', user: serviceAccount, namespace: account.namespace } }],
    'current-context': 'sa',
  };
  writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  return file;
}

/**
 * Until the API server's policy informer shows `policy` in force (refused) or gone (allowed) for the
 * writes of `identity` (kubectl arguments: `--as ...` or `--kubeconfig ...`); the policy is not in
 * force at the moment it is written. The probe: a ConfigMap in kube-system, a server-side dry run.
 */
export async function untilConfinement(identity: readonly string[], policy: string, inForce: boolean, timeoutMs = 30_000): Promise<boolean> {
  const probe = (): boolean => {
    const result: CommandResult = kubectl([...identity, 'create', 'configmap', 'confinement-probe', '-n', 'kube-system', '--dry-run=server']);
    return inForce ? result.stderr.includes(policyRefusal(policy)) : result.status === 0;
  };
  return eventually(probe, timeoutMs, 200);
}

/** The identity made: a kubeconfig as the release's ServiceAccount and its release namespace (the operator's POD_NAMESPACE). */
export interface OperatorIdentity {
  readonly kubeconfig: string;
  readonly namespace: string;
  /** The objects applied (to delete them again). */
  readonly rendered: string;
}

/**
 * Applies the release's namespace and confinement (idempotent: server-side apply), writes a token
 * kubeconfig into `dir` and returns once the token authenticates as the ServiceAccount and the
 * policy refuses its writes outside the places the operator needs.
 */
export async function confinedIdentity(r: ChartRelease, dir: string, duration = '1h'): Promise<OperatorIdentity> {
  const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: r.namespace } };
  const rendered = renderConfinement(r);
  // YAML throughout: kubectl before 1.3x reads a stream that starts with JSON as JSON only.
  kubectlOk(['apply', '--server-side', '--force-conflicts', '--field-manager', 'eva-tests', '-f', '-'], `${stringify(namespace)}---\n${rendered}`);
  const kubeconfig = serviceAccountKubeconfig(join(dir, `${r.release}.kubeconfig`), chartServiceAccount(r), duration);
  const user = kubectlOk(['--kubeconfig', kubeconfig, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
  if (user !== serviceAccountUser(r)) throw new Error(`the token authenticates as ${user}, not ${serviceAccountUser(r)}`);
  if (!(await untilConfinement(['--kubeconfig', kubeconfig], policyOf(r), true))) throw new Error(`the admission policy ${policyOf(r)} did not come into force`);
  return { kubeconfig, namespace: r.namespace, rendered };
}

/** What startOperator gives the operator unless told otherwise: the suite's confined identity. */
export function suiteOperatorEnv(): { KUBECONFIG: string; POD_NAMESPACE: string } {
  return { KUBECONFIG: requiredEnv('EVA_OPERATOR_KUBECONFIG'), POD_NAMESPACE: requiredEnv('EVA_OPERATOR_NAMESPACE') };
}

/** The suite operators' release namespace: their Leases and the NATS account key Secrets. */
export const operatorNamespace = (): string => requiredEnv('EVA_OPERATOR_NAMESPACE');

/** The writes of `user` the API server refused since `offset`, one line each (Leases and Events are not audited). */
export function refusedWritesSince(offset: number, user: string, log?: string): string[] {
  return auditWritesSince(offset, log)
    .filter((e) => e.user?.username === user && e.responseStatus?.code === 403)
    .map((e) => `${e.verb} ${e.requestURI ?? ''} (${e.userAgent ?? '?'})`);
}

export default async function setup(): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), 'eva-operator-identity-'));
  // Long enough for any run of the suite; the file goes with the run.
  const identity = await confinedIdentity(SUITE_OPERATOR, dir, '12h');
  process.env['EVA_OPERATOR_KUBECONFIG'] = identity.kubeconfig;
  process.env['EVA_OPERATOR_NAMESPACE'] = identity.namespace;
  const user = serviceAccountUser(SUITE_OPERATOR);
  const since = auditOffset();
  console.info(`[operator-identity] the tests' operators run as ${user} under the chart's RBAC and policy ${policyOf(SUITE_OPERATOR)}`);
  const refusedWrites = (): string[] => refusedWritesSince(since, user);
  // Before the closing line (the summary reporter runs it), which then counts each refusal as a failure.
  registerRunCheck(() => {
    const refused = refusedWrites();
    console.info(`[operator-identity] writes of ${user} refused in this run: ${String(refused.length)}`);
    return refused.map((write) => `the API server refused a write of the tests' operators (chart RBAC or admission policy): ${write}`);
  });
  return () => {
    rmSync(dir, { recursive: true, force: true });
    // The exit status too: a refusal fails the run even where no summary reporter runs.
    const refused = refusedWrites();
    if (refused.length > 0) throw new Error(`the API server refused writes of the tests' operators:\n${refused.slice(0, 50).join('\n')}`);
  };
}
