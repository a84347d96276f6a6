import { describe, expect, it } from 'vitest';
import type { EvaTenantStatus } from '../api/evatenant.ts';
import type { TenantStore } from '../adapters/tenant-store.ts';
import { createLogger } from '../log.ts';
import type { SagaView } from '../saga/view.ts';
import { testTenant } from '../../test/support/fixtures.ts';
import { StatusWriter } from './status-writer.ts';

const unused = (): Promise<never> => Promise.reject(new Error('not used by this test'));
const store: TenantStore = { get: unused, patchMetadata: unused, jsonPatch: unused, writeStatus: unused, recordEvent: unused };
const now = Date.parse('2026-01-01T00:10:00Z');

function writerWith(status: EvaTenantStatus): StatusWriter {
  return new StatusWriter(store, { ...testTenant(), status }, createLogger('silent'));
}

const waitingOnModules: SagaView = { stage: 'waiting', wasActive: false, problem: { step: 'modules', reason: 'DeploymentUnavailable', message: 'm', needsUser: false } };
const modulesFalseSince = (time: string): EvaTenantStatus => ({
  conditions: [{ type: 'ModulesDeployed', status: 'False', reason: 'DeploymentUnavailable', message: 'm', lastTransitionTime: time }],
});

describe('StatusWriter.waitedMs', () => {
  it('is how long the waiting step’s condition has been False as stored', () => {
    expect(writerWith(modulesFalseSince('2026-01-01T00:09:30Z')).waitedMs(waitingOnModules, now)).toBe(30_000);
  });

  it('is 0 when the tenant is not waiting, or its step’s condition is not False', () => {
    expect(writerWith(modulesFalseSince('2026-01-01T00:09:30Z')).waitedMs({ stage: 'active', wasActive: true }, now)).toBe(0);
    expect(writerWith({}).waitedMs(waitingOnModules, now)).toBe(0);
    expect(writerWith(modulesFalseSince('not a time')).waitedMs(waitingOnModules, now)).toBe(0);
  });
});
