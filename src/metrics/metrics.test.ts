import { afterEach, describe, expect, it } from 'vitest';
import { PHASES, type Phase } from '../api/constants.ts';
import { ROLLOUT_PHASES } from '../api/evarollout.ts';
import { createLogger } from '../log.ts';
import { type MetricsServer, OperatorMetrics, startMetricsServer } from './metrics.ts';

/** The sample lines (not HELP/TYPE) of one metric family in the exposition text. */
function samples(text: string, name: string): string[] {
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

function counts(overrides: Partial<Record<Phase, number>>): Record<Phase, number> {
  return { ...(Object.fromEntries(PHASES.map((p) => [p, 0])) as Record<Phase, number>), ...overrides };
}

describe('OperatorMetrics', () => {
  it('records reconciles, steps and time to active with their labels', async () => {
    const metrics = new OperatorMetrics();
    metrics.observeReconcile('success', 0.2);
    metrics.observeReconcile('success', 0.3);
    metrics.observeReconcile('error', 1.5, 'JetStreamUnavailable');
    metrics.observeStep('streams', 'Starter', 0.04);
    metrics.stepTimer('Customer').observe('modules', 42);
    metrics.observeTimeToActive('Enterprise', 95);
    const text = await metrics.metricsText();

    expect(samples(text, 'eva_reconcile_total')).toEqual([
      'eva_reconcile_total{result="success",reason=""} 2',
      'eva_reconcile_total{result="error",reason="JetStreamUnavailable"} 1',
    ]);
    expect(text).toContain('eva_reconcile_duration_seconds_count{result="success"} 2');
    expect(text).toContain('eva_reconcile_duration_seconds_sum{result="error"} 1.5');
    expect(text).toContain('eva_saga_step_duration_seconds_bucket{le="0.05",step="streams",tier="Starter"} 1');
    expect(text).toContain('eva_saga_step_duration_seconds_bucket{le="0.01",step="streams",tier="Starter"} 0');
    expect(text).toContain('eva_saga_step_duration_seconds_bucket{le="120",step="modules",tier="Customer"} 1');
    expect(text).toContain('eva_time_to_active_seconds_bucket{le="0.5",tier="Enterprise"} 0');
    expect(text).toContain('eva_time_to_active_seconds_bucket{le="600",tier="Enterprise"} 1');
    expect(text).toContain('eva_time_to_active_seconds_count{tier="Enterprise"} 1');
  });

  it('sets every phase, zeros included, and single-value gauges', async () => {
    const metrics = new OperatorMetrics();
    expect(samples(await metrics.metricsText(), 'eva_tenants')).toHaveLength(PHASES.length);

    metrics.setTenantsByPhase(counts({ Active: 3, Failed: 1 }));
    metrics.setTenantsByPhase(counts({ Active: 4 }));
    metrics.setWorkqueueDepth(7);
    metrics.setTenantsPinnedToAbsentVersion(2);
    metrics.observeKubeRequest('GET', 0);
    metrics.observeKubeRequest('GET', 0.25);
    metrics.observeKubeRequest('PATCH', 0);
    const text = await metrics.metricsText();

    const tenants = samples(text, 'eva_tenants');
    expect(tenants).toHaveLength(PHASES.length);
    expect(tenants).toContain('eva_tenants{phase="Active"} 4');
    expect(tenants).toContain('eva_tenants{phase="Failed"} 0');
    expect(tenants).toContain('eva_tenants{phase="Decommissioned"} 0');
    expect(samples(text, 'eva_workqueue_depth')).toEqual(['eva_workqueue_depth 7']);
    expect(samples(text, 'eva_tenants_pinned_to_absent_version')).toEqual(['eva_tenants_pinned_to_absent_version 2']);
    expect(samples(text, 'eva_kube_api_requests_total')).toEqual(['eva_kube_api_requests_total{method="GET"} 2', 'eva_kube_api_requests_total{method="PATCH"} 1']);
    expect(samples(text, 'eva_kube_api_rate_limit_wait_seconds_total')).toEqual(['eva_kube_api_rate_limit_wait_seconds_total 0.25']);
  });

  it('asks the operator callback for tenant counts on each scrape; a failing callback keeps the last values', async () => {
    let current: Record<Phase, number> | Error = counts({ Provisioning: 2 });
    const metrics = new OperatorMetrics({
      tenantsByPhase: () => {
        if (current instanceof Error) throw current;
        return current;
      },
    });
    expect(await metrics.metricsText()).toContain('eva_tenants{phase="Provisioning"} 2');
    current = counts({ Active: 2 });
    let text = await metrics.metricsText();
    expect(text).toContain('eva_tenants{phase="Provisioning"} 0');
    expect(text).toContain('eva_tenants{phase="Active"} 2');
    current = new Error('cache not synced');
    text = await metrics.metricsText();
    expect(text).toContain('eva_tenants{phase="Active"} 2');
  });

  it('keeps queue depth per capsule and stream; forgetTenant removes only that tenant', async () => {
    const metrics = new OperatorMetrics();
    metrics.setQueueDepth('ABCDEF', 'eva-ABCDEF-events', 12);
    metrics.setQueueDepth('ABCDEF', 'eva-ABCDEF-commands', 3);
    metrics.setQueueDepth('GHIJKL', 'eva-GHIJKL-events', 5);
    metrics.setQueueDepth('ABCDEF', 'eva-ABCDEF-events', 13);
    expect(samples(await metrics.metricsText(), 'capsule_queue_depth')).toEqual([
      'capsule_queue_depth{capsule="ABCDEF",stream="eva-ABCDEF-events"} 13',
      'capsule_queue_depth{capsule="ABCDEF",stream="eva-ABCDEF-commands"} 3',
      'capsule_queue_depth{capsule="GHIJKL",stream="eva-GHIJKL-events"} 5',
    ]);

    metrics.forgetTenant('ABCDEF');
    metrics.forgetTenant('NOSUCH');
    expect(samples(await metrics.metricsText(), 'capsule_queue_depth')).toEqual(['capsule_queue_depth{capsule="GHIJKL",stream="eva-GHIJKL-events"} 5']);

    metrics.forgetQueueDepth('GHIJKL', 'eva-GHIJKL-events');
    expect(samples(await metrics.metricsText(), 'capsule_queue_depth')).toEqual([]);
  });

  it('counts tenants by owning version: only the versions that own some now', async () => {
    const metrics = new OperatorMetrics();
    expect(samples(await metrics.metricsText(), 'eva_tenants_by_operator_version')).toEqual([]);
    metrics.setTenantsByOperatorVersion({ '1.4.0': 30 });
    metrics.setTenantsByOperatorVersion({ '1.4.0': 28, '1.5.0': 2 });
    expect(samples(await metrics.metricsText(), 'eva_tenants_by_operator_version')).toEqual([
      'eva_tenants_by_operator_version{version="1.4.0"} 28',
      'eva_tenants_by_operator_version{version="1.5.0"} 2',
    ]);
    metrics.setTenantsByOperatorVersion({ '1.5.0': 30 });
    expect(samples(await metrics.metricsText(), 'eva_tenants_by_operator_version')).toEqual(['eva_tenants_by_operator_version{version="1.5.0"} 30']);
  });

  it("reports each rollout's phase (1 for the current, 0 for the others), the tenants it moved and its gate verdicts", async () => {
    const metrics = new OperatorMetrics();
    metrics.rollouts.setRolloutProgress('to-1-5-0', 'Moving', 2);
    metrics.rollouts.setRolloutProgress('to-1-5-0', 'Baking', 2);
    metrics.rollouts.countGateResult('to-1-5-0', 'TenantsReady', 'Passed');
    metrics.rollouts.countGateResult('to-1-5-0', 'TenantsReady', 'Passed');
    metrics.rollouts.countGateResult('to-1-5-0', 'Prometheus', 'Unknown');
    let text = await metrics.metricsText();
    expect(samples(text, 'eva_rollout_phase')).toEqual(ROLLOUT_PHASES.map((phase) => `eva_rollout_phase{rollout="to-1-5-0",phase="${phase}"} ${phase === 'Baking' ? 1 : 0}`));
    expect(samples(text, 'eva_rollout_tenants_moved')).toEqual(['eva_rollout_tenants_moved{rollout="to-1-5-0"} 2']);
    expect(samples(text, 'eva_rollout_gate_results_total')).toEqual([
      'eva_rollout_gate_results_total{rollout="to-1-5-0",gate="TenantsReady",verdict="Passed"} 2',
      'eva_rollout_gate_results_total{rollout="to-1-5-0",gate="Prometheus",verdict="Unknown"} 1',
    ]);
    // Forgotten (deleted, or run by another operator now): its gauges go, its counter stays.
    metrics.rollouts.forgetRollout('to-1-5-0');
    text = await metrics.metricsText();
    expect(samples(text, 'eva_rollout_phase')).toEqual([]);
    expect(samples(text, 'eva_rollout_tenants_moved')).toEqual([]);
    expect(samples(text, 'eva_rollout_gate_results_total')).toHaveLength(2);
  });

  it('has a registry of its own with prefixed default metrics', async () => {
    const first = new OperatorMetrics();
    const second = new OperatorMetrics();
    first.setWorkqueueDepth(1);
    expect(samples(await second.metricsText(), 'eva_workqueue_depth')).toEqual(['eva_workqueue_depth 0']);
    expect(await first.metricsText()).toMatch(/^eva_operator_process_cpu_seconds_total /m);
    expect(await first.metricsText()).toMatch(/^eva_operator_nodejs_heap_size_used_bytes /m);
    expect(first.contentType).toMatch(/^text\/plain/);
  });
});

describe('metrics server', () => {
  let server: MetricsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function start(isReady: () => boolean): Promise<{ metrics: OperatorMetrics; base: string }> {
    const metrics = new OperatorMetrics();
    server = await startMetricsServer({ port: 0, host: '127.0.0.1', metrics, isReady, log: createLogger('silent') });
    expect(server.port).toBeGreaterThan(0);
    return { metrics, base: `http://127.0.0.1:${server.port}` };
  }

  it('serves /metrics, /healthz and /readyz, and 404 elsewhere', async () => {
    let ready = false;
    const { metrics, base } = await start(() => ready);
    metrics.observeReconcile('requeue', 0.1);
    metrics.setQueueDepth('ABCDEF', 'eva-ABCDEF-events', 9);

    const scrape = await fetch(`${base}/metrics`);
    expect(scrape.status).toBe(200);
    expect(scrape.headers.get('content-type')).toBe(metrics.contentType);
    const text = await scrape.text();
    expect(text).toContain('eva_reconcile_total{result="requeue",reason=""} 1');
    expect(text).toContain('capsule_queue_depth{capsule="ABCDEF",stream="eva-ABCDEF-events"} 9');
    expect(text).toContain('# TYPE eva_saga_step_duration_seconds histogram');

    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    ready = true;
    expect((await fetch(`${base}/readyz?verbose`)).status).toBe(200);
    expect((await fetch(`${base}/`)).status).toBe(404);
    expect((await fetch(`${base}/metricsx`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('closes even with an idle keep-alive connection, and frees the port', async () => {
    const { base } = await start(() => true);
    await (await fetch(`${base}/healthz`)).text();
    const port = server?.port;
    await server?.close();
    server = undefined;
    await expect(fetch(`http://127.0.0.1:${port ?? 0}/healthz`)).rejects.toThrow();
  });

  it('fails to start on a port already in use', async () => {
    const { metrics } = await start(() => true);
    const taken = server?.port ?? 0;
    await expect(startMetricsServer({ port: taken, host: '127.0.0.1', metrics, isReady: () => true, log: createLogger('silent') })).rejects.toThrow(
      /EADDRINUSE/,
    );
  });
});
