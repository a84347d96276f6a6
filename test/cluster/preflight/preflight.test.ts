/**
 * `eva-operator preflight` as a user runs it (`node src/cli.ts preflight`), against the suite's control
 * plane (never a developer's cluster: KUBECONFIG is the test plane's, and the child gets no other
 * environment) and real nats-servers: one in operator mode with JetStream and a full resolver, one
 * plain. Every negative case changes one input of the passing run, and shows that check failing with
 * its fix while the same probes still pass elsewhere; the passing run is each one's positive control.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, kubectl, kubectlOk, requiredEnv } from '../../support/kubectl.ts';
import { startNatsServer, type TestNatsServer } from '../../support/nats-server.ts';
import { freePort } from '../../support/ports.ts';
import { runLetters } from '../../support/random.ts';
import { repoRoot } from '../../support/tools.ts';

interface Row {
  check: string;
  result: 'ok' | 'warn' | 'fail';
  detail: string;
  fix?: string;
}

const run = runLetters().toLowerCase();
const ingressNamespace = `eva-preflight-ingress-${run}`;
const ingressClass = `eva-preflight-${run}`;
const tlsSecret = `${ingressNamespace}/wildcard`;
let operatorNats: TestNatsServer;
let plainNats: TestNatsServer;

/** Runs the command with only PATH, HOME and the test plane's KUBECONFIG, plus `env`. */
function preflight(args: readonly string[], env: Record<string, string> = {}): { status: number; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [join(repoRoot, 'src/cli.ts'), 'preflight', ...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', KUBECONFIG: requiredEnv('KUBECONFIG'), ...env },
    encoding: 'utf8',
    timeout: 90_000,
  });
  if (result.error) throw result.error;
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** The passing run's flags, with `change` laid over them. */
function flags(change: Record<string, string> = {}): string[] {
  const all = {
    '--nats-url': operatorNats.url,
    '--nats-creds': operatorNats.auth.systemCredsFile,
    '--ingress-class': ingressClass,
    '--ingress-namespaces': `kubernetes.io/metadata.name=${ingressNamespace}`,
    '--tls-secret': tlsSecret,
    ...change,
  };
  return [...Object.entries(all).flat(), '--output', 'json', '--timeout', '10'];
}

function rows(args: readonly string[]): { status: number; byCheck: Map<string, Row>; stderr: string } {
  const result = preflight(args);
  const parsed = JSON.parse(result.stdout) as Row[];
  return { status: result.status, byCheck: new Map(parsed.map((row) => [row.check, row])), stderr: result.stderr };
}

const resultsOf = (byCheck: Map<string, Row>): Record<string, string> => Object.fromEntries([...byCheck].map(([check, row]) => [check, row.result]));

const ALL_OK = {
  'kubernetes-version': 'ok',
  'admission-policies': 'ok',
  'nats-connection': 'ok',
  'nats-operator-mode': 'ok',
  'nats-jetstream': 'ok',
  'nats-resolver': 'ok',
  'ingress-class': 'ok',
  'ingress-exception': 'ok',
  tls: 'ok',
};

beforeAll(async () => {
  [operatorNats, plainNats] = await Promise.all([startNatsServer(), startNatsServer({ operatorMode: false })]);
  kubectlOk(['create', 'namespace', ingressNamespace]);
  // The "ingress controller": any pod running in the namespace (kwok runs it without an image pull).
  kubectlOk(['run', 'controller', '-n', ingressNamespace, '--image=registry.k8s.io/pause:3.10', '--restart=Never']);
  kubectlOk(['create', '-f', '-'], JSON.stringify({ apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name: ingressClass }, spec: { controller: 'example.com/preflight-test' } }));
  // The API server checks only that a kubernetes.io/tls Secret has both keys, not what they hold.
  const [crt, key] = ['not a certificate', 'not a key'].map((text) => Buffer.from(text).toString('base64'));
  kubectlOk(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { name: 'wildcard', namespace: ingressNamespace }, data: { 'tls.crt': crt, 'tls.key': key } }));
  const running = await eventually(() => kubectl(['get', 'pod', 'controller', '-n', ingressNamespace, '-o', 'jsonpath={.status.phase}']).stdout === 'Running', 60_000);
  expect(running, 'the ingress namespace runs a pod').toBe(true);
}, 120_000);

afterAll(async () => {
  kubectl(['delete', 'namespace', ingressNamespace, '--ignore-not-found', '--wait=false']);
  kubectl(['delete', 'ingressclass', ingressClass, '--ignore-not-found']);
  await Promise.all([operatorNats.stop(), plainNats.stop()]);
});

describe('eva-operator preflight on the local control plane', () => {
  it('passes (exit 0) when everything the operator needs is there, every check ok', () => {
    const { status, byCheck, stderr } = rows(flags());
    expect(resultsOf(byCheck), stderr).toEqual(ALL_OK);
    expect(status).toBe(0);
    expect(byCheck.get('nats-operator-mode')?.detail).toMatch(/^nats-server \S+ trusts operator eva-test$/);
    expect(byCheck.get('ingress-exception')?.detail).toContain(`selects ${ingressNamespace} (pod controller running)`);
  });

  it("the helm test form: no flags, the operator's environment variables, and the table", () => {
    const result = preflight(['--timeout', '10'], {
      NATS_URL: operatorNats.url,
      NATS_SYSTEM_CREDS_FILE: operatorNats.auth.systemCredsFile,
      NATS_OPERATOR_SIGNING_KEY_FILE: operatorNats.auth.operatorSigningKeyFile,
      INGRESS_CLASS: ingressClass,
      NETWORK_POLICY_INGRESS_NAMESPACES: `kubernetes.io/metadata.name=${ingressNamespace}`,
      INGRESS_TLS_SECRET: tlsSecret,
    });
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^CHECK {15}RESULT {2}DETAIL$/m);
    expect(result.stdout).toMatch(/^nats-operator-mode {2}OK {6}nats-server .* trusts operator eva-test$/m);
    expect(result.stdout).toContain('0 failed, 0 warning(s), 9 ok');
    expect(result.stdout).not.toMatch(/^fix:/m);
  });

  it('a NATS not in operator mode fails nats-operator-mode (connected, but no system account answers); the cluster checks still pass', () => {
    const { status, byCheck } = rows(flags({ '--nats-url': plainNats.url }));
    expect(status).toBe(1);
    expect(resultsOf(byCheck)).toEqual({ ...ALL_OK, 'nats-operator-mode': 'fail', 'nats-jetstream': 'fail', 'nats-resolver': 'fail' });
    expect(byCheck.get('nats-operator-mode')?.fix).toContain('nats-auth.conf');
  });

  it('an unreachable NATS fails nats-connection, saying where it looked', async () => {
    const nothing = `nats://127.0.0.1:${String(await freePort())}`;
    const { status, byCheck } = rows(flags({ '--nats-url': nothing }));
    expect(status).toBe(1);
    expect(byCheck.get('nats-connection')).toMatchObject({ result: 'fail', detail: expect.stringContaining(`cannot reach NATS at ${nothing}`) as string });
    expect(byCheck.get('ingress-class')?.result).toBe('ok');
  });

  it("another bootstrap's system user is rejected: nats-connection fails, naming the creds to use", () => {
    const { status, byCheck } = rows(flags({ '--nats-creds': plainNats.auth.systemCredsFile }));
    expect(status).toBe(1);
    expect(byCheck.get('nats-connection')).toMatchObject({ result: 'fail', fix: expect.stringContaining('system.creds') as string });
  });

  it('a missing IngressClass fails ingress-class, listing the classes there are', () => {
    const { status, byCheck } = rows(flags({ '--ingress-class': `${ingressClass}-missing` }));
    expect(status).toBe(1);
    expect(resultsOf(byCheck)).toEqual({ ...ALL_OK, 'ingress-class': 'fail' });
    expect(byCheck.get('ingress-class')?.detail).toContain(`IngressClass ${ingressClass}-missing does not exist (classes: `);
    expect(byCheck.get('ingress-class')?.detail).toContain(ingressClass);
    expect(byCheck.get('ingress-class')?.fix).toMatch(/^set ingressClass to one of: /);
  });

  it('an ingress exception that selects no namespace fails ingress-exception, naming the chart value', () => {
    const { status, byCheck } = rows(flags({ '--ingress-namespaces': `kubernetes.io/metadata.name=${ingressNamespace}-missing` }));
    expect(status).toBe(1);
    expect(resultsOf(byCheck)).toEqual({ ...ALL_OK, 'ingress-exception': 'fail' });
    expect(byCheck.get('ingress-exception')?.fix).toBe('set networkPolicy.ingressNamespaces=kubernetes.io/metadata.name=<the namespace of your ingress controller>');
  });

  it('a namespace where nothing runs is no ingress controller: ingress-exception fails', () => {
    const { byCheck } = rows(flags({ '--ingress-namespaces': 'kubernetes.io/metadata.name=default' }));
    expect(byCheck.get('ingress-exception')).toMatchObject({ result: 'fail', detail: expect.stringContaining('where no pod runs') as string });
  });

  it('a missing TLS Secret fails tls; the same namespace\'s Secret passed above', () => {
    const { status, byCheck } = rows(flags({ '--tls-secret': `${ingressNamespace}/missing` }));
    expect(status).toBe(1);
    expect(resultsOf(byCheck)).toEqual({ ...ALL_OK, tls: 'fail' });
    expect(byCheck.get('tls')).toMatchObject({ detail: `Secret ${ingressNamespace}/missing not found`, fix: expect.stringContaining('kubectl create secret tls') as string });
  });

  it('a usage error exits 2 and checks nothing', () => {
    const result = preflight([...flags(), '--tls-issuer', 'letsencrypt']);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('exclusive');
    expect(result.stdout).toBe('');
  });
});
