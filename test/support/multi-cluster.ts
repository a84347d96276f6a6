/**
 * Several local control planes (scripts/dev-cluster.sh, each with its own NATS) joined by Open Cluster
 * Management (test/tools/build-ocm.sh): a hub running the engine's hub controllers, and members
 * running its agents, registered and accepted as `clusteradm join` and `clusteradm accept` do. The
 * engine runs as processes against the planes (there are no real nodes here), with the flags its
 * Deployments use. Everything listens on and targets 127.0.0.1 only.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkout, clusterUp, portOffset, removeCluster } from './cluster-setup.ts';
import { killOnExit, stopChild } from './child-processes.ts';
import { eventually } from './kubectl.ts';
import { type OperatorProcess, startOperator } from './operator.ts';
import { confinedIdentity, refusedWritesSince, renderTemplates, serviceAccountUser, SUITE_OPERATOR } from './operator-identity.ts';
import { auditOffset } from './audit.ts';
import { type ManagedCluster, memberAvailability, type MemberAvailability, type WorkExecutor } from '../../src/multicluster/manifest-work.ts';
import { freePort } from './ports.ts';
import { binDir, repoRoot } from './tools.ts';

/** The agents' namespace on a member (the klusterlet's default). */
const AGENT_NAMESPACE = 'open-cluster-management-agent';
const HUB_NAMESPACE = 'open-cluster-management-hub';

/** One local control plane: its kubeconfig and NATS, as `dev-cluster.sh env` tells them. */
export interface Plane {
  readonly name: string;
  readonly dir: string;
  readonly env: Readonly<Record<'KUBECONFIG' | 'NATS_URL' | 'NATS_SYSTEM_CREDS_FILE' | 'NATS_OPERATOR_SIGNING_KEY_FILE', string>>;
  /** kubectl against this plane as its admin; throws with stderr on failure. */
  readonly kubectl: Kubectl;
}

/**
 * Brings up (or reuses) plane `index` (0-5) of this checkout's multi-cluster planes: a state folder and
 * NATS ports of its own (2000-7999 and 8000-13999, six per checkout: three for the test, three for the
 * benchmark), clear of the suite's plane, of kwokctl's (32767 down) and of the kernel's ephemeral
 * range (32768-60999), where any outgoing connection may hold the port when NATS binds it (seen: a
 * build beside the test took 49630).
 */
export function planeUp(name: string, index: number): Plane {
  const dir = join(process.env['XDG_STATE_HOME'] ?? join(homedir(), '.local/state'), `eva-operator/multi-cluster-${checkout}-${name}`);
  const vars = clusterUp({
    EVA_DEV_CLUSTER_DIR: dir,
    EVA_NATS_PORT: String(2000 + portOffset * 6 + index),
    EVA_NATS_MONITOR_PORT: String(8000 + portOffset * 6 + index),
    EVA_CONTROL_PLANE: 'control-plane',
    EVA_DEV_CLUSTER_RECREATE: 'changed',
  });
  const variable = (name: string): string => vars[name] ?? '';
  const kubeconfig = variable('KUBECONFIG');
  return {
    name,
    dir,
    env: { KUBECONFIG: kubeconfig, NATS_URL: variable('NATS_URL'), NATS_SYSTEM_CREDS_FILE: variable('NATS_SYSTEM_CREDS_FILE'), NATS_OPERATOR_SIGNING_KEY_FILE: variable('NATS_OPERATOR_SIGNING_KEY_FILE') },
    kubectl: kubectlAs(kubeconfig),
  };
}

/** kubectl on a plane as one identity; throws with stderr on failure. */
export type Kubectl = (args: readonly string[], input?: string) => string;

/** kubectl with `kubeconfig`. A list of a hundred works is several MiB (the default buffer is 1 MiB). */
export const kubectlAs =
  (kubeconfig: string): Kubectl =>
  (args, input) =>
    execFileSync(join(binDir(), 'kubectl'), ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'], maxBuffer: 256 * 1024 * 1024 });

/** Stops the plane and removes its state. */
export function planeDown(plane: Plane): void {
  removeCluster(plane.dir);
}

/** Where test/tools/build-ocm.sh put the engine (built by scripts/test.sh's install step; here if cold). */
export function ocmDir(): string {
  return execFileSync('bash', [join(repoRoot, 'test/tools/build-ocm.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** The engine's processes of one run, each logging to a file in `logs`. */
class EngineProcesses {
  readonly logs = mkdtempSync(join(tmpdir(), 'eva-ocm-'));
  private readonly children: ChildProcess[] = [];
  private readonly binaries: string;

  constructor(binaries: string) {
    this.binaries = binaries;
  }

  /** `binary` with `args` and a loopback health port of its own (the engine serves one per process). */
  async start(log: string, binary: 'registration' | 'work' | 'placement', args: readonly string[]): Promise<ChildProcess> {
    const listen = `127.0.0.1:${String(await freePort())}`;
    const out = openSync(join(this.logs, `${log}.log`), 'a');
    const child = spawn(join(this.binaries, 'bin', binary), [...args, '--disable-leader-election', '--listen', listen], { stdio: ['ignore', out, out] });
    killOnExit(child);
    this.children.push(child);
    return child;
  }

  log(name: string): string {
    return readFileSync(join(this.logs, `${name}.log`), 'utf8');
  }

  /** Stops `child`, or all of them and removes the logs (with the members' hub credentials). */
  async stop(child?: ChildProcess): Promise<void> {
    const stopping = child === undefined ? this.children.splice(0) : this.children.splice(this.children.indexOf(child), 1);
    await Promise.all(stopping.map((c) => stopChild(c, 5_000)));
    if (child === undefined) rmSync(this.logs, { recursive: true, force: true });
  }
}

/** A member as the hub knows it: its plane, its agents and its ManagedCluster's name. */
export interface Member {
  readonly cluster: string;
  readonly plane: Plane;
  readonly agents: readonly ChildProcess[];
}

const condition = (plane: Plane, kind: string, name: string, type: string): string =>
  plane.kubectl(['get', kind, name, '-o', `jsonpath={.status.conditions[?(@.type=="${type}")].status}`]);

/** The hub: the engine's CRDs and hub controllers (registration, work, placement) on `plane`. */
export class OcmHub {
  readonly plane: Plane;
  readonly processes: EngineProcesses;
  private readonly engine: string;

  private constructor(plane: Plane, engine: string) {
    this.plane = plane;
    this.engine = engine;
    this.processes = new EngineProcesses(engine);
  }

  static async start(plane: Plane): Promise<OcmHub> {
    const hub = new OcmHub(plane, ocmDir());
    plane.kubectl(['apply', '--server-side', '-f', join(hub.engine, 'crds/hub')]);
    plane.kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: HUB_NAMESPACE } }));
    const common = ['--kubeconfig', plane.env.KUBECONFIG, '--namespace', HUB_NAMESPACE];
    await hub.processes.start('hub-registration', 'registration', ['controller', ...common]);
    await hub.processes.start('hub-work', 'work', ['manager', ...common]);
    await hub.processes.start('hub-placement', 'placement', ['controller', ...common]);
    return hub;
  }

  /**
   * Registers `plane` as cluster `cluster`: the agents bootstrap with the hub's kubeconfig (a
   * bootstrap token's in a real install), the hub's admin accepts it (approves its certificate request
   * and sets hubAcceptsClient, as `clusteradm accept`), with `labels` and a lease of `leaseSeconds`
   * (the hub calls the member unknown after five missed renewals).
   */
  async join(plane: Plane, cluster: string, labels: Record<string, string>, leaseSeconds = 4): Promise<Member> {
    plane.kubectl(['apply', '--server-side', '-f', join(this.engine, 'crds/member')]);
    plane.kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: AGENT_NAMESPACE } }));
    const hubKubeconfigDir = join(this.processes.logs, `${cluster}-hub-kubeconfig`);
    mkdirSync(hubKubeconfigDir, { recursive: true });
    const common = ['--kubeconfig', plane.env.KUBECONFIG, '--namespace', AGENT_NAMESPACE, '--spoke-cluster-name', cluster, '--hub-kubeconfig-dir', hubKubeconfigDir];
    const registration = await this.processes.start(`${cluster}-registration`, 'registration', ['agent', ...common, '--bootstrap-kubeconfig', this.plane.env.KUBECONFIG]);
    await this.accept(cluster, labels, leaseSeconds);
    const hubKubeconfig = join(hubKubeconfigDir, 'kubeconfig');
    if (!(await eventually(() => existsSync(hubKubeconfig), 60_000))) throw new Error(`${cluster}: the registration agent wrote no hub kubeconfig:\n${this.processes.log(`${cluster}-registration`)}`);
    const work = await this.processes.start(`${cluster}-work`, 'work', ['agent', ...common, '--workload-source-config', hubKubeconfig, '--status-sync-interval', '1s']);
    if (!(await eventually(() => condition(this.plane, 'managedcluster', cluster, 'ManagedClusterConditionAvailable') === 'True', 60_000))) {
      throw new Error(`${cluster} did not become available on the hub:\n${this.processes.log(`${cluster}-registration`)}`);
    }
    return { cluster, plane, agents: [registration, work] };
  }

  private async accept(cluster: string, labels: Record<string, string>, leaseSeconds: number): Promise<void> {
    const selector = `open-cluster-management.io/cluster-name=${cluster}`;
    const requested = (): boolean => this.plane.kubectl(['get', 'csr', '-l', selector, '-o', 'name']).trim() !== '';
    const joined = async (): Promise<boolean> => (await eventually(requested, 60_000)) && (await eventually(() => this.plane.kubectl(['get', 'managedcluster', cluster, '--ignore-not-found', '-o', 'name']).trim() !== '', 60_000));
    if (!(await joined())) throw new Error(`${cluster} asked the hub for nothing:\n${this.processes.log(`${cluster}-registration`)}`);
    for (const csr of this.plane.kubectl(['get', 'csr', '-l', selector, '-o', 'name']).trim().split('\n')) this.plane.kubectl(['certificate', 'approve', csr]);
    this.plane.kubectl(['patch', 'managedcluster', cluster, '--type', 'merge', '-p', JSON.stringify({ metadata: { labels }, spec: { hubAcceptsClient: true, leaseDurationSeconds: leaseSeconds } })]);
  }

  /** Stops `member`'s agents: the hub hears nothing more from it, as when the member or its network is down. */
  async disconnect(member: Member): Promise<void> {
    for (const agent of member.agents) await this.processes.stop(agent);
  }

  /** The engine's word on `cluster`: its ManagedClusterConditionAvailable's status and since when. */
  availability(cluster: string): MemberAvailability {
    return memberAvailability(JSON.parse(this.plane.kubectl(['get', 'managedcluster', cluster, '-o', 'json'])) as ManagedCluster);
  }

  stop(): Promise<void> {
    return this.processes.stop();
  }
}

/**
 * Runs `fn` with this process's KUBECONFIG on `plane` (the suite's helpers, e.g. confinedIdentity,
 * read it), then puts it back: a test file runs one thing at a time.
 */
export async function onPlane<T>(plane: Plane, fn: () => Promise<T>): Promise<T> {
  const suitePlane = process.env['KUBECONFIG'];
  process.env['KUBECONFIG'] = plane.env.KUBECONFIG;
  try {
    return await fn();
  } finally {
    process.env['KUBECONFIG'] = suitePlane;
  }
}

/** The members' executor: the operator chart's hubExecutor in the suite operators' release namespace. */
export const MEMBER_EXECUTOR: WorkExecutor = { namespace: SUITE_OPERATOR.namespace, name: 'eva-hub-executor' };

/** What the operator chart brings a member before its operator runs: the CRDs, and the executor the hub's works apply as, with the chart's portal role. */
export function installMemberChart(plane: Plane): void {
  plane.kubectl(['apply', '--server-side', '-f', join(repoRoot, 'crds')]);
  const releaseNamespace = JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: SUITE_OPERATOR.namespace } });
  const executor = renderTemplates(SUITE_OPERATOR, ['tenant-roles', 'hub-executor'], ['--set', 'hubExecutor.create=true', '--set', `hubExecutor.name=${MEMBER_EXECUTOR.name}`]);
  plane.kubectl(['apply', '--server-side', '-f', '-'], `${releaseNamespace}\n---\n${executor}`);
}

/** A member's operator, and where the member's audit log stood when it started (its writes come after). */
export interface MemberOperator {
  readonly operator: OperatorProcess;
  readonly auditFrom: number;
}

/**
 * The operator of a member, as the suite's: the chart's ServiceAccount under its RBAC and policy (on
 * that member, its token kubeconfig in the plane's state folder and gone with it; the identity's own
 * refused probes come before `auditFrom`), the member's NATS, the CRDs of this checkout.
 */
export async function startMemberOperator(plane: Plane): Promise<MemberOperator> {
  installMemberChart(plane);
  const identity = await onPlane(plane, () => confinedIdentity(SUITE_OPERATOR, mkdtempSync(join(plane.dir, 'operator-identity-'))));
  const auditFrom = await onPlane(plane, () => Promise.resolve(auditOffset()));
  const operator = startOperator({ ...plane.env, KUBECONFIG: identity.kubeconfig, POD_NAMESPACE: identity.namespace });
  await operator.ready();
  return { operator, auditFrom };
}

/** The writes of the member operators' identity that `plane`'s API server refused since `offset`. */
export function refusedOnPlane(plane: Plane, offset: number): Promise<string[]> {
  return onPlane(plane, () => Promise.resolve(refusedWritesSince(offset, serviceAccountUser(SUITE_OPERATOR))));
}
