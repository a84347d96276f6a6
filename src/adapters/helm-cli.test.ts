/**
 * The helm wrapper against a stand-in binary (a shell script that records its arguments and
 * environment): argument building, environment filtering, error routing and redaction. The wrapper
 * against the real helm and a real cluster is tested in test/cluster/steps/modules-helm-releases.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DependencyError, InputError, type StepError } from '../errors.ts';
import { fakeHelm } from '../../test/support/fake-helm.ts';
import { processAlive } from '../../test/support/tools.ts';
import { HelmCli } from './helm-cli.ts';
import { classifyHelmFailure, helmErrorText, parseHistory, parseStatus, scrubHelmText } from './helm.ts';

function caught(run: () => Promise<unknown>): Promise<StepError> {
  return run().then(
    () => {
      throw new Error('expected a failure');
    },
    (err: unknown) => err as StepError,
  );
}


describe('HelmCli (stand-in binary)', () => {
  const savedPassword = process.env['NATS_PASSWORD'];
  afterEach(() => {
    if (savedPassword === undefined) delete process.env['NATS_PASSWORD'];
    else process.env['NATS_PASSWORD'] = savedPassword;
  });

  it('runs upgrade --install with values files and labels only, and reports every spawn', async () => {
    const fake = fakeHelm();
    const spawned: (readonly string[])[] = [];
    const helm = new HelmCli({ binary: fake.binary, kubeconfig: '/k/config', onSpawn: (args) => spawned.push(args) });
    await helm.upgradeInstall({
      release: 'orbit-crm',
      namespace: 'eva-tenant-abcdef',
      chart: '/charts/modules/orbit-crm',
      valuesFiles: ['/run/helm-secrets/eva-values-x.yaml'],
      labels: { 'app.kubernetes.io/managed-by': 'eva-operator', 'eva.aidonow.com/values-hash': 'abc123' },
      timeoutSeconds: 90,
    });
    const expected = [
      'upgrade', 'orbit-crm', '/charts/modules/orbit-crm', '--install', '--namespace', 'eva-tenant-abcdef',
      '--values', '/run/helm-secrets/eva-values-x.yaml',
      '--labels', 'app.kubernetes.io/managed-by=eva-operator,eva.aidonow.com/values-hash=abc123',
      '--timeout', '90s', '--history-max', '5', '--disable-openapi-validation',
    ];
    expect(fake.calls()[0]?.args).toEqual(expected);
    expect(spawned).toEqual([expected]);
  });

  it('runs the render guard plugin by name: its socket and token only in that call\'s environment, HELM_PLUGINS from the settings', async () => {
    const fake = fakeHelm();
    const helm = new HelmCli({ binary: fake.binary, pluginsDir: '/app/helm-plugins' });
    const options = { release: 'orbit-crm', namespace: 'n', chart: '/c', valuesFiles: [] };
    await helm.upgradeInstall({ ...options, postRenderer: { socket: '/tmp/g/guard.sock', token: 'a1b2' } });
    await helm.upgradeInstall(options);
    const [guarded, plain] = fake.calls();
    expect(guarded?.args.slice(-2)).toEqual(['--post-renderer', 'eva-render-guard']);
    expect(guarded?.env).toContain('EVA_RENDER_GUARD_SOCKET=/tmp/g/guard.sock');
    expect(guarded?.env).toContain('EVA_RENDER_GUARD_TOKEN=a1b2');
    expect(guarded?.env).toContain('HELM_PLUGINS=/app/helm-plugins');
    expect(plain?.args).not.toContain('--post-renderer');
    expect(plain?.env).not.toContain('EVA_RENDER_GUARD_POLICY');
    expect(plain?.env).toContain('HELM_PLUGINS=/app/helm-plugins');
  });

  it('runs at most maxProcesses helm processes at once; the others wait their turn', async () => {
    /**
     * How many of five 3 s helm processes started before any could end: spawns are awaited up to
     * `expected` (a loaded machine is slow to start processes), then a little longer for one too many.
     */
    const startedAtOnce = async (expected: number, maxProcesses?: number): Promise<number> => {
      let started = 0;
      const fake = fakeHelm({ uninstall: { sleepSeconds: 3 } });
      const helm = new HelmCli({ binary: fake.binary, ...(maxProcesses ? { maxProcesses } : {}), onSpawn: () => (started += 1) });
      const t0 = Date.now();
      const all = Promise.all(['a', 'b', 'c', 'd', 'e'].map((r) => helm.uninstall(r, 'n')));
      while (started < expected && Date.now() - t0 < 2000) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const early = started;
      await all;
      expect(fake.calls(), 'every call ran in the end').toHaveLength(5);
      return early;
    };
    expect(await startedAtOnce(2, 2)).toBe(2);
    expect(await startedAtOnce(5), 'positive control: unlimited').toBe(5);
  }, 30_000);

  it('uses Helm 4 flags: --wait=watcher when asked, no --atomic, no --set', async () => {
    const fake = fakeHelm();
    const helm = new HelmCli({ binary: fake.binary });
    await helm.upgradeInstall({ release: 'r', namespace: 'n', chart: 'c', valuesFiles: ['v.yaml'], wait: true });
    const args = fake.calls()[0]?.args ?? [];
    expect(args).toContain('--wait=watcher');
    expect(args.some((a) => a.startsWith('--set') || a === '--atomic')).toBe(false);
  });

  it('gives helm KUBECONFIG but not the operator’s own secrets', async () => {
    process.env['NATS_PASSWORD'] = 'operator-nats-secret';
    const fake = fakeHelm();
    await new HelmCli({ binary: fake.binary, kubeconfig: '/k/config' }).uninstall('r', 'n');
    const env = fake.calls()[0]?.env ?? '';
    expect(env).toContain('KUBECONFIG=/k/config');
    expect(env).toContain(`GOGC=${process.env['GOGC'] ?? '200'}`);
    expect(env).not.toContain('operator-nats-secret');
    expect(fake.calls()[0]?.args).toEqual(['uninstall', 'r', '--namespace', 'n', '--ignore-not-found', '--no-hooks', '--timeout', '300s']);
  });

  it('turns a chart that does not render into an InputError with helm’s message, redacted', async () => {
    const fake = fakeHelm({
      upgrade: {
        exit: 1,
        stderr:
          'level=WARN msg="upgrade failed"\nError: UPGRADE FAILED: execution error at (orbit-crm/templates/deployment.yaml:1:4): image.digest must look like sha256:<64 hex digits>, got "s3cr3t-generated-value password=hunter2"',
      },
    });
    const helm = new HelmCli({ binary: fake.binary });
    const err = await caught(() =>
      helm.upgradeInstall({ release: 'orbit-crm', namespace: 'n', chart: 'c', valuesFiles: [], sensitive: ['s3cr3t-generated-value'] }),
    );
    expect(err).toBeInstanceOf(InputError);
    expect(err.reason).toBe('ChartRenderFailed');
    expect(err.message).toBe(
      'helm upgrade orbit-crm: execution error at (orbit-crm/templates/deployment.yaml:1:4): image.digest must look like sha256:<64 hex digits>, got "[REDACTED] password=[REDACTED]"',
    );
  });

  it('terminates a helm that outlives its timeout and reports HelmTimeout', async () => {
    const fake = fakeHelm({ upgrade: { sleepSeconds: 5 } });
    const helm = new HelmCli({ binary: fake.binary, processGraceMs: 200 });
    const started = Date.now();
    const err = await caught(() => helm.upgradeInstall({ release: 'r', namespace: 'n', chart: 'c', valuesFiles: [], timeoutSeconds: 0 }));
    expect(err).toBeInstanceOf(DependencyError);
    expect(err.reason).toBe('HelmTimeout');
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('close() ends the helm processes still running and refuses new ones: no helm outlives the operator', async () => {
    const fake = fakeHelm({ upgrade: { sleepSeconds: 60 } });
    const helm = new HelmCli({ binary: fake.binary });
    const install = (): Promise<StepError> => caught(() => helm.upgradeInstall({ release: 'r', namespace: 'n', chart: 'c', valuesFiles: [], timeoutSeconds: 120 }));
    const first = install();
    await vi.waitFor(() => { expect(fake.calls()).toHaveLength(1); }, { timeout: 10_000 });
    const pid = fake.calls()[0]?.pid ?? 0;
    expect(processAlive(pid), 'the stand-in helm runs before close()').toBe(true);
    await helm.close();
    expect(processAlive(pid), 'a helm process outlived close()').toBe(false);
    const err = await first;
    expect(err).toBeInstanceOf(DependencyError);
    expect(err.message).toMatch(/upgrade r: stopped with the operator/);
    expect((await install()).message).toMatch(/stopped with the operator/);
    expect(fake.calls()).toHaveLength(1);
  });

  it('reads history and status as JSON, and treats a missing release as empty', async () => {
    const history = JSON.stringify([
      { revision: 1, status: 'superseded', chart: 'orbit-crm-1.0.0', app_version: '1.0.0', description: 'Install complete' },
      { revision: 2, status: 'deployed', chart: 'orbit-crm-1.0.0', app_version: '1.0.0', description: 'Upgrade complete' },
    ]);
    const status = JSON.stringify({ name: 'r', namespace: 'n', version: 2, info: { status: 'deployed', description: 'ok' }, config: { nats: { password: 'x' } } });
    const helm = new HelmCli({ binary: fakeHelm({ history: { stdout: history }, status: { stdout: status } }).binary });
    expect((await helm.history('r', 'n')).map((e) => [e.revision, e.status])).toEqual([[1, 'superseded'], [2, 'deployed']]);
    expect(await helm.status('r', 'n')).toEqual({ name: 'r', namespace: 'n', version: 2, status: 'deployed', description: 'ok' });
    const missing = new HelmCli({ binary: fakeHelm({ history: { exit: 1, stderr: 'Error: release: not found' }, status: { exit: 1, stderr: 'Error: release: not found' } }).binary });
    expect(await missing.history('r', 'n')).toEqual([]);
    expect(await missing.status('r', 'n')).toBeUndefined();
  });

  it('refuses a label that would break helm’s comma-separated --labels', async () => {
    const helm = new HelmCli({ binary: fakeHelm().binary });
    await expect(helm.upgradeInstall({ release: 'r', namespace: 'n', chart: 'c', valuesFiles: [], labels: { a: 'x,b=y' } })).rejects.toThrow(/invalid release label/);
  });

});

describe('helm failure routing', () => {
  it.each([
    ['execution error at (orbit-crm/templates/deployment.yaml:1:4): tenant.code is required', InputError, 'ChartRenderFailed'],
    ['template: orbit-crm/templates/x.yaml:3:7: executing "x" at <.Values.a.b>: nil pointer', InputError, 'ChartRenderFailed'],
    ['YAML parse error on orbit-crm/templates/deployment.yaml: error converting YAML to JSON', InputError, 'ChartRenderFailed'],
    ["values don't meet the specifications of the schema(s) in the following chart(s):\norbit-crm:\n- replicaCount: Invalid type", InputError, 'InvalidHelmValues'],
    ['server-side apply failed for object n/orbit-crm /v1, Kind=Service: Service "orbit-crm" is invalid: spec.ports[0].port: Invalid value: 0', InputError, 'InvalidHelmValues'],
    ['server-side apply failed for object n/x /v1, Kind=ConfigMap: failed to create typed patch object (n/x; /v1, Kind=ConfigMap): .bogusField: field not declared in schema', InputError, 'InvalidHelmValues'],
    ["failed to convert new object (n/x; apps/v1, Kind=Deployment) to proper version: quantities must match the regular expression", InputError, 'InvalidHelmValues'],
    ['failed to create resource: secrets "x" is forbidden: exceeded quota: q, requested: secrets=1, used: secrets=2, limited: secrets=2', InputError, 'QuotaExceeded'],
    ['another operation (install/upgrade/rollback) is in progress', DependencyError, 'ReleasePending'],
    ['Kubernetes cluster unreachable: Get "https://127.0.0.1:6443/version": dial tcp: connection refused', DependencyError, 'KubernetesUnreachable'],
    ['context deadline exceeded', DependencyError, 'HelmTimeout'],
    ['something nobody expected', DependencyError, 'HelmFailed'],
  ])('%s', (message, kind, reason) => {
    const err = classifyHelmFailure(message);
    expect(err).toBeInstanceOf(kind);
    expect(err.reason).toBe(reason);
    expect(err.message).toBe(message);
  });

  it('keeps helm’s Error text without slog lines and the operation prefix', () => {
    expect(helmErrorText('level=WARN msg="x"\nError: INSTALLATION FAILED: boom\nsecond line\n')).toBe('boom\nsecond line');
    expect(helmErrorText('plain failure')).toBe('plain failure');
  });

  it('scrubs the given secrets, longest first, and the shapes the logger knows', () => {
    expect(scrubHelmText('a abcdefgh abcd nats://u:pw@host x', ['abcd', 'abcdefgh', 'a'])).toBe('a [REDACTED] [REDACTED] nats://[REDACTED]@host x');
    expect(scrubHelmText('x'.repeat(5000)).length).toBeLessThan(2100);
  });
});

describe('history parsing', () => {
  it('parses history and status, ignoring values and resources', () => {
    expect(parseHistory('[{"revision":3,"status":"deployed","chart":"c-1","app_version":"1","description":"d"}]')).toEqual([
      { revision: 3, status: 'deployed', chart: 'c-1', appVersion: '1', description: 'd' },
    ]);
    expect(() => parseHistory('{}')).toThrow(/JSON list/);
    expect(parseStatus('{"name":"r","info":{"status":"failed"},"version":4,"namespace":"n"}').status).toBe('failed');
  });
});
