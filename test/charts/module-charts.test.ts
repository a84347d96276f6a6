/**
 * The bundled module charts, rendered and linted by the pinned helm binary: the values contract in
 * charts/modules/README.md, the security posture and the vendored library.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { TIERS } from '../../src/api/constants.ts';
import { MODULES, type ModuleName } from '../../src/api/modules.ts';
import { tool } from '../support/tools.ts';
import { type Container, chartsDir, type EnvVar, helm, libChart, render, type Rendered, template } from '../support/chart-render.ts';

const CODE = 'ABCDEF';
const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;

/** Values as the operator passes them (minimal): the tenant is the only required part. */
function tenantValues(tier: string = 'Starter', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { tenant: { code: CODE, tier }, ...extra };
}

function containersOf(rendered: Rendered): Container[] {
  const spec = rendered.deployment.spec?.template.spec;
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])];
}

function mainContainer(rendered: Rendered, module: string): Container {
  const container = rendered.deployment.spec?.template.spec?.containers.find((c) => c.name === module);
  if (!container) throw new Error(`no container named ${module}`);
  return container;
}

function envOf(container: Container, name: string): EnvVar | undefined {
  return container.env?.find((e) => e.name === name);
}

function podAnnotation(rendered: Rendered, name: string): string {
  const value = rendered.deployment.spec?.template.metadata?.annotations?.[name];
  if (value === undefined) throw new Error(`no pod annotation ${name}`);
  return value;
}

function readYaml(path: string): Record<string, unknown> {
  const value: unknown = parse(readFileSync(path, 'utf8'));
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${path}: not a map`);
  return value as Record<string, unknown>;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((entry) => statSync(join(dir, entry)).isFile())
    .map((entry) => relative(dir, join(dir, entry)))
    .sort();
}

beforeAll(() => {
  // Builds the pinned binaries on a cold cache; later calls are instant.
  expect(existsSync(tool('helm'))).toBe(true);
}, 3_600_000);

describe('module chart layout', () => {
  it('has one chart per module plus the library, and nothing else', () => {
    const dirs = readdirSync(chartsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    expect(dirs).toEqual([...MODULES, libChart].sort());
  });

  it('the library chart is a library at version 1.0.0', () => {
    const chart = readYaml(join(chartsDir, libChart, 'Chart.yaml'));
    expect(chart).toMatchObject({ apiVersion: 'v2', name: libChart, type: 'library', version: '1.0.0' });
  });

  it.each(MODULES)('%s: Chart.yaml depends on the library through file://', (module) => {
    const chart = readYaml(join(chartsDir, module, 'Chart.yaml'));
    expect(chart).toMatchObject({
      apiVersion: 'v2',
      name: module,
      type: 'application',
      version: '1.0.0',
      appVersion: '1.0.0',
      dependencies: [{ name: libChart, version: '1.0.0', repository: `file://../${libChart}` }],
    });
  });

  it.each(MODULES)('%s: values.yaml declares the whole values contract with empty secrets', (module) => {
    const values = readYaml(join(chartsDir, module, 'values.yaml'));
    expect(Object.keys(values).sort()).toEqual(
      [
        'config',
        'credentials',
        'image',
        'ingress',
        'nats',
        'otel',
        'podAnnotations',
        'probes',
        'replicaCount',
        'resources',
        'secretConfig',
        'seed',
        'service',
        'tenant',
      ].sort(),
    );
    expect(values).toMatchObject({
      image: { repository: `ghcr.io/aidonow/${module}`, tag: '1.0.0', digest: '', pullPolicy: 'IfNotPresent' },
      tenant: { code: '', tier: 'Starter' },
      otel: { endpoint: '' },
      replicaCount: 1,
      resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '250m', memory: '256Mi' } },
      service: { port: 8080 },
      seed: { enabled: true, version: '' },
      ingress: { path: `/${module}` },
      podAnnotations: {},
      credentials: {},
      secretConfig: {},
      nats: { secretName: 'eva-nats', credentialsRevision: '' },
    });
    expect(Object.keys(values['config'] ?? {}).length).toBeGreaterThan(0);
  });

  it.each(MODULES)('%s: templates only include the library', (module) => {
    const dir = join(chartsDir, module, 'templates');
    expect(readdirSync(dir).sort()).toEqual(['configmap.yaml', 'deployment.yaml', 'secret.yaml', 'service.yaml']);
    for (const file of readdirSync(dir)) {
      expect(readFileSync(join(dir, file), 'utf8').trim()).toMatch(/^\{\{-? include "eva-module-lib\.[a-z]+" \. \}\}$/);
    }
  });

  it.each(MODULES)('%s: the vendored library is identical to charts/modules/eva-module-lib', (module) => {
    const archive = join(chartsDir, module, 'charts', `${libChart}-1.0.0.tgz`);
    expect(existsSync(archive), `${archive} missing: run charts/modules/update-deps.sh`).toBe(true);
    expect(existsSync(join(chartsDir, module, 'Chart.lock'))).toBe(true);
    const out = mkdtempSync(join(tmpdir(), 'eva-vendored-'));
    try {
      execFileSync('tar', ['-xzf', archive, '-C', out]);
      const vendored = join(out, libChart);
      const source = join(chartsDir, libChart);
      expect(filesUnder(vendored)).toEqual(filesUnder(source));
      for (const file of filesUnder(source)) {
        const hint = `${file} differs: run charts/modules/update-deps.sh`;
        if (file === 'Chart.yaml') {
          // helm re-serialises Chart.yaml when it packages a chart; compare what it says.
          expect(readYaml(join(vendored, file)), hint).toEqual(readYaml(join(source, file)));
        } else {
          expect(readFileSync(join(vendored, file), 'utf8'), hint).toBe(readFileSync(join(source, file), 'utf8'));
        }
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

describe('helm lint --strict', () => {
  it.each([...MODULES, libChart])('%s lints cleanly', async (chart) => {
    const result = await helm(['lint', '--strict', join(chartsDir, chart), '--set', `tenant.code=${CODE}`]);
    expect(result.stderr + result.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(result.code).toBe(0);
    expect(result.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
  });
});

const cases = TIERS.flatMap((tier) => MODULES.map((module): [string, ModuleName] => [tier, module]));

function expectLabels(rendered: Rendered, module: string): void {
  for (const object of rendered.objects) {
    expect(object.metadata.labels, `${object.kind} labels`).toMatchObject({
      'app.kubernetes.io/name': module,
      'app.kubernetes.io/instance': module,
      'app.kubernetes.io/part-of': 'eva',
      'eva.aidonow.com/capsule-code': CODE,
      'eva.aidonow.com/module': module,
    });
  }
}

function expectRestrictedContainer(container: Container): void {
  expect(container.resources?.requests, container.name).toEqual({ cpu: '50m', memory: '64Mi' });
  expect(container.resources?.limits, container.name).toEqual({ cpu: '250m', memory: '256Mi' });
  expect(container.securityContext, container.name).toMatchObject({
    runAsNonRoot: true,
    runAsUser: 65532,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  });
}

function expectTelemetryEnv(container: Container, module: string, tier: string): void {
  expect(envOf(container, 'OTEL_SERVICE_NAME')?.value).toBe(`${module}.${CODE}`);
  expect(envOf(container, 'EVA_TENANT_CODE')?.value).toBe(CODE);
  expect(envOf(container, 'EVA_MODULE')?.value).toBe(module);
  const attributes = (envOf(container, 'OTEL_RESOURCE_ATTRIBUTES')?.value ?? '').split(',');
  for (const attribute of [`eva.tenant.code=${CODE}`, `eva.tenant.tier=${tier}`, `eva.module=${module}`]) {
    expect(attributes).toContain(attribute);
  }
  expect(envOf(container, 'OTEL_EXPORTER_OTLP_ENDPOINT')).toBeUndefined();
}

function moduleConfig(rendered: Rendered): Record<string, unknown> {
  const value: unknown = parse(rendered.configMap.data?.['config.yaml'] ?? '');
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('config.yaml is not a map');
  return value as Record<string, unknown>;
}

describe.each(cases)('helm template: tier %s, module %s', (tier, module) => {
  let rendered: Rendered;
  beforeAll(async () => {
    rendered = await render(module, tenantValues(tier));
  });

  it('renders exactly a Deployment, a Service, a ConfigMap and a Secret, named after the release', () => {
    expect(rendered.objects.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'Secret', 'Service']);
    expect(rendered.objects.map((o) => o.metadata.name).sort()).toEqual(
      [module, module, `${module}-config`, `${module}-credentials`].sort(),
    );
    expectLabels(rendered, module);
  });

  it('selects pods by name and instance and annotates them with checksums', () => {
    const selector = rendered.deployment.spec?.selector.matchLabels;
    expect(selector).toEqual({ 'app.kubernetes.io/name': module, 'app.kubernetes.io/instance': module });
    expect(rendered.deployment.spec?.template.metadata?.labels).toMatchObject(selector ?? {});
    expect(rendered.service.spec?.selector).toEqual(selector);
    expect(podAnnotation(rendered, 'checksum/values')).toMatch(/^[0-9a-f]{64}$/);
    expect(podAnnotation(rendered, 'checksum/config')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('runs every container restricted, with requests, limits, the image and telemetry env', () => {
    const containers = containersOf(rendered);
    expect(containers.map((c) => c.name)).toEqual(['seed-loader', module]);
    for (const container of containers) {
      expectRestrictedContainer(container);
      expect(container.image).toBe(`ghcr.io/aidonow/${module}:1.0.0`);
      expectTelemetryEnv(container, module, tier);
    }
    expect(rendered.deployment.spec?.template.spec?.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });

  it('seeds in an init container and probes the service port', () => {
    const seedLoader = rendered.deployment.spec?.template.spec?.initContainers?.[0];
    expect(seedLoader?.args).toEqual(['seed', '--version', '1.0.0']);
    const main = mainContainer(rendered, module);
    expect(main.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
    expect(main.readinessProbe?.httpGet?.port).toBe('http');
    expect(main.livenessProbe?.httpGet?.port).toBe('http');
    expect(rendered.service.spec?.ports).toEqual([{ name: 'http', port: 8080, targetPort: 'http', protocol: 'TCP' }]);
  });

  it('writes the tenant and the module config into the ConfigMap', () => {
    const config = moduleConfig(rendered);
    expect(config).toMatchObject({ module, tenant: { code: CODE, tier }, http: { port: 8080, basePath: `/${module}` } });
    expect(Object.keys(config['config'] ?? {}).length).toBeGreaterThan(0);
  });
});

describe('values contract', () => {
  it('a digest renders the image as repository@digest and ignores the tag', async () => {
    const rendered = await render(
      'orbit-crm',
      tenantValues('Customer', { image: { repository: 'registry.example/eva/orbit-crm', tag: '9.9.9', digest: DIGEST } }),
    );
    for (const container of containersOf(rendered)) {
      expect(container.image).toBe(`registry.example/eva/orbit-crm@${DIGEST}`);
    }
  });

  it('a digest that is not sha256:<64 hex> fails rendering', async () => {
    const result = await template('orbit-crm', tenantValues('Starter', { image: { digest: 'latest' } }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("at '/image/digest'");
  });

  it.each(MODULES)('%s: an empty tenant.code fails with a message naming tenant.code', async (module) => {
    const result = await template(module, {});
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('tenant.code is required');
  });

  it.each(['abcdef', 'ABCDE', 'ABCDEFG', 'ABC-EF'])('tenant.code %s is rejected by values.schema.json', async (code) => {
    const result = await template('orbit-itsm', { tenant: { code } });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("at '/tenant/code'");
  });

  it('an unknown tier is rejected by values.schema.json', async () => {
    const result = await template('orbit-itsm', tenantValues('Gold'));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("at '/tenant/tier'");
  });

  it('pod annotations are the operator’s (it sets none): values.schema.json refuses them', async () => {
    const result = await template('eva-shell', tenantValues('Enterprise', { podAnnotations: { 'example.com/team': 'ui' } }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("at '/podAnnotations'");
  });

  it('the OTLP endpoint is set only when given', async () => {
    const endpoint = 'http://otel-collector.observability:4318';
    const rendered = await render('eva-gateway', tenantValues('Customer', { otel: { endpoint } }));
    for (const container of containersOf(rendered)) {
      expect(envOf(container, 'OTEL_EXPORTER_OTLP_ENDPOINT')?.value).toBe(endpoint);
    }
  });

  it('seed.enabled=false drops the seed-loader; seed.version is passed through', async () => {
    const disabled = await render('orbit-crm', tenantValues('Starter', { seed: { enabled: false } }));
    expect(disabled.deployment.spec?.template.spec?.initContainers).toBeUndefined();
    const pinned = await render('orbit-crm', tenantValues('Starter', { seed: { version: '1.1.0' } }));
    expect(pinned.deployment.spec?.template.spec?.initContainers?.[0]?.args).toEqual(['seed', '--version', '1.1.0']);
  });

  it('names follow the release; replicas and port follow the values', async () => {
    const rendered = await render('eva-shell', tenantValues('Enterprise', { replicaCount: 3, service: { port: 9090 } }), 'shell');
    expect(rendered.deployment.metadata.name).toBe('shell');
    expect(rendered.configMap.metadata.name).toBe('shell-config');
    expect(rendered.secret.metadata.name).toBe('shell-credentials');
    expect(rendered.deployment.spec?.replicas).toBe(3);
    expect(rendered.service.spec?.ports?.[0]?.port).toBe(9090);
    expect(mainContainer(rendered, 'eva-shell').ports?.[0]?.containerPort).toBe(9090);
  });

  it('spec.helmValues-style overrides reach the module config (samples/evatenant-enterprise.yaml)', async () => {
    const rendered = await render('eva-gateway', tenantValues('Enterprise', { config: { rateLimitPerMinute: 1200 } }));
    const config = moduleConfig(rendered);
    expect(config['config']).toMatchObject({ rateLimitPerMinute: 1200 });
    expect(Array.isArray((config['config'] as { routes?: unknown }).routes)).toBe(true);
  });

  it('rendering fails when resources lack limits', async () => {
    const result = await template('orbit-crm', tenantValues('Starter', { resources: { limits: null } }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('resources.requests and resources.limits must both be set');
  });
});

describe('secret values', () => {
  const secrets = {
    credentials: { 'db-password': 'pw-Zq81-very-secret', 'api.token': 'tok-4471-also-secret' },
    nats: { secretName: 'eva-nats', credentialsRevision: '5f1c0e9a2b7d4e11' },
  };
  const secretStrings = Object.values(secrets.credentials);

  it.each(MODULES)('%s: secrets go into the Secret and reach containers only via secretKeyRef', async (module) => {
    const rendered = await render(module, tenantValues('Platform', secrets));

    const data = rendered.secret.data ?? {};
    const decoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    expect(decoded).toEqual({
      'db-password': secrets.credentials['db-password'],
      'api.token': secrets.credentials['api.token'],
    });

    const configText = JSON.stringify(rendered.configMap);
    const otherText = JSON.stringify([rendered.deployment, rendered.service]);
    for (const secret of secretStrings) {
      expect(configText).not.toContain(secret);
      expect(otherText).not.toContain(secret);
    }

    const secretName = `${module}-credentials`;
    for (const container of containersOf(rendered)) {
      for (const env of container.env ?? []) {
        if (env.value !== undefined) expect(secretStrings).not.toContain(env.value);
      }
      const refs = Object.fromEntries(
        (container.env ?? [])
          .filter((e) => e.valueFrom?.secretKeyRef)
          .map((e) => [e.name, [e.valueFrom?.secretKeyRef?.name, e.valueFrom?.secretKeyRef?.key]]),
      );
      expect(refs).toEqual({
        NATS_URL: ['eva-nats', 'url'],
        EVA_CREDENTIAL_DB_PASSWORD: [secretName, 'db-password'],
        EVA_CREDENTIAL_API_TOKEN: [secretName, 'api.token'],
      });
    }
  });

  it.each(MODULES)('%s: every container reads the tenant\'s NATS credentials from Secret eva-nats, mounted read-only (the module contract)', async (module) => {
    const rendered = await render(module, tenantValues('Platform', secrets));
    const volumes = rendered.deployment.spec?.template.spec?.volumes ?? [];
    expect(volumes.find((v) => v.name === 'nats')?.secret).toEqual({ secretName: 'eva-nats', defaultMode: 0o440 });
    for (const container of containersOf(rendered)) {
      expect(container.volumeMounts).toContainEqual({ name: 'nats', mountPath: '/var/run/secrets/eva/nats', readOnly: true });
      const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
      expect(env).toMatchObject({ NATS_CREDS_FILE: '/var/run/secrets/eva/nats/nats.creds', NATS_INBOX_PREFIX: '_INBOX_ABCDEF' });
      expect(Object.keys(env)).not.toContain('NATS_PASSWORD');
    }
  });

  it('changing credentials or the NATS credentials revision changes checksum/values; other values do not', async () => {
    const checksum = async (extra: Record<string, unknown>): Promise<string> =>
      podAnnotation(await render('orbit-crm', tenantValues('Customer', extra)), 'checksum/values');
    const base = await checksum(secrets);
    expect(await checksum(secrets)).toBe(base);
    expect(await checksum({ ...secrets, replicaCount: 2 })).toBe(base);
    expect(await checksum({ ...secrets, credentials: { ...secrets.credentials, 'db-password': 'rotated' } })).not.toBe(base);
    expect(await checksum({ ...secrets, nats: { ...secrets.nats, credentialsRevision: 'a-rotation' } })).not.toBe(base);
    expect(await checksum({ ...secrets, secretConfig: { sso: { clientSecret: 'rotated' } } })).not.toBe(base);
    expect(await checksum({})).not.toBe(base);
  });

  it('changing the module config changes checksum/config', async () => {
    const checksum = async (extra: Record<string, unknown>): Promise<string> =>
      podAnnotation(await render('eva-gateway', tenantValues('Customer', extra)), 'checksum/config');
    const base = await checksum({});
    expect(await checksum({ replicaCount: 2 })).toBe(base);
    expect(await checksum({ config: { rateLimitPerMinute: 1 } })).not.toBe(base);
  });

  /** How secretConfig reaches a rendered chart's pods: its key in the Secret, its volume, and per container its mount and variable. */
  function secretConfigWiring(rendered: Rendered): { stored: string | undefined; volume: unknown; containers: { mount: unknown; file: string | undefined }[] } {
    const encoded = rendered.secret.data?.['secret-config.yaml'];
    return {
      stored: encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString(),
      volume: rendered.deployment.spec?.template.spec?.volumes?.find((v) => v.name === 'secret-config')?.secret,
      containers: containersOf(rendered).map((c) => ({ mount: c.volumeMounts?.find((m) => m.name === 'secret-config'), file: envOf(c, 'EVA_SECRET_CONFIG_FILE')?.value })),
    };
  }

  it.each(MODULES)('%s: secretConfig goes only into the Secret, as secret-config.yaml mounted read-only at EVA_SECRET_CONFIG_FILE; without it, no mount', async (module) => {
    const secretConfig = { sso: { clientSecret: 'sso-Zq81-very-secret' }, apiKeys: ['key-4471-also-secret'] };
    const rendered = await render(module, tenantValues('Starter', { ...secrets, secretConfig }));
    const wiring = secretConfigWiring(rendered);
    expect(parse(wiring.stored ?? '')).toEqual(secretConfig);
    const elsewhere = JSON.stringify([rendered.configMap, rendered.deployment, rendered.service]);
    for (const value of ['sso-Zq81-very-secret', 'key-4471-also-secret']) expect(elsewhere).not.toContain(value);
    // Only secretConfig's file: the credentials stay env-only (secretKeyRef).
    expect(wiring.volume).toEqual({ secretName: `${module}-credentials`, items: [{ key: 'secret-config.yaml', path: 'secret-config.yaml' }], defaultMode: 0o440 });
    expect(wiring.containers).toEqual(containersOf(rendered).map(() => ({
      mount: { name: 'secret-config', mountPath: '/var/run/secrets/eva/config', readOnly: true },
      file: '/var/run/secrets/eva/config/secret-config.yaml',
    })));
    // Positive control of the condition: without secretConfig there is no key, volume, mount or variable.
    const without = await render(module, tenantValues('Starter', secrets));
    expect(secretConfigWiring(without)).toEqual({ stored: undefined, volume: undefined, containers: containersOf(without).map(() => ({ mount: undefined, file: undefined })) });
  });

  it('secretConfig must be a mapping (values.schema.json), and its key is not a credential name', async () => {
    const notMapping = await template('orbit-crm', tenantValues('Starter', { secretConfig: 'text' }));
    expect(notMapping.code).not.toBe(0);
    expect(notMapping.stderr).toContain("at '/secretConfig'");
    const reserved = await template('orbit-crm', tenantValues('Starter', { credentials: { 'secret-config.yaml': 'x' } }));
    expect(reserved.code).not.toBe(0);
    expect(reserved.stderr).toContain('reserved for secretConfig');
  });

  it.each(['bad key', ''])('credential name %j is rejected', async (name) => {
    const result = await template('orbit-crm', tenantValues('Starter', { credentials: { [name]: 'x' } }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/credentials key/);
  });
});
