/**
 * Test fixtures shared by every test file: tenants and scopes built like prose, and a real nats-server
 * in operator mode with the operator's view of it (NatsAccounts) ready to use.
 */
import { afterAll, beforeAll } from 'vitest';
import { API_VERSION, KIND, type Tier } from '../../src/api/constants.ts';
import type { EvaTenant, EvaTenantSpec, TenantMetadata } from '../../src/api/evatenant.ts';
import { MODULES_BY_TIER } from '../../src/api/modules.ts';
import { NatsPool } from '../../src/adapters/nats-pool.ts';
import { parseCreds } from '../../src/adapters/nats-jwt.ts';
import { createLogger, type Logger } from '../../src/log.ts';
import { tenantNamespace } from '../../src/tenancy/names.ts';
import { type AccountKeys, type AccountKeyStore, accountKeysName, newAccountKeys, type StoredAccountKeys } from '../../src/nats/account-keys.ts';
import { NatsAccounts, tenantClaims } from '../../src/nats/accounts.ts';
import { SeedCatalog } from '../../src/bundle/seeds.ts';
import type { RecordStepDeps } from '../../src/steps/record.ts';
import type { TenantScope } from '../../src/tenancy/scope.ts';
import { type Custody, withRetention } from '../../src/tenancy/ownership.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrap } from '../../src/nats-bootstrap.ts';
import { repoRoot } from './tools.ts';
import { startNatsServer, type NatsServerOptions, type TestNatsServer } from './nats-server.ts';

// ---- tenants and scopes -------------------------------------------------------------------------------

/** The metadata a test may set (the name defaults to the code, lowercased). */
export interface TenantOptions extends Partial<Pick<TenantMetadata, 'name' | 'uid' | 'annotations' | 'labels' | 'finalizers' | 'generation'>> {
  /** The capsule code; the tenant is named after it unless `name` is given. */
  code?: string;
  tier?: Tier;
  seedsVersion?: string;
  /** Anything else of the spec (wave, operatorVersion, modules, ...). */
  spec?: Partial<EvaTenantSpec>;
}

const DEFAULT_CODE = 'ABCDEF';

/** An EvaTenant as the API server would hand it over (uid set). */
export function testTenant(options: TenantOptions = {}): EvaTenant {
  const code = options.code ?? DEFAULT_CODE;
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: {
      name: options.name ?? code.toLowerCase(),
      uid: options.uid ?? `uid-${code}`,
      ...(options.annotations ? { annotations: options.annotations } : {}),
      ...(options.labels ? { labels: options.labels } : {}),
      ...(options.finalizers ? { finalizers: options.finalizers } : {}),
      ...(options.generation !== undefined ? { generation: options.generation } : {}),
    },
    spec: {
      capsuleCode: code,
      tier: options.tier ?? 'Starter',
      lifecycle: 'Active',
      wave: 1,
      ...(options.seedsVersion !== undefined ? { seedsVersion: options.seedsVersion } : {}),
      ...options.spec,
    },
  };
}

/** A TenantScope for step tests: modules follow the tier, logs go to `lines` when given. */
export function testScope(options: TenantOptions & { lines?: string[]; log?: Logger } = {}): TenantScope {
  const tenant = testTenant(options);
  const sink = { write: (line: string): void => void options.lines?.push(line) };
  return {
    tenant,
    code: tenant.spec.capsuleCode,
    namespace: tenantNamespace(tenant.spec.capsuleCode),
    modules: MODULES_BY_TIER[tenant.spec.tier],
    log: options.log ?? createLogger('debug', sink),
    signal: new AbortController().signal,
  };
}

// ---- NATS -----------------------------------------------------------------------------------------------

/** Account keys in memory, for tests of NATS alone (the Kubernetes store has its own cluster test). */
export class MemoryAccountKeyStore implements AccountKeyStore {
  private readonly entries = new Map<string, StoredAccountKeys>();
  private version = 0;

  read(name: string): Promise<StoredAccountKeys | undefined> {
    return Promise.resolve(this.entries.get(name));
  }

  create(name: string, owner: string, keys: AccountKeys): Promise<StoredAccountKeys> {
    const existing = this.entries.get(name);
    if (existing) return Promise.resolve(existing);
    return Promise.resolve(this.put(name, { owner }, keys));
  }

  update(name: string, stored: StoredAccountKeys, keys: AccountKeys, custody?: Custody): Promise<StoredAccountKeys> {
    if (this.entries.get(name)?.version !== stored.version) return Promise.reject(new Error(`${name} changed meanwhile`));
    const kept = custody ?? stored;
    return Promise.resolve(this.put(name, withRetention(kept, kept.retained), keys));
  }

  remove(name: string, owner: string): Promise<void> {
    if (this.entries.get(name)?.owner === owner) this.entries.delete(name);
    return Promise.resolve();
  }

  private put(name: string, custody: Custody, keys: AccountKeys): StoredAccountKeys {
    const stored = { keys, ...custody, version: String(++this.version) };
    this.entries.set(name, stored);
    return stored;
  }
}

/** The operator's view of a test server, with short timeouts (an unreachable server fails fast). */
export function testAccounts(server: Pick<TestNatsServer, 'url' | 'auth'>, keys: AccountKeyStore = new MemoryAccountKeyStore(), pool = new NatsPool({ idleMs: 5_000 })): NatsAccounts {
  const { jwt, seed } = parseCreds(readFileSync(server.auth.systemCredsFile, 'utf8'));
  return new NatsAccounts({
    url: server.url,
    moduleUrl: server.url,
    systemCredentials: { jwt, seed },
    operatorSigningSeed: readFileSync(server.auth.operatorSigningKeyFile, 'utf8').trim(),
    keys,
    pool,
    timings: { connectTimeoutMs: 1_000, requestTimeoutMs: 2_000 },
  });
}

/** What step 'account' does on NATS (keys, account JWT pushed), without its Kubernetes Secret. */
export async function withAccount(nats: NatsAccounts, scope: TenantScope): Promise<AccountKeys> {
  const stored = (await nats.keys.read(accountKeysName(scope.code))) ?? (await nats.keys.create(accountKeysName(scope.code), scope.tenant.metadata.uid ?? '', newAccountKeys(true)));
  await nats.ensureAccount(tenantClaims(scope, stored.keys));
  return stored.keys;
}

export interface NatsFixture {
  readonly server: TestNatsServer;
  readonly nats: NatsAccounts;
  /** What the NATS steps get; the seeds only matter to record and seed (default: none bundled). */
  deps(seeds?: SeedCatalog): RecordStepDeps;
}

/** A nats-server and the operator's view of it for the whole test file (beforeAll/afterAll). */
export function useNatsServer(options: NatsServerOptions = {}): NatsFixture {
  let server: TestNatsServer | undefined;
  let nats: NatsAccounts | undefined;
  beforeAll(async () => {
    server = await startNatsServer(options);
    nats = testAccounts(server);
  });
  afterAll(async () => {
    await nats?.close();
    await server?.stop();
  });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useNatsServer: used before its beforeAll ran');
    return value;
  };
  return {
    get server() {
      return ready(server);
    },
    get nats() {
      return ready(nats);
    },
    deps: (seeds = SeedCatalog.load('/nonexistent/seeds')) => ({ nats: ready(nats), seeds }),
  };
}

/** One bundled seed file's entries as the seed step keys them (`<module>.<key>`), read straight from the repo's seeds/. */
export function seedFileEntries(version: string, module: string): Map<string, unknown> {
  const raw = JSON.parse(readFileSync(join(repoRoot, 'seeds', version, `${module}.json`), 'utf8')) as { entries: { key: string; value: unknown }[] };
  return new Map(raw.entries.map((e) => [`${module}.${e.key}`, e.value]));
}

/** A throwaway `eva-operator nats-bootstrap` output (removed when the test process exits). */
export async function natsBootstrapFiles(namespace = 'default'): Promise<{ dir: string; chartValues: string; operatorSecret: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'eva-nats-bootstrap-'));
  process.once('exit', () => {
    rmSync(dir, { recursive: true, force: true });
  });
  await bootstrap({ out: dir, namespace, secretName: 'eva-operator-nats', operatorName: 'eva-test', force: false });
  return { dir, chartValues: join(dir, 'eva-operator-nats-values.yaml'), operatorSecret: join(dir, 'eva-operator-nats-secret.yaml') };
}
