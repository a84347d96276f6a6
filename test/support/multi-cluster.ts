/**
 * Clusters joined by Open Cluster Management (test/tools/build-ocm.sh): a hub (a local control plane,
 * scripts/dev-cluster.sh) running the engine's hub controllers, and members running its agents,
 * registered and accepted as `clusteradm join` and `clusteradm accept` do. The e2e's members are real
 * nodes (scripts/lib/real-node.sh: kubelet, containerd, their own NATS), the operator chart installed
 * on each by helm and running as a pod there; the benchmark's are control planes with the operator as
 * a process. The engine runs as processes on the host with the flags its Deployments use, reaching a
 * real node's API server through the loopback port `real-node.sh publish` gives it. Everything on the
 * host listens on and targets 127.0.0.1 only.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkout, clusterUp, portOffset, removeCluster } from './cluster-setup.ts';
import { killOnExit, stopChild } from './child-processes.ts';
import { eventually } from './kubectl.ts';
import { fullnameOf, refusedWritesSince, renderTemplates, serviceAccountUser, SUITE_OPERATOR } from './operator-identity.ts';
import { auditLogPath, auditOffset } from './audit.ts';
import { NODE_ADDRESS, RealNode } from './real-node.ts';
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
  /** Its API server's audit log (scripts/dev-cluster/audit-policy.yaml). */
  readonly auditLog: string;
  /** Its NATS as the other members' operators reach it (where a moved tenant's data is copied from). */
  readonly natsForPeers: string;
}

const stateDir = (name: string): string => join(process.env['XDG_STATE_HOME'] ?? join(homedir(), '.local/state'), `eva-operator/multi-cluster-${checkout}-${name}`);

/**
 * Brings up (or reuses) plane `index` (0-5) of this checkout's multi-cluster planes: a state folder and
 * NATS ports of its own (2000-7999 and 8000-13999, six per checkout: three for the test, three for the
 * benchmark), clear of the suite's plane, of kwokctl's (32767 down) and of the kernel's ephemeral
 * range (32768-60999), where any outgoing connection may hold the port when NATS binds it (seen: a
 * build beside the test took 49630).
 */
export function planeUp(name: string, index: number): Plane {
  const dir = stateDir(name);
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
    auditLog: auditLogPath(kubeconfig),
    natsForPeers: variable('NATS_URL'),
  };
}

/** A member cluster on a real node of its own; the host reaches its API server and NATS on loopback ports. */
export interface MemberPlane extends Plane {
  readonly node: RealNode;
  /** The member's network cut off from the host (`real-node.sh unpublish`): the hub's engine and mover lose it, as when its network is down, while it runs on. */
  cutOff(): Promise<void>;
  /** Reachable from the host again, at the same ports. */
  reconnect(): Promise<void>;
}

/**
 * A fresh real node as member `name` (its state folder node-<name>), published on the host (`real-node.sh
 * publish`) at the ports plane `index` would have had for NATS and its monitor (planeUp): NATS on the
 * first, the API server on the second. Its NATS answers inside the other members' nodes at port
 * 4300 + `index` of their node address (peerMembers). Stages' seconds in `times`.
 */
export async function memberUp(name: string, index: number, times: Record<string, number> = {}): Promise<MemberPlane> {
  const dir = stateDir(`node-${name}`);
  const node = new RealNode(dir);
  const [nats, api] = [2000 + portOffset * 6 + index, 8000 + portOffset * 6 + index];
  const publish = async (): Promise<void> => {
    await node.script(['publish', String(api), String(nats)], 60_000);
  };
  try {
    await node.fresh(times);
    await publish();
  } catch (error) {
    await node.script(['down'], 120_000); // a half-started node is nobody's to stop otherwise
    throw error;
  }
  const kubeconfig = join(dir, 'host.kubeconfig');
  return {
    name,
    dir,
    node,
    env: { KUBECONFIG: kubeconfig, NATS_URL: `nats://127.0.0.1:${String(nats)}`, NATS_SYSTEM_CREDS_FILE: join(dir, 'nats-auth/system.creds'), NATS_OPERATOR_SIGNING_KEY_FILE: join(dir, 'nats-auth/operator-signing-key.nk') },
    kubectl: kubectlAs(kubeconfig),
    auditLog: join(dir, 'logs/audit.log'),
    natsForPeers: `nats://${NODE_ADDRESS}:${String(4300 + index)}`,
    cutOff: async () => {
      await node.script(['unpublish'], 60_000);
    },
    reconnect: publish,
  };
}

/** Every member's NATS inside every other member's node, where natsForPeers says (`real-node.sh peer`). */
export async function peerMembers(planes: readonly MemberPlane[]): Promise<void> {
  for (const plane of planes) {
    for (const other of planes.filter((p) => p !== plane)) await plane.node.script(['peer', new URL(other.natsForPeers).port, other.dir], 60_000);
  }
}

/** Stops the member's node and removes its state. */
export async function memberDown(plane: MemberPlane): Promise<void> {
  await plane.node.script(['down'], 120_000);
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

/** The chart's values on a member: the hub's executor (docs/multi-cluster.md), tenants served by the node's Traefik. */
const MEMBER_CHART_VALUES = ['hubExecutor.create=true', `hubExecutor.name=${MEMBER_EXECUTOR.name}`, 'ingressClass=traefik', 'networkPolicy.ingressNamespaces=kubernetes.io/metadata.name=ingress-traefik'];

/**
 * The operator chart on a member's node as users install it (`helm install` of charts/eva-operator as
 * SUITE_OPERATOR's release, with the hub's executor: docs/multi-cluster.md), its pod running the image
 * this checkout built; and where the member's audit log stood before (the operator's writes come after).
 */
export class MemberOperator {
  readonly auditFrom: number;
  private readonly plane: MemberPlane;
  private readonly deployment = `deployment/${fullnameOf(SUITE_OPERATOR)}`;
  /** The Deployment's replicas before down(), for start(). */
  private replicas = '1';

  private constructor(plane: MemberPlane, auditFrom: number) {
    this.plane = plane;
    this.auditFrom = auditFrom;
  }

  static async install(plane: MemberPlane, times: Record<string, number> = {}): Promise<MemberOperator> {
    const auditFrom = auditOffset(plane.auditLog);
    await plane.node.installOperator(times, { name: SUITE_OPERATOR.release, namespace: SUITE_OPERATOR.namespace }, { values: MEMBER_CHART_VALUES });
    return new MemberOperator(plane, auditFrom);
  }

  /** A crash: the operator's container SIGKILLed (no shutdown of any kind); its kubelet starts it again, and it is Ready once more. */
  async crash(): Promise<void> {
    const before = this.pods();
    this.kill(before);
    const restarted = (): boolean => this.pods().some((p) => p.ready && before.some((b) => b.name === p.name && p.restarts > b.restarts));
    if (!(await eventually(restarted, 240_000, 500))) throw new Error(`${this.plane.name}: the operator was not Ready again after its crash: ${JSON.stringify(this.pods())}`);
  }

  /** A crash that lasts: the containers SIGKILLed and the Deployment scaled to zero, so that no operator runs there until start(). */
  async down(): Promise<void> {
    this.replicas = this.plane.kubectl(['get', this.deployment, '-n', SUITE_OPERATOR.namespace, '-o', 'jsonpath={.spec.replicas}']);
    this.kill(this.pods());
    this.plane.kubectl(['scale', this.deployment, '-n', SUITE_OPERATOR.namespace, '--replicas=0']);
    if (!(await eventually(() => this.pods().length === 0, 120_000, 500))) throw new Error(`${this.plane.name}: the operator's pod is still there`);
  }

  /** Scaled back to the replicas the chart gave it, and Ready. */
  start(): void {
    this.plane.kubectl(['scale', this.deployment, '-n', SUITE_OPERATOR.namespace, `--replicas=${this.replicas}`]);
    this.plane.kubectl(['rollout', 'status', this.deployment, '-n', SUITE_OPERATOR.namespace, '--timeout=240s']);
  }

  /** The operator's pods: name, container restarts, Ready. */
  private pods(): { name: string; id: string; restarts: number; ready: boolean }[] {
    const selector = JSON.parse(this.plane.kubectl(['get', this.deployment, '-n', SUITE_OPERATOR.namespace, '-o', 'jsonpath={.spec.selector.matchLabels}'])) as Record<string, string>;
    const list = JSON.parse(this.plane.kubectl(['get', 'pods', '-n', SUITE_OPERATOR.namespace, '-l', Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(','), '-o', 'json'])) as { items: { metadata: { name: string }; status?: { containerStatuses?: { containerID?: string; restartCount: number; ready: boolean }[] } }[] };
    return list.items.map((p) => {
      const c = p.status?.containerStatuses?.[0];
      return { name: p.metadata.name, id: (c?.containerID ?? '').replace(/^containerd:\/\//, ''), restarts: c?.restartCount ?? 0, ready: c?.ready ?? false };
    });
  }

  /** SIGKILL to the containers through the node's containerd. */
  private kill(pods: readonly { id: string }[]): void {
    for (const { id } of pods.filter((p) => p.id !== '')) this.plane.node.execOk(['ctr', '--address', '/run/containerd/containerd.sock', '-n', 'k8s.io', 'tasks', 'kill', '--signal', 'SIGKILL', id]);
  }
}

/** The writes of the member operators' identity that `plane`'s API server refused since `offset`. */
export function refusedOnPlane(plane: Plane, offset: number): string[] {
  return refusedWritesSince(offset, serviceAccountUser(SUITE_OPERATOR), plane.auditLog);
}
