import { describe, expect, it } from 'vitest';
import { testAccounts, testScope, useNatsServer, withAccount } from '../../test/support/fixtures.ts';
import type { TenantScope } from '../tenancy/scope.ts';
import { OperatorMetrics } from '../metrics/metrics.ts';
import { refreshQueueDepth } from './queue-depth.ts';
import { streamsStep } from './streams.ts';
import { streamName } from '../tenancy/names.ts';

/** The capsule_queue_depth samples of one capsule, as "stream value" pairs. */
async function depths(metrics: OperatorMetrics, code: string): Promise<string[]> {
  const prefix = `capsule_queue_depth{capsule="${code}",stream="`;
  return (await metrics.metricsText())
    .split('\n')
    .filter((line) => line.startsWith(prefix))
    .map((line) => line.slice(prefix.length).replace('"} ', ' '));
}

describe('refreshQueueDepth against a real nats-server, in the tenant account', () => {
  const f = useNatsServer();

  async function publish(scope: TenantScope, subject: string, count: number): Promise<void> {
    await f.nats.runInTenant(scope, async ({ js }) => {
      for (let i = 0; i < count; i += 1) await js.publish(subject, new TextEncoder().encode(String(i)));
    });
  }
  async function provisioned(code: string): Promise<TenantScope> {
    const scope = testScope({ code });
    await withAccount(f.nats, scope);
    await streamsStep.ensure(scope, f.deps());
    return scope;
  }

  it('sets the message count of both streams', async () => {
    const scope = await provisioned('DEPTHA');
    await publish(scope, 'capsule.DEPTHA.events.created', 5);
    await publish(scope, 'capsule.DEPTHA.commands.run', 2);
    const metrics = new OperatorMetrics();

    expect(await refreshQueueDepth(scope, f.nats, metrics)).toBe(true);
    expect(await depths(metrics, 'DEPTHA')).toEqual(['eva-DEPTHA-events 5', 'eva-DEPTHA-commands 2']);

    await publish(scope, 'capsule.DEPTHA.events.created', 1);
    expect(await refreshQueueDepth(scope, f.nats, metrics)).toBe(true);
    expect(await depths(metrics, 'DEPTHA')).toEqual(['eva-DEPTHA-events 6', 'eva-DEPTHA-commands 2']);
  });

  it('drops the series of a missing stream, reports false and creates nothing', async () => {
    const scope = await provisioned('DEPTHB');
    const metrics = new OperatorMetrics();
    expect(await refreshQueueDepth(scope, f.nats, metrics)).toBe(true);
    expect(await depths(metrics, 'DEPTHB')).toEqual(['eva-DEPTHB-events 0', 'eva-DEPTHB-commands 0']);

    await f.nats.runInTenant(scope, ({ jsm }) => jsm.streams.delete(streamName('DEPTHB', 'commands')));
    expect(await refreshQueueDepth(scope, f.nats, metrics)).toBe(false);
    expect(await depths(metrics, 'DEPTHB')).toEqual(['eva-DEPTHB-events 0']);

    // A tenant without an account (or streams) yet: nothing is created on its behalf.
    const absent = testScope({ code: 'DEPTHC' });
    expect(await refreshQueueDepth(absent, f.nats, metrics)).toBe(false);
    expect(await depths(metrics, 'DEPTHC')).toEqual([]);
    expect(await f.nats.keys.read('eva-nats-account-depthc')).toBeUndefined();
  });

  it('swallows NATS being unreachable into false and keeps the last values', async () => {
    const scope = await provisioned('DEPTHD');
    await publish(scope, 'capsule.DEPTHD.events.created', 3);
    const metrics = new OperatorMetrics();
    expect(await refreshQueueDepth(scope, f.nats, metrics)).toBe(true);

    const nowhere = testAccounts({ url: 'nats://127.0.0.1:1', auth: f.server.auth }, f.nats.keys);
    try {
      expect(await refreshQueueDepth(scope, nowhere, metrics)).toBe(false);
    } finally {
      await nowhere.close();
    }
    expect(await depths(metrics, 'DEPTHD')).toEqual(['eva-DEPTHD-events 3', 'eva-DEPTHD-commands 0']);
  });
});
