import { describe, expect, it } from 'vitest';
import { ROTATE_NATS_CREDENTIALS_ANNOTATION } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { buildStatus, provisionedSpecChanged, sameStatus } from './tenant-status.ts';
import { testTenant } from '../../test/support/fixtures.ts';

const base: EvaTenant = testTenant({ name: 't', generation: 3 });

describe('buildStatus', () => {
  it('records when provisioning started and the seconds to each condition, once', () => {
    const t0 = new Date('2026-01-01T00:00:00.000Z');
    const first = buildStatus(base, { stage: 'provisioning', currentStep: 'namespace', wasActive: false }, { s: 1 }, t0);
    expect(first.provisioningStartedAt).toBe(t0.toISOString());
    expect(first.elapsedSeconds).toEqual({});
    const t1 = new Date('2026-01-01T00:00:01.500Z');
    const second = buildStatus({ ...base, status: first }, { stage: 'provisioning', currentStep: 'streams', wasActive: false }, { s: 2 }, t1);
    expect(second.elapsedSeconds).toEqual({ NamespaceReady: 1.5 });
    const t2 = new Date('2026-01-01T00:00:04.000Z');
    const active = buildStatus({ ...base, status: second }, { stage: 'active', wasActive: true }, { s: 3 }, t2);
    expect(active.elapsedSeconds).toMatchObject({ NamespaceReady: 1.5, Ready: 4, IngressReady: 4 });
    expect(active).toMatchObject({ phase: 'Active', observedGeneration: 3 });
  });

  it('produces an identical status for an unchanged tenant (so no write happens)', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const active = buildStatus(base, { stage: 'active', wasActive: true }, { snapshot: 1 }, now);
    const again = buildStatus({ ...base, status: active }, { stage: 'active', wasActive: true }, { snapshot: 1 }, new Date('2026-01-01T01:00:00Z'));
    expect(sameStatus(active, again)).toBe(true);
  });
});

describe('provisionedSpecChanged', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  const active = buildStatus(base, { stage: 'active', wasActive: true }, { snapshot: 1 }, now);
  const next = (spec: Partial<EvaTenant['spec']>): EvaTenant => ({ ...base, metadata: { ...base.metadata, generation: 4 }, spec: { ...base.spec, ...spec }, status: active });

  it('is false while the status observed the current generation', () => {
    expect(provisionedSpecChanged({ ...base, status: active })).toBe(false);
    expect(provisionedSpecChanged(base)).toBe(false);
  });

  it('ignores a new pin alone: a hand-over between operator versions provisions nothing', () => {
    expect(provisionedSpecChanged(next({ operatorVersion: '2.0.0' }))).toBe(false);
  });

  it('sees any other spec change, with or without a new pin', () => {
    expect(provisionedSpecChanged(next({ tier: 'Customer' }))).toBe(true);
    expect(provisionedSpecChanged(next({ tier: 'Customer', operatorVersion: '2.0.0' }))).toBe(true);
    expect(provisionedSpecChanged(next({ helmValues: { 'orbit-crm': { replicas: 2 } } }))).toBe(true);
  });

  it('sees a new value of the rotate-nats-credentials annotation (same generation), and only a new one', () => {
    const rotating = (value: string): EvaTenant => ({ ...base, metadata: { ...base.metadata, annotations: { [ROTATE_NATS_CREDENTIALS_ANNOTATION]: value } }, status: active });
    expect(provisionedSpecChanged(rotating('2026-11-23T10:00:00Z'))).toBe(true);
    const rotated = buildStatus(rotating('2026-11-23T10:00:00Z'), { stage: 'active', wasActive: true }, { snapshot: 1 }, now);
    expect(provisionedSpecChanged({ ...rotating('2026-11-23T10:00:00Z'), status: rotated })).toBe(false);
    expect(provisionedSpecChanged({ ...rotating('2026-11-24'), status: rotated })).toBe(true);
  });

  it('counts any new generation when the status carries no digest (written by an older operator)', () => {
    const older = { ...active, saga: { snapshot: 1 } };
    expect(provisionedSpecChanged({ ...next({ operatorVersion: '2.0.0' }), status: older })).toBe(true);
  });
});
