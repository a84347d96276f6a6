import { describe, expect, it } from 'vitest';
import { type NatsFacts, seen, unseen } from './facts.ts';
import { decideNats } from './nats-checks.ts';
import type { CheckResult } from './result.ts';

const target = 'nats://nats.eva-system:4222';
const server = { version: '2.15.0', trustedOperators: ['eva'], jetStreamMaxStorage: 10 * 2 ** 30 };
const healthy: NatsFacts = { state: 'answered', target, server, resolver: seen({ accounts: 3 }) };

const table = (results: readonly CheckResult[]): string[] => results.map((r) => `${r.check} ${r.result}`);
const fixOf = (results: readonly CheckResult[], check: string): string => {
  const found = results.find((r) => r.check === check);
  return found?.result === 'fail' ? found.fix : '';
};

describe('decideNats', () => {
  it('operator mode with JetStream and a full resolver passes all four checks', () => {
    const results = decideNats(healthy);
    expect(table(results)).toEqual(['nats-connection ok', 'nats-operator-mode ok', 'nats-jetstream ok', 'nats-resolver ok']);
    expect(results.map((r) => r.detail)).toEqual([
      `connected to ${target} as the system user`,
      'nats-server 2.15.0 trusts operator eva',
      'on, 10.0 GiB of file storage',
      'full resolver, 3 account(s)',
    ]);
  });

  it.each<[string, NatsFacts, string[]]>([
    ['not configured', { state: 'not-configured', missing: ['--nats-url (NATS_URL)'] }, ['fail', 'fail', 'fail', 'fail']],
    ['unreachable', { state: 'unreachable', target, error: 'cannot reach NATS: CONNECTION_REFUSED' }, ['fail', 'fail', 'fail', 'fail']],
    ['credentials rejected', { state: 'rejected', target, error: 'Authorization Violation' }, ['fail', 'fail', 'fail', 'fail']],
    ['no system account answer (not operator mode)', { state: 'no-system-answer', target, error: '503' }, ['ok', 'fail', 'fail', 'fail']],
    ['no trusted operator', { ...healthy, server: { ...server, trustedOperators: [] } }, ['ok', 'fail', 'fail', 'fail']],
    ['JetStream off', { ...healthy, server: { ...server, jetStreamMaxStorage: undefined } }, ['ok', 'ok', 'fail', 'ok']],
    ['no full resolver', { ...healthy, resolver: unseen('503') }, ['ok', 'ok', 'ok', 'fail']],
  ])('%s', (_name, facts, results) => {
    expect(decideNats(facts).map((r) => r.result)).toEqual(results);
  });

  it('each failure says how to fix it; a check never reached names the one before it', () => {
    expect(fixOf(decideNats({ state: 'not-configured', missing: [] }), 'nats-connection')).toContain('--nats-url and --nats-creds');
    expect(fixOf(decideNats({ state: 'unreachable', target, error: 'x' }), 'nats-connection')).toContain('port-forward');
    expect(fixOf(decideNats({ state: 'rejected', target, error: 'x' }), 'nats-connection')).toContain('system.creds');
    expect(fixOf(decideNats({ state: 'no-system-answer', target, error: 'x' }), 'nats-operator-mode')).toContain('nats-auth.conf');
    expect(fixOf(decideNats({ state: 'no-system-answer', target, error: 'x' }), 'nats-jetstream')).toBe('fix nats-operator-mode first');
    expect(fixOf(decideNats({ ...healthy, server: { ...server, jetStreamMaxStorage: undefined } }), 'nats-jetstream')).toContain('jetstream {');
    expect(fixOf(decideNats({ ...healthy, resolver: unseen('503') }), 'nats-resolver')).toContain('resolver { type: full');
  });
});
