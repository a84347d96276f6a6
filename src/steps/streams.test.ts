import { type JetStreamManager, nanos, RetentionPolicy, StorageType, type StreamConfig } from 'nats';
import { describe, expect, it } from 'vitest';
import { testScope, useNatsServer, withAccount } from '../../test/support/fixtures.ts';
import type { NatsSession } from '../adapters/nats.ts';
import { STREAM_LIMITS_BY_TIER } from '../api/tiers.ts';
import { DependencyError, InputError } from '../errors.ts';
import { READY } from './step.ts';
import type { TenantScope } from '../tenancy/scope.ts';
import { desiredStreamConfig, streamDrift, streamsStep } from './streams.ts';
import { streamName } from '../tenancy/names.ts';

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
  const f = useNatsServer({ maxFileStore: '200MB' });

  it('reports JetStreamUnavailable when the server cannot hold the account tier, NatsStorageExhausted when it cannot reserve a stream', async () => {
    // Enterprise may use 2.5 GiB: the server cannot enable JetStream for such an account at all.
    const big = testScope({ code: 'BIGONE', tier: 'Enterprise' });
    await withAccount(f.nats, big);
    await expect(streamsStep.ensure(big, f.deps())).rejects.toMatchObject({ reason: 'JetStreamUnavailable' });
    // The second tenant's account cannot be enabled either: accounts reserve their whole tier.
    const first = testScope({ code: 'FIRSTS' });
    await withAccount(f.nats, first);
    await streamsStep.ensure(first, f.deps());
    const second = testScope({ code: 'SECOND' });
    await withAccount(f.nats, second);
    await expect(streamsStep.ensure(second, f.deps())).rejects.toMatchObject({ reason: 'JetStreamUnavailable' });
    // Within an account, a stream beyond the tier's storage is refused by the server.
    await f.nats.runInTenant(first, (s) => s.jsm.streams.delete('eva-FIRSTS-commands'));
    await f.nats.runInTenant(first, (s) => s.jsm.streams.add({ name: 'filler', subjects: ['capsule.FIRSTS.filler.>'], max_bytes: 80 * 1024 * 1024 }));
    const err = await streamsStep.ensure(first, f.deps()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DependencyError);
    expect(err).toMatchObject({ reason: 'NatsStorageExhausted', message: expect.stringContaining('eva-FIRSTS-commands') as string });
  });
});

describe('streams step against a real nats-server, in the tenant\'s own account', () => {
  const f = useNatsServer();
  const deps = () => f.deps();
  /** The tenant's account exists (step account ran), then `fn` runs in it as the operator. */
  const inTenant = <T>(scope: TenantScope, fn: (session: NatsSession) => Promise<T>): Promise<T> => f.nats.runInTenant(scope, fn);
  const jsm = (scope: TenantScope) => <T>(fn: (jsm: JetStreamManager) => Promise<T>): Promise<T> => inTenant(scope, (s) => fn(s.jsm));
  const provisioned = async (options: Parameters<typeof testScope>[0]): Promise<TenantScope> => {
    const scope = testScope(options);
    await withAccount(f.nats, scope);
    return scope;
  };

  it('creates both streams; a repeat changes nothing', async () => {
    const scope = await provisioned({ code: 'CREATE' });
    await streamsStep.ensure(scope, deps());
    const first = await jsm(scope)((m) => m.streams.info(streamName('CREATE', 'events')));
    await streamsStep.ensure(scope, deps());
    const second = await jsm(scope)((m) => m.streams.info(streamName('CREATE', 'events')));
    expect(second.created).toEqual(first.created);
    expect(second.config).toEqual(first.config);
    expect(await streamsStep.verify(scope, deps())).toEqual(READY);
    expect(second.config.storage).toBe(StorageType.File);
    expect(second.config.num_replicas).toBe(1);
    expect(second.config.max_bytes).toBe(STREAM_LIMITS_BY_TIER.Starter.maxBytes);
  });

  it('updates drifted limits in place and verify sees the drift first', async () => {
    const scope = await provisioned({ code: 'DRIFTS' });
    await streamsStep.ensure(scope, deps());
    const name = streamName('DRIFTS', 'commands');
    const info = await jsm(scope)((m) => m.streams.info(name));
    await jsm(scope)((m) => m.streams.update(name, { ...info.config, max_msgs: 7, max_bytes: 4096 }));
    const verdict = await streamsStep.verify(scope, deps());
    expect(verdict).toMatchObject({ ready: false, reason: 'StreamDrifted' });
    expect(verdict.ready ? '' : verdict.message).toContain('max_msgs, max_bytes');
    await streamsStep.ensure(scope, deps());
    const fixed = await jsm(scope)((m) => m.streams.info(name));
    expect(fixed.config.max_msgs).toBe(STREAM_LIMITS_BY_TIER.Starter.maxMsgs);
    expect(fixed.config.max_bytes).toBe(STREAM_LIMITS_BY_TIER.Starter.maxBytes);
    expect(fixed.created).toEqual(info.created);
    expect(await streamsStep.verify(scope, deps())).toEqual(READY);
  });

  it('a tier change updates the limits in place and keeps the messages', async () => {
    const starter = await provisioned({ code: 'TIERUP', tier: 'Starter' });
    await streamsStep.ensure(starter, deps());
    await inTenant(starter, (s) => s.js.publish('capsule.TIERUP.events.kept', 'hello'));
    const enterprise = await provisioned({ code: 'TIERUP', tier: 'Enterprise' });
    expect(await streamsStep.verify(enterprise, deps())).toMatchObject({ ready: false, reason: 'StreamDrifted' });
    await streamsStep.ensure(enterprise, deps());
    const info = await jsm(enterprise)((m) => m.streams.info(streamName('TIERUP', 'events')));
    expect(info.config.max_bytes).toBe(STREAM_LIMITS_BY_TIER.Enterprise.maxBytes);
    expect(info.config.max_msg_size).toBe(STREAM_LIMITS_BY_TIER.Enterprise.maxMsgSize);
    expect(info.state.messages).toBe(1);
    expect(await streamsStep.verify(enterprise, deps())).toEqual(READY);
  });

  it('isolates tenants: each account sees only its own streams and messages', async () => {
    const a = await provisioned({ code: 'AAAAAA' });
    const b = await provisioned({ code: 'BBBBBB' });
    await streamsStep.ensure(a, deps());
    await streamsStep.ensure(b, deps());
    const ack = await inTenant(a, (s) => s.js.publish('capsule.AAAAAA.events.x', 'for A'));
    expect(ack.stream).toBe('eva-AAAAAA-events');
    const names = async (scope: TenantScope): Promise<string[]> => jsm(scope)(async (m) => (await m.streams.names().next()).sort());
    expect(await names(a)).toEqual(['eva-AAAAAA-commands', 'eva-AAAAAA-events']);
    expect(await names(b)).toEqual(['eva-BBBBBB-commands', 'eva-BBBBBB-events']);
    expect(await jsm(b)((m) => m.streams.info('eva-BBBBBB-events')).then((i) => i.state.messages)).toBe(0);
    const msg = await jsm(a)((m) => m.streams.getMessage('eva-AAAAAA-events', { last_by_subj: 'capsule.AAAAAA.events.x' }));
    expect(msg.string()).toBe('for A');
  });

  it('refuses to touch streams another tenant owns, on ensure and on remove', async () => {
    const owner = await provisioned({ code: 'OWNEDD', uid: 'uid-owner' });
    const intruder = testScope({ code: 'OWNEDD', uid: 'uid-intruder', tier: 'Enterprise' });
    await streamsStep.ensure(owner, deps());
    const err = await streamsStep.ensure(intruder, deps()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).reason).toBe('CapsuleCodeInUse');
    await streamsStep.remove(intruder, deps());
    expect(await streamsStep.verifyRemoved(intruder, deps())).toEqual(READY);
    expect(await streamsStep.verify(owner, deps())).toEqual(READY);
  });

  it('reports a stream that exists with another retention as a conflict', async () => {
    const scope = await provisioned({ code: 'WORKQU' });
    await jsm(scope)((m) => m.streams.add({ ...desiredStreamConfig(scope, 'events'), retention: RetentionPolicy.Workqueue }));
    const err = await streamsStep.ensure(scope, deps()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).reason).toBe('StreamConflict');
  });

  it('reports subjects already captured by another stream of the account', async () => {
    const scope = await provisioned({ code: 'CLAIMD' });
    await jsm(scope)((m) => m.streams.add({ name: 'foreign', subjects: ['capsule.CLAIMD.>'], max_bytes: 1024 * 1024 }));
    const err = await streamsStep.ensure(scope, deps()).catch((e: unknown) => e);
    expect((err as InputError).reason).toBe('StreamSubjectsOverlap');
  });

  it('removes both streams; removing again and verifying removal are fine', async () => {
    const scope = await provisioned({ code: 'REMOVE' });
    await streamsStep.ensure(scope, deps());
    expect(await streamsStep.verifyRemoved(scope, deps())).toMatchObject({ ready: false, reason: 'StreamPresent' });
    await streamsStep.remove(scope, deps());
    await streamsStep.remove(scope, deps());
    expect(await streamsStep.verifyRemoved(scope, deps())).toEqual(READY);
    expect(await streamsStep.verify(scope, deps())).toMatchObject({ ready: false, reason: 'StreamMissing' });
  });

  it('a tenant without an account has nothing to remove, and its streams cannot be made before the account', async () => {
    const scope = testScope({ code: 'NOACCT' });
    expect(await streamsStep.verifyRemoved(scope, deps())).toEqual(READY);
    await expect(streamsStep.ensure(scope, deps())).rejects.toMatchObject({ reason: 'AccountMissing' });
  });
});
