/**
 * Structured JSON logs. Every line about a tenant carries its code (use `tenantLogger`). Secrets are
 * redacted twice: by key (pino's redact paths) and by shape inside strings (URLs with credentials,
 * `password=...` pairs, bearer tokens), because helm and NATS errors echo what they were given.
 */
import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

const SECRET_KEYS = ['password', 'passwd', 'secret', 'token', 'credentials', 'apiKey', 'authorization'];

const redactPaths = SECRET_KEYS.flatMap((key) => [key, `*.${key}`, `*.*.${key}`]);

const SECRET_SHAPES: readonly [RegExp, string][] = [
  [/(\b[a-z][a-z0-9+.-]*:\/\/)[^\s:/@]+:[^\s@/]+@/gi, '$1[REDACTED]@'],
  [/\b(password|passwd|secret|token|api[_-]?key)(["']?\s*[:=]\s*["']?)[^\s"',}]+/gi, '$1$2[REDACTED]'],
  [/\b(bearer)\s+[A-Za-z0-9._~+/=-]+/gi, '$1 [REDACTED]'],
  // NATS nkey seeds (SO.../SA.../SU...) and JWTs (a creds file holds both).
  [/\bS[OAUNCPX][A-Z2-7]{54,58}\b/g, '[REDACTED]'],
  [/\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g, '[REDACTED-JWT]'],
];

export function redactSecrets(text: string): string {
  return SECRET_SHAPES.reduce((acc, [pattern, replacement]) => acc.replace(pattern, replacement), text);
}

function scrub(value: unknown): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (Array.isArray(value)) return value.map(scrub);
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrub(v)]));
  }
  return value;
}

export function createLogger(level = 'info', destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { component: 'eva-operator' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: redactPaths, censor: '[REDACTED]' },
    formatters: {
      level: (label) => ({ level: label }),
      log: (object) => scrub(object) as Record<string, unknown>,
    },
    hooks: {
      logMethod(args, method) {
        method.apply(this, args.map((arg) => (typeof arg === 'string' ? redactSecrets(arg) : arg)) as Parameters<typeof method>);
      },
    },
    serializers: { err: (err: unknown) => scrub(pino.stdSerializers.err(err as Error)) },
  };
  return destination ? pino(options, destination) : pino(options);
}

export function tenantLogger(parent: Logger, capsuleCode: string, name: string): Logger {
  return parent.child({ tenant: capsuleCode, evatenant: name });
}
