/** NATS_*: where the operator and the modules connect, and the mounted credential files (checked, never logged). */
import { parseCreds, publicKeyOf } from '../adapters/nats-jwt.ts';
import type { EnvReader } from './env-reader.ts';

export interface NatsSettings {
  /** Where the operator connects; no credentials in it. */
  url: string;
  /** What the modules are told to connect to (Secret eva-nats, key url). */
  moduleUrl: string;
  /** The system user's credentials file (mounted Secret). Read when the operator starts, never logged. */
  systemCredsFile: string;
  /** The operator signing key's seed file (mounted Secret). */
  operatorSigningKeyFile: string;
}

const NATS_URL_PATTERN = /^(nats|tls|wss?):\/\/[^\s/@]+\/?$/;
const SYSTEM_CREDS_HINT = 'the system user credentials file from `eva-operator nats-bootstrap`';
/** Throws (naming the kind of key, never the content) unless `text` is a user's credentials file. */
const checkCreds = (text: string): void => {
  parseCreds(text);
};

/** NATS_URL, checked (no credentials in it); undefined when unset. */
export function readNatsUrl(env: EnvReader): string | undefined {
  const url = env.optional('NATS_URL');
  if (url !== undefined) env.matching('NATS_URL', url, NATS_URL_PATTERN, 'a nats:// URL without credentials');
  return url;
}

/** NATS_SYSTEM_CREDS_FILE, checked to hold credentials; undefined when unset. */
export const readSystemCredsFile = (env: EnvReader): string | undefined => env.optionalFile('NATS_SYSTEM_CREDS_FILE', checkCreds);

export function readNats(env: EnvReader): NatsSettings {
  const url = readNatsUrl(env) ?? env.required('NATS_URL', 'e.g. nats://nats.eva-system:4222');
  const moduleUrl = env.optional('MODULE_NATS_URL');
  if (moduleUrl !== undefined) env.matching('MODULE_NATS_URL', moduleUrl, NATS_URL_PATTERN, 'a nats:// URL without credentials');
  for (const gone of ['NATS_USER', 'NATS_PASSWORD', 'NATS_TOKEN']) {
    if (env.optional(gone) !== undefined) env.problems.push(`${gone} is no longer used: NATS runs in operator mode (NATS_SYSTEM_CREDS_FILE, NATS_OPERATOR_SIGNING_KEY_FILE)`);
  }
  return {
    url,
    moduleUrl: moduleUrl ?? url,
    systemCredsFile: env.file('NATS_SYSTEM_CREDS_FILE', SYSTEM_CREDS_HINT, checkCreds),
    operatorSigningKeyFile: env.file('NATS_OPERATOR_SIGNING_KEY_FILE', 'the operator signing key seed file from `eva-operator nats-bootstrap`', (text) => {
      publicKeyOf(text, 'operator');
    }),
  };
}
