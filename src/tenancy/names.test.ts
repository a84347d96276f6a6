import { describe, expect, it } from 'vitest';
import { commandsStream, eventsStream, STREAM_KINDS, streamName, streamSubject, tenantSubjects } from './names.ts';

describe('stream naming rules', () => {
  it('names one stream a kind, each capturing its own kind under the tenant subjects', () => {
    expect(STREAM_KINDS.map((kind) => streamName('ACME', kind))).toEqual(['eva-ACME-events', 'eva-ACME-commands']);
    expect([eventsStream('ACME'), commandsStream('ACME')]).toEqual(['eva-ACME-events', 'eva-ACME-commands']);
    expect(STREAM_KINDS.map((kind) => streamSubject('ACME', kind))).toEqual(['capsule.ACME.events.>', 'capsule.ACME.commands.>']);
    expect(tenantSubjects('ACME')).toBe('capsule.ACME.>');
  });
});
