import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, testScope, type TestNatsServer } from '../../test/support/nats-server.ts';
import { createNatsClient, type NatsClient } from '../adapters/nats.ts';
import { OperatorMetrics } from '../metrics/metrics.ts';
import { refreshQueueDepth } from './queue-depth.ts';
import { streamName, streamsStep } from '../steps/streams.ts';

/** The capsule_queue_depth samples of one capsule, as "stream value" pairs. */
async function depths(metrics: OperatorMetrics, code: string): Promise<string[]> {
  const prefix = `capsule_queue_depth{capsule="${code}",stream="`;
  return (await metrics.metricsText())
    .split('\n')
    .filter((line) => line.startsWith(prefix))
    .map((line) => line.slice(prefix.length).replace('"} ', ' '));
}

describe('refreshQueueDepth against a real nats-server', () => {
  let server: TestNatsServer;
  let nats: NatsClient;
  beforeAll(async () => {
    server = await startNatsServer();
    nats = createNatsClient({ url: server.url });
  });
  afterAll(async () => {
    await nats.close();
    await server.stop();
  });

  async function publish(subject: string, count: number): Promise<void> {
    const { js } = await nats.session();
    for (let i = 0; i < count; i += 1) await js.publish(subject, new TextEncoder().encode(String(i)));
  }

  it('sets the message count of both streams', async () => {
    const scope = testScope({ code: 'DEPTHA' });
    await streamsStep.ensure(scope, { nats, seedsBasePath: 'unused' });
    await publish('capsule.DEPTHA.events.created', 5);
    await publish('capsule.DEPTHA.commands.run', 2);
    const metrics = new OperatorMetrics();

    expect(await refreshQueueDepth(scope, nats, metrics)).toBe(true);
    expect(await depths(metrics, 'DEPTHA')).toEqual(['eva-DEPTHA-events 5', 'eva-DEPTHA-commands 2']);

    await publish('capsule.DEPTHA.events.created', 1);
    expect(await refreshQueueDepth(scope, nats, metrics)).toBe(true);
    expect(await depths(metrics, 'DEPTHA')).toEqual(['eva-DEPTHA-events 6', 'eva-DEPTHA-commands 2']);
  });

  it('drops the series of a missing stream, reports false and creates nothing', async () => {
    const scope = testScope({ code: 'DEPTHB' });
    await streamsStep.ensure(scope, { nats, seedsBasePath: 'unused' });
    const metrics = new OperatorMetrics();
    expect(await refreshQueueDepth(scope, nats, metrics)).toBe(true);
    expect(await depths(metrics, 'DEPTHB')).toEqual(['eva-DEPTHB-events 0', 'eva-DEPTHB-commands 0']);

    const { jsm } = await nats.session();
    await jsm.streams.delete(streamName('DEPTHB', 'commands'));
    expect(await refreshQueueDepth(scope, nats, metrics)).toBe(false);
    expect(await depths(metrics, 'DEPTHB')).toEqual(['eva-DEPTHB-events 0']);

    const absent = testScope({ code: 'DEPTHC' });
    expect(await refreshQueueDepth(absent, nats, metrics)).toBe(false);
    expect(await depths(metrics, 'DEPTHC')).toEqual([]);
    const names: string[] = [];
    for await (const name of jsm.streams.names()) names.push(name);
    expect(names.filter((name) => name.includes('DEPTHC'))).toEqual([]);
  });

  it('swallows NATS being unreachable into false and keeps the last values', async () => {
    const scope = testScope({ code: 'DEPTHD' });
    await streamsStep.ensure(scope, { nats, seedsBasePath: 'unused' });
    await publish('capsule.DEPTHD.events.created', 3);
    const metrics = new OperatorMetrics();
    expect(await refreshQueueDepth(scope, nats, metrics)).toBe(true);

    const nowhere = createNatsClient({ url: 'nats://127.0.0.1:1' }, { connectTimeoutMs: 500 });
    try {
      expect(await refreshQueueDepth(scope, nowhere, metrics)).toBe(false);
    } finally {
      await nowhere.close();
    }
    expect(await depths(metrics, 'DEPTHD')).toEqual(['eva-DEPTHD-events 3', 'eva-DEPTHD-commands 0']);
  });
});
