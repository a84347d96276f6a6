/**
 * The NATS half of the observer: connects as the system user with the operator's own client (no
 * background reconnects), asks the server about itself ($SYS.REQ.SERVER.PING.VARZ) and its resolver
 * ($SYS.REQ.CLAIMS.LIST, answered only by a full resolver), and records how far it got. The
 * credentials are read from their file here and go nowhere but the connection.
 */
import { readFileSync } from 'node:fs';
import { Reason } from '../api/reasons.ts';
import type { PreflightSettings } from '../config.ts';
import { DependencyError, messageOf } from '../errors.ts';
import { createNatsClient, type NatsClient } from '../adapters/nats.ts';
import { parseCreds } from '../adapters/nats-jwt.ts';
import { NatsSystem } from '../adapters/nats-system.ts';
import type { NatsFacts } from './facts.ts';
import { seen, unseen } from './facts.ts';

async function connected(client: NatsClient): Promise<NatsFacts | undefined> {
  try {
    await client.session();
    return undefined;
  } catch (err) {
    const state = err instanceof DependencyError && err.reason === Reason.NatsAuthFailed ? 'rejected' : 'unreachable';
    return { state, target: client.target, error: messageOf(err) };
  }
}

async function probe(system: NatsSystem, client: NatsClient): Promise<NatsFacts> {
  const failed = await connected(client);
  if (failed) return failed;
  let server;
  try {
    server = await system.varz();
  } catch (err) {
    return { state: 'no-system-answer', target: client.target, error: messageOf(err) };
  }
  const resolver = await system.listAccounts().then(
    (accounts) => seen({ accounts: accounts.length }),
    (err: unknown) => unseen(messageOf(err)),
  );
  return { state: 'answered', target: client.target, server, resolver };
}

export async function observeNats(settings: PreflightSettings['nats'], timeoutMs: number): Promise<NatsFacts> {
  const { url, systemCredsFile } = settings;
  if (url === undefined || systemCredsFile === undefined) {
    const missing = [...(url === undefined ? ['--nats-url (NATS_URL)'] : []), ...(systemCredsFile === undefined ? ['--nats-creds (NATS_SYSTEM_CREDS_FILE)'] : [])];
    return { state: 'not-configured', missing };
  }
  // Checked when the settings were read (config/nats.ts); read again only here, where it is used.
  const { jwt, seed } = parseCreds(readFileSync(systemCredsFile, 'utf8'));
  const client = createNatsClient({
    url,
    name: 'eva-operator-preflight',
    jetStream: false,
    credentials: () => Promise.resolve({ jwt, seed }),
    connectTimeoutMs: timeoutMs,
    requestTimeoutMs: timeoutMs,
  });
  try {
    return await probe(new NatsSystem(client), client);
  } finally {
    await client.close();
  }
}
