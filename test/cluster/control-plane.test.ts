/** The local control plane behaves like a real cluster in the ways the operator depends on. */
import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { clusterUp, removeCluster } from '../support/cluster-setup.ts';
import { eventually, kubectl, kubectlOk, requiredEnv } from '../support/kubectl.ts';
import { freePort } from '../support/ports.ts';
import { binDir, repoRoot } from '../support/tools.ts';

const ns = `cp-test-${Date.now().toString(36)}`;
const versions = readFileSync(join(repoRoot, 'versions.env'), 'utf8');
const pinned = (name: string): string => new RegExp(`^${name}=(.+)$`, 'm').exec(versions)?.[1] ?? 'missing';

const exists = (...args: string[]): boolean => kubectl(['get', ...args]).status === 0;

describe('local control plane', () => {
  afterAll(() => {
    kubectl(['delete', 'namespace', ns, `${ns}-gone`, '--wait=false', '--ignore-not-found']);
  });

  it('serves the pinned Kubernetes version', () => {
    const version = JSON.parse(kubectlOk(['version', '-o', 'json'])) as { serverVersion: { gitVersion: string }; clientVersion: { gitVersion: string } };
    expect(version.serverVersion.gitVersion).toBe(`v${pinned('KUBERNETES_VERSION')}`);
    expect(version.clientVersion.gitVersion).toBe(`v${pinned('KUBERNETES_VERSION')}`);
  });

  it('listens on loopback only', () => {
    const server = kubectlOk(['config', 'view', '--minify', '-o', 'jsonpath={.clusters[0].cluster.server}']);
    expect(server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(process.env['NATS_URL']).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
  });

  it('has a Ready kwok node', () => {
    expect(kubectlOk(['get', 'node', 'kwok-node-0', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])).toBe('True');
  });

  it('holds a fleet: Services, pods and pod IPs for 5,000 Enterprise tenants (6 modules each)', () => {
    const modulePods = 5000 * 6;
    const [cidr = '', prefix = '32'] = kubectlOk(['get', 'servicecidr', 'kubernetes', '-o', 'jsonpath={.spec.cidrs[0]}']).split('/');
    expect(cidr).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(2 ** (32 - Number(prefix)) - 2).toBeGreaterThanOrEqual(modulePods + 1); // + the kubernetes Service
    const node = JSON.parse(kubectlOk(['get', 'node', 'kwok-node-0', '-o', 'json'])) as { spec: { podCIDR?: string }; status: { allocatable: { pods: string } } };
    const pods = /^(\d+)(k?)$/.exec(node.status.allocatable.pods); // the API server writes 40000 as 40k
    expect(pods, node.status.allocatable.pods).not.toBeNull();
    expect(Number(pods?.[1]) * (pods?.[2] === 'k' ? 1000 : 1)).toBeGreaterThanOrEqual(modulePods);
    expect(2 ** (32 - Number(node.spec.podCIDR?.split('/')[1] ?? '32'))).toBeGreaterThanOrEqual(modulePods);
  });

  it('runs its single controller-manager and scheduler without leader election (an etcd stall must not end them)', () => {
    const pids = join(process.env['EVA_DEV_CLUSTER_DIR'] ?? '', 'kwok/clusters/eva/pids');
    for (const component of ['kube-controller-manager', 'kube-scheduler']) {
      const pid = readFileSync(join(pids, `${component}.pid`), 'utf8').trim();
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'), component).toContain('--leader-elect=false');
    }
  });

  it('enforces RBAC', () => {
    const denied = kubectl(['auth', 'can-i', 'list', 'secrets', '--as', 'system:serviceaccount:default:nobody', '-A']);
    expect(denied.stdout.trim()).toBe('no');
    expect(kubectlOk(['auth', 'can-i', 'list', 'secrets', '-A']).trim()).toBe('yes');
  });

  it('admits ResourceQuota and LimitRange', async () => {
    kubectlOk(['create', 'namespace', ns]);
    kubectlOk(['create', 'quota', 'q', '-n', ns, '--hard=pods=1,requests.cpu=1']);
    kubectlOk(['apply', '-n', ns, '-f', '-'], JSON.stringify({
      apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'defaults' },
      spec: { limits: [{ type: 'Container', defaultRequest: { cpu: '500m', memory: '512Mi' }, default: { cpu: '500m', memory: '512Mi' } }] },
    }));
    // The quota controller must have computed usage before admission can count against it.
    expect(await eventually(() => kubectl(['get', 'quota', 'q', '-n', ns, '-o', 'jsonpath={.status.used.pods}']).stdout === '0')).toBe(true);
    kubectlOk(['run', 'one', '-n', ns, '--image=registry.invalid/pause:1', '--restart=Never']);
    expect(kubectlOk(['get', 'pod', 'one', '-n', ns, '-o', 'jsonpath={.spec.containers[0].resources.requests.cpu}'])).toBe('500m');
    const second = kubectl(['run', 'two', '-n', ns, '--image=registry.invalid/pause:1', '--restart=Never']);
    expect(second.status).not.toBe(0);
    expect(second.stderr).toContain('exceeded quota');
  });

  it('runs pods to Ready and Deployments to Available on the kwok node', async () => {
    kubectlOk(['create', 'deployment', 'web', '-n', ns, '--image=registry.invalid/web:1', '--replicas=1']);
    kubectlOk(['delete', 'quota', 'q', '-n', ns]);
    const available = await eventually(
      () => kubectl(['get', 'deploy', 'web', '-n', ns, '-o', 'jsonpath={.status.availableReplicas}']).stdout === '1',
      90_000,
    );
    expect(available).toBe(true);
  });

  it('collects garbage through ownerReferences', async () => {
    kubectlOk(['create', 'configmap', 'owner', '-n', ns]);
    const uid = kubectlOk(['get', 'configmap', 'owner', '-n', ns, '-o', 'jsonpath={.metadata.uid}']);
    kubectlOk(['apply', '-n', ns, '-f', '-'], JSON.stringify({
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name: 'child', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid }] },
    }));
    kubectlOk(['delete', 'configmap', 'owner', '-n', ns]);
    expect(await eventually(() => !exists('configmap', 'child', '-n', ns))).toBe(true);
  });

  it('deletes a namespace with its contents', async () => {
    const gone = `${ns}-gone`;
    kubectlOk(['create', 'namespace', gone]);
    kubectlOk(['create', 'configmap', 'data', '-n', gone, '--from-literal=k=v']);
    kubectlOk(['create', 'deployment', 'app', '-n', gone, '--image=registry.invalid/app:1']);
    kubectlOk(['delete', 'namespace', gone, '--wait=false']);
    expect(await eventually(() => !exists('namespace', gone), 90_000)).toBe(true);
  });

  it('gives eva-lb Ingresses a load-balancer address and leaves others without', async () => {
    for (const cls of ['eva-lb', 'eva-plain']) {
      kubectlOk(['create', 'ingress', cls, '-n', ns, `--class=${cls}`, `--rule=${cls}.example.test/=svc:80`]);
    }
    const address = (name: string): string =>
      kubectl(['get', 'ingress', name, '-n', ns, '-o', 'jsonpath={.status.loadBalancer.ingress[0].ip}']).stdout;
    expect(await eventually(() => address('eva-lb') === '127.0.0.1')).toBe(true);
    expect(address('eva-plain')).toBe('');
  });

  it('eva-lb is the default IngressClass: an Ingress without a class gets it, and an address', async () => {
    kubectlOk(['create', 'ingress', 'classless', '-n', ns, '--rule=classless.example.test/=svc:80']);
    expect(kubectlOk(['get', 'ingress', 'classless', '-n', ns, '-o', 'jsonpath={.spec.ingressClassName}'])).toBe('eva-lb');
    const address = (): string => kubectl(['get', 'ingress', 'classless', '-n', ns, '-o', 'jsonpath={.status.loadBalancer.ingress[0].ip}']).stdout;
    expect(await eventually(() => address() === '127.0.0.1')).toBe(true);
  });

  it('works with helm and with the machine kubectl', () => {
    const helm = spawnSync(join(process.env['EVA_TOOLS_DIR'] ?? '', 'helm'), ['list', '-A'], { encoding: 'utf8' });
    expect(helm.status, helm.stderr).toBe(0);
    expect(helm.stdout).toContain('NAME');
    // The machine's own kubectl (older minor) still talks to it, when the machine has one.
    if (existsSync('/usr/bin/kubectl')) {
      const machineKubectl = spawnSync('/usr/bin/kubectl', ['get', 'nodes', '-o', 'name'], { encoding: 'utf8' });
      expect(machineKubectl.stdout.trim(), machineKubectl.stderr).toBe('node/kwok-node-0');
    }
  });

  it("another plane's `down` leaves every other kubeconfig alone (the user's, this suite's); kwokctl left to itself edits $KUBECONFIG's", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'eva-second-plane-'));
    const secondPlane = async (): Promise<void> => {
      clusterUp({ EVA_DEV_CLUSTER_DIR: dir, EVA_NATS_PORT: String(await freePort()), EVA_NATS_MONITOR_PORT: String(await freePort()), EVA_CONTROL_PLANE: 'control-plane', EVA_DEV_CLUSTER_RECREATE: 'changed' });
    };
    const suiteKubeconfig = requiredEnv('KUBECONFIG');
    const before = readFileSync(suiteKubeconfig, 'utf8');
    // Both planes are kwokctl's cluster `eva`: the context kwokctl deletes is named as the suite's.
    expect(before).toContain('kwok-eva');
    await secondPlane();
    removeCluster(dir); // with this suite's kubeconfig as $KUBECONFIG
    expect(readFileSync(suiteKubeconfig, 'utf8')).toBe(before);
    expect(kubectl(['get', '--raw', '/readyz']).status).toBe(0);
    // The control: kwokctl's delete without --kubeconfig, on a copy of the suite's, takes its context.
    await secondPlane();
    const copy = join(dir, 'suite-kubeconfig-copy');
    copyFileSync(suiteKubeconfig, copy);
    const bare = spawnSync(join(binDir(), 'kwokctl'), ['delete', 'cluster', '--name', 'eva'], { encoding: 'utf8', env: { ...process.env, KUBECONFIG: copy, KWOK_WORKDIR: join(dir, 'kwok') } });
    expect(bare.status, bare.stderr).toBe(0);
    expect(readFileSync(copy, 'utf8')).not.toContain('kwok-eva');
    removeCluster(dir);
  }, 120_000);
});
