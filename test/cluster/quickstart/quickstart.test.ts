/**
 * scripts/quickstart.sh installing into an existing cluster, the local control plane, with kubectl and
 * helm from PATH as a user has them (here the pinned ones, which the cluster setup puts first on PATH):
 * --dry-run changes nothing (every listable object, before and after) and shows the chart and the
 * tenant; --air-gap points every image at the mirror, by digest; a real install reaches Active with the
 * tenant pinned to the version the live operator Deployment carries; the installed CRD is compared with
 * crds/ and never downgraded; preflight failures are clear.
 *
 * No container engine: kwok marks the chart's pods Running without executing anything in them, so the
 * tenant of the real install is provisioned by the real operator started here as a local process, with
 * the operatorVersion given to the chart and MAX_WAVE 0 (it acts only on tenants pinned to it).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { helmReleases } from '../../support/helm.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../../support/operator.ts';
import { pinnedVersion, readTenant, waitForGone } from '../../support/tenants.ts';
import { helm, type KubeObject, parseManifest } from '../../support/chart-render.ts';
import { type AuditEvent, auditOffset, auditWritesSince } from '../../support/audit.ts';
import { kubectl, kubectlOk } from '../../support/kubectl.ts';
import { freePort } from '../../support/ports.ts';
import { repoRoot, tool } from '../../support/tools.ts';

const script = join(repoRoot, 'scripts/quickstart.sh');
const CRD = 'evatenants.eva.aidonow.com';
const CRD_STAMP = 'eva.aidonow.com/crd-version';
const VERSION_ANNOTATION = 'eva.aidonow.com/operator-version';
const MIRROR = '127.0.0.1:5999/mirror';
const CONDITIONS = ['NamespaceReady', 'Provisioned', 'SeedLoaded', 'ModulesDeployed', 'IngressReady', 'Ready'];
const appVersion = (parse(readFileSync(join(repoRoot, 'charts/eva-operator/Chart.yaml'), 'utf8')) as { appVersion: string }).appVersion;
const runId = randomBytes(3).toString('hex');
const randomCode = (prefix: string): string =>
  prefix + Array.from(randomBytes(6 - prefix.length), (b) => String.fromCharCode(65 + (b % 26))).join('');

let work = '';
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'eva-quickstart-test-'));
});
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

// ---- running the script -------------------------------------------------------------------------------

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs quickstart.sh (or a copy of it) asynchronously: the operator started here must keep running meanwhile. */
function quickstart(args: readonly string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 120_000, path = script): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

const failure = (run: Run): string => `exit ${String(run.status)}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;

/** The manifest a --dry-run printed in step 3 (`helm template`), parsed. */
function renderedManifest(stdout: string): KubeObject[] {
  const marker = '  it renders (helm template):\n';
  const start = stdout.indexOf(marker);
  const end = stdout.indexOf('\n==> [4/5]');
  expect(start, 'step 3 shows the rendered chart').toBeGreaterThan(-1);
  expect(end).toBeGreaterThan(start);
  return parseManifest(stdout.slice(start + marker.length, end));
}

interface ContainerView {
  name?: string;
  image?: string;
  env?: { name: string; value?: string }[];
}

/** Every container (init and ephemeral ones too) of every pod template or pod in the objects. */
function containers(objects: readonly KubeObject[]): ContainerView[] {
  const found: ContainerView[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      value.forEach(visit);
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    for (const [key, child] of Object.entries(value)) {
      if (['containers', 'initContainers', 'ephemeralContainers'].includes(key) && Array.isArray(child)) {
        found.push(...(child as ContainerView[]));
      }
      visit(child);
    }
  };
  objects.forEach(visit);
  return found;
}

const imagesOf = (objects: readonly KubeObject[]): string[] => containers(objects).map((c) => c.image ?? '(no image)');

// ---- images.txt ---------------------------------------------------------------------------------------

interface CatalogueLine {
  /** The repository without its registry host: aidonow/eva-operator, library/nats. */
  path: string;
  original: string;
  tag: string;
  digest: string;
}

function catalogue(text: string): CatalogueLine[] {
  const lines: CatalogueLine[] = [];
  for (const match of text.matchAll(/^(?<repository>[a-z0-9][^\s:@]*(?::\d+)?\/[^\s:@]+):(?<tag>[\w.-]+)@sha256:(?<digest>[a-f0-9]{64}|PLACEHOLDER)$/gm)) {
    const { repository = '', tag = '', digest = '' } = match.groups ?? {};
    lines.push({ path: repository.slice(repository.indexOf('/') + 1), original: `${repository}:${tag}`, tag, digest });
  }
  return lines;
}

const checkoutImages = readFileSync(join(repoRoot, 'images.txt'), 'utf8');
const fakeDigest = (ref: string): string => createHash('sha256').update(ref).digest('hex');

// ---- a snapshot of the cluster ------------------------------------------------------------------------

/**
 * Resources left out of the snapshot because they change on their own, whatever quickstart does:
 * - Leases: leader election (kube-controller-manager, kube-scheduler, the API server's identity lease,
 *   operators of other tests) renews them every few seconds.
 * - Events (both APIs list the same objects): controllers and every test on the shared cluster write
 *   them all the time; kubectl apply and helm template write none.
 * Endpoints and EndpointSlices stay in: nothing churns them on their own on this cluster (measured:
 * unchanged over minutes), so a dry run that created a Service would show there.
 */
const UNSTABLE_RESOURCES = new Set(['leases.coordination.k8s.io', 'events', 'events.events.k8s.io']);

interface SnapshotEntry {
  resource: string; // e.g. deployments
  group: string; // e.g. apps; '' for the core group
  namespace: string; // '' when cluster-scoped
  name: string;
  resourceVersion: string;
}

const entryKey = (e: SnapshotEntry): string => `${e.resource}${e.group === '' ? '' : `.${e.group}`} ${e.namespace}/${e.name} ${e.resourceVersion}`;

/** Every object of every listable resource, in all namespaces and cluster-scoped. */
function snapshot(): Map<string, SnapshotEntry> {
  const discovered = JSON.parse(kubectlOk(['api-resources', '--verbs=list', '-o', 'json'])) as { resources: { name: string; group?: string; kind: string }[] };
  const resources = discovered.resources
    .map((r) => ({ name: r.name, kind: r.kind, group: r.group ?? '', full: r.group ? `${r.name}.${r.group}` : r.name }))
    .filter((r) => !UNSTABLE_RESOURCES.has(r.full));
  expect(resources.length, 'api-resources lists the resources').toBeGreaterThan(20);
  const resourceOf = new Map(resources.map((r) => [`${r.group} ${r.kind}`, r.name]));
  const list = JSON.parse(kubectlOk(['get', resources.map((r) => r.full).join(','), '--all-namespaces', '-o', 'json'])) as {
    items: { apiVersion: string; kind: string; metadata: { namespace?: string; name: string; resourceVersion?: string } }[];
  };
  const entries = new Map<string, SnapshotEntry>();
  for (const item of list.items) {
    const group = item.apiVersion.includes('/') ? item.apiVersion.slice(0, item.apiVersion.indexOf('/')) : '';
    const entry = {
      resource: resourceOf.get(`${group} ${item.kind}`) ?? item.kind,
      group,
      namespace: item.metadata.namespace ?? '',
      name: item.metadata.name,
      resourceVersion: item.metadata.resourceVersion ?? '',
    };
    entries.set(entryKey(entry), entry);
  }
  return entries;
}

/** What is in one snapshot and not in the other: created, deleted, or changed (a new resourceVersion). */
function changes(before: ReadonlyMap<string, SnapshotEntry>, after: ReadonlyMap<string, SnapshotEntry>): SnapshotEntry[] {
  return [...[...before].filter(([k]) => !after.has(k)), ...[...after].filter(([k]) => !before.has(k))].map(([, e]) => e);
}

/** Where the audit log puts an object: a write to a Namespace is audited with the namespace set to its own name. */
const auditedNamespace = (e: SnapshotEntry): string => (e.resource === 'namespaces' && e.group === '' ? e.name : e.namespace);

/** A successful audited write to exactly this object, or to all of its kind in its namespace (deletecollection, generateName). */
function wrote(event: AuditEvent, e: SnapshotEntry): boolean {
  const { resource, apiGroup = '', namespace = '', name } = event.objectRef ?? {};
  const succeeded = (event.responseStatus?.code ?? 500) < 400;
  return succeeded && resource === e.resource && apiGroup === e.group && namespace === auditedNamespace(e) && (name === undefined || name === e.name);
}

/** A folder with a kubectl that runs the pinned one as `<program>`: client-go's User-Agent starts with the program name. */
function kubectlNamed(program: string): string {
  const dir = join(work, `bin-${program}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'kubectl'), `#!/usr/bin/env bash\nexec -a ${program} '${tool('kubectl')}' "$@"\n`, { mode: 0o755 });
  return dir;
}

// ---- the tests ----------------------------------------------------------------------------------------

describe('--dry-run', () => {
  const name = `eva-qs-dry-${runId}`; // namespace and release
  const code = randomCode('QD');

  it('changes nothing in the cluster, and shows the rendered chart and the EvaTenant it would create', async () => {
    // The cluster is shared: other engineers' tests write to it meanwhile. A change between the two
    // snapshots is excused only when the audit log shows another client writing exactly that object.
    // quickstart's kubectl runs under a User-Agent of its own here, and each of its writes must be a
    // dry run (or an access review, which stores nothing).
    const program = `kubectl-quickstart-${runId}`;
    const offset = auditOffset();
    const before = snapshot();
    const run = await quickstart(['--dry-run', '--namespace', name, '--release', name, '--code', code, '--tier', 'Customer', '--wave', '2'], {
      PATH: `${kubectlNamed(program)}:${process.env['PATH'] ?? ''}`,
    });
    const after = snapshot();
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // an audit line is written when its request completes
    const audited = auditWritesSince(offset);
    expect(run.status, failure(run)).toBe(0);

    const ours = audited.filter((e) => e.userAgent?.startsWith(`${program}/`));
    expect(ours.length, "quickstart's dry-run writes are in the audit log: the attribution works").toBeGreaterThan(0);
    const persisted = ours.filter((e) => !e.requestURI?.includes('dryRun=All') && e.objectRef?.resource !== 'selfsubjectaccessreviews');
    expect(persisted.map((e) => `${e.verb} ${e.requestURI ?? ''}`), 'quickstart --dry-run wrote for real').toEqual([]);
    const namesUs = (ref: { namespace?: string; name?: string; resource?: string }): boolean =>
      ref.namespace === name || (ref.name?.includes(name) ?? false) || (ref.resource === 'evatenants' && ref.name === code.toLowerCase());
    const touched = audited.filter((e) => namesUs(e.objectRef ?? {}) && !e.requestURI?.includes('dryRun=All'));
    expect(touched.map((e) => `${e.userAgent ?? ''} ${e.verb} ${e.requestURI ?? ''}`), 'real writes to what the dry run names').toEqual([]);

    const foreign = audited.filter((e) => !ours.includes(e));
    const changed = changes(before, after);
    const unexplained = changed.filter((e) => namesUs(e) || !foreign.some((w) => wrote(w, e)));
    expect(unexplained.map(entryKey), `changed with no other client writing them (${changed.length} changes by others excused)`).toEqual([]);

    // The five steps, the chart as `helm template` renders it, and the tenant.
    for (const n of [1, 2, 3, 4, 5]) expect(run.stdout).toContain(`==> [${n}/5]`);
    expect(run.stdout).toContain('(server dry run)');
    expect(run.stdout).toContain(`would run: helm upgrade --install ${name} `);
    const objects = renderedManifest(run.stdout);
    const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(kinds).toEqual(expect.arrayContaining([`Deployment/${name}-eva-operator`, `ClusterRole/${name}-eva-operator`, `StatefulSet/${name}-eva-operator-nats`]));
    expect(run.stdout).toContain(`operatorVersion from the chart's operatorVersion: there is no operator Deployment in ${name} yet`);
    const tenant = /would run: kubectl apply -f - <<EOF\n(?<yaml>[\s\S]*?)\n {2}EOF/.exec(run.stdout)?.groups?.['yaml'];
    expect(tenant, 'step 4 prints the EvaTenant').toBeDefined();
    expect(parse(tenant ?? '')).toEqual({
      apiVersion: 'eva.aidonow.com/v1alpha1',
      kind: 'EvaTenant',
      metadata: { name: code.toLowerCase() },
      spec: { capsuleCode: code, tier: 'Customer', wave: 2, seedsVersion: '1.0.0', operatorVersion: appVersion },
    });
    expect(run.stdout).toContain('Dry run: nothing was changed');
    // And, directly: nothing of it exists.
    expect(kubectl(['get', 'namespace', name]).status).not.toBe(0);
    expect(kubectl(['get', 'evt', code.toLowerCase()]).status).not.toBe(0);
    expect(helmReleases(name)).toEqual([]);
  }, 300_000);
});

describe('--air-gap', () => {
  const name = `eva-qs-air-${runId}`;
  const args = ['--air-gap', '--registry', MIRROR, '--namespace', name, '--release', name];

  it('--dry-run: every image the chart deploys comes from the mirror with the digest images.txt pins; the operator gets AIRGAP_REGISTRY', async () => {
    // images.txt as a release has it: every PLACEHOLDER replaced by a digest.
    const released = checkoutImages.replace(/^(\S+)@sha256:PLACEHOLDER$/gm, (_line, ref: string) => `${ref}@sha256:${fakeDigest(ref)}`);
    const imagesFile = join(work, 'images-released.txt');
    writeFileSync(imagesFile, released);
    const lines = catalogue(released);
    expect(lines.every((l) => l.digest !== 'PLACEHOLDER')).toBe(true);

    const run = await quickstart(['--dry-run', ...args], { IMAGES_FILE: imagesFile });
    expect(run.status, failure(run)).toBe(0);
    expect(run.stderr).not.toContain('PLACEHOLDER');
    const objects = renderedManifest(run.stdout);
    const images = imagesOf(objects);
    // The operator and the quick-start NATS at least: the check below must have something to check.
    expect(images.length).toBeGreaterThanOrEqual(2);
    for (const image of images) {
      const match = new RegExp(`^${MIRROR.replaceAll('.', '\\.')}/(?<path>[^@:]+)@sha256:(?<digest>[a-f0-9]{64})$`).exec(image);
      expect(match, `${image} is not <mirror>/<path>@sha256:<digest>`).not.toBeNull();
      const listed = lines.filter((l) => l.path === match?.groups?.['path'] && l.digest === match.groups['digest']);
      expect(listed, `${image}: no line of images.txt has this path and digest`).toHaveLength(1);
    }
    const operatorLine = lines.find((l) => l.original === `ghcr.io/aidonow/eva-operator:${appVersion}`);
    const natsLine = lines.find((l) => l.path === 'library/nats');
    expect(images).toEqual(
      expect.arrayContaining([`${MIRROR}/aidonow/eva-operator@sha256:${operatorLine?.digest ?? '?'}`, `${MIRROR}/library/nats@sha256:${natsLine?.digest ?? '?'}`]),
    );
    const operator = containers(objects).find((c) => c.name === 'operator');
    expect(operator?.env?.find((e) => e.name === 'AIRGAP_REGISTRY')?.value).toBe(MIRROR);
    expect(kubectl(['get', 'namespace', name]).status).not.toBe(0);
  }, 120_000);

  it('a PLACEHOLDER digest: --dry-run shows the image from the mirror by tag and warns; a real install refuses it, naming the image, before changing anything', async () => {
    // images.txt before a release: our own images carry PLACEHOLDER (here: every line does).
    const unreleased = checkoutImages.replace(/@sha256:[a-f0-9]{64}$/gm, '@sha256:PLACEHOLDER');
    const imagesFile = join(work, 'images-unreleased.txt');
    writeFileSync(imagesFile, unreleased);
    const lines = catalogue(unreleased);

    const dry = await quickstart(['--dry-run', ...args], { IMAGES_FILE: imagesFile });
    expect(dry.status, failure(dry)).toBe(0);
    const images = imagesOf(renderedManifest(dry.stdout));
    expect(images.length).toBeGreaterThanOrEqual(2);
    for (const image of images) {
      const listed = lines.find((l) => image === `${MIRROR}/${l.path}:${l.tag}`);
      expect(listed, `${image} is not <mirror>/<path>:<tag> of an images.txt line`).toBeDefined();
      expect(dry.stderr).toContain(listed?.original ?? '?');
    }
    expect(dry.stderr).toMatch(/warning: PLACEHOLDER digest .* a real --air-gap install refuses it/);

    const real = await quickstart(args, { IMAGES_FILE: imagesFile });
    expect(real.status, failure(real)).toBe(1);
    expect(real.stderr).toContain(`no digest yet (PLACEHOLDER) for ghcr.io/aidonow/eva-operator:${appVersion}`);
    expect(real.stdout).not.toContain('==> [2/5]');
    expect(kubectl(['get', 'namespace', name]).status).not.toBe(0);
  }, 120_000);

  it('usage errors exit 2 with one clear line: --air-gap without --registry, --registry without --air-gap, a malformed registry', async () => {
    const cases: [string[], RegExp][] = [
      [['--air-gap', '--dry-run'], /--air-gap needs --registry HOST\[:PORT\]\[\/PREFIX\]/],
      [['--registry', MIRROR, '--dry-run'], /--registry names the mirror of an air-gapped install: add --air-gap/],
      [['--air-gap', '--registry', 'https://registry.example', '--dry-run'], /--registry must be HOST\[:PORT\]\[\/PREFIX\], got 'https:\/\/registry.example'/],
      [['--air-gap', '--registry', MIRROR, '--local'], /--local runs the operator as a local process: --air-gap --registry is for an install into a cluster/],
      [['--code', 'abc'], /--code must be six uppercase letters, got 'abc'/],
      [['--dry-run', '--namespace'], /--namespace needs a value/],
      [['--dry-run', '--values', join(work, 'absent.yaml')], /--values: cannot read the file/],
      [['--frobnicate'], /unknown option --frobnicate/],
    ];
    for (const [caseArgs, message] of cases) {
      const run = await quickstart(caseArgs);
      expect(run.status, `${caseArgs.join(' ')}: ${failure(run)}`).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stderr.trimEnd().split('\n'), caseArgs.join(' ')).toHaveLength(1);
      expect(run.stdout, caseArgs.join(' ')).toBe('');
    }
  }, 60_000);
});

describe('a real install into the local control plane', () => {
  const name = `eva-qs-${runId}`; // namespace and release
  // A version of its own, pinned by the tenant: no other test's operator acts on it (blue-green uses 9.5.0).
  const version = '9.8.5';
  const code = randomCode('QS');
  const tenant = code.toLowerCase();
  let valuesFile = '';
  let operator: OperatorProcess | undefined;

  beforeAll(() => {
    valuesFile = join(work, 'values.yaml');
    writeFileSync(valuesFile, stringify({ operatorVersion: version, maxWave: 0, replicaCount: 1 }));
  });

  afterAll(async () => {
    if (kubectl(['get', 'evt', tenant]).status === 0) {
      kubectl(['delete', 'evt', tenant, '--wait=false']);
      expect(await waitForGone(tenant, 240_000), `EvaTenant ${tenant} was not removed`).toBe(true);
    }
    if (operator) {
      await operator.stop();
      removeSecretsDir(operator);
    }
    await helm(['uninstall', name, '--namespace', name, '--wait', '--timeout', '120s']);
    kubectl(['delete', 'namespace', name, '--ignore-not-found', '--wait=true', '--timeout=120s']);
    expect(kubectl(['get', 'namespace', name]).status).not.toBe(0);
  }, 600_000);

  it('installs the CRD and the chart, pins the tenant to the live Deployment\'s version and prints each condition until Active', async () => {
    // The operator "inside" the chart's pods, run here, as the suite's operators run: the chart's
    // ServiceAccount, RBAC and policy of the suite's own release (this release's ServiceAccount does
    // not exist before quickstart's step 3, and the operator must be running by step 5).
    operator = startOperator({ OPERATOR_VERSION: version, MAX_WAVE: '0', POD_NAME: `${name}-local` });
    const run = await quickstart(['--namespace', name, '--release', name, '--values', valuesFile, '--code', code, '--timeout', '240'], {}, 420_000);
    expect(run.status, `${failure(run)}\n--- operator\n${operator.logs().slice(-4000)}`).toBe(0);

    // Steps in order.
    const positions = [1, 2, 3, 4, 5].map((n) => run.stdout.indexOf(`==> [${n}/5]`));
    expect(positions.every((p, i) => p > (positions[i - 1] ?? -1))).toBe(true);
    expect(run.stdout).toMatch(/CRD {6}the SAME as crds\/|CRD {6}OLDER than crds\/|CRD {6}\S+ is not installed/);
    expect(run.stdout).toContain('a quick-start NATS server');
    expect(run.stdout).toMatch(/Available after \d+s/);
    // Step 4: the version comes from the live Deployment's annotation.
    const deployment = `${name}-eva-operator`;
    expect(run.stdout).toContain(`operatorVersion from the annotation ${VERSION_ANNOTATION} of Deployment ${name}/${deployment}`);
    expect(run.stdout).toContain(`creating EvaTenant ${tenant} (Starter, wave 1, operatorVersion ${version})`);
    // Step 5: each condition as it turns True, with its time, in order, then Active.
    const turned = [...run.stdout.matchAll(/^ {2}\s*(?<seconds>\d+\.\d\d)s {2}(?<type>\w+)\s+True$/gm)].map((m) => ({
      type: m.groups?.['type'] ?? '',
      seconds: Number(m.groups?.['seconds']),
    }));
    expect(turned.map((t) => t.type)).toEqual(expect.arrayContaining(CONDITIONS));
    expect(turned.every((t, i) => t.seconds >= (turned[i - 1]?.seconds ?? 0))).toBe(true);
    expect(run.stdout).toMatch(/s {2}phase Active; operator-measured seconds per condition: \{/);

    // The cluster agrees.
    const annotation = `{.spec.template.metadata.annotations.${VERSION_ANNOTATION.replaceAll('.', '\\.')}}`;
    expect(kubectlOk(['get', 'deployment', deployment, '-n', name, '-o', `jsonpath=${annotation}`])).toBe(version);
    expect(helmReleases(name)).toEqual([expect.objectContaining({ name, status: 'deployed' })]);
    expect(kubectlOk(['get', 'crd', CRD, '-o', `jsonpath={.metadata.annotations.${CRD_STAMP.replaceAll('.', '\\.')}}`])).toBe(appVersion);
    expect(pinnedVersion(tenant)).toBe(version);
    expect(readTenant(tenant)?.phase).toBe('Active');
    expect(kubectlOk(['get', 'evt', tenant, '-o', `jsonpath={.metadata.annotations.${VERSION_ANNOTATION.replaceAll('.', '\\.')}}`])).toBe(version);
  }, 480_000);

  it('--dry-run against the installed release pins to the live Deployment\'s version and changes nothing', async () => {
    const otherValues = join(work, 'values-next.yaml');
    writeFileSync(otherValues, stringify({ operatorVersion: '9.8.6', maxWave: 0, replicaCount: 1 }));
    const revision = helmReleases(name)[0]?.revision;
    const run = await quickstart(['--dry-run', '--namespace', name, '--release', name, '--values', otherValues, '--code', code]);
    expect(run.status, failure(run)).toBe(0);
    expect(run.stdout).toContain(`creating EvaTenant ${tenant} (Starter, wave 1, operatorVersion ${version})`);
    expect(run.stdout).toContain(`of Deployment ${name}/${name}-eva-operator; the upgrade above would make it 9.8.6`);
    expect(run.stdout).toContain('the API server accepts it (server-side dry run)');
    expect(helmReleases(name)[0]?.revision).toBe(revision);
    expect(pinnedVersion(tenant)).toBe(version);
  }, 120_000);
});

describe('the installed CRD against crds/ (dry runs of a copy of the checkout whose crds/ or version differ)', () => {
  interface CrdDocument {
    spec: { versions: { name: string; served: boolean; storage: boolean; schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } } } }[] };
  }
  const crdFile = `crds/${CRD}.yaml`;

  /** A copy of what quickstart.sh reads, with crds/ and Chart.yaml changed by `change`. */
  function checkout(label: string, change: { crd?: (crd: CrdDocument) => void; appVersion?: string }): string {
    const dir = join(work, `checkout-${label}`);
    // What quickstart.sh reads, and the operator's own command it runs for the NATS keys.
    for (const path of ['scripts/quickstart.sh', 'scripts/lib', 'charts/eva-operator', 'crds', 'images.txt', 'src', 'package.json']) {
      cpSync(join(repoRoot, path), join(dir, path), { recursive: true });
    }
    symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
    if (change.crd) {
      const crd = parse(readFileSync(join(dir, crdFile), 'utf8')) as CrdDocument;
      change.crd(crd);
      writeFileSync(join(dir, crdFile), stringify(crd));
    }
    if (change.appVersion !== undefined) {
      const chartFile = join(dir, 'charts/eva-operator/Chart.yaml');
      writeFileSync(chartFile, readFileSync(chartFile, 'utf8').replace(/^appVersion: .*$/m, `appVersion: "${change.appVersion}"`));
    }
    return join(dir, 'scripts/quickstart.sh');
  }
  const withoutLifecycle = (crd: CrdDocument): void => {
    for (const v of crd.spec.versions) delete v.schema.openAPIV3Schema.properties.spec.properties['lifecycle'];
  };
  const dryRun = (path: string): Promise<Run> => quickstart(['--dry-run', '--namespace', `eva-qs-crd-${runId}`, '--release', `eva-qs-crd-${runId}`], {}, 120_000, path);

  beforeAll(() => {
    // As step 2 of a real install leaves it (the test above did one): the CRD of this checkout,
    // stamped with this checkout's version.
    kubectlOk(['annotate', '--overwrite', 'crd', CRD, `${CRD_STAMP}=${appVersion}`]);
  });

  it('the same CRD and version: SAME', async () => {
    const run = await dryRun(script);
    expect(run.status, failure(run)).toBe(0);
    expect(run.stdout).toContain(`CRD      the SAME as crds/ (installed version ${appVersion}; API versions v1alpha1)`);
  }, 60_000);

  it('crds/ adds an API version: the installed one is OLDER and would be upgraded', async () => {
    const path = checkout('new-api', {
      crd: (crd) => {
        const first = crd.spec.versions[0];
        if (first) crd.spec.versions.push({ ...structuredClone(first), name: 'v1beta1', storage: false });
      },
    });
    const run = await dryRun(path);
    expect(run.status, failure(run)).toBe(0);
    expect(run.stdout).toContain('CRD      OLDER than crds/ (installed version');
    expect(run.stdout).toContain('crds/ adds v1beta1): step 2 upgrades it');
  }, 60_000);

  it('crds/ lacks a field the installed CRD has, same version: NEWER or changed by hand, refused naming the fields it would remove', async () => {
    const run = await dryRun(checkout('fewer-fields', { crd: withoutLifecycle }));
    expect(run.status, failure(run)).toBe(1);
    expect(run.stderr).toMatch(/applying crds\/ would remove or change \d+ field\(s\) of the installed CRD/);
    expect(run.stderr).toMatch(/^ {2}- spec\.versions\[0\]\.schema\.openAPIV3Schema\.properties\.spec\.properties\.lifecycle$/m);
    expect(run.stderr).toContain(`is NEWER than this checkout's ${appVersion}, or was changed by hand. Refusing to downgrade it`);
    expect(run.stdout).not.toContain('==> [2/5]');
  }, 60_000);

  it('the installed CRD is stamped with a later version than the checkout: NEWER, refused', async () => {
    const run = await dryRun(checkout('older-checkout', { appVersion: '0.0.0-older' }));
    expect(run.status, failure(run)).toBe(1);
    expect(run.stderr).toContain(`is NEWER than this checkout's: ${CRD_STAMP}=${appVersion}, crds/ is 0.0.0-older. Refusing to downgrade it`);
  }, 60_000);

  it('a later checkout whose crds/ drops a field: the installed one is OLDER (a release may remove fields) and would be upgraded', async () => {
    const run = await dryRun(checkout('later-release', { crd: withoutLifecycle, appVersion: '99.0.0' }));
    expect(run.status, failure(run)).toBe(0);
    expect(run.stdout).toContain(`CRD      OLDER than crds/ (installed version ${appVersion}, crds/ is 99.0.0): step 2 upgrades it`);
  }, 60_000);
});

describe('preflight failures', () => {
  /** A folder of symlinks to everything in the system's bin folders except `without`, plus the pinned kubectl and helm. */
  function pathWithout(without: 'kubectl' | 'helm'): string {
    const bin = join(work, `bin-without-${without}`);
    mkdirSync(bin, { recursive: true });
    for (const dir of ['/usr/local/bin', '/usr/bin', '/bin']) {
      if (!existsSync(dir)) continue;
      for (const entry of readdirSync(dir)) {
        if (entry === 'kubectl' || entry === 'helm' || existsSync(join(bin, entry))) continue;
        symlinkSync(join(dir, entry), join(bin, entry));
      }
    }
    const other = without === 'kubectl' ? 'helm' : 'kubectl';
    symlinkSync(tool(other), join(bin, other));
    return bin;
  }

  it('a cluster that does not answer (a loopback port nobody listens on): a clear message, exit 1, nothing else done', async () => {
    const port = await freePort();
    const kubeconfig = join(work, 'unreachable.kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'nowhere', cluster: { server: `https://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'nobody', user: { token: 'none' } }],
        contexts: [{ name: 'unreachable', context: { cluster: 'nowhere', user: 'nobody' } }],
        'current-context': 'unreachable',
      }),
      { mode: 0o600 },
    );
    const started = Date.now();
    const run = await quickstart(['--dry-run'], { KUBECONFIG: kubeconfig });
    expect(run.status, failure(run)).toBe(1);
    expect(run.stderr.trimEnd()).toBe(
      `quickstart: cannot reach the cluster of context 'unreachable' at https://127.0.0.1:${port}: The connection to the server 127.0.0.1:${port} was refused - did you specify the right host or port?`,
    );
    expect(run.stdout).not.toContain('==> [2/5]');
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);

  it('no current context: says so', async () => {
    const kubeconfig = join(work, 'empty.kubeconfig');
    writeFileSync(kubeconfig, '{}\n', { mode: 0o600 });
    const run = await quickstart(['--dry-run'], { KUBECONFIG: kubeconfig });
    expect(run.status, failure(run)).toBe(1);
    expect(run.stderr).toMatch(/^quickstart: kubectl has no current context \(KUBECONFIG=.*empty\.kubeconfig\)/);
  }, 60_000);

  it('kubectl or helm missing from PATH: names the tool', async () => {
    for (const missing of ['kubectl', 'helm'] as const) {
      const run = await quickstart(['--dry-run'], { PATH: pathWithout(missing) });
      expect(run.status, failure(run)).toBe(1);
      expect(run.stderr).toMatch(new RegExp(`^quickstart: ${missing} not found in PATH: install it`));
      expect(run.stdout).not.toContain('==> [2/5]');
    }
  }, 60_000);
});
