import { describe, expect, it } from 'vitest';
import { RESTORE_FROM_ANNOTATION } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { testTenant } from '../../test/support/fixtures.ts';
import { CommandFailed } from './cluster.ts';
import { parseTimeout, restoreManifest, waitUntil } from './restore.ts';

describe('restoreManifest', () => {
  it('is the EvaTenant of docs/lifecycle.md "Restore": the code, the tier and the annotation naming the uid; a purge states Delete', () => {
    expect(restoreManifest({ name: 'acmeco', code: 'ACMECO', fromUid: '2f0c', tier: 'Starter' })).toEqual({
      metadata: { name: 'acmeco', annotations: { [RESTORE_FROM_ANNOTATION]: '2f0c' } },
      spec: { capsuleCode: 'ACMECO', tier: 'Starter' },
    });
    expect(restoreManifest({ name: 'acmeco', code: 'ACMECO', fromUid: '2f0c', tier: 'Starter', dataRetention: 'Delete' }).spec).toMatchObject({ dataRetention: 'Delete' });
  });
});

describe('parseTimeout', () => {
  it('reads 90s, 10m, 1h and plain seconds; refuses anything else', () => {
    expect([parseTimeout('90s'), parseTimeout('10m'), parseTimeout('1h'), parseTimeout('30')]).toEqual([90_000, 600_000, 3_600_000, 30_000]);
    expect(() => parseTimeout('ten minutes')).toThrow(CommandFailed);
  });
});

describe('waitUntil', () => {
  const withPhase = (phase: NonNullable<EvaTenant['status']>['phase'], stalled = false): EvaTenant => {
    const tenant = testTenant();
    tenant.status = { phase, conditions: stalled ? [{ type: 'Stalled', status: 'True', reason: 'RestoreRefused', message: 'not marked retained', lastTransitionTime: '2026-11-28T12:00:00Z' }] : [] };
    return tenant;
  };
  /** A clock that moves only when the wait sleeps. */
  const simulated = (reads: (EvaTenant | undefined)[]) => {
    let clock = 0;
    const lines: string[] = [];
    return { lines, w: { read: () => Promise.resolve(reads.length > 1 ? reads.shift() : reads[0]), say: (l: string) => lines.push(l), timeoutMs: 10_000, intervalMs: 2_000, now: () => clock, sleep: (ms: number) => Promise.resolve(void (clock += ms)) } };
  };

  it('prints each new progress line once and returns when done', async () => {
    const { lines, w } = simulated([withPhase('Provisioning'), withPhase('Provisioning'), withPhase('Active')]);
    await waitUntil('Active', (t) => t?.status?.phase === 'Active', w);
    expect(lines).toEqual(['  [0s] Provisioning', '  [4s] Active']);
  });

  it('gives up on Stalled at once, and after the timeout otherwise', async () => {
    await expect(waitUntil('Active', () => false, simulated([withPhase('Failed', true)]).w)).rejects.toThrow(/stalled, RestoreRefused: not marked retained/);
    await expect(waitUntil('gone', (t) => t === undefined, simulated([withPhase('Decommissioning')]).w)).rejects.toThrow(/gone: not within 10s/);
  });
});
