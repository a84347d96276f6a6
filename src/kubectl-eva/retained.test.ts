import { describe, expect, it } from 'vitest';
import { LABELS, RETAINED_MARKS } from '../api/constants.ts';
import { accountKeysName } from '../nats/account-keys.ts';
import { forceValue, STEPS, UnknownSteps } from './force.ts';
import { renderRetained, retainedData, type SecretMetadata } from './retained.ts';

const marks = (uid: string, code: string, at: string): Record<string, string> => ({ [RETAINED_MARKS.fromUid]: uid, [RETAINED_MARKS.code]: code, [RETAINED_MARKS.at]: at });
const keys = (code: string, owner: string, annotations: Record<string, string> = {}): SecretMetadata => ({ name: accountKeysName(code), labels: { [LABELS.tenantUid]: owner }, annotations });

describe('retainedData', () => {
  it('lists the keys Secrets with all three retained marks, by code, and whether an EvaTenant has the former uid', () => {
    const secrets = [
      keys('ZULUAA', 'uid-z', marks('uid-z', 'ZULUAA', '2026-11-27T10:00:00Z')),
      keys('ACMECO', 'uid-a', marks('uid-a', 'ACMECO', '2026-11-28T11:00:00Z')),
      keys('LIVEAA', 'uid-live'), // a live tenant's keys: not retained (the positive control of the filter)
      keys('HALFAA', 'uid-h', { [RETAINED_MARKS.fromUid]: 'uid-h' }), // a partial mark is no mark
    ];
    const data = retainedData(secrets, new Map([['uid-z', 'zulu']]));
    expect(data).toEqual([
      { code: 'ACMECO', formerUid: 'uid-a', retainedAt: '2026-11-28T11:00:00Z', secret: 'eva-nats-account-acmeco' },
      { code: 'ZULUAA', formerUid: 'uid-z', retainedAt: '2026-11-27T10:00:00Z', secret: 'eva-nats-account-zuluaa', tenantWithUid: 'zulu' },
    ]);
    const text = renderRetained(data, new Date('2026-11-28T12:00:00Z'));
    expect(text.split('\n')[0]).toMatch(/^CODE\s+FORMER UID\s+RETAINED AT\s+AGE\s+TENANT WITH UID$/);
    expect(text).toMatch(/ACMECO\s+uid-a\s+2026-11-28T11:00:00Z\s+1h\s+no/);
    expect(text).toMatch(/ZULUAA\s+uid-z\s+\S+\s+1d2h\s+yes: zulu/);
  });

  it('a Secret whose name is not the code it claims is not listed; nothing retained says so', () => {
    expect(retainedData([{ name: 'eva-nats-account-other', annotations: marks('u', 'ACMECO', '2026-11-28T11:00:00Z') }], new Map())).toEqual([]);
    expect(renderRetained([], new Date())).toBe('No retained tenant data.\n');
  });
});

describe('forceValue', () => {
  it('accepts the decommission steps and all, adds to what is already forced, in decommission order', () => {
    expect(STEPS).toContain('streams');
    expect(forceValue('record, streams', undefined)).toBe([...STEPS].filter((s) => s === 'streams' || s === 'record').join(','));
    expect(forceValue('record', 'streams')).toBe(forceValue('streams,record', undefined));
    expect(forceValue('streams', 'all')).toBe('all');
    expect(forceValue('all', undefined)).toBe('all');
  });

  it('refuses an unknown step (also beside all), naming the steps that exist', () => {
    expect(() => forceValue('streams,strems', undefined)).toThrow(UnknownSteps);
    expect(() => forceValue('all,bogus', undefined)).toThrow(/unknown decommission step\(s\): bogus; the steps are .*streams.*, all$/);
    expect(() => forceValue(' , ', undefined)).toThrow(UnknownSteps);
  });
});
