/**
 * The helm server (helm-server/, adapters/helm-server.ts) against the real API server: releases it
 * writes are the helm CLI's own (helm list, history and a CLI upgrade after it work), the render guard
 * gets helm's render as JSON lines and what it returns is what is applied, failures keep the CLI's
 * reasons, and a server killed mid-operation is reported at once and replaced on the next call.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HelmServer } from '../../../src/adapters/helm-server.ts';
import { parseHistory } from '../../../src/adapters/helm.ts';
import { DependencyError, InputError } from '../../../src/errors.ts';
import { withRenderGuard } from '../../../src/steps/render-guard/render-guard-run.ts';
import { helmServerPids } from '../../support/helm.ts';
import { eventually, kubectl, kubectlOk } from '../../support/kubectl.ts';
import { renderGuardForFile } from '../../support/render-guard.ts';
import { helmServerBinary, processAlive, tool } from '../../support/tools.ts';

const renderGuard = renderGuardForFile();

const RUN = Date.now().toString(36).slice(-5);
const NS = `eva-helm-server-${RUN}`;
const RELEASE = 'orbit-demo';
const scratch = mkdtempSync(join(tmpdir(), 'eva-helm-server-test-'));
const chart = join(scratch, 'chart');
const server = new HelmServer({ binary: helmServerBinary(), runtimeDir: scratch, kubeconfig: process.env['KUBECONFIG'] });

/** A module-shaped chart: one ConfigMap `<release>-config`, its namespace and data from values; `fail` makes it not render. */
function writeChart(): void {
  mkdirSync(join(chart, 'templates'), { recursive: true });
  writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: orbit-demo\nversion: 1.0.0\nappVersion: "1.0"\n');
  writeFileSync(join(chart, 'values.yaml'), 'greeting: hello\nnamespace: ""\nfail: false\n');
  writeFileSync(
    join(chart, 'templates', 'configmap.yaml'),
    [
      '{{- if .Values.fail }}{{ fail "the chart was asked to fail" }}{{ end }}',
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: {{ .Release.Name }}-config',
      '  {{- with .Values.namespace }}',
      '  namespace: {{ . }}',
      '  {{- end }}',
      'data:',
      '  greeting: {{ .Values.greeting | quote }}',
      '',
    ].join('\n'),
  );
}

function valuesFile(name: string, text: string): string {
  const file = join(scratch, `${name}.yaml`);
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

function helmCli(args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  const out = spawnSync(tool('helm'), args, { encoding: 'utf8', env: process.env });
  return { status: out.status, stdout: out.stdout, stderr: out.stderr };
}

const greeting = (): string => kubectl(['get', 'configmap', `${RELEASE}-config`, '-n', NS, '-o', 'jsonpath={.data.greeting}']).stdout;

async function caught(run: () => Promise<unknown>): Promise<Error> {
  return run().then(
    () => {
      throw new Error('expected a failure');
    },
    (err: unknown) => err as Error,
  );
}

beforeAll(() => {
  writeChart();
  kubectlOk(['create', 'namespace', NS]);
});

afterAll(async () => {
  await server.close();
  kubectl(['delete', 'namespace', NS, '--wait=false']);
  kubectl(['delete', 'crd', `widgets.${RUN}.example.com`, '--ignore-not-found']);
  rmSync(scratch, { recursive: true, force: true });
});

describe('the helm server (real API server)', () => {
  it('installs and upgrades as the helm CLI does: helm list and history read its records, and a CLI upgrade after it has no conflict', async () => {
    await server.upgradeInstall({ release: RELEASE, namespace: NS, chart, valuesFiles: [valuesFile('one', 'greeting: one\n')], labels: { 'eva.aidonow.com/values-hash': 'one' } });
    expect(greeting()).toBe('one');
    await server.upgradeInstall({ release: RELEASE, namespace: NS, chart, valuesFiles: [valuesFile('two', 'greeting: two\n')], labels: { 'eva.aidonow.com/values-hash': 'two' } });
    expect(greeting()).toBe('two');

    const listed = JSON.parse(helmCli(['list', '-n', NS, '-o', 'json']).stdout) as { name: string; revision: string; status: string }[];
    expect(listed.map(({ name, revision, status }) => ({ name, revision, status }))).toEqual([{ name: RELEASE, revision: '2', status: 'deployed' }]);
    // The server's history is the CLI's, field for field (the operator parses one shape).
    const cliHistory = parseHistory(helmCli(['history', RELEASE, '-n', NS, '-o', 'json']).stdout);
    expect(await server.history(RELEASE, NS)).toEqual(cliHistory);
    expect(cliHistory.map((e) => [e.revision, e.status, e.chart])).toEqual([[1, 'superseded', 'orbit-demo-1.0.0'], [2, 'deployed', 'orbit-demo-1.0.0']]);
    // The release labels are on helm's storage Secret, where the drift check reads them.
    expect(kubectlOk(['get', 'secret', '-n', NS, '-l', `owner=helm,name=${RELEASE},version=2`, '-o', 'jsonpath={.items[0].metadata.labels.eva\\.aidonow\\.com/values-hash}'])).toBe('two');

    // The same field manager as the CLI ("helm"): the CLI takes over the fields without a conflict.
    const cli = helmCli(['upgrade', RELEASE, chart, '-n', NS, '--set', 'greeting=three']);
    expect(cli.status, cli.stderr).toBe(0);
    expect(greeting()).toBe('three');
    expect(await server.status(RELEASE, NS)).toEqual({ name: RELEASE, namespace: NS, version: 3, status: 'deployed', description: 'Upgrade complete' });
    expect(await server.status('absent', NS)).toBeUndefined();
    expect(await server.history('absent', NS)).toEqual([]);
  });

  it('a first install (the caller found no record) while a release exists fails rather than replacing it', async () => {
    const err = await caught(() => server.upgradeInstall({ release: RELEASE, namespace: NS, chart, valuesFiles: [], firstInstall: true }));
    expect(err).toBeInstanceOf(DependencyError);
    // Revision 1's record is created first, before anything is applied: the API server refuses it.
    expect(err.message).toContain('release: already exists');
    expect(await server.status(RELEASE, NS)).toMatchObject({ version: 3, status: 'deployed' });
    expect(greeting()).toBe('three');
  });

  it('hands the render guard helm\'s render as JSON lines: an allowed release is applied as checked, a refused one not at all (RenderRejected)', async () => {
    const policy = { namespace: NS, release: RELEASE, images: [] };
    const cost = await withRenderGuard(renderGuard(), policy, (postRenderer) =>
      server.upgradeInstall({ release: RELEASE, namespace: NS, chart, valuesFiles: [valuesFile('guarded', 'greeting: guarded\n')], postRenderer }),
    );
    expect(greeting()).toBe('guarded');
    // No client process: the guard's whole cost is its own check.
    expect(cost).toMatchObject({ clientCpuMs: 0 });
    expect(cost?.checkCpuMs).toBeGreaterThan(0);

    const refused = await caught(() =>
      withRenderGuard(renderGuard(), policy, (postRenderer) =>
        server.upgradeInstall({ release: RELEASE, namespace: NS, chart, valuesFiles: [valuesFile('escape', 'greeting: escaped\nnamespace: kube-system\n')], postRenderer }),
      ),
    );
    expect(refused).toBeInstanceOf(InputError);
    expect(refused.message).toBe(`the render guard refused: ConfigMap/kube-system/${RELEASE}-config: only namespace ${NS} is allowed`);
    expect(kubectl(['get', 'configmap', `${RELEASE}-config`, '-n', 'kube-system']).status).not.toBe(0);
    expect(greeting()).toBe('guarded');
  });

  it('keeps the CLI\'s reasons: a chart that does not render is ChartRenderFailed, with helm\'s words', async () => {
    const err = await caught(() => server.upgradeInstall({ release: RELEASE, namespace: NS, chart, valuesFiles: [valuesFile('fail', 'fail: true\n')] }));
    expect(err).toBeInstanceOf(InputError);
    expect(err).toMatchObject({ reason: 'ChartRenderFailed' });
    expect(err.message).toContain(`helm upgrade ${RELEASE}: `);
    expect(err.message).toContain('the chart was asked to fail');
  });

  it('keeps helm\'s values schema check with the schema compiled once: refused values are InvalidHelmValues in the CLI\'s words, every time, and nothing is applied', async () => {
    const schemaChart = join(scratch, 'schema-chart');
    cpSync(chart, schemaChart, { recursive: true });
    writeFileSync(join(schemaChart, 'Chart.yaml'), 'apiVersion: v2\nname: orbit-schema\nversion: 1.0.0\n');
    // A counted repetition, as the module charts' patterns have (what made compiling them costly).
    const schema = { type: 'object', properties: { greeting: { type: 'string', pattern: '^[a-z]{1,63}$' } } };
    writeFileSync(join(schemaChart, 'values.schema.json'), JSON.stringify(schema));
    const release = 'orbit-schema';
    for (const bad of ['greeting: 42\n', 'greeting: Not-Lowercase\n']) {
      const file = valuesFile('bad-greeting', bad);
      // The helm CLI (helm's own check, compiled for the call) is the reference for the words.
      const cli = helmCli(['template', release, schemaChart, '-n', NS, '-f', file]);
      expect(cli.status, 'the positive control: helm itself refuses these values').not.toBe(0);
      const words = cli.stderr.replace(/^Error: /, '').trim();
      expect(words).toContain("values don't meet the specifications of the schema(s)");
      for (const attempt of ['first', 'again, from the compiled schema']) {
        const err = await caught(() => server.upgradeInstall({ release, namespace: NS, chart: schemaChart, valuesFiles: [file] }));
        expect(err, attempt).toBeInstanceOf(InputError);
        expect(err, attempt).toMatchObject({ reason: 'InvalidHelmValues' });
        expect(err.message.trim(), attempt).toBe(`helm upgrade ${release}: ${words}`);
      }
    }
    expect(kubectl(['get', 'configmap', `${release}-config`, '-n', NS]).status).not.toBe(0);
    await server.upgradeInstall({ release, namespace: NS, chart: schemaChart, valuesFiles: [valuesFile('good-greeting', 'greeting: hello\n')] });
    expect(kubectlOk(['get', 'configmap', `${release}-config`, '-n', NS, '-o', 'jsonpath={.data.greeting}'])).toBe('hello');
  });

  it('finds a kind installed after its discovery was cached (a new CRD): the release installs', async () => {
    const group = `${RUN}.example.com`;
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    };
    const crdFile = valuesFile('crd', JSON.stringify(crd));
    kubectlOk(['apply', '-f', crdFile]);
    kubectlOk(['wait', '--for=condition=Established', `crd/widgets.${group}`]);
    const widgetChart = join(scratch, 'widget-chart');
    mkdirSync(join(widgetChart, 'templates'), { recursive: true });
    writeFileSync(join(widgetChart, 'Chart.yaml'), 'apiVersion: v2\nname: widget\nversion: 1.0.0\n');
    writeFileSync(join(widgetChart, 'templates', 'widget.yaml'), `apiVersion: ${group}/v1\nkind: Widget\nmetadata:\n  name: w\n`);
    // The operator retries a failed release; at most one attempt may meet the cached discovery.
    const attempts: string[] = [];
    const installed = await eventually(async () => {
      try {
        await server.upgradeInstall({ release: 'widget', namespace: NS, chart: widgetChart, valuesFiles: [] });
        return true;
      } catch (err) {
        attempts.push((err as Error).message);
        return false;
      }
    }, 30_000, 500);
    expect(installed, attempts.join('\n')).toBe(true);
    expect(attempts.length, attempts.join('\n')).toBeLessThanOrEqual(1);
    expect(kubectlOk(['get', `widgets.${group}`, 'w', '-n', NS, '-o', 'name']).trim()).toBe(`widget.${group}/w`);
  });

  it('killed mid-operation: the call fails at once with HelmFailed, nothing is applied, and the next call starts a new server', async () => {
    // A render guard that takes the manifests and never answers: helm waits in its post-render.
    const stalled = join(scratch, 'stalled.sock');
    let connected = false;
    const guard: Server = createServer({ allowHalfOpen: true }, () => {
      connected = true;
    });
    await new Promise<void>((resolve) => guard.listen(stalled, resolve));
    try {
      const starts = server.starts;
      const pending = caught(() =>
        server.upgradeInstall({ release: 'stalled', namespace: NS, chart, valuesFiles: [], postRenderer: { socket: stalled, token: 'a'.repeat(64) } }),
      );
      expect(await eventually(() => connected, 30_000, 50)).toBe(true);
      const [pid] = helmServerPids(process.pid);
      expect(pid, 'no helm server child of this process').toBeDefined();
      process.kill(pid ?? 0, 'SIGKILL');
      const killedAt = Date.now();
      const err = await pending;
      expect(Date.now() - killedAt).toBeLessThan(5_000);
      expect(err).toBeInstanceOf(DependencyError);
      expect(err).toMatchObject({ reason: 'HelmFailed' });
      expect(err.message).toContain('helm upgrade stalled: the helm server stopped during the operation');
      expect(await eventually(() => !processAlive(pid ?? 0), 5_000, 50)).toBe(true);

      expect(await server.history('stalled', NS)).toEqual([]);
      expect(server.starts).toBe(starts + 1);
    } finally {
      guard.close();
    }
  });

  it('close ends it: no helm server left, its socket folder removed', async () => {
    await server.status(RELEASE, NS);
    const pids = helmServerPids(process.pid);
    expect(pids).toHaveLength(1);
    await server.close();
    expect(pids.filter(processAlive)).toEqual([]);
    const leftovers = spawnSync('find', [scratch, '-mindepth', '1', '-maxdepth', '1', '-name', 'eva-helm-*'], { encoding: 'utf8' }).stdout.trim();
    expect(leftovers).toBe('');
    await expect(server.status(RELEASE, NS)).rejects.toThrow('stopping');
    expect(existsSync(dirname(scratch))).toBe(true);
  });
});
