import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { testScope, useNatsServer } from '../../test/support/fixtures.ts';
import { InputError } from '../errors.ts';
import { SeedCatalog } from '../bundle/seeds.ts';
import {
  desiredSeedsVersion,
  readTenantRecord,
  type RecordStepDeps,
  recordStep,
  TENANTS_BUCKET,
} from './record.ts';
import { READY } from './step.ts';

const SEEDS = SeedCatalog.load(fileURLToPath(new URL('../../seeds', import.meta.url)));

describe('seeds versions (pure)', () => {
  it('uses spec.seedsVersion, else the newest bundled version', () => {
    expect(desiredSeedsVersion(testScope({ code: 'SEEDSV', seedsVersion: '1.0.0' }), SEEDS)).toEqual({ version: '1.0.0', defaulted: false });
    expect(desiredSeedsVersion(testScope({ code: 'SEEDSV' }), SEEDS)).toEqual({ version: '1.1.0', defaulted: true });
  });
});

describe('record step against a real nats-server, in the operator\'s registry account', () => {
  const f = useNatsServer();
  const deps = (): RecordStepDeps => f.deps(SEEDS);
  const nats = { run: <T>(fn: Parameters<typeof f.nats.runInRegistry<T>>[0]): Promise<T> => f.nats.runInRegistry(fn) };

  const revisionOf = async (code: string): Promise<number | undefined> =>
    (await nats.run((s) => readTenantRecord(s, code)))?.revision;

  it('verify reads without creating the bucket', async () => {
    expect(await recordStep.verify(testScope({ code: 'NOBUCK' }), deps())).toMatchObject({ reason: 'TenantRecordMissing' });
    expect(await nats.run((s) => s.existingKv(TENANTS_BUCKET))).toBeUndefined();
  });

  it('creates the bucket (history 5) and the record; a repeat makes no write', async () => {
    const scope = testScope({ code: 'RECORD', tier: 'Customer', seedsVersion: '1.0.0' });
    await recordStep.ensure(scope, deps());
    const first = await nats.run((s) => readTenantRecord(s, 'RECORD'));
    expect(first?.record).toMatchObject({
      code: 'RECORD',
      tier: 'Customer',
      uid: 'uid-RECORD',
      modules: ['orbit-crm', 'orbit-itsm', 'eva-gateway', 'eva-shell'],
      seedsVersion: '1.0.0',
    });
    expect(first?.record.createdAt).toBe(first?.record.updatedAt);
    expect((await nats.run((s) => s.jsm.streams.info(`KV_${TENANTS_BUCKET}`))).config.max_msgs_per_subject).toBe(5);

    await recordStep.ensure(scope, deps());
    expect(await revisionOf('RECORD')).toBe(first?.revision);
    expect(await recordStep.verify(scope, deps())).toEqual(READY);
  });

  it('rewrites the record when the tier changes, keeping createdAt', async () => {
    await recordStep.ensure(testScope({ code: 'RETIER', tier: 'Starter' }), deps());
    const before = await nats.run((s) => readTenantRecord(s, 'RETIER'));
    const enterprise = testScope({ code: 'RETIER', tier: 'Enterprise' });
    expect(await recordStep.verify(enterprise, deps())).toMatchObject({ reason: 'TenantRecordDrifted', message: expect.stringContaining('tier, modules') as string });
    await recordStep.ensure(enterprise, deps());
    const after = await nats.run((s) => readTenantRecord(s, 'RETIER'));
    expect(after?.revision).toBeGreaterThan(before?.revision ?? Infinity);
    expect(after?.record.tier).toBe('Enterprise');
    expect(after?.record.modules).toHaveLength(6);
    expect(after?.record.createdAt).toBe(before?.record.createdAt);
  });

  it('refuses a second tenant with the same capsule code and writes nothing', async () => {
    await recordStep.ensure(testScope({ code: 'TAKENN', uid: 'uid-first' }), deps());
    const revision = await revisionOf('TAKENN');
    const second = testScope({ code: 'TAKENN', uid: 'uid-second', tier: 'Platform' });
    const err = await recordStep.ensure(second, deps()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).reason).toBe('CapsuleCodeInUse');
    expect(await revisionOf('TAKENN')).toBe(revision);
    expect(await recordStep.verify(second, deps())).toMatchObject({ reason: 'CapsuleCodeInUse' });

    // Deleting the loser must not delete the winner's record.
    await recordStep.remove(second, deps());
    expect(await recordStep.verifyRemoved(second, deps())).toEqual(READY);
    expect(await revisionOf('TAKENN')).toBe(revision);
  });

  it('removes (purges) the record; remove is idempotent', async () => {
    const scope = testScope({ code: 'PURGED' });
    await recordStep.ensure(scope, deps());
    expect(await recordStep.verifyRemoved(scope, deps())).toMatchObject({ reason: 'TenantRecordPresent' });
    await recordStep.remove(scope, deps());
    await recordStep.remove(scope, deps());
    expect(await recordStep.verifyRemoved(scope, deps())).toEqual(READY);
    const kv = await nats.run((s) => s.existingKv(TENANTS_BUCKET));
    const history = await kv?.history({ key: 'PURGED' });
    const ops: string[] = [];
    for await (const entry of history ?? []) ops.push(entry.operation);
    expect(ops).toEqual(['PURGE']);
    // A recreated tenant with the same code starts a fresh record.
    await recordStep.ensure(scope, deps());
    expect(await recordStep.verify(scope, deps())).toEqual(READY);
  });

  it('rejects a tenant without a uid', async () => {
    const scope = testScope({ code: 'NOUIDD', uid: '' });
    await expect(recordStep.ensure(scope, deps())).rejects.toMatchObject({ reason: 'TenantUidMissing' });
  });
});
