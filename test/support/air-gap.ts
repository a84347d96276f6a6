/**
 * The air-gap check (scripts/lib/air-gap-netns.sh, e2e/air-gap.test.ts), in two halves run inside the
 * sealed network namespace and one read by the test:
 *
 *   node test/support/air-gap.ts dns <log.jsonl> <ready-file>   a loopback DNS server (127.0.0.53 and
 *       ::1, port 53, UDP and TCP) that records every question it gets and answers NXDOMAIN
 *   node test/support/air-gap.ts summary <dir>                  turns what the script collected in <dir>
 *       into one JSON line (AirGapSummary)
 *
 * The DNS server never forwards anything: it is the only resolver the namespace knows, so every name any
 * process there tries to resolve through DNS ends up in its log, and nothing is ever answered.
 */
import { createSocket, type RemoteInfo } from 'node:dgram';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { parseTenantJson, type TenantView } from './tenants.ts';

// ---- DNS wire format (RFC 1035 4.1) ----------------------------------------------------------------

export interface DnsQuestion {
  /** Lower case, without the trailing dot; '.' for the root. */
  name: string;
  type: string;
  /** Offset just past the first question (header + question bytes are echoed in the answer). */
  end: number;
}

const TYPE_NAMES: Readonly<Record<number, string>> = {
  1: 'A', 2: 'NS', 5: 'CNAME', 6: 'SOA', 12: 'PTR', 15: 'MX', 16: 'TXT', 28: 'AAAA', 33: 'SRV', 64: 'SVCB', 65: 'HTTPS', 255: 'ANY',
};

/** The first question of a DNS query, or undefined when the message is not a well-formed query. */
export function parseDnsQuestion(msg: Buffer): DnsQuestion | undefined {
  if (msg.length < 12 || (msg.readUInt16BE(2) & 0x8000) !== 0 || msg.readUInt16BE(4) < 1) return undefined;
  const labels: string[] = [];
  let at = 12;
  for (;;) {
    const length = msg[at];
    if (length === undefined || length > 63) return undefined; // truncated, or a compression pointer
    at += 1;
    if (length === 0) break;
    if (at + length > msg.length) return undefined;
    labels.push(msg.toString('latin1', at, at + length).toLowerCase());
    at += length;
  }
  if (at + 4 > msg.length) return undefined;
  const type = msg.readUInt16BE(at);
  return { name: labels.length === 0 ? '.' : labels.join('.'), type: TYPE_NAMES[type] ?? `TYPE${type}`, end: at + 4 };
}

/** NXDOMAIN for `query`: same id, opcode and RD, the question echoed, no records. */
export function nxdomain(query: Buffer, question: DnsQuestion): Buffer {
  const answer = Buffer.from(query.subarray(0, question.end));
  const flags = 0x8000 | (query.readUInt16BE(2) & 0x7900) | 0x0080 | 3; // QR, opcode + RD kept, RA, NXDOMAIN
  answer.writeUInt16BE(flags, 2);
  answer.writeUInt16BE(1, 4); // one question
  answer.writeUInt32BE(0, 6); // no answers, no authority
  answer.writeUInt16BE(0, 10); // no additional records (an EDNS OPT in the query is not echoed)
  return answer;
}

// ---- the recording server ---------------------------------------------------------------------------

export interface DnsQuery {
  /** Epoch milliseconds when the question arrived. */
  ms: number;
  transport: 'udp' | 'tcp';
  type: string;
  name: string;
}

export const DNS_ADDRESSES = ['127.0.0.53', '::1'] as const;

function recorder(logFile: string): (transport: DnsQuery['transport'], msg: Buffer) => Buffer | undefined {
  return (transport, msg) => {
    const question = parseDnsQuestion(msg);
    const entry: DnsQuery = { ms: Date.now(), transport, type: question?.type ?? '?', name: question?.name ?? '<unparsable query>' };
    appendFileSync(logFile, `${JSON.stringify(entry)}\n`);
    return question && nxdomain(msg, question);
  };
}

/** DNS over TCP: each message has a two-byte length prefix. */
function serveTcpConnection(socket: Socket, answer: (msg: Buffer) => Buffer | undefined): void {
  let pending = Buffer.alloc(0);
  socket.on('error', () => undefined);
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
      const msg = pending.subarray(2, 2 + pending.readUInt16BE(0));
      pending = pending.subarray(2 + msg.length);
      const reply = answer(msg);
      if (reply) {
        const length = Buffer.alloc(2);
        length.writeUInt16BE(reply.length);
        socket.write(Buffer.concat([length, reply]));
      }
    }
  });
}

/** Listens on every DNS_ADDRESSES, port `port`, UDP and TCP; resolves once all are bound. */
export async function serveLoopbackDns(logFile: string, port = 53): Promise<void> {
  const answer = recorder(logFile);
  await Promise.all(
    DNS_ADDRESSES.flatMap((address) => [
      new Promise<void>((resolve, reject) => {
        const udp = createSocket(address.includes(':') ? 'udp6' : 'udp4');
        udp.on('message', (msg: Buffer, from: RemoteInfo) => {
          const reply = answer('udp', msg);
          if (reply) udp.send(reply, from.port, from.address);
        });
        udp.once('error', reject);
        udp.bind(port, address, resolve);
      }),
      new Promise<void>((resolve, reject) => {
        const tcp = createServer((socket) => {
          serveTcpConnection(socket, (msg) => answer('tcp', msg));
        });
        tcp.once('error', reject);
        tcp.listen(port, address, resolve);
      }),
    ]),
  );
}

/**
 * Names that need no DNS server beyond this machine: `localhost` and its subdomains (RFC 6761 6.3) and
 * the reverse names of the loopback addresses (RFC 6303). Every other name is external: only a
 * resolver outside the machine could answer it, so asking for it is an attempt to reach out.
 */
export function isLocalName(name: string): boolean {
  const n = name.toLowerCase().replace(/\.$/, '');
  return n === 'localhost' || n.endsWith('.localhost') || n === '127.in-addr.arpa' || n.endsWith('.127.in-addr.arpa') ||
    n === `1.${'0.'.repeat(31)}ip6.arpa`;
}

// ---- firewall counters ------------------------------------------------------------------------------

export interface RuleCounters {
  packets: number;
  bytes: number;
}

/** The two OUTPUT rules of the namespace: loopback destinations over lo accepted, anything else dropped. */
export interface OutputCounters {
  loopback: RuleCounters;
  other: RuleCounters;
}

/** Reads the rules tagged `air-gap:loopback` / `air-gap:other` from `iptables-save -c` output. */
export function parseOutputCounters(save: string): OutputCounters {
  const rule = (tag: string): RuleCounters => {
    const match = new RegExp(`^\\[(\\d+):(\\d+)\\] -A OUTPUT .*--comment "?air-gap:${tag}"?`, 'm').exec(save);
    if (!match) throw new Error(`no OUTPUT rule tagged air-gap:${tag} in:\n${save}`);
    return { packets: Number(match[1]), bytes: Number(match[2]) };
  };
  return { loopback: rule('loopback'), other: rule('other') };
}

// ---- the summary ------------------------------------------------------------------------------------

export interface AirGapRelease {
  name: string;
  chart: string;
  status: string;
}

export interface FirewallSnapshot {
  ipv4: OutputCounters;
  ipv6: OutputCounters;
}

export interface AirGapSummary {
  /** Set when the script itself failed (a step, not an assertion); the step and why. */
  error?: string;
  code: string;
  operatorVersion: string;
  tenant: TenantView | null;
  releases: AirGapRelease[];
  /** Counters when the tenant was Active (`provisioning`) and after the controls ran. */
  firewall: { provisioning: FirewallSnapshot | null; afterControl: FirewallSnapshot | null };
  dns: {
    /** Every question the loopback DNS server got, from the start, up to the snapshot. */
    provisioning: DnsQuery[];
    /** Every question after the snapshot: the positive control's, and any stragglers. */
    afterSnapshot: DnsQuery[];
    controlName: string;
    /** Exit status of `getent hosts <controlName>` (2: not found, as it must be). */
    controlExit: number | null;
  };
  /** Milliseconds of each phase, from the script's timestamps. */
  durationsMs: Record<string, number>;
  /** The operator's last log lines, for a failure message. */
  operatorLogTail: string[];
}

function readIf(dir: string, file: string): string | undefined {
  const path = join(dir, file);
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

function firewall(dir: string, phase: string): FirewallSnapshot | null {
  const v4 = readIf(dir, `iptables.${phase}`);
  const v6 = readIf(dir, `ip6tables.${phase}`);
  return v4 === undefined || v6 === undefined ? null : { ipv4: parseOutputCounters(v4), ipv6: parseOutputCounters(v6) };
}

/** `key ms` lines -> durations between consecutive marks, named after the later mark, plus `total`. */
function durations(timings: string): Record<string, number> {
  const marks = timings.split('\n').filter(Boolean).map((line) => line.split(' ')).map(([key, ms]) => ({ key: key ?? '', ms: Number(ms) }));
  const out: Record<string, number> = {};
  marks.forEach((mark, i) => {
    const before = marks[i - 1];
    if (before) out[mark.key] = mark.ms - before.ms;
  });
  const first = marks[0];
  const last = marks[marks.length - 1];
  if (first && last) out['total'] = last.ms - first.ms;
  return out;
}

function releases(json: string | undefined): AirGapRelease[] {
  if (json === undefined || json.trim() === '') return [];
  return (JSON.parse(json) as AirGapRelease[]).map(({ name, chart, status }) => ({ name, chart, status })).sort((a, b) => a.name.localeCompare(b.name));
}

export function buildSummary(dir: string): AirGapSummary {
  const queries = (readIf(dir, 'dns.jsonl') ?? '').split('\n').filter(Boolean).map((line) => JSON.parse(line) as DnsQuery);
  const mark = Number((readIf(dir, 'dns.mark') ?? String(queries.length)).trim());
  const tenantJson = readIf(dir, 'tenant.json');
  const controlExit = readIf(dir, 'control.exit');
  const error = readIf(dir, 'error')?.trim();
  return {
    ...(error ? { error } : {}),
    code: (readIf(dir, 'code') ?? '').trim(),
    operatorVersion: (readIf(dir, 'operator-version') ?? '').trim(),
    tenant: tenantJson ? parseTenantJson(tenantJson) : null,
    releases: releases(readIf(dir, 'releases.json')),
    firewall: { provisioning: firewall(dir, 'provisioning'), afterControl: firewall(dir, 'control') },
    dns: {
      provisioning: queries.slice(0, mark),
      afterSnapshot: queries.slice(mark),
      controlName: (readIf(dir, 'control.name') ?? '').trim(),
      controlExit: controlExit === undefined ? null : Number(controlExit.trim()),
    },
    durationsMs: durations(readIf(dir, 'timings') ?? ''),
    operatorLogTail: (readIf(dir, 'operator.log') ?? '').split('\n').filter(Boolean).slice(-30),
  };
}

/** The summary is the last line the script prints on stdout. */
export function summaryFromOutput(stdout: string): AirGapSummary | undefined {
  const last = stdout.trimEnd().split('\n').pop() ?? '';
  if (!last.startsWith('{')) return undefined;
  return JSON.parse(last) as AirGapSummary;
}

async function main(argv: readonly string[]): Promise<void> {
  const [command, first, second] = argv;
  if (command === 'dns' && first && second) {
    await serveLoopbackDns(first);
    writeFileSync(second, `${String(process.pid)}\n`);
  } else if (command === 'summary' && first) {
    process.stdout.write(`${JSON.stringify(buildSummary(first))}\n`);
  } else {
    process.stderr.write('usage: air-gap.ts dns <log.jsonl> <ready-file> | summary <dir>\n');
    process.exitCode = 2;
  }
}

if (import.meta.main) await main(process.argv.slice(2));
