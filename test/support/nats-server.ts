/**
 * A throwaway nats-server with JetStream for tests: the pinned binary, 127.0.0.1 on a free port,
 * storage in a temporary folder. restart() keeps the port (clients reconnect to the same URL);
 * restart({ wipe: true }) also deletes the storage, like a NATS that lost its data.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './ports.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_VERSION, KIND, type Tier } from '../../src/api/constants.ts';
import { MODULES_BY_TIER } from '../../src/api/modules.ts';
import { createLogger } from '../../src/log.ts';
import type { TenantScope } from '../../src/steps/step.ts';
import { tool } from './tools.ts';

export interface NatsServerOptions {
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  /** JetStream file storage limit, e.g. '100MB' (default: 75% of the free disk). */
  readonly maxFileStore?: string;
}

export interface TestNatsServer {
  readonly url: string;
  readonly port: number;
  /** Stops the server and deletes its storage (end of test). */
  stop(): Promise<void>;
  /** Stops the server but keeps its storage, for restart() to bring it back: NATS is down meanwhile. */
  halt(): Promise<void>;
  /** (Re)starts on the same port; `wipe` deletes the storage first. */
  restart(options?: { wipe?: boolean }): Promise<void>;
}

const READY_TIMEOUT_MS = 15_000;

/** Servers still running; killed when the test process exits, even after a failed test skipped stop(). */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});


function authArgs(auth: NatsServerOptions): string[] {
  return [
    ...(auth.user !== undefined ? ['--user', auth.user] : []),
    ...(auth.pass !== undefined ? ['--pass', auth.pass] : []),
    ...(auth.token !== undefined ? ['--auth', auth.token] : []),
  ];
}

/** Starts the binary and resolves once it logs that it accepts clients (JetStream is up by then). */
function launch(args: string[]): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(tool('nats-server'), args, { stdio: ['ignore', 'ignore', 'pipe'] });
    running.add(child);
    child.once('exit', () => running.delete(child));
    let log = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`nats-server not ready after ${READY_TIMEOUT_MS} ms:\n${log}`));
    }, READY_TIMEOUT_MS);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      log += chunk;
      if (log.includes('Server is ready')) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited with ${String(code)} before it was ready:\n${log}`));
    });
  });
}

function terminate(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** The storage limit has no command-line flag: it goes into a config file next to the store. */
function limitArgs(root: string, options: NatsServerOptions): string[] {
  if (options.maxFileStore === undefined) return [];
  const file = join(root, 'limits.conf');
  writeFileSync(file, `jetstream { max_file_store: ${options.maxFileStore} }\n`);
  return ['-c', file];
}

export async function startNatsServer(options: NatsServerOptions = {}): Promise<TestNatsServer> {
  const port = await freePort();
  const root = mkdtempSync(join(tmpdir(), 'eva-nats-'));
  const store = (): string => join(root, 'jetstream');
  const listen = ['-a', '127.0.0.1', '-p', String(port)];
  const args = [...limitArgs(root, options), ...listen, '-js', '-sd', store(), ...authArgs(options)];
  let child: ChildProcess | undefined = await launch(args);
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    async stop() {
      await terminate(child);
      child = undefined;
      rmSync(root, { recursive: true, force: true });
    },
    async halt() {
      await terminate(child);
      child = undefined;
    },
    async restart(options = {}) {
      await terminate(child);
      if (options.wipe === true) rmSync(store(), { recursive: true, force: true });
      child = await launch(args);
    },
  };
}

/** A TenantScope for NATS step tests: modules follow the tier, logs go to `lines` when given. */
export function testScope(options: {
  code: string;
  tier?: Tier;
  uid?: string;
  seedsVersion?: string;
  lines?: string[];
}): TenantScope {
  const tier = options.tier ?? 'Starter';
  const sink = { write: (line: string): void => void options.lines?.push(line) };
  return {
    tenant: {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: options.code.toLowerCase(), uid: options.uid ?? `uid-${options.code}` },
      spec: {
        capsuleCode: options.code,
        tier,
        lifecycle: 'Active',
        wave: 1,
        ...(options.seedsVersion !== undefined ? { seedsVersion: options.seedsVersion } : {}),
      },
    },
    code: options.code,
    namespace: `eva-tenant-${options.code.toLowerCase()}`,
    modules: MODULES_BY_TIER[tier],
    log: createLogger('debug', sink),
    signal: new AbortController().signal,
  };
}
