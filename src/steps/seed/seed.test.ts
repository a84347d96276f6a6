import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { KV } from 'nats';
import { describe, expect, it } from 'vitest';
import { seedFileEntries as fileEntries, testAccounts, testScope, useNatsServer, withAccount } from '../../../test/support/fixtures.ts';
import { SeedCatalog, seedDigest } from '../../bundle/seeds.ts';
import type { RecordStepDeps } from '../record.ts';
import { MODULES } from '../../api/modules.ts';
import type { Step } from '../step.ts';
import type { TenantScope } from '../../tenancy/scope.ts';
import { DependencyError, InputError } from '../../errors.ts';
import { readTenantRecord, recordStep } from '../record.ts';
import { canonicalJson } from '../../canonical-json.ts';
import { diffSeed, seedStep } from './seed.ts';
import { dataBucket } from '../../tenancy/names.ts';
import type { NatsSession } from '../../adapters/nats.ts';
import { READY } from '../step.ts';
import { streamsStep } from '../streams.ts';

const SEEDS = SeedCatalog.load(fileURLToPath(new URL('../../../seeds', import.meta.url)));

describe('seed data (pure)', () => {
  it('diff puts missing and changed keys, deletes only owned keys no longer wanted', () => {
    const desired = new Map<string, unknown>([
      ['m.same', { a: 1, b: 2 }],
      ['m.changed', 2],
      ['m.added', 'new'],
      ['m.garbled', 1],
    ]);
    const current = new Map([
      ['m.same', '{"b":2,"a":1}'],
      ['m.changed', '1'],
      ['m.garbled', 'not json'],
      ['m.removed', '"old"'],
      ['m.module-written', '"tenant data"'],
    ]);
    const owned = new Set(['m.same', 'm.changed', 'm.removed', 'm.never-applied']);
    expect(diffSeed(desired, current, owned)).toEqual({
      puts: [
        { key: 'm.changed', value: 2 },
        { key: 'm.added', value: 'new' },
        { key: 'm.garbled', value: 1 },
      ],
      deletes: ['m.removed'],
    });
    expect(diffSeed(desired, new Map([...desired].map(([k, v]) => [k, JSON.stringify(v)])), owned)).toEqual({ puts: [], deletes: [] });
  });
});

describe('seed step against a real nats-server: data in the tenant account, record in the registry', () => {
  const f = useNatsServer();
  const deps = (): RecordStepDeps => f.deps(SEEDS);
  const nats = { run: <T>(fn: Parameters<typeof f.nats.runInRegistry<T>>[0]): Promise<T> => f.nats.runInRegistry(fn) };
  const inTenant = <T>(code: string, fn: (s: NatsSession) => Promise<T>): Promise<T> => f.nats.runInTenant(testScope({ code }), fn);

  const bucket = (code: string): Promise<KV | undefined> => inTenant(code, (s) => s.existingKv(dataBucket(code)));
  const lastSeq = async (code: string): Promise<number> =>
    (await inTenant(code, (s) => s.jsm.streams.info(`KV_${dataBucket(code)}`))).state.last_seq;
  async function contents(code: string): Promise<Map<string, { value: unknown; revision: number }>> {
    const kv = await bucket(code);
    const out = new Map<string, { value: unknown; revision: number }>();
    if (!kv) return out;
    // Collect the keys first: awaiting inside the keys() iteration ends it early.
    const keys: string[] = [];
    for await (const key of await kv.keys()) keys.push(key);
    for (const key of keys) {
      const entry = await kv.get(key);
      if (entry) out.set(key, { value: entry.json<unknown>(), revision: entry.revision });
    }
    return out;
  }
  async function seeded(scope: TenantScope): Promise<void> {
    await withAccount(f.nats, scope);
    await recordStep.ensure(scope, deps());
    await seedStep.ensure(scope, deps());
  }

  it('an unknown seedsVersion fails with InputError before anything is created', async () => {
    const scope = testScope({ code: 'UNKNWN', seedsVersion: '0.0.7' });
    await withAccount(f.nats, scope);
    await recordStep.ensure(scope, deps());
    const err = await seedStep.ensure(scope, deps()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect(err).toMatchObject({
      reason: 'UnknownSeedsVersion',
      message: 'seedsVersion "0.0.7" is not bundled with this operator; available: 1.0.0, 1.1.0',
    });
    expect(await bucket('UNKNWN')).toBeUndefined();
    expect((await nats.run((s) => readTenantRecord(s, 'UNKNWN')))?.record.seed).toBeUndefined();
    expect(await seedStep.verify(scope, deps())).toMatchObject({ ready: false, reason: 'UnknownSeedsVersion' });
  });

  it('needs the tenant record first', async () => {
    const scope = testScope({ code: 'NORECD', seedsVersion: '1.0.0' });
    await withAccount(f.nats, scope);
    const err = await seedStep.ensure(scope, deps()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DependencyError);
    expect(err).toMatchObject({ reason: 'TenantRecordMissing' });
    expect(await bucket('NORECD')).toBeUndefined();
  });

  it('loads a version for the tier modules and records it; a repeat writes nothing', async () => {
    const scope = testScope({ code: 'SEEDED', tier: 'Starter', seedsVersion: '1.0.0' });
    await seeded(scope);
    const desired = new Map([...fileEntries('1.0.0', 'orbit-crm'), ...fileEntries('1.0.0', 'orbit-itsm')]);
    const stored = await contents('SEEDED');
    expect(new Map([...stored].map(([k, v]) => [k, v.value]))).toEqual(desired);
    const record = await nats.run((s) => readTenantRecord(s, 'SEEDED'));
    expect(record?.record.seed).toMatchObject({ version: '1.0.0', digest: seedDigest(desired) });
    expect(await seedStep.verify(scope, deps())).toEqual(READY);

    const seq = await lastSeq('SEEDED');
    await seeded(scope);
    expect(await lastSeq('SEEDED')).toBe(seq);
    expect((await nats.run((s) => readTenantRecord(s, 'SEEDED')))?.revision).toBe(record?.revision);
  });

  it('re-seeds 1.0.0 -> 1.1.0 by difference and keeps data modules wrote themselves', async () => {
    const v1 = testScope({ code: 'RESEED', tier: 'Enterprise', seedsVersion: '1.0.0' });
    await seeded(v1);
    await (await bucket('RESEED'))?.put('orbit-crm.runtime.last-import', '"2025-01-01"');
    const before = await contents('RESEED');

    const v2 = testScope({ code: 'RESEED', tier: 'Enterprise', seedsVersion: '1.1.0' });
    expect(await seedStep.verify(v2, deps())).toMatchObject({ ready: false, reason: 'SeedPending' });
    await seeded(v2);
    const after = await contents('RESEED');

    const old = new Map(MODULES.flatMap((m) => [...fileEntries('1.0.0', m)]));
    const next = new Map(MODULES.flatMap((m) => [...fileEntries('1.1.0', m)]));
    const changed = [...next.keys()].filter((k) => old.has(k) && canonicalJson(old.get(k)) !== canonicalJson(next.get(k)));
    const untouched = [...next.keys()].filter((k) => old.has(k) && !changed.includes(k));
    const added = [...next.keys()].filter((k) => !old.has(k));
    const removed = [...old.keys()].filter((k) => !next.has(k));
    expect(changed.length * added.length * removed.length * untouched.length).toBeGreaterThan(0);

    expect(changed.map((k) => after.get(k)?.value)).toEqual(changed.map((k) => next.get(k)));
    expect(added.map((k) => after.get(k)?.value)).toEqual(added.map((k) => next.get(k)));
    expect(removed.filter((k) => after.has(k))).toEqual([]);
    expect(untouched.map((k) => after.get(k)?.revision)).toEqual(untouched.map((k) => before.get(k)?.revision));
    expect(after.get('orbit-crm.runtime.last-import')).toEqual(before.get('orbit-crm.runtime.last-import'));
    expect(after.size).toBe(next.size + 1);
    const seed = (await nats.run((s) => readTenantRecord(s, 'RESEED')))?.record.seed;
    expect(seed).toMatchObject({ version: '1.1.0', digest: seedDigest(next) });
    expect(await seedStep.verify(v2, deps())).toEqual(READY);
  });

  it('a tier downgrade deletes the seed keys of the dropped modules', async () => {
    await seeded(testScope({ code: 'DOWNGR', tier: 'Enterprise', seedsVersion: '1.1.0' }));
    await seeded(testScope({ code: 'DOWNGR', tier: 'Starter', seedsVersion: '1.1.0' }));
    const modules = new Set([...(await contents('DOWNGR')).keys()].map((k) => k.split('.')[0]));
    expect(modules).toEqual(new Set(['orbit-crm', 'orbit-itsm']));
  });

  it('without spec.seedsVersion uses the newest bundled version and says so', async () => {
    const lines: string[] = [];
    const scope = testScope({ code: 'LATEST', lines });
    await seeded(scope);
    expect((await nats.run((s) => readTenantRecord(s, 'LATEST')))?.record).toMatchObject({
      seedsVersion: '1.1.0',
      seed: { version: '1.1.0' },
    });
    const notice = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['seedsVersion'] === '1.1.0' && l['msg'] !== 'seed data applied');
    expect(notice?.['msg']).toBe('spec.seedsVersion not set; using the newest bundled seeds version');
  });

  it('verify notices a deleted bucket; ensure brings it back', async () => {
    const scope = testScope({ code: 'VANISH', seedsVersion: '1.0.0' });
    await seeded(scope);
    await (await bucket('VANISH'))?.destroy();
    expect(await seedStep.verify(scope, deps())).toMatchObject({ ready: false, reason: 'SeedBucketMissing' });
    await seedStep.ensure(scope, deps());
    expect(await seedStep.verify(scope, deps())).toEqual(READY);
    expect((await contents('VANISH')).size).toBe(SEEDS.bundle('1.0.0', scope.modules).entries.size);
  });

  it('removes the bucket; remove is idempotent', async () => {
    const scope = testScope({ code: 'DELETE', seedsVersion: '1.0.0' });
    await seeded(scope);
    expect(await seedStep.verifyRemoved(scope, deps())).toMatchObject({ ready: false, reason: 'SeedBucketPresent' });
    await seedStep.remove(scope, deps());
    await seedStep.remove(scope, deps());
    expect(await seedStep.verifyRemoved(scope, deps())).toEqual(READY);
  });
});

describe('streams + record + seed in operator mode, through outages and data loss', () => {
  const f = useNatsServer();
  const steps: readonly Step<RecordStepDeps>[] = [streamsStep, recordStep, seedStep];
  const deps = (): RecordStepDeps => f.deps(SEEDS);
  /** Seeds of the operator's own two secrets: no error message may carry them. */
  const secrets = (): string[] => [
    readFileSync(f.server.auth.operatorSigningKeyFile, 'utf8').trim(),
    /SU[A-Z2-7]{56}/.exec(readFileSync(f.server.auth.systemCredsFile, 'utf8'))?.[0] ?? 'no seed found',
  ];

  async function ensureAll(scope: TenantScope): Promise<number> {
    const started = performance.now();
    await withAccount(f.nats, scope);
    for (const step of steps) await step.ensure(scope, deps());
    return performance.now() - started;
  }
  const verdicts = async (scope: TenantScope): Promise<unknown[]> => Promise.all(steps.map((step) => step.verify(scope, deps())));

  it('provisions, then recovers the account, streams, record and seed data after NATS lost its storage', async () => {
    const scope = testScope({ code: 'WIPEDD', tier: 'Enterprise', seedsVersion: '1.1.0' });
    const server = f.server;
    const cold = await ensureAll(scope);
    const warm = await ensureAll(scope);
    expect(await verdicts(scope)).toEqual([READY, READY, READY]);

    await server.restart({ wipe: true });
    await expect.poll(async () => (await verdicts(scope).catch(() => [])).length, { timeout: 10_000 }).toBe(3);
    expect(await verdicts(scope)).toEqual([
      expect.objectContaining({ reason: 'StreamMissing' }),
      expect.objectContaining({ reason: 'TenantRecordMissing' }),
      expect.objectContaining({ reason: 'SeedPending' }),
    ]);
    const recovered = await ensureAll(scope);
    expect(await verdicts(scope)).toEqual([READY, READY, READY]);
    const kv = await f.nats.runInTenant(scope, (s) => s.existingKv(dataBucket('WIPEDD')));
    expect((await kv?.get('orbit-crm.accounts.tiers'))?.json()).toEqual(['bronze', 'silver', 'gold']);
    console.info(`ensure account+streams+record+seed (Enterprise, ${SEEDS.bundle('1.1.0', MODULES).entries.size} keys): ` +
      `cold ${cold.toFixed(0)} ms, repeat ${warm.toFixed(0)} ms, after wipe ${recovered.toFixed(0)} ms`);
  });

  it('NATS down: every step fails with DependencyError NatsUnavailable, naming no secret', async () => {
    const scope = testScope({ code: 'OUTAGE', seedsVersion: '1.0.0' });
    const server = f.server;
    await ensureAll(scope);
    await server.halt();
    try {
      for (const step of steps) {
        const started = performance.now();
        const err = await step.ensure(scope, deps()).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(DependencyError);
        expect(err).toMatchObject({ reason: 'NatsUnavailable', message: expect.stringMatching(/^cannot reach NATS at nats:\/\/127\.0\.0\.1:\d+: /) as string });
        for (const secret of secrets()) expect(JSON.stringify({ message: (err as Error).message, err })).not.toContain(secret);
        expect(performance.now() - started).toBeLessThan(3_000);
      }
      // A fresh operator that starts during the outage fails fast the same way.
      const fresh = testAccounts(server, f.nats.keys);
      try {
        const err = await streamsStep.verify(scope, { nats: fresh }).catch((e: unknown) => e);
        expect(err).toMatchObject({ reason: 'NatsUnavailable', message: `cannot reach NATS at ${server.url}: CONNECTION_REFUSED` });
      } finally {
        await fresh.close();
      }
    } finally {
      await server.restart();
    }
    await expect.poll(async () => (await verdicts(scope).catch(() => [])).length, { timeout: 10_000 }).toBe(3);
    expect(await verdicts(scope)).toEqual([READY, READY, READY]);
  });
});
