import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, operatorVersionOf, preflightSettingsOf } from './config.ts';
import { formatCreds, newSeed, publicKeyOf, signUser } from './adapters/nats-jwt.ts';

const dir = mkdtempSync(join(tmpdir(), 'eva-config-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
const file = (name: string, content: string): string => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};
const [accountSeed, userSeed, signingSeed] = [newSeed('account'), newSeed('user'), newSeed('operator')];
const creds = formatCreds(await signUser({ name: 'sys', account: publicKeyOf(accountSeed, 'account') }, userSeed, accountSeed), userSeed);

const minimal = {
  OPERATOR_VERSION: '1.0.0',
  NATS_URL: 'nats://127.0.0.1:4222',
  NATS_SYSTEM_CREDS_FILE: file('system.creds', creds),
  NATS_OPERATOR_SIGNING_KEY_FILE: file('operator-signing-key.nk', `${signingSeed}\n`),
};

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('loadConfig', () => {
  it('applies documented defaults', () => {
    const config = loadConfig(minimal);
    expect(config).toMatchObject({
      operatorVersion: '1.0.0',
      helmSecretsDir: '/run/helm-secrets',
      metricsPort: 8080,
      driftIntervalSeconds: 300,
      helmConcurrency: 4,
      maxWave: 3,
      allowNonTmpfsSecrets: false,
    });
    expect(config.chartBasePath).toMatch(/charts$/);
    expect(config.nats.moduleUrl).toBe('nats://127.0.0.1:4222');
    expect(config.networkPolicy).toMatchObject({
      enabled: true,
      ingressNamespaces: { 'kubernetes.io/metadata.name': 'ingress-nginx' },
      nats: { namespaces: { 'kubernetes.io/metadata.name': 'default' }, pods: { 'app.kubernetes.io/component': 'nats' }, port: 4222 },
    });
  });

  it('serves the default shard unless SHARD names one (a label value)', () => {
    expect(loadConfig(minimal).shard).toBeUndefined();
    expect(loadConfig({ ...minimal, SHARD: 'eu-1' }).shard).toBe('eu-1');
    expect(loadConfig({ ...minimal, SHARD: '' }).shard, 'empty is unset').toBeUndefined();
    for (const bad of ['eu/1', '-eu', 'x'.repeat(64)]) {
      expect(problems({ ...minimal, SHARD: bad }), bad).toEqual([expect.stringMatching(/^SHARD .*label value/)]);
    }
  });

  it('reports every bad variable at once, by name', () => {
    const found = problems({ ...minimal, OPERATOR_VERSION: 'latest', NATS_URL: 'nats://u:p@h:4222', METRICS_PORT: '70000', RECONCILE_CONCURRENCY: 'x', HELM_SECRETS_ALLOW_NON_TMPFS: 'maybe', NETWORK_POLICY_INGRESS_NAMESPACES: 'no selector!' });
    expect(found.map((p) => p.split(' ')[0])).toEqual(['OPERATOR_VERSION', 'NATS_URL', 'NETWORK_POLICY_INGRESS_NAMESPACES', 'HELM_SECRETS_ALLOW_NON_TMPFS', 'METRICS_PORT', 'RECONCILE_CONCURRENCY']);
  });

  it('requires OPERATOR_VERSION, NATS_URL and the two NATS files', () => {
    expect(problems({})).toEqual([
      'OPERATOR_VERSION is required (the semver of this operator build, e.g. 1.0.0)',
      'NATS_URL is required (e.g. nats://nats.eva-system:4222)',
      'NATS_SYSTEM_CREDS_FILE is required (the system user credentials file from `eva-operator nats-bootstrap`)',
      'NATS_OPERATOR_SIGNING_KEY_FILE is required (the operator signing key seed file from `eva-operator nats-bootstrap`)',
    ]);
  });

  it('names a missing or wrong NATS file by its setting, never its content', () => {
    const found = problems({
      ...minimal,
      NATS_SYSTEM_CREDS_FILE: join(dir, 'absent.creds'),
      NATS_OPERATOR_SIGNING_KEY_FILE: file('user-seed.nk', userSeed),
    });
    expect(found).toEqual([
      `NATS_SYSTEM_CREDS_FILE: cannot read ${join(dir, 'absent.creds')} (ENOENT)`,
      `NATS_OPERATOR_SIGNING_KEY_FILE: ${join(dir, 'user-seed.nk')} not an nkey seed of an operator (expected SO...)`,
    ]);
    expect(found.join(' ')).not.toContain(userSeed);
    const swapped = problems({ ...minimal, NATS_SYSTEM_CREDS_FILE: minimal.NATS_OPERATOR_SIGNING_KEY_FILE });
    expect(swapped).toEqual([`NATS_SYSTEM_CREDS_FILE: ${minimal.NATS_OPERATOR_SIGNING_KEY_FILE} not a NATS credentials file (a user JWT and a user nkey seed)`]);
  });

  it('refuses the user/password settings of before operator mode', () => {
    expect(problems({ ...minimal, NATS_USER: 'op', NATS_PASSWORD: 'pw' }).map((p) => p.split(' ')[0])).toEqual(['NATS_USER', 'NATS_PASSWORD']);
  });

  it('takes NATS from an address range for the network policy, with the port of the module URL', () => {
    const config = loadConfig({ ...minimal, MODULE_NATS_URL: 'nats://nats.example:4333', NETWORK_POLICY_NATS_CIDR: '10.0.0.0/8' });
    expect(config.networkPolicy.nats).toEqual({ cidr: '10.0.0.0/8', port: 4333 });
  });

  it('refuses a NATS address range that is not one, naming the variable (positive control: IPv6 and /32 pass)', () => {
    for (const bad of ['10.0.0.0', '10.0.0.0/33', '10.0.0/8', 'nats.example/32', '10.0.0.0/8/1', 'fd00::/129']) {
      expect(problems({ ...minimal, NETWORK_POLICY_NATS_CIDR: bad }), bad).toEqual([`NETWORK_POLICY_NATS_CIDR must be an address range like 10.0.0.5/32, got "${bad}"`]);
    }
    for (const good of ['10.254.0.1/32', 'fd00::/64']) expect(problems({ ...minimal, NETWORK_POLICY_NATS_CIDR: good }), good).toEqual([]);
  });

  it('reads the tenant Ingress TLS: none by default, a ClusterIssuer, or the platform Secret <namespace>/<name>', () => {
    expect(loadConfig(minimal).ingress).toEqual({ tls: { mode: 'none' }, annotations: {} });
    expect(loadConfig({ ...minimal, INGRESS_TLS_ISSUER: 'letsencrypt-prod' }).ingress.tls).toEqual({ mode: 'issuer', clusterIssuer: 'letsencrypt-prod' });
    expect(loadConfig({ ...minimal, INGRESS_TLS_SECRET: 'eva-system/wildcard-tls' }).ingress.tls).toEqual({ mode: 'secret', source: { namespace: 'eva-system', name: 'wildcard-tls' } });
    expect(problems({ ...minimal, INGRESS_TLS_ISSUER: 'a', INGRESS_TLS_SECRET: 'b/c' })).toEqual(['INGRESS_TLS_ISSUER and INGRESS_TLS_SECRET are exclusive: set one (or neither, for no TLS)']);
    expect(problems({ ...minimal, INGRESS_TLS_SECRET: 'wildcard-tls' })[0]).toMatch(/^INGRESS_TLS_SECRET must be <namespace>\/<name>/);
    expect(problems({ ...minimal, INGRESS_TLS_ISSUER: 'Bad Issuer' })[0]).toMatch(/^INGRESS_TLS_ISSUER must be the name of a cert-manager ClusterIssuer/);
  });

  it('reads extra Ingress annotations as a JSON object of strings, refusing the issuer annotation and bad names', () => {
    const annotations = { 'traefik.ingress.kubernetes.io/router.entrypoints': 'websecure', 'example.com/a': 'x, y' };
    expect(loadConfig({ ...minimal, INGRESS_ANNOTATIONS: JSON.stringify(annotations) }).ingress.annotations).toEqual(annotations);
    expect(problems({ ...minimal, INGRESS_ANNOTATIONS: '[1]' })[0]).toMatch(/^INGRESS_ANNOTATIONS must be a JSON object/);
    expect(problems({ ...minimal, INGRESS_ANNOTATIONS: '{"a b":"x"}' })[0]).toMatch(/not valid: a b$/);
    expect(problems({ ...minimal, INGRESS_ANNOTATIONS: '{"ok/x":1}' })[0]).toMatch(/not valid: ok\/x$/);
    expect(problems({ ...minimal, INGRESS_ANNOTATIONS: '{"cert-manager.io/cluster-issuer":"x"}' })).toEqual(['INGRESS_ANNOTATIONS must not set cert-manager.io/cluster-issuer: use INGRESS_TLS_ISSUER']);
  });
});

describe('operatorVersionOf', () => {
  it('is OPERATOR_VERSION when set, else the version this build was made as (package.json), never "unknown"', () => {
    const built = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
    expect(operatorVersionOf({ OPERATOR_VERSION: '9.9.9' })).toBe('9.9.9');
    expect(operatorVersionOf({})).toBe(built);
    expect(built).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('preflightSettingsOf (what `eva-operator preflight` checks against)', () => {
  const preflightProblems = (overrides: Record<string, string | undefined>, env: Record<string, string> = {}): readonly string[] => {
    try {
      preflightSettingsOf(overrides, env);
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
    return [];
  };

  it("reads the operator's own variables, with the operator's defaults", () => {
    const env = { ...minimal, INGRESS_CLASS: 'traefik', INGRESS_TLS_SECRET: 'eva-system/wildcard', CHART_BASE_PATH: '/opt/charts' };
    expect(preflightSettingsOf({}, env)).toEqual({
      nats: { url: minimal.NATS_URL, systemCredsFile: minimal.NATS_SYSTEM_CREDS_FILE },
      ingressClass: 'traefik',
      networkPolicy: { enabled: true, ingressNamespaces: { 'kubernetes.io/metadata.name': 'ingress-nginx' } },
      tls: { mode: 'secret', source: { namespace: 'eva-system', name: 'wildcard' } },
      operatorChartFile: '/opt/charts/eva-operator/Chart.yaml',
    });
  });

  it('needs neither NATS nor OPERATOR_VERSION: a run from a laptop before installing', () => {
    const settings = preflightSettingsOf({}, {});
    expect(settings.nats).toEqual({});
    expect(settings.tls).toEqual({ mode: 'none' });
    expect(settings.operatorChartFile).toMatch(/charts\/eva-operator\/Chart\.yaml$/);
  });

  it('flags (as the variables they stand for) win over the environment; unset removes a variable', () => {
    const settings = preflightSettingsOf({ INGRESS_TLS_SECRET: 'ns/tls', INGRESS_TLS_ISSUER: undefined, NETWORK_POLICY_INGRESS_NAMESPACES: 'team=ingress' }, { INGRESS_TLS_ISSUER: 'letsencrypt' });
    expect(settings.tls).toEqual({ mode: 'secret', source: { namespace: 'ns', name: 'tls' } });
    expect(settings.networkPolicy.ingressNamespaces).toEqual({ team: 'ingress' });
  });

  it('refuses what the operator would refuse, naming the variable', () => {
    expect(preflightProblems({ NATS_URL: 'nats://user:pw@nats:4222' })).toEqual(['NATS_URL must be a nats:// URL without credentials, got "nats://user:pw@nats:4222"']);
    expect(preflightProblems({ NATS_SYSTEM_CREDS_FILE: file('bad.creds', 'not creds') })[0]).toMatch(/^NATS_SYSTEM_CREDS_FILE: .*bad\.creds /);
    expect(preflightProblems({ NATS_SYSTEM_CREDS_FILE: join(dir, 'absent.creds') })[0]).toContain('cannot read');
    expect(preflightProblems({ INGRESS_TLS_SECRET: 'a/b', INGRESS_TLS_ISSUER: 'c' })[0]).toContain('exclusive');
    expect(preflightProblems({ NETWORK_POLICY_INGRESS_NAMESPACES: 'no selector' })[0]).toContain('label selector');
  });
});
