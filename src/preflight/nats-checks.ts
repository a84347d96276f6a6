/**
 * Decides the NATS checks from how far the probe got (facts.ts, NatsFacts): connected as the system
 * user, the server in operator mode, JetStream on, a full resolver. A step the probe never reached
 * fails too, naming the step before it: nothing passes unseen.
 */
import type { NatsFacts, NatsServerFacts, Seen } from './facts.ts';
import { type CheckResult, fail, ok } from './result.ts';

export const NATS_CONNECTION = 'nats-connection';
export const NATS_OPERATOR_MODE = 'nats-operator-mode';
export const NATS_JETSTREAM = 'nats-jetstream';
export const NATS_RESOLVER = 'nats-resolver';

const AUTH_CONF = 'include nats-auth.conf of `eva-operator nats-bootstrap` in the server\'s configuration (docs/nats.md)';

function notReached(check: string, blocker: string): CheckResult {
  return fail(check, `not checked: ${blocker} failed`, `fix ${blocker} first`);
}

function connection(facts: NatsFacts): CheckResult {
  switch (facts.state) {
    case 'not-configured':
      return fail(NATS_CONNECTION, `no ${facts.missing.join(' and ')} given`, 'pass --nats-url and --nats-creds <system.creds of eva-operator nats-bootstrap> (or set NATS_URL and NATS_SYSTEM_CREDS_FILE)');
    case 'unreachable':
      return fail(NATS_CONNECTION, facts.error, `check that NATS listens at ${facts.target} (nats.url) and is reachable from here; from outside the cluster, kubectl port-forward to it and pass --nats-url nats://127.0.0.1:<port>`);
    case 'rejected':
      return fail(NATS_CONNECTION, facts.error, `use the system.creds of the bootstrap whose nats-auth.conf the server includes (the Secret nats.auth.existingSecret); else ${AUTH_CONF}`);
    case 'no-system-answer':
    case 'answered':
      return ok(NATS_CONNECTION, `connected to ${facts.target} as the system user`);
  }
}

function operatorMode(facts: NatsFacts): CheckResult {
  if (facts.state === 'no-system-answer') {
    return fail(NATS_OPERATOR_MODE, `the server does not answer the system account's requests (${facts.error}): it is not in operator mode, or the credentials are not its system user's`, AUTH_CONF);
  }
  if (facts.state !== 'answered') return notReached(NATS_OPERATOR_MODE, NATS_CONNECTION);
  const { trustedOperators, version } = facts.server;
  if (trustedOperators.length === 0) return fail(NATS_OPERATOR_MODE, `nats-server ${version} trusts no operator`, AUTH_CONF);
  return ok(NATS_OPERATOR_MODE, `nats-server ${version} trusts operator ${trustedOperators.join(', ')}`);
}

const gib = (bytes: number): string => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

function jetStream(server: NatsServerFacts): CheckResult {
  if (server.jetStreamMaxStorage === undefined) {
    return fail(NATS_JETSTREAM, 'JetStream is off', 'enable it in the server\'s configuration: jetstream { store_dir: ..., max_file_store: ... } (docs/nats.md)');
  }
  return ok(NATS_JETSTREAM, `on, ${gib(server.jetStreamMaxStorage)} of file storage`);
}

function resolver(seenResolver: Seen<{ readonly accounts: number }>): CheckResult {
  if (!seenResolver.ok) {
    return fail(
      NATS_RESOLVER,
      `the server does not list its accounts ($SYS.REQ.CLAIMS.LIST: ${seenResolver.error}): not a full resolver`,
      'configure resolver { type: full, dir: ..., allow_delete: true }: the operator pushes one account per tenant (docs/nats.md)',
    );
  }
  return ok(NATS_RESOLVER, `full resolver, ${String(seenResolver.value.accounts)} account(s)`);
}

export function decideNats(facts: NatsFacts): CheckResult[] {
  const answered = facts.state === 'answered' && facts.server.trustedOperators.length > 0 ? facts : undefined;
  return [
    connection(facts),
    operatorMode(facts),
    answered ? jetStream(answered.server) : notReached(NATS_JETSTREAM, NATS_OPERATOR_MODE),
    answered ? resolver(answered.resolver) : notReached(NATS_RESOLVER, NATS_OPERATOR_MODE),
  ];
}
