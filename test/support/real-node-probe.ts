/**
 * Run INSIDE the real node's namespaces (scripts/lib/real-node.sh exec), where NATS answers:
 *
 *   <tenant's nats.creds on stdin> node test/support/real-node-probe.ts heartbeats <CODE> <module>...
 *
 * Connects as the tenant's modules do (the tenant's own credentials from its Secret eva-nats, read from
 * stdin so that they touch neither argv nor disk, and the tenant's inbox prefix), and prints one JSON
 * line: for each module, the last heartbeat its pod published into the tenant's events stream, or null.
 */
import { connect, jwtAuthenticator, NatsError } from 'nats';
import { parseCreds } from '../../src/adapters/nats-jwt.ts';
import { eventsStream, inboxPrefix } from '../../src/tenancy/names.ts';

export interface Heartbeat {
  readonly module: string;
  readonly tenant: string;
  readonly at: string;
}

export type HeartbeatReport = Record<string, Heartbeat | null>;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function heartbeats(code: string, modules: readonly string[]): Promise<HeartbeatReport> {
  const url = process.env.NATS_URL;
  if (!url) throw new Error('NATS_URL is not set (run me with scripts/lib/real-node.sh exec)');
  const { jwt, seed } = parseCreds(await readStdin());
  const nc = await connect({ servers: url, reconnect: false, timeout: 5_000, inboxPrefix: inboxPrefix(code), authenticator: jwtAuthenticator(jwt, new TextEncoder().encode(seed)) });
  try {
    const jsm = await nc.jetstreamManager({ checkAPI: false });
    const report: HeartbeatReport = {};
    for (const module of modules) {
      try {
        const msg = await jsm.streams.getMessage(eventsStream(code), { last_by_subj: `capsule.${code}.events.${module}.heartbeat` });
        report[module] = msg.json<Heartbeat>();
      } catch (err) {
        if (err instanceof NatsError && err.api_error?.err_code === 10037) report[module] = null; // no message
        else throw err;
      }
    }
    return report;
  } finally {
    await nc.close();
  }
}

const [command, code, ...modules] = process.argv.slice(2);
if (command !== 'heartbeats' || code === undefined || modules.length === 0) {
  process.stderr.write('usage: node test/support/real-node-probe.ts heartbeats <CODE> <module>... (creds on stdin)\n');
  process.exit(2);
}
process.stdout.write(`${JSON.stringify(await heartbeats(code, modules))}\n`);
