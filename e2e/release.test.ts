/**
 * A release as users get it (issue 27). scripts/release.sh publishes the images and the operator chart
 * to a registry on the real node; then, from an empty folder with only kubectl and helm on PATH (no
 * checkout, no Node), the chart installs from oci://, a sample tenant becomes Ready, its pods run the
 * released images by digest, the release's kubectl-eva explains it, and uninstall as docs/install.md
 * writes it leaves nothing behind. Then
 * scripts/mirror-images.sh --chart copies the release into a second registry, the first is stopped,
 * and the same install runs from the mirror alone.
 *
 * Registries: the release's at 10.254.0.1:5001 and the mirror at 10.254.0.1:5002, started inside the
 * node next to its own (which holds none of our images: nothing is loaded into it here), each with a
 * containerd hosts entry so a pull of it goes to it and nowhere else.
 */
import { chmodSync, copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from '../test/support/tools.ts';
import { freshNode, imagesDir, inNode, inNodeOk, natsAuthFiles, OPERATOR_NS, pods, realNodeState, type Result, runScript, tenantNs } from '../test/support/real-node.ts';

const NODE_IP = '10.254.0.1';
const RELEASE_REGISTRY = `${NODE_IP}:5001`;
const MIRROR_REGISTRY = `${NODE_IP}:5002`;
const PREFIX = 'eva';
const VERSION = (parseYaml(readFileSync(join(repoRoot, 'charts/eva-operator/Chart.yaml'), 'utf8')) as { version: string }).version;
const SAMPLE = readFileSync(join(repoRoot, 'samples/evatenant-starter.yaml'), 'utf8');
const INSTALL_PAGE = readFileSync(join(repoRoot, 'docs/install.md'), 'utf8');
const MULTI_CLUSTER_PAGE = readFileSync(join(repoRoot, 'docs/multi-cluster.md'), 'utf8');
const TENANT = (parseYaml(SAMPLE) as { metadata: { name: string }; spec: { capsuleCode: string } });
const times: Record<string, number> = {};

interface ReleaseRecord {
  chart: { reference: string; digest: string };
  hubChart: { reference: string; digest: string };
  images: string[];
}

const registryDir = (address: string): string => join(realNodeState, `registry-${address.replace(/[.:]/g, '-')}`);

/** A registry inside the node (Debian's docker-registry, as the node's own), and containerd pulling its images from it. */
function startRegistry(address: string): void {
  const dir = registryDir(address);
  mkdirSync(join(dir, 'data'), { recursive: true });
  writeFileSync(join(dir, 'config.yml'), `version: 0.1\nlog: {level: warn, accesslog: {disabled: true}}\nstorage: {filesystem: {rootdirectory: ${dir}/data}}\nhttp: {addr: "${address}"}\n`);
  const hosts = join(realNodeState, 'etc/containerd/certs.d', address);
  mkdirSync(hosts, { recursive: true });
  writeFileSync(join(hosts, 'hosts.toml'), `server = "http://${address}"\n\n[host."http://${address}"]\n  capabilities = ["pull", "resolve"]\n`);
  inNodeOk(['bash', '-c', `docker-registry serve ${dir}/config.yml >${dir}/log 2>&1 & echo $! >${dir}/pid`]);
  inNodeOk(['bash', '-c', `for _ in $(seq 50); do curl -fsS http://${address}/v2/ >/dev/null && exit 0; sleep 0.2; done; exit 1`]);
}

function stopRegistry(address: string): void {
  const dir = registryDir(address);
  inNodeOk(['bash', '-c', `kill "$(cat ${dir}/pid)"; for _ in $(seq 50); do curl -fsS http://${address}/v2/ >/dev/null 2>&1 || exit 0; sleep 0.2; done; exit 1`]);
}

/**
 * A user's empty folder: bin/ holds kubectl and helm, and the release's kubectl-eva as docs/cli.md
 * installs it, and nothing else; HOME is inside it.
 */
function userFolder(name: string, release: string): string {
  const folder = join(realNodeState, `user-${name}`);
  mkdirSync(join(folder, 'bin'), { recursive: true });
  mkdirSync(join(folder, 'home'), { recursive: true });
  for (const tool of ['kubectl', 'helm']) symlinkSync(inNodeOk(['bash', '-c', `command -v ${tool}`]).trim(), join(folder, 'bin', tool));
  copyFileSync(join(release, 'kubectl-eva'), join(folder, 'bin/kubectl-eva'));
  chmodSync(join(folder, 'bin/kubectl-eva'), 0o755);
  return folder;
}

/** A command as that user runs it: in the folder, their PATH only, no variable of this process. */
const asUser = (folder: string, args: readonly string[]): Result =>
  inNode(['env', '-i', '-C', folder, `PATH=${folder}/bin`, `HOME=${folder}/home`, `KUBECONFIG=${realNodeState}/kubeconfig`, ...args], undefined, 420_000);

function asUserOk(folder: string, args: readonly string[]): string {
  const result = asUser(folder, args);
  if (result.status !== 0) throw new Error(`${args.join(' ')} failed (${String(result.status)}): ${result.stderr}${result.stdout}`);
  return result.stdout;
}

/**
 * A bash block of docs/install.md (or `page`), by its first line, for the user's folder: the page's
 * example registries become the node's, and helm gets --plain-http (the node's registries speak plain HTTP).
 */
function installBlock(firstLine: string, registries: Readonly<Record<string, string>>, page = INSTALL_PAGE): string {
  const block = [...page.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1] ?? '').find((b) => b.startsWith(firstLine));
  if (block === undefined) throw new Error(`no docs block starting "${firstLine}"`);
  const local = Object.entries(registries).reduce((text, [example, node]) => text.replaceAll(example, node), block);
  return local.replace(/^(helm (?:install|pull|upgrade) .*)$/gm, '$1 --plain-http');
}

/** Runs a block in the user's folder with their PATH (bash is their shell), failing on its first failed command. */
const runBlock = (folder: string, block: string): string => asUserOk(folder, ['/bin/bash', '-euo', 'pipefail', '-c', block]);

/** docs/install.md's "Install from a release" in a folder holding what it names; seconds to the tenant Ready. */
function installFrom(folder: string, helmInstall: string): number {
  const started = Date.now();
  writeFileSync(join(folder, 'my-values.yaml'), [
    `nats: {url: "nats://${NODE_IP}:4222"}`,
    'networkPolicy: {natsCidr: 10.254.0.1/32, ingressNamespaces: "kubernetes.io/metadata.name=ingress-traefik"}',
    'ingressClass: traefik',
    'resources: {requests: {cpu: 50m}}',
    '',
  ].join('\n'));
  mkdirSync(join(folder, 'samples'), { recursive: true });
  writeFileSync(join(folder, 'samples/evatenant-starter.yaml'), SAMPLE);
  // The NATS files as the docs name them, 0600, in the folder.
  for (const file of natsAuthFiles) copyFileSync(file.slice(file.indexOf('=') + 1), join(folder, file.slice(0, file.indexOf('='))));
  const install = installBlock('kubectl create namespace eva-system', { 'registry.example.com/eva': `${RELEASE_REGISTRY}/${PREFIX}` });
  // From a mirror, the install line of the air-gapped section replaces the connected one.
  runBlock(folder, helmInstall === '' ? install : install.replace(/^helm install .*$/m, helmInstall));
  const seconds = (Date.now() - started) / 1000;
  // The preflight as the chart's test, as written: in the cluster, with the operator's settings.
  const preflight = runBlock(folder, installBlock('helm test eva -n eva-system --logs', {}));
  expect(preflight).toMatch(/^nats-resolver\s+OK/m);
  expect(preflight).toMatch(/^ingress-exception\s+OK/m);
  expect(preflight).toContain('0 failed');
  return seconds;
}

/** Every image a pod of the operator or the tenant runs, as the pod spec names it. */
function runningImages(): string[] {
  return [OPERATOR_NS, tenantNs(TENANT.spec.capsuleCode)].flatMap((ns) => pods(ns).flatMap((p) => p.spec.containers.map((c) => c.image)));
}

/** The cluster's namespaces, cluster-scoped RBAC and policies, CRDs and helm releases, by name. */
function clusterNames(folder: string): string[] {
  const names = asUserOk(folder, ['kubectl', 'get', 'namespaces,clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings,crds', '-o', 'name']);
  const releases = asUserOk(folder, ['helm', 'list', '-A', '-q']).split('\n').map((r) => `helm release ${r}`);
  return [...names.split('\n'), ...releases].filter((n) => n.trim() !== '' && n !== 'helm release ');
}

/** What is in the cluster now that was not before the install. */
const leftovers = (folder: string, before: readonly string[]): string[] => clusterNames(folder).filter((n) => !before.includes(n));

/** docs/install.md's "Uninstall", its three blocks as written. */
function uninstall(folder: string): void {
  const section = INSTALL_PAGE.slice(INSTALL_PAGE.indexOf('## Uninstall'));
  const blocks = [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  expect(blocks).toHaveLength(3);
  for (const block of blocks) runBlock(folder, block);
}

const digestOf = (record: ReleaseRecord, path: string): string => {
  const image = record.images.find((i) => i.includes(`/${path}:`));
  if (image === undefined) throw new Error(`the release names no ${path}`);
  return image.slice(image.indexOf('@'));
};

describe('a release, installed as users get it: from oci:// with only kubectl and helm', () => {
  let record: ReleaseRecord;
  const out = join(realNodeState, 'release-out');

  beforeAll(async () => {
    await freshNode(times);
    startRegistry(RELEASE_REGISTRY);
    startRegistry(MIRROR_REGISTRY);
  }, 1_800_000);

  afterAll(async () => {
    process.stderr.write(`[release] times (s): ${JSON.stringify(times)}\n`);
    if (process.env.EVA_REAL_NODE_KEEP !== '1') await runScript('scripts/lib/real-node.sh', ['down'], 120_000);
  }, 180_000);

  const release = (version: string): Result =>
    inNode(['scripts/release.sh', version, '--registry', `${RELEASE_REGISTRY}/${PREFIX}`, '--tls-verify=false', '--built', imagesDir, '--out', out], undefined, 600_000);
  const chartTags = (): string => inNode(['skopeo', 'list-tags', '--tls-verify=false', `docker://${RELEASE_REGISTRY}/${PREFIX}/charts/eva-operator`]).stdout;

  it('refuses a version the chart does not carry, before anything is pushed', () => {
    const refused = release('9.9.9');
    expect(refused.status, refused.stderr).toBe(1);
    expect(refused.stderr).toContain('Chart.yaml version is');
    expect(refused.stderr).not.toContain('pushing');
    expect(chartTags()).not.toContain('9.9.9');
  });

  it('publishes the images and the chart, and records both by digest', () => {
    const started = Date.now();
    const published = release(VERSION);
    times['release'] = (Date.now() - started) / 1000;
    expect(published.status, published.stderr).toBe(0);
    record = JSON.parse(readFileSync(join(out, 'release.json'), 'utf8')) as ReleaseRecord;
    expect(record.chart.reference).toBe(`oci://${RELEASE_REGISTRY}/${PREFIX}/charts/eva-operator:${VERSION}`);
    expect(record.chart.digest).toMatch(/^sha256:[a-f0-9]{64}$/);
    expect(record.hubChart.reference).toBe(`oci://${RELEASE_REGISTRY}/${PREFIX}/charts/eva-hub:${VERSION}`);
    expect(record.hubChart.digest).toMatch(/^sha256:[a-f0-9]{64}$/);
    const ours = record.images.filter((i) => i.startsWith(`${RELEASE_REGISTRY}/`));
    expect(ours).toHaveLength(7);
    expect(record.images.join('\n')).not.toContain('PLACEHOLDER');
    // The plugin ships beside the chart, with its checksum, built as this version.
    expect(inNodeOk(['bash', '-c', `cd ${out} && sha256sum -c kubectl-eva.sha256 && ./kubectl-eva version`])).toContain(VERSION);
    // The control for the refusal above: the same query now finds the release's tag.
    expect(chartTags()).toContain(VERSION);
  });

  it('installs from oci:// in an empty folder, runs the released images by digest, and uninstalls to nothing', () => {
    const folder = userFolder('connected', out);
    const before = clusterNames(folder);
    times['install to Ready (connected)'] = installFrom(folder, '');
    // The day-2 plugin from the release explains the tenant, with kubectl and nothing else.
    const explained = asUserOk(folder, ['kubectl', 'eva', 'status', TENANT.metadata.name]);
    expect(explained).toMatch(/^Phase:\s+Active$/m);
    expect(explained).toMatch(/^\s+Ready\s+True\s/m);
    expect(explained).toContain('Events (newest first');
    const images = runningImages();
    expect(images).toContain(`${RELEASE_REGISTRY}/${PREFIX}/aidonow/eva-operator${digestOf(record, 'aidonow/eva-operator')}`);
    expect(images.filter((i) => !i.startsWith(`${RELEASE_REGISTRY}/${PREFIX}/aidonow/`) || !i.includes('@sha256:'))).toEqual([]);
    expect(images.length).toBeGreaterThan(2);
    // A member of a multi-cluster hub (docs/multi-cluster.md): the executor the hub's works apply as, with the portal role and no more.
    runBlock(folder, installBlock('helm upgrade eva oci://', { 'registry.example.com/eva': `${RELEASE_REGISTRY}/${PREFIX}` }, MULTI_CLUSTER_PAGE));
    const executor = ['--as', 'system:serviceaccount:eva-system:eva-hub-executor'];
    expect(asUserOk(folder, ['kubectl', 'auth', 'can-i', 'create', 'evatenants.eva.aidonow.com', ...executor]).trim()).toBe('yes');
    expect(asUser(folder, ['kubectl', 'auth', 'can-i', 'create', 'configmaps', '-n', 'kube-system', ...executor]).stdout.trim()).toBe('no');
    // The control for "nothing behind": the same query sees the install before the uninstall.
    expect(leftovers(folder, before).length).toBeGreaterThan(3);
    uninstall(folder);
    expect(leftovers(folder, before)).toEqual([]);
  });

  it("installs the hub chart from oci:// in an empty folder as docs/multi-cluster.md says, and uninstalls to nothing", () => {
    const folder = userFolder('hub', out);
    const before = clusterNames(folder);
    runBlock(folder, installBlock('helm install eva-hub oci://', { 'registry.example.com/eva': `${RELEASE_REGISTRY}/${PREFIX}` }, MULTI_CLUSTER_PAGE));
    const installed = leftovers(folder, before);
    for (const name of ['validatingadmissionpolicy.admissionregistration.k8s.io/eva-hub-tenant-works', 'clusterrole.rbac.authorization.k8s.io/eva-hub-tenant-portal', 'clusterrolebinding.rbac.authorization.k8s.io/eva-portal', 'clusterrole.rbac.authorization.k8s.io/eva-hub-controller', 'helm release eva-hub']) {
      expect(installed).toContain(name);
    }
    // Its controller runs the release's operator image, by digest.
    const image = asUserOk(folder, ['kubectl', 'get', 'deployment', 'eva-hub-controller', '-o', 'jsonpath={.spec.template.spec.containers[0].image}']);
    expect(image).toBe(`${RELEASE_REGISTRY}/${PREFIX}/aidonow/eva-operator${digestOf(record, 'aidonow/eva-operator')}`);
    asUserOk(folder, ['helm', 'uninstall', 'eva-hub', '--wait']);
    asUserOk(folder, ['kubectl', 'delete', 'clusterrolebinding', 'eva-portal']);
    expect(leftovers(folder, before)).toEqual([]);
  });

  it('installs from a mirror alone, the release registry stopped', () => {
    // The release's own images: this machine reaches no public registry, so the third-party lines
    // (build bases, the quick-start NATS this install does not use) are left out of the mirror.
    const ownImages = join(out, 'own-images.txt');
    writeFileSync(ownImages, `${record.images.filter((i) => i.startsWith(`${RELEASE_REGISTRY}/`)).join('\n')}\n`);
    const airGapped = installBlock('scripts/mirror-images.sh --chart', { 'registry.example.com/eva': `${RELEASE_REGISTRY}/${PREFIX}`, 'registry.internal:5000': MIRROR_REGISTRY });
    const [mirrorLine = '', helmInstall = ''] = airGapped.trim().split('\n');
    const mirrored = inNode(['bash', '-c', `${mirrorLine} --images ${ownImages} --src-tls-verify=false --dest-tls-verify=false`], undefined, 600_000);
    expect(mirrored.status, mirrored.stderr).toBe(0);
    stopRegistry(RELEASE_REGISTRY);
    const folder = userFolder('air-gapped', out);
    // The control: with the release registry gone, its chart cannot be pulled any more.
    expect(asUser(folder, ['helm', 'pull', record.chart.reference.replace(/:[^:]+$/, ''), '--version', VERSION, '--plain-http']).status).not.toBe(0);
    const before = clusterNames(folder);
    times['install to Ready (mirror)'] = installFrom(folder, helmInstall);
    const images = runningImages();
    expect(images).toContain(`${MIRROR_REGISTRY}/${PREFIX}/aidonow/eva-operator${digestOf(record, 'aidonow/eva-operator')}`);
    expect(images.filter((i) => !i.startsWith(`${MIRROR_REGISTRY}/${PREFIX}/aidonow/`))).toEqual([]);
    uninstall(folder);
    expect(leftovers(folder, before)).toEqual([]);
  });
});
