import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kube, loadKubeConfig } from './kube.ts';

/** A stand-in API server on loopback that answers every GET with an empty namespace list and records arrivals. */
let server: Server;
let arrivals: { at: number; userAgent: string | undefined }[] = [];
let dir: string;
const previousKubeconfig = process.env['KUBECONFIG'];

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    arrivals.push({ at: performance.now(), userAgent: req.headers['user-agent'] });
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'NamespaceList', metadata: {}, items: [] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  dir = mkdtempSync(join(tmpdir(), 'eva-kube-test-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: `http://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: {} }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  process.env['KUBECONFIG'] = kubeconfig;
});

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
