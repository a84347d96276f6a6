/**
 * A throwaway nats-server for tests, in operator mode as everywhere else in this project (operatorMode:
 * false only for negative controls, e.g. the preflight telling a plain server apart): keys
 * from `eva-operator nats-bootstrap` (the real command's code), a full account resolver, JetStream,
 * the pinned binary on 127.0.0.1 with free ports, storage in a temporary folder. restart() keeps the
 * ports and keys (clients reconnect to the same URL); restart({ wipe: true }) also deletes JetStream
 * data and every pushed account, like a NATS that lost its disk.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './ports.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrap } from '../../src/nats-bootstrap.ts';
import { tool } from './tools.ts';
import { stopChild } from './child-processes.ts';

export interface NatsServerOptions {
  /** JetStream file storage limit, e.g. '100MB' (default: 75% of the free disk). */
  readonly maxFileStore?: string;
  /** false: a server without operator, system account or resolver (anyone connects), for tests that must tell it apart. */
  readonly operatorMode?: boolean;
}

/** The operator's two NATS files, as the operator pod gets them from its Secret. */
export interface NatsAuthFiles {
  readonly dir: string;
  readonly systemCredsFile: string;
  readonly operatorSigningKeyFile: string;
}

export interface TestNatsServer {
  readonly url: string;
  readonly port: number;
  /** The HTTP monitoring endpoint (/jsz, /connz, /accountz). */
  readonly monitorUrl: string;
  readonly auth: NatsAuthFiles;
  /** Stops the server and deletes its storage (end of test). */
  stop(): Promise<void>;
  /** Stops the server but keeps its storage, for restart() to bring it back: NATS is down meanwhile. */
  halt(): Promise<void>;
  /** (Re)starts on the same port; `wipe` deletes JetStream data and pushed accounts first. */
  restart(options?: { wipe?: boolean }): Promise<void>;
}

/** The operator's settings for this server: what an operator process started against it needs. */
export function operatorNatsEnv(server: TestNatsServer): Record<'NATS_URL' | 'NATS_SYSTEM_CREDS_FILE' | 'NATS_OPERATOR_SIGNING_KEY_FILE', string> {
  return { NATS_URL: server.url, NATS_SYSTEM_CREDS_FILE: server.auth.systemCredsFile, NATS_OPERATOR_SIGNING_KEY_FILE: server.auth.operatorSigningKeyFile };
}

const READY_TIMEOUT_MS = 15_000;

/** Servers still running; killed when the test process exits, even after a failed test skipped stop(). */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});


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

async function terminate(child: ChildProcess | undefined): Promise<void> {
  if (child !== undefined) await stopChild(child, 5_000);
}

/** The server's configuration: operator mode with a full resolver that accepts pushes and deletions. */
function serverConfig(root: string, port: number, monitorPort: number, options: NatsServerOptions): string {
  return [
    `listen: 127.0.0.1:${port}`,
    `http: 127.0.0.1:${monitorPort}`,
    ...(options.operatorMode === false
      ? []
      : ['include ./auth/nats-auth.conf', `resolver { type: full, dir: "${join(root, 'resolver')}", allow_delete: true, interval: "2m" }`]),
    `jetstream { store_dir: "${join(root, 'jetstream')}"${options.maxFileStore !== undefined ? `, max_file_store: ${options.maxFileStore}` : ''} }`,
    '',
  ].join('\n');
}

export async function startNatsServer(options: NatsServerOptions = {}): Promise<TestNatsServer> {
  const [port, monitorPort] = [await freePort(), await freePort()];
  const root = mkdtempSync(join(tmpdir(), 'eva-nats-'));
  const authDir = join(root, 'auth');
  await bootstrap({ out: authDir, namespace: 'default', secretName: 'eva-operator-nats', operatorName: 'eva-test', force: false });
  const config = join(root, 'nats.conf');
  writeFileSync(config, serverConfig(root, port, monitorPort, options));
  const args = ['-c', config];
  let child: ChildProcess | undefined = await launch(args);
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    monitorUrl: `http://127.0.0.1:${monitorPort}`,
    auth: { dir: authDir, systemCredsFile: join(authDir, 'system.creds'), operatorSigningKeyFile: join(authDir, 'operator-signing-key.nk') },
    async stop() {
      await terminate(child);
      child = undefined;
      rmSync(root, { recursive: true, force: true });
    },
    async halt() {
      await terminate(child);
      child = undefined;
    },
    async restart(restartOptions = {}) {
      await terminate(child);
      if (restartOptions.wipe === true) {
        for (const dir of ['jetstream', 'resolver']) rmSync(join(root, dir), { recursive: true, force: true });
      }
      child = await launch(args);
    },
  };
}
