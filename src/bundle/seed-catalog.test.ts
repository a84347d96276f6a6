import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MODULES } from '../api/modules.ts';
import { InputError } from '../errors.ts';
import { SeedCatalog, seedDigest } from './seeds.ts';
import { seedFileEntries as fileEntries } from '../../test/support/fixtures.ts';

const SEEDS = SeedCatalog.load(fileURLToPath(new URL('../../seeds', import.meta.url)));

describe('seed catalogue', () => {
  it('lists bundled version folders newest first', () => {
    const base = mkdtempSync(join(tmpdir(), 'eva-seeds-'));
    for (const v of ['1.2.0', '1.10.0', '1.9.3']) mkdirSync(join(base, v));
    expect(SeedCatalog.load(base).versions).toEqual(['1.10.0', '1.9.3', '1.2.0']);
    expect(SeedCatalog.load(join(base, 'missing')).versions).toEqual([]);
    rmSync(base, { recursive: true });
  });

  it('the digest ignores entry and key order and sees every value change', () => {
    const a = new Map<string, unknown>([['x.a', { p: 1, q: 2 }], ['x.b', [1, 2]]]);
    const b = new Map<string, unknown>([['x.b', [1, 2]], ['x.a', { q: 2, p: 1 }]]);
    expect(seedDigest(a)).toBe(seedDigest(b));
    expect(seedDigest(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(seedDigest(new Map([...a, ['x.b', [2, 1]]]))).not.toBe(seedDigest(a));
  });

  it('loads a version for the given modules, keys prefixed with the module', () => {
    const bundle = SEEDS.bundle('1.0.0', ['orbit-crm', 'orbit-itsm']).entries;
    expect(bundle).toEqual(new Map([...fileEntries('1.0.0', 'orbit-crm'), ...fileEntries('1.0.0', 'orbit-itsm')]));
    expect(SEEDS.bundle('1.1.0', MODULES).entries.size).toBeGreaterThan(bundle.size);
  });

  it('names the bundled versions when asked for an unknown one (also for path tricks)', () => {
    for (const version of ['9.9.9', '../seeds/1.0.0', '.']) {
      const err = (() => {
        try {
          SEEDS.bundle(version, ['orbit-crm']);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err).toBeInstanceOf(InputError);
      expect(err).toMatchObject({
        reason: 'UnknownSeedsVersion',
        message: `seedsVersion "${version}" is not bundled with this operator; available: 1.0.0, 1.1.0`,
      });
    }
  });

  it('rejects a broken bundle file', () => {
    const base = mkdtempSync(join(tmpdir(), 'eva-seeds-'));
    mkdirSync(join(base, '1.0.0'));
    const write = (content: unknown): void => {
      writeFileSync(join(base, '1.0.0', 'orbit-crm.json'), JSON.stringify(content));
    };
    const load = (): unknown => SeedCatalog.load(base).bundle('1.0.0', ['orbit-crm']);
    write({ module: 'orbit-itsm', entries: [] });
    expect(load).toThrow(expect.objectContaining({ reason: 'SeedsBundleInvalid' }) as Error);
    write({ module: 'orbit-crm', entries: [{ key: '.bad', value: 1 }] });
    expect(load).toThrow(/invalid key \.bad/);
    write({ module: 'orbit-crm', entries: [{ key: 'a', value: 1 }, { key: 'a', value: 2 }] });
    expect(load).toThrow(/repeats key orbit-crm\.a/);
    rmSync(base, { recursive: true });
  });
});
