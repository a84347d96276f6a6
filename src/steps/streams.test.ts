import { nanos, StorageType, type StreamConfig } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, testScope, type TestNatsServer } from '../../test/support/nats-server.ts';
import { createNatsClient, type NatsClient, type NatsStepDeps } from '../adapters/nats.ts';
import { STREAM_LIMITS_BY_TIER } from '../api/tiers.ts';
import { DependencyError, InputError } from '../errors.ts';
import { READY } from './step.ts';
import { desiredStreamConfig, streamDrift, streamName, streamsStep } from './streams.ts';

describe('stream configuration (pure)', () => {
  const scope = testScope({ code: 'QWERTY', tier: 'Customer' });

  it('names and subjects are per capsule code and kind', () => {
    const events = desiredStreamConfig(scope, 'events');
    expect(events.name).toBe('eva-QWERTY-events');
    expect(events.subjects).toEqual(['capsule.QWERTY.events.>']);
    expect(desiredStreamConfig(scope, 'commands').subjects).toEqual(['capsule.QWERTY.commands.>']);
    expect(events.max_bytes).toBe(STREAM_LIMITS_BY_TIER.Customer.maxBytes);
    expect(events.max_age).toBe(nanos(STREAM_LIMITS_BY_TIER.Customer.maxAgeSeconds * 1000));
  });

  it('drift ignores server-added metadata and subject order but sees limits and owner', () => {
    const desired = desiredStreamConfig(scope, 'events');
    const actual = { ...desired, metadata: { ...desired.metadata, '_nats.ver': '2.15.2' } } as unknown as StreamConfig;
    expect(streamDrift(actual, desired)).toEqual([]);
    expect(streamDrift({ ...actual, max_msgs: 5 }, desired)).toEqual(['max_msgs']);
    expect(streamDrift({ ...actual, metadata: {} }, desired)).toEqual(['metadata']);
    expect(streamDrift({ ...actual, subjects: ['capsule.QWERTY.events.>', 'x.>'] }, desired)).toEqual(['subjects']);
  });

  it('tiers only grow from Starter to Enterprise, and Platform matches Enterprise', () => {
    const { Starter, Customer, Enterprise, Platform } = STREAM_LIMITS_BY_TIER;
    for (const field of ['maxMsgs', 'maxBytes', 'maxAgeSeconds', 'maxMsgSize'] as const) {
      expect(Starter[field]).toBeLessThan(Customer[field]);
      expect(Customer[field]).toBeLessThan(Enterprise[field]);
      expect(Platform[field]).toBe(Enterprise[field]);
    }
  });
});

describe('streams step on a nats-server with little storage', () => {
  it('reports NatsStorageExhausted when JetStream cannot reserve the tier max_bytes', async () => {
    // Starter reserves 2 x 64 MiB; 100 MB fits one stream, not both.
    const server = await startNatsServer({ maxFileStore: '100MB' });
    const nats = createNatsClient({ url: server.url });
    try {
      const err = await streamsStep.ensure(testScope({ code: 'NOROOM' }), { nats, seedsBasePath: 'unused' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DependencyError);
      expect(err).toMatchObject({ reason: 'NatsStorageExhausted', message: expect.stringContaining('eva-NOROOM-commands') as string });
    } finally {
      await nats.close();
      await server.stop();
    }
  });
});

describe('streams step against a real nats-server', () => {
  let server: TestNatsServer;
  let nats: NatsClient;
  let deps: NatsStepDeps;
  beforeAll(async () => {
    server = await startNatsServer();
    nats = createNatsClient({ url: server.url });
    deps = { nats, seedsBasePath: 'unused' };
  });
  afterAll(async () => {
    await nats.close();
    await server.stop();
  });

  const jsm = async (): Promise<NatsSessionJsm> => (await nats.session()).jsm;
  type NatsSessionJsm = Awaited<ReturnType<NatsClient['session']>>['jsm'];

  it('creates both streams; a repeat changes nothing', async () => {
    const scope = testScope({ code: 'CREATE' });
    await streamsStep.ensure(scope, deps);
    const first = await (await jsm()).streams.info(streamName('CREATE', 'events'));
    await streamsStep.ensure(scope, deps);
    const second = await (await jsm()).streams.info(streamName('CREATE', 'events'));
    expect(second.created).toEqual(first.created);
    expect(second.config).toEqual(first.config);
    expect(await streamsStep.verify(scope, deps)).toEqual(READY);
    expect(second.config.storage).toBe(StorageType.File);
    expect(second.config.num_replicas).toBe(1);
    expect(second.config.max_bytes).toBe(STREAM_LIMITS_BY_TIER.Starter.maxBytes);
  });

  it('updates drifted limits (the 10058 path) and verify sees the drift first', async () => {
    const scope = testScope({ code: 'DRIFTS' });
    await streamsStep.ensure(scope, deps);
    const name = streamName('DRIFTS', 'commands');
    const info = await (await jsm()).streams.info(name);
    await (await jsm()).streams.update(name, { ...info.config, max_msgs: 7, max_bytes: 4096 });
    const verdict = await streamsStep.verify(scope, deps);
    expect(verdict).toMatchObject({ ready: false, reason: 'StreamDrifted' });
    expect(verdict.ready ? '' : verdict.message).toContain('max_msgs, max_bytes');
    await streamsStep.ensure(scope, deps);
    const fixed = await (await jsm()).streams.info(name);
    expect(fixed.config.max_msgs).toBe(STREAM_LIMITS_BY_TIER.Starter.maxMsgs);
    expect(fixed.config.max_bytes).toBe(STREAM_LIMITS_BY_TIER.Starter.maxBytes);
    expect(fixed.created).toEqual(info.created);
    expect(await streamsStep.verify(scope, deps)).toEqual(READY);
  });

  it('a tier change updates the limits in place and keeps the messages', async () => {
    const starter = testScope({ code: 'TIERUP', tier: 'Starter' });
    await streamsStep.ensure(starter, deps);
    await (await nats.session()).js.publish('capsule.TIERUP.events.kept', 'hello');
    const enterprise = testScope({ code: 'TIERUP', tier: 'Enterprise' });
    expect(await streamsStep.verify(enterprise, deps)).toMatchObject({ ready: false, reason: 'StreamDrifted' });
    await streamsStep.ensure(enterprise, deps);
    const info = await (await jsm()).streams.info(streamName('TIERUP', 'events'));
    expect(info.config.max_bytes).toBe(STREAM_LIMITS_BY_TIER.Enterprise.maxBytes);
    expect(info.config.max_msg_size).toBe(STREAM_LIMITS_BY_TIER.Enterprise.maxMsgSize);
    expect(info.state.messages).toBe(1);
    expect(await streamsStep.verify(enterprise, deps)).toEqual(READY);
  });

  it('isolates tenants: a message for AAAAAA lands only in AAAAAA events', async () => {
    await streamsStep.ensure(testScope({ code: 'AAAAAA' }), deps);
    await streamsStep.ensure(testScope({ code: 'BBBBBB' }), deps);
    const ack = await (await nats.session()).js.publish('capsule.AAAAAA.events.x', 'for A');
    expect(ack.stream).toBe('eva-AAAAAA-events');
    const count = async (name: string): Promise<number> => (await (await jsm()).streams.info(name)).state.messages;
    expect(await count('eva-AAAAAA-events')).toBe(1);
    expect(await count('eva-AAAAAA-commands')).toBe(0);
    expect(await count('eva-BBBBBB-events')).toBe(0);
    expect(await count('eva-BBBBBB-commands')).toBe(0);
    const msg = await (await jsm()).streams.getMessage('eva-AAAAAA-events', { last_by_subj: 'capsule.AAAAAA.events.x' });
    expect(msg.string()).toBe('for A');
  });

  it('refuses to touch streams another tenant owns, on ensure and on remove', async () => {
    const owner = testScope({ code: 'OWNEDD', uid: 'uid-owner' });
    const intruder = testScope({ code: 'OWNEDD', uid: 'uid-intruder', tier: 'Enterprise' });
    await streamsStep.ensure(owner, deps);
    const err = await streamsStep.ensure(intruder, deps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).reason).toBe('CapsuleCodeInUse');
    await streamsStep.remove(intruder, deps);
    expect(await streamsStep.verifyRemoved(intruder, deps)).toEqual(READY);
    expect(await streamsStep.verify(owner, deps)).toEqual(READY);
  });

  it('reports a stream that exists with another storage type as a conflict', async () => {
    const scope = testScope({ code: 'MEMORY' });
    await (await jsm()).streams.add({ ...desiredStreamConfig(scope, 'events'), storage: StorageType.Memory });
    const err = await streamsStep.ensure(scope, deps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).reason).toBe('StreamConflict');
  });

  it('reports subjects already captured by a foreign stream', async () => {
    await (await jsm()).streams.add({ name: 'foreign', subjects: ['capsule.CLAIMD.>'] });
    const err = await streamsStep.ensure(testScope({ code: 'CLAIMD' }), deps).catch((e: unknown) => e);
    expect((err as InputError).reason).toBe('StreamSubjectsOverlap');
  });

  it('removes both streams; removing again and verifying removal are fine', async () => {
    const scope = testScope({ code: 'REMOVE' });
    await streamsStep.ensure(scope, deps);
    expect(await streamsStep.verifyRemoved(scope, deps)).toMatchObject({ ready: false, reason: 'StreamPresent' });
    await streamsStep.remove(scope, deps);
    await streamsStep.remove(scope, deps);
    expect(await streamsStep.verifyRemoved(scope, deps)).toEqual(READY);
    expect(await streamsStep.verify(scope, deps)).toMatchObject({ ready: false, reason: 'StreamMissing' });
  });
});
