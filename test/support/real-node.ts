/**
 * The real node of e2e/real-node.test.ts (scripts/lib/real-node.sh): its API server, registry and NATS
 * answer only inside the node's network namespace, so every command here runs through
 * `real-node.sh exec` (nsenter into the node's namespaces, the pinned kubectl and helm on PATH).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type OperatorProcess, startOperator } from './operator.ts';
import { repoRoot } from './tools.ts';

/** The test's own node: never the default dev cluster other engineers use. */
export const realNodeState = process.env.EVA_REAL_NODE_E2E_DIR ?? join(process.env.XDG_STATE_HOME ?? join(homedir(), '.local/state'), 'eva-operator/real-node-e2e');
/** Every real node's own address, inside its network namespace (scripts/lib/real-node.sh). */
export const NODE_ADDRESS = '10.254.0.1';
export const REGISTRY = `${NODE_ADDRESS}:5000`;
export const NATS_URL = `nats://${NODE_ADDRESS}:4222`;

const script = join(repoRoot, 'scripts/lib/real-node.sh');

export interface Result {
  status: number;
  stdout: string;
  stderr: string;
}

/** A real node (scripts/lib/real-node.sh) by its state folder: the suites' own, or a member of e2e/multi-cluster.test.ts. */
export class RealNode {
  readonly state: string;

  constructor(state: string) {
    this.state = state;
  }

  env(): NodeJS.ProcessEnv {
    return { ...process.env, EVA_DEV_CLUSTER_DIR: this.state };
  }

  /** Runs a command inside the node (cwd: the checkout). */
  exec(args: readonly string[], input?: string, timeoutMs = 120_000): Result {
    const result = spawnSync('bash', [script, 'exec', '--', ...args], { cwd: repoRoot, env: this.env(), input, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    if (result.error) throw result.error;
    return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
  }

  execOk(args: readonly string[], input?: string, timeoutMs?: number): string {
    const result = this.exec(args, input, timeoutMs);
    if (result.status !== 0) throw new Error(`${args.join(' ')} failed (${result.status}): ${result.stderr}${result.stdout}`);
    return result.stdout;
  }

  kubeOk(args: readonly string[], input?: string): string {
    return this.execOk(['kubectl', ...args], input);
  }

  /** scripts/lib/real-node.sh `args` for this node; seconds taken. */
  script(args: readonly string[], timeoutMs: number): Promise<number> {
    return runScript('scripts/lib/real-node.sh', args, timeoutMs, this.env());
  }

  /** The files of the operator's NATS Secret (system user, signing key), as `nats-bootstrap` leaves them, 0600 on the node. */
  natsAuthFiles(): readonly string[] {
    return [`system.creds=${this.state}/nats-auth/system.creds`, `operator-signing-key.nk=${this.state}/nats-auth/operator-signing-key.nk`];
  }

  /** A fresh node (whatever was in its state folder removed); seconds of each stage in `times`. */
  async fresh(times: Record<string, number>): Promise<void> {
    if (process.getuid?.() !== 0) throw new Error('the real-node tests need root (network/mount/PID namespaces, cgroups): run the suite as root, as CI does');
    await this.script(['down'], 120_000);
    times['node up'] = await this.script(['up'], 600_000);
    for (const part of ['enforcer', 'ingress']) times[`node up: ${part}`] = Number(readFileSync(join(this.state, `run/${part}-seconds`), 'utf8'));
  }

  /**
   * charts/eva-operator installed as `release` from the images this checkout built (pushed into the
   * node's registry first), pulled by digest, set up as a user sets it up on this node (see OperatorSetup).
   */
  async installOperator(times: Record<string, number>, release: { name: string; namespace: string }, setup: OperatorSetup = {}): Promise<void> {
    times['images to registry'] = await this.script(['load-images', join(imagesDir, 'images.tar')], 300_000);
    const operatorDigest = builtDigests().get('ghcr.io/aidonow/eva-operator');
    if (operatorDigest === undefined) throw new Error(`${imagesDir}/images.txt names no operator image`);
    this.kubeOk(['apply', '-f', 'scripts/dev-cluster/ingress-classes.yaml']);
    this.kubeOk(['create', 'namespace', release.namespace]);
    // The operator resolves module images from the digests this build made (chart value imagesConfigMap).
    const images = `${readFileSync(join(imagesDir, 'images.txt'), 'utf8')}${setup.extraImages ?? ''}`;
    this.kubeOk(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'eva-images', namespace: release.namespace }, data: { 'images.txt': images } }));
    this.kubeOk(['label', 'namespace', release.namespace, 'pod-security.kubernetes.io/enforce=restricted', 'pod-security.kubernetes.io/enforce-version=latest']);
    // The operator's NATS files, from the node's nats-auth folder (0600) straight into the Secret.
    this.execOk(['kubectl', 'create', 'secret', 'generic', 'eva-operator-nats', '-n', release.namespace, ...this.natsAuthFiles().map((f) => `--from-file=${f}`)]);
    setup.beforeInstall?.();
    const started = Date.now();
    const values = [`image.repository=${REGISTRY}/aidonow/eva-operator`, `image.digest=${operatorDigest}`, `nats.url=${NATS_URL}`, `airGapRegistry=${REGISTRY}`,
      `networkPolicy.natsCidr=${NODE_ADDRESS}/32`, 'imagesConfigMap=eva-images', 'resources.requests.cpu=50m', ...(setup.values ?? [])];
    this.execOk(['helm', 'install', release.name, 'charts/eva-operator', '-n', release.namespace, '--wait', '--timeout', '4m', ...values.flatMap((v) => ['--set', v])], undefined, 300_000);
    times['operator chart to Ready'] = (Date.now() - started) / 1000;
  }
}

/** The default node of the real-node suites. */
const defaultNode = new RealNode(realNodeState);

/** Runs a command inside the node (cwd: the checkout). */
export const inNode = (args: readonly string[], input?: string, timeoutMs?: number): Result => defaultNode.exec(args, input, timeoutMs);
export const inNodeOk = (args: readonly string[], input?: string, timeoutMs?: number): string => defaultNode.execOk(args, input, timeoutMs);

export const kube = (args: readonly string[], input?: string): Result => inNode(['kubectl', ...args], input);
export const kubeOk = (args: readonly string[], input?: string): string => defaultNode.kubeOk(args, input);
export const kubeJson = (args: readonly string[]): unknown => JSON.parse(kubeOk([...args, '-o', 'json']));

/** A script of the checkout (real-node.sh up/down, build-image.sh), its progress echoed to stderr; seconds taken. */
export function runScript(path: string, args: readonly string[], timeoutMs: number, env: NodeJS.ProcessEnv = defaultNode.env()): Promise<number> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(repoRoot, path), ...args], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    let output = '';
    const echo = (chunk: Buffer): void => {
      output += chunk.toString();
      process.stderr.write(chunk);
    };
    child.stdout.on('data', echo);
    child.stderr.on('data', echo);
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      if (status === 0) resolve((Date.now() - started) / 1000);
      else reject(new Error(`${path} ${args.join(' ')} exited with ${status}:\n${output.slice(-4000)}`));
    });
  });
}

export async function until<T>(what: string, check: () => T | undefined, timeoutMs: number, intervalMs = 1_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface PodView {
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string };
  spec: { containers: { image: string; readinessProbe?: { httpGet?: { port?: number | string } } }[] };
  status: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { name: string; ready: boolean; imageID: string; state?: { running?: object; waiting?: { reason?: string; message?: string } } }[];
  };
}

export const podReady = (p: PodView): boolean => p.status.phase === 'Running' && (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

export function pods(namespace: string, selector?: string): PodView[] {
  return (kubeJson(['get', 'pods', '-n', namespace, ...(selector ? ['-l', selector] : [])]) as { items: PodView[] }).items;
}

export const OPERATOR_NS = 'eva-system';
const cacheRoot = process.env.EVA_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'eva-operator');
export const imagesDir = join(cacheRoot, 'images');

/** The image references of images.txt as scripts/build-image.sh wrote it: repository -> digest. */
export function builtDigests(): Map<string, string> {
  const lines = readFileSync(join(imagesDir, 'images.txt'), 'utf8').split('\n').filter((l) => l.includes('@sha256:'));
  return new Map(lines.map((l) => {
    const [ref = '', digest = ''] = l.split('@');
    return [ref.replace(/:[^:/]+$/, ''), digest];
  }));
}

export interface OperatorSetup {
  /** Lines appended to the operator's images.txt (chart value imagesConfigMap). */
  extraImages?: string;
  /** Extra `--set` values of charts/eva-operator. */
  values?: readonly string[];
  /** Run after the namespace exists, before the chart is installed (Secrets the values name). */
  beforeInstall?: () => void;
}

/** A fresh real node (the images this checkout builds are built first, outside it); seconds in `times`. */
export async function freshNode(times: Record<string, number>): Promise<void> {
  times['image build'] = await runScript('scripts/build-image.sh', [], 1_500_000);
  await defaultNode.fresh(times);
}

/** The files of the operator's NATS Secret (system user, signing key), as `nats-bootstrap` leaves them, 0600 on the node. */
export const natsAuthFiles = defaultNode.natsAuthFiles();

/** A fresh real node with the operator chart installed (release eva-operator in OPERATOR_NS) from the images this checkout builds. */
export async function nodeWithOperator(times: Record<string, number>, setup: OperatorSetup = {}): Promise<void> {
  await freshNode(times);
  await defaultNode.installOperator(times, { name: 'eva-operator', namespace: OPERATOR_NS }, setup);
}

export interface TenantView {
  metadata: { name: string; generation?: number };
  status?: { phase?: string; observedGeneration?: number; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

export const tenantNs = (code: string): string => `eva-tenant-${code.toLowerCase()}`;

export function tenant(name: string): TenantView | undefined {
  const r = kube(['get', 'evatenant', name, '-o', 'json']);
  return r.status === 0 ? (JSON.parse(r.stdout) as TenantView) : undefined;
}

export function applyTenant(name: string, code: string, extra: Record<string, unknown> = {}, tier = 'Customer'): void {
  const manifest = { apiVersion: 'eva.aidonow.com/v1alpha1', kind: 'EvaTenant', metadata: { name }, spec: { capsuleCode: code, tier, seedsVersion: '1.0.0', ...extra } };
  kubeOk(['apply', '-f', '-'], JSON.stringify(manifest));
}

export const active = (name: string) => (): TenantView | undefined => {
  const t = tenant(name);
  return t?.status?.phase === 'Active' && t.status.observedGeneration === t.metadata.generation ? t : undefined;
};

/** Where the operators that run as processes in the node (startNodeOperator) hold their Leases. */
export const PROCESS_OPERATORS_NS = 'eva-process-operators';

/**
 * The operator from this checkout's sources as a process inside the node's namespaces (`real-node.sh
 * exec`, the node's admin kubeconfig, its Leases in PROCESS_OPERATORS_NS), set up as the chart sets up
 * its pods here: module images by the build's digests from the node's registry, NATS at the node address.
 */
export function startNodeOperator(env: Record<string, string>, secretsDir?: string): OperatorProcess {
  const nodeEnv = {
    EVA_DEV_CLUSTER_DIR: realNodeState,
    KUBECONFIG: join(realNodeState, 'kubeconfig'),
    POD_NAMESPACE: PROCESS_OPERATORS_NS,
    IMAGES_FILE: join(imagesDir, 'images.txt'),
    AIRGAP_REGISTRY: REGISTRY,
    NETWORK_POLICY_NATS_CIDR: `${NODE_ADDRESS}/32`,
    INGRESS_READY_ON_CREATE: 'true',
  };
  return startOperator({ ...nodeEnv, ...env }, secretsDir, 'src/cli.ts', ['bash', script, 'exec', '--']);
}
