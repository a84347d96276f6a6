import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { parse } from 'yaml';
import { INVALID_SPECS } from '../../test/support/invalid-specs.ts';
import { InvalidTenantError, parseEvaTenant } from './parse.ts';

const sampleDir = new URL('../../samples/', import.meta.url);

function tenant(spec: Record<string, unknown>): unknown {
  return { apiVersion: 'eva.aidonow.com/v1alpha1', kind: 'EvaTenant', metadata: { name: 't' }, spec };
}

function problemsOf(raw: unknown): readonly string[] {
  try {
    parseEvaTenant(raw);
  } catch (err) {
    if (err instanceof InvalidTenantError) return err.problems;
    throw err;
  }
  return [];
}

describe('parseEvaTenant', () => {
  it('applies the API server defaults', () => {
    const parsed = parseEvaTenant(tenant({ capsuleCode: 'ABCDEF', tier: 'Starter' }));
    expect(parsed.spec.lifecycle).toBe('Active');
    expect(parsed.spec.wave).toBe(1);
  });

  it('accepts every sample', () => {
    const files = readdirSync(sampleDir).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThanOrEqual(4);
    const tiers = files.map((f) => parseEvaTenant(parse(readFileSync(new URL(f, sampleDir), 'utf8'))).spec.tier);
    expect(new Set(tiers)).toEqual(new Set(['Starter', 'Customer', 'Enterprise', 'Platform']));
  });

  it.each([
    ...INVALID_SPECS.map(([label, spec, field]) => [label, spec, `/spec/${field}`] as const),
    ['missing code', { tier: 'Starter' }, '/spec'] as const,
  ])('rejects %s, naming the field', (_label, spec, field) => {
    const problems = problemsOf(tenant(spec));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.some((p) => p.startsWith(field))).toBe(true);
  });

  it('keeps helmValues verbatim', () => {
    const values = { replicaCount: 2, nested: { list: [1, 'two', { three: true }] } };
    const parsed = parseEvaTenant(tenant({ capsuleCode: 'ABCDEF', tier: 'Enterprise', helmValues: { 'eva-gateway': values } }));
    expect(parsed.spec.helmValues?.['eva-gateway']).toEqual(values);
  });

  it('rejects something that is not an object', () => {
    expect(() => parseEvaTenant('nope')).toThrow(InvalidTenantError);
  });
});
