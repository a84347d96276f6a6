/**
 * The system account's API, used with the system user's credentials: store an account JWT on the
 * server's full resolver ($SYS.REQ.CLAIMS.UPDATE), read it back, and delete accounts
 * ($SYS.REQ.CLAIMS.DELETE, with a deletion signed by the operator). Each answer is checked: a JWT
 * the server refuses is a DependencyError('AccountRejected') carrying the server's own words.
 */
import { Reason } from '../api/reasons.ts';
import { DependencyError } from '../errors.ts';
import type { NatsClient } from './nats.ts';

/** The server's answer: `data` on success, `error` otherwise (nats-server's ServerAPIResponse). */
interface ClaimsResponse {
  readonly data?: { readonly code?: number; readonly message?: string };
  readonly error?: { readonly code?: number; readonly description?: string };
}

function parseResponse(text: string, what: string): ClaimsResponse {
  try {
    const parsed = JSON.parse(text) as ClaimsResponse | null;
    if (typeof parsed === 'object' && parsed !== null) return parsed;
  } catch {
    // fall through
  }
  throw new DependencyError(Reason.AccountRejected, `NATS gave no readable answer to ${what}`);
}

function checked(text: string, what: string): void {
  const response = parseResponse(text, what);
  const code = response.data?.code ?? response.error?.code;
  if (response.error === undefined && code === 200) return;
  const description = response.error?.description ?? response.data?.message ?? 'no reason given';
  throw new DependencyError(Reason.AccountRejected, `NATS refused ${what}: ${description} (code ${String(code)})`);
}

/** What one server says of itself ($SYS.REQ.SERVER.PING.VARZ), the parts the preflight reads. */
export interface ServerVarz {
  readonly version: string;
  /** The names of the operators it trusts: none means it is not in operator mode. */
  readonly trustedOperators: readonly string[];
  readonly systemAccount: string | undefined;
  /** JetStream's storage limit in bytes; undefined when JetStream is off. */
  readonly jetStreamMaxStorage: number | undefined;
}

interface RawVarz {
  readonly version?: unknown;
  readonly system_account?: unknown;
  readonly trusted_operators_claim?: unknown;
  readonly jetstream?: { readonly config?: { readonly max_storage?: unknown } };
}

function parseVarz(text: string): ServerVarz {
  const data = (parseResponse(text, 'the server information request') as { data?: RawVarz }).data;
  if (typeof data !== 'object') throw new DependencyError(Reason.NatsUnavailable, 'NATS gave no server information');
  const claims = Array.isArray(data.trusted_operators_claim) ? (data.trusted_operators_claim as unknown[]) : [];
  const maxStorage = data.jetstream?.config?.max_storage;
  return {
    version: typeof data.version === 'string' ? data.version : 'unknown',
    trustedOperators: claims.map((claim) => {
      const name = (claim as { name?: unknown } | null)?.name;
      return typeof name === 'string' ? name : '?';
    }),
    systemAccount: typeof data.system_account === 'string' ? data.system_account : undefined,
    jetStreamMaxStorage: typeof maxStorage === 'number' ? maxStorage : undefined,
  };
}

export class NatsSystem {
  private readonly client: NatsClient;

  constructor(client: NatsClient) {
    this.client = client;
  }

  get target(): string {
    return this.client.target;
  }

  /** Stores (or replaces) an account JWT; resolves once the server said so. */
  async pushAccount(account: string, token: string): Promise<void> {
    const answer = await this.client.run((s) => s.request('$SYS.REQ.CLAIMS.UPDATE', token));
    checked(answer, `the JWT of account ${account}`);
  }

  /** The account JWT the server holds, or undefined when it holds none. */
  async lookupAccount(account: string): Promise<string | undefined> {
    const answer = await this.client.run((s) => s.request(`$SYS.REQ.ACCOUNT.${account}.CLAIMS.LOOKUP`, ''));
    return answer.trim() === '' ? undefined : answer.trim();
  }

  /** Every account JWT the server's resolver holds (the system account's included). */
  async listAccounts(): Promise<string[]> {
    const answer = await this.client.run((s) => s.request('$SYS.REQ.CLAIMS.LIST', ''));
    const data = (parseResponse(answer, 'the account list') as { data?: unknown }).data;
    if (!Array.isArray(data)) throw new DependencyError(Reason.AccountRejected, 'NATS gave no account list');
    return data.filter((a): a is string => typeof a === 'string');
  }

  /** Deletes accounts; `deletion` is the operator-signed generic JWT naming them. */
  async deleteAccounts(accounts: readonly string[], deletion: string): Promise<void> {
    const answer = await this.client.run((s) => s.request('$SYS.REQ.CLAIMS.DELETE', deletion));
    checked(answer, `the deletion of account ${accounts.join(', ')}`);
  }

  /** What the first server to answer says of itself: operator mode, JetStream. */
  async varz(): Promise<ServerVarz> {
    return parseVarz(await this.client.run((s) => s.request('$SYS.REQ.SERVER.PING.VARZ', '')));
  }

  /** Any answer proves the system user is accepted. */
  async ping(): Promise<void> {
    await this.client.run((s) => s.request('$SYS.REQ.SERVER.PING', ''));
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
