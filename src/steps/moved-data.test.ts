/**
 * A tenant moved between clusters carries its NATS data: two real nats-servers, each with its own
 * operator (two clusters), the tenant's account retained on the first and taken over on the second
 * (what the move's copy of the keys Secret and step account's takeover leave there). The streams and
 * seed steps on the second copy what it lacks from the first, messages, sequence numbers and consumer
 * state included; without the annotation (the control) they create the streams empty, as ever.
 */
import { AckPolicy, type JetStreamManager } from 'nats';
import { describe, expect, it } from 'vitest';
import { testScope, useNatsServer, withAccount } from '../../test/support/fixtures.ts';
import { RESTORE_FROM_ANNOTATION, RESTORE_FROM_NATS_ANNOTATION } from '../api/constants.ts';
import { ACCOUNT_BY_TIER } from '../api/tiers.ts';
import type { NatsFixture } from '../../test/support/fixtures.ts';
import { accountKeysName } from '../nats/account-keys.ts';
import { tenantClaims } from '../nats/accounts.ts';
import { dataBucket, kvStream, streamName, streamSubject } from '../tenancy/names.ts';
import { ownerMetadata, ownerOf, restoreSourceOf } from '../tenancy/ownership.ts';
import type { TenantScope } from '../tenancy/scope.ts';
import { copyMovedStream } from './moved-data.ts';
import { streamsStep } from './streams.ts';

const OLD = '6a1f0000-0000-4000-8000-00000000000a';
const NEW = '6a1f0000-0000-4000-8000-00000000000b';
const MESSAGES = 500;

const moved = (code: string, annotations: Record<string, string>): TenantScope => testScope({ code, uid: NEW, annotations: { [RESTORE_FROM_ANNOTATION]: OLD, ...annotations } });

describe('where a moved tenant\'s data is copied from (pure)', () => {
  const source = (value: string, withUid = true) =>
    restoreSourceOf(testScope({ annotations: { ...(withUid ? { [RESTORE_FROM_ANNOTATION]: OLD } : {}), [RESTORE_FROM_NATS_ANNOTATION]: value } }));

  it('takes one nats:// or tls:// address with a host and a port', () => {
    expect(source('nats://nats.eu.example:4222')).toBe('nats://nats.eu.example:4222');
    expect(source('tls://10.0.0.7:4222/')).toBe('tls://10.0.0.7:4222');
    expect(restoreSourceOf(testScope({ annotations: { [RESTORE_FROM_ANNOTATION]: OLD } }))).toBeUndefined();
  });

  it('refuses anything else with RestoreSourceInvalid, never echoing the value', () => {
    const refusals: [string, string][] = [
      ['nats://user:s3cret@nats.eu.example:4222', 'credentials'],
      ['http://nats.eu.example:4222', 'nats:// or tls://'],
      ['nats://nats.eu.example', 'host and a port'],
      ['nats://nats.eu.example:4222/x?y', 'without a path'],
      ['nats://a:4222,nats://b:4222', 'not a URL'],
      ['not a url', 'not a URL'],
    ];
    for (const [value, why] of refusals) {
      expect(() => source(value)).toThrow(expect.objectContaining({ reason: 'RestoreSourceInvalid', message: expect.stringContaining(why) as string }) as Error);
      expect(() => source(value)).not.toThrow(/s3cret/);
    }
    expect(() => source('nats://nats.eu.example:4222', false)).toThrow(expect.objectContaining({ reason: 'RestoreSourceInvalid', message: expect.stringContaining(RESTORE_FROM_ANNOTATION) as string }) as Error);
  });
});

describe('a moved tenant\'s streams and bucket, from one nats-server (cluster) to another', () => {
  const source = useNatsServer();
  const destination = useNatsServer();

  /** On the source: the tenant's account, streams with MESSAGES events, a durable that acked 3, a bucket value. */
  async function heldOnSource(code: string): Promise<void> {
    const scope = testScope({ code, uid: OLD });
    await withAccount(source.nats, scope);
    await streamsStep.ensure(scope, source.deps());
    await source.nats.runInTenant(scope, async (s) => {
      for (let i = 0; i < MESSAGES; i += 1) await s.js.publish(streamSubject(code, 'events').replace('>', `m${i}`), new TextEncoder().encode(`message ${i}`));
      await s.jsm.consumers.add(streamName(code, 'events'), { durable_name: 'reader', ack_policy: AckPolicy.Explicit });
      const consumer = await s.js.consumers.get(streamName(code, 'events'), 'reader');
      for (const m of await Promise.all([0, 1, 2].map(() => consumer.next()))) m?.ack();
      const kv = await s.kv(dataBucket(code), { history: 1, metadata: ownerMetadata(scope), max_bytes: ACCOUNT_BY_TIER.Starter.dataBucketBytes });
      await kv.put('customer.setting', 'kept');
    });
  }

  /** On the destination: the keys as the move copied them and the takeover left them, the account pushed. */
  async function takenOver(fixture: NatsFixture, scope: TenantScope): Promise<void> {
    const keys = (await source.nats.keys.read(accountKeysName(scope.code)))!.keys;
    const created = await fixture.nats.keys.create(accountKeysName(scope.code), OLD, keys);
    await fixture.nats.keys.update(accountKeysName(scope.code), created, keys, { owner: NEW, restoredFrom: OLD });
    await fixture.nats.ensureAccount(tenantClaims(scope, keys));
  }

  const jsm = <T>(fixture: NatsFixture, scope: TenantScope, fn: (jsm: JetStreamManager) => Promise<T>): Promise<T> => fixture.nats.runInTenant(scope, (s) => fn(s.jsm));

  it('copies each stream it lacks with every message, its sequence numbers and consumers; the source keeps its copy', async () => {
    await heldOnSource('MOVEDA');
    const scope = moved('MOVEDA', { [RESTORE_FROM_NATS_ANNOTATION]: source.server.url });
    await takenOver(destination, scope);
    await streamsStep.ensure(scope, destination.deps());
    const events = await jsm(destination, scope, (m) => m.streams.info(streamName('MOVEDA', 'events')));
    expect(events.state).toMatchObject({ messages: MESSAGES, first_seq: 1, last_seq: MESSAGES });
    // The restore takes the copy over as in one cluster: stamped with the new owner.
    expect(ownerOf(events.config.metadata)).toBe(NEW);
    const reader = await jsm(destination, scope, (m) => m.consumers.info(streamName('MOVEDA', 'events'), 'reader'));
    expect(reader.ack_floor.stream_seq).toBe(3);
    const last = await jsm(destination, scope, (m) => m.streams.getMessage(streamName('MOVEDA', 'events'), { seq: MESSAGES }));
    expect(new TextDecoder().decode(last.data)).toBe(`message ${MESSAGES - 1}`);
    // Read, never changed: the source still holds all of it until the move purges it.
    const held = await source.nats.runInTenant(testScope({ code: 'MOVEDA', uid: OLD }), (s) => s.jsm.streams.info(streamName('MOVEDA', 'events')));
    expect(held.state.messages).toBe(MESSAGES);
    expect(ownerOf(held.config.metadata)).toBe(OLD);
    // A repeat (a retried pass) copies nothing again.
    await streamsStep.ensure(scope, destination.deps());
    expect((await jsm(destination, scope, (m) => m.streams.info(streamName('MOVEDA', 'events')))).state.messages).toBe(MESSAGES);
  });

  it('copies the seed bucket with its values', async () => {
    await heldOnSource('MOVEDB');
    const scope = moved('MOVEDB', { [RESTORE_FROM_NATS_ANNOTATION]: source.server.url });
    await takenOver(destination, scope);
    const value = await destination.nats.runInTenant(scope, async (s, custody) => {
      await copyMovedStream(scope, destination.nats, s, custody, kvStream(dataBucket('MOVEDB')));
      return (await (await s.existingKv(dataBucket('MOVEDB')))?.get('customer.setting'))?.string();
    });
    expect(value).toBe('kept');
  });

  it('without restore-from-nats (the control) the streams are created empty', async () => {
    await heldOnSource('MOVEDC');
    const scope = moved('MOVEDC', {});
    await takenOver(destination, scope);
    await streamsStep.ensure(scope, destination.deps());
    expect((await jsm(destination, scope, (m) => m.streams.info(streamName('MOVEDC', 'events')))).state.messages).toBe(0);
  });

  it('copies nothing into data the keys record does not prove taken over from that uid', async () => {
    await heldOnSource('MOVEDD');
    const scope = moved('MOVEDD', { [RESTORE_FROM_NATS_ANNOTATION]: source.server.url });
    const keys = (await source.nats.keys.read(accountKeysName('MOVEDD')))!.keys;
    // The destination's own tenant of that code, no takeover: the annotation alone grants nothing.
    await destination.nats.keys.create(accountKeysName('MOVEDD'), NEW, keys);
    await destination.nats.ensureAccount(tenantClaims(scope, keys));
    await streamsStep.ensure(scope, destination.deps());
    expect((await jsm(destination, scope, (m) => m.streams.info(streamName('MOVEDD', 'events')))).state.messages).toBe(0);
  });

  it('a source that is not reachable is NatsUnavailable naming it, and nothing is created meanwhile', async () => {
    const scope = moved('MOVEDE', { [RESTORE_FROM_NATS_ANNOTATION]: 'nats://127.0.0.1:1' });
    await withAccount(source.nats, testScope({ code: 'MOVEDE', uid: OLD }));
    await takenOver(destination, scope);
    await expect(streamsStep.ensure(scope, destination.deps())).rejects.toMatchObject({ reason: 'NatsUnavailable', message: expect.stringContaining('127.0.0.1:1') as string });
    await expect(jsm(destination, scope, (m) => m.streams.names().next())).resolves.toEqual([]);
  });
});
