/**
 * A rollout's Prometheus gate against a real Prometheus (test/support/prometheus.ts, built by the test
 * command's install): the errors a batch's module pods would export are served here and scraped
 * every second; one rollout pass (controller/rollout-reconciler.ts, over in-memory tenants of
 * test/support/rollout-world.ts) asks Prometheus' HTTP API exactly as the rollout controller does
 * (rollout/observed.ts askPrometheus) and acts on the verdict. Under the limit the next batch moves
 * (the positive control); above it, with several series, or with Prometheus stopped the rollout
 * halts and returns the batch: a gate that cannot be judged never passes.
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvaTenant } from '../../src/api/evatenant.ts';
import type { EvaRolloutStatus } from '../../src/api/evarollout.ts';
import { reconcileRollout } from '../../src/controller/rollout-reconciler.ts';
import { askPrometheus } from '../../src/rollout/observed.ts';
import { freePort } from '../support/ports.ts';
import { prometheusBinary, type PrometheusProcess, startPrometheus } from '../support/prometheus.ts';
import { movedTenant, ports, rollout, tenant } from '../support/rollout-world.ts';

const SUM = 'sum(module_http_errors_total)';
const MAX = 0.5;
/** Errors per tenant that the stand-in metrics endpoint serves now. */
const errors = { a: 0, b: 0 };
let metrics: Server;
let prometheus: PrometheusProcess;
const dir = mkdtempSync(join(tmpdir(), 'eva-prometheus-gate-'));

function metricsText(): string {
  const lines = Object.entries(errors).map(([t, n]) => `module_http_errors_total{tenant="${t}"} ${String(n)}`);
  return ['# TYPE module_http_errors_total counter', ...lines, ''].join('\n');
}

/** Until Prometheus has scraped the value now served (the gate reads what Prometheus has). */
async function scraped(value: number): Promise<void> {
  await expect.poll(() => askPrometheus(prometheus.url, SUM), { timeout: 30_000, interval: 250, message: `Prometheus never answered ${SUM} = ${String(value)}` }).toEqual({ value });
}

/** Batch 1 (tenants a and b of wave 1) moved, Ready on the target and baked: the gates are judged now. */
const baked: EvaRolloutStatus = { phase: 'Baking', wave: 1, batch: 1, movedAt: '2030-01-01T00:00:00Z', readyAt: '2030-01-01T00:05:00Z' };
const fleet = (): EvaTenant[] => [movedTenant(tenant('a', 1)), movedTenant(tenant('b', 1)), tenant('c', 1), tenant('d', 2)];

async function pass(query: string): Promise<ReturnType<typeof ports>> {
  const world = { ...ports(fleet()), ask: askPrometheus };
  await reconcileRollout(rollout('r', baked, undefined, { gates: { prometheus: { url: prometheus.url, query, max: MAX } } }), world);
  return world;
}

const gate = (world: ReturnType<typeof ports>): string => {
  const found = world.statuses[0]?.gates?.find((g) => g.gate === 'Prometheus');
  return `${found?.verdict ?? 'none'}: ${found?.message ?? ''}`;
};

beforeAll(async () => {
  metrics = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(metricsText());
  });
  const port = await freePort();
  await new Promise<void>((resolve) => metrics.listen(port, '127.0.0.1', resolve));
  prometheus = await startPrometheus(prometheusBinary(), dir, [`127.0.0.1:${String(port)}`]);
}, 120_000);

afterAll(async () => {
  await prometheus.stop();
  await new Promise((resolve) => metrics.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('the Prometheus gate of a rollout, against a real Prometheus', () => {
  it('under the limit: it passes and the next batch moves (positive control)', async () => {
    await scraped(0);
    const world = await pass(SUM);
    expect(gate(world)).toBe(`Passed: ${SUM} = 0 (max ${String(MAX)})`);
    expect(world.patches.map((p) => p.name)).toEqual(['c']);
    expect(world.statuses[0]?.phase).toBe('Moving');
  });

  it('above the limit: halted with the value named, and the batch returned', async () => {
    errors.a = 2;
    errors.b = 1;
    await scraped(3);
    const world = await pass(SUM);
    expect(gate(world)).toBe(`Failed: ${SUM} = 3 (max ${String(MAX)})`);
    expect(world.statuses[0]?.phase).toBe('RollingBack');
    expect(world.patches).toEqual([]);
  });

  it('a query that gives one series per tenant is no single number: Unknown, and the rollout halts', async () => {
    const world = await pass('module_http_errors_total');
    expect(gate(world)).toMatch(/^Unknown: cannot evaluate module_http_errors_total: /);
    expect(world.statuses[0]?.phase).toBe('RollingBack');
  });

  it('Prometheus stopped: the gate cannot be judged and the rollout halts; it never passes by default', async () => {
    errors.a = 0;
    errors.b = 0;
    await scraped(0);
    await prometheus.stop();
    const world = await pass(SUM);
    expect(gate(world)).toMatch(new RegExp(`^Unknown: cannot evaluate ${SUM.replace(/[()]/g, '\\$&')}: `));
    expect(world.statuses[0]?.phase).toBe('RollingBack');
    expect(world.patches).toEqual([]);
  });
});
