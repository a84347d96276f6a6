import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeApiError, Kube, loadKubeConfig } from './kube.ts';

/** A stand-in API server on loopback that answers every GET with an empty namespace list and records arrivals. */
let server: Server;
let arrivals: { at: number; userAgent: string | undefined; authorization: string | undefined }[] = [];
let dir: string;
const previousKubeconfig = process.env['KUBECONFIG'];

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    arrivals.push({ at: performance.now(), userAgent: req.headers['user-agent'], authorization: req.headers.authorization });
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'NamespaceList', metadata: {}, items: [] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  dir = mkdtempSync(join(tmpdir(), 'eva-kube-test-'));
  process.env['KUBECONFIG'] = writeKubeconfig('kubeconfig', {});
});

/** A kubeconfig for the stand-in server with this cluster's extra fields and this user; returns its path. */
function writeKubeconfig(name: string, cluster: Record<string, unknown>, user: Record<string, unknown> = {}): string {
  const { port } = server.address() as AddressInfo;
  const path = join(dir, name);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: `http://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true, ...cluster } }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return path;
}

afterAll(async () => {
  if (previousKubeconfig === undefined) delete process.env['KUBECONFIG'];
  else process.env['KUBECONFIG'] = previousKubeconfig;
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function listNamespaces(kube: Kube, count: number): Promise<number> {
  arrivals = [];
  const started = performance.now();
  await Promise.all(Array.from({ length: count }, () => kube.core.listNamespace()));
  return started;
}

describe('loadKubeConfig', () => {
  it('reads the TLS files once, not per request, and still sends the credentials every request needs', async () => {
    const pem = (label: string): string => `-----BEGIN ${label}-----\n${Buffer.from(label).toString('base64')}\n-----END ${label}-----\n`;
    const files = { ca: join(dir, 'ca.crt'), cert: join(dir, 'client.crt'), key: join(dir, 'client.key') };
    writeFileSync(files.ca, pem('CA'));
    writeFileSync(files.cert, pem('CERT'));
    writeFileSync(files.key, pem('KEY'));
    const previous = process.env['KUBECONFIG'];
    process.env['KUBECONFIG'] = writeKubeconfig('with-files', { 'certificate-authority': files.ca }, { 'client-certificate': files.cert, 'client-key': files.key, token: 'a-token' });
    try {
      const config = loadKubeConfig();
      expect(Buffer.from(config.getCurrentCluster()?.caData ?? '', 'base64').toString()).toBe(pem('CA'));
      expect(Buffer.from(config.getCurrentUser()?.keyData ?? '', 'base64').toString()).toBe(pem('KEY'));
      // Gone from disk: client-node would fail every request reading them again (ENOENT).
      for (const file of Object.values(files)) rmSync(file);
      const kube = new Kube(config);
      await listNamespaces(kube, 3);
      expect(arrivals.map((a) => a.authorization)).toEqual(['Bearer a-token', 'Bearer a-token', 'Bearer a-token']);
    } finally {
      process.env['KUBECONFIG'] = previous;
    }
  });

  it('names the operator version and shard in the User-Agent of every client', async () => {
    const kube = new Kube(loadKubeConfig({ operatorVersion: '2.0.0', shard: 'eu' }));
    await listNamespaces(kube, 1);
    await kube.coordination.listNamespacedLease({ namespace: 'default' });
    expect(arrivals.map((a) => a.userAgent)).toEqual(['eva-operator/2.0.0 (shard eu)', 'eva-operator/2.0.0 (shard eu)']);
  });

  it('holds requests to the client-side rate limit: a burst at once, then QPS (client-go QPS/burst)', async () => {
    const qps = 20;
    const burst = 5;
    const count = 25;
    const kube = new Kube(loadKubeConfig({ operatorVersion: '2.0.0', rateLimit: { qps, burst } }));
    const started = await listNamespaces(kube, count);
    expect(arrivals).toHaveLength(count);
    const offsets = arrivals.map((a) => a.at - started).sort((a, b) => a - b);
    // The bucket starts full: `burst` go at once; each further request waits for a token (1/qps s).
    // Lower bounds only: a busy machine can make requests later, never earlier.
    for (let i = burst; i < count; i += 1) {
      expect(offsets[i], `request ${i + 1}`).toBeGreaterThanOrEqual(((i - burst + 1) / qps) * 1000 * 0.9);
    }
  });

  it('without a limit (tests, tools), nothing waits for a token: the control for the test above', async () => {
    const kube = new Kube(loadKubeConfig());
    const started = await listNamespaces(kube, 25);
    const last = Math.max(...arrivals.map((a) => a.at - started));
    // 20 tokens short at 20 QPS would be 1 s; generous for a busy machine, still far below it.
    expect(last).toBeLessThan(900);
  });
});

describe('describeApiError', () => {
  it('says why a request reached no API server, where fetch says only "fetch failed"; other errors keep their message (the control)', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const refused: unknown = await fetch(`http://127.0.0.1:${String(port)}/version`).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toBe('fetch failed');
    expect(describeApiError(refused)).toBe(`the API server cannot be reached (ECONNREFUSED 127.0.0.1:${String(port)})`);
    expect(describeApiError(new Error('fetch failed'))).toBe('fetch failed');
  });
});
