/**
 * `eva-operator nats-bootstrap`: the keys and files that put a NATS server in operator mode for
 * eva-operator, without the nsc tool. Writes into one folder (mode 0700, files 0600):
 *
 *   operator.nk                     the operator's identity seed: signs the operator JWT only. KEEP OFFLINE.
 *   system-account-signing-key.nk   signs system users: only needed to mint another one. KEEP OFFLINE.
 *   operator.jwt, system-account.jwt  public
 *   operator-signing-key.nk         signs tenant accounts          } the operator pod's Secret
 *   system.creds                    the system user's credentials  }
 *   nats-auth.conf                  include it in nats-server's config (operator, system account, preload)
 *   eva-operator-nats-secret.yaml   that Secret, for `kubectl apply`
 *   eva-operator-nats-values.yaml   values for charts/eva-operator's quick-start NATS (public JWTs only)
 *
 * It never overwrites an earlier bootstrap (accounts signed by those keys would be orphaned) unless
 * asked to with --force. Nothing secret is printed.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { newOperatorIdentity, type OperatorIdentity, readOperator } from './adapters/nats-jwt.ts';

export interface BootstrapOptions {
  readonly out: string;
  readonly namespace: string;
  readonly secretName: string;
  readonly operatorName: string;
  readonly force: boolean;
}

export const OPERATOR_SECRET_KEYS = { systemCreds: 'system.creds', signingKey: 'operator-signing-key.nk' } as const;

export class BootstrapRefused extends Error {
  override readonly name = 'BootstrapRefused';
}

/** The part of nats-server's configuration that makes it trust this operator. */
function authConfig(identity: Pick<OperatorIdentity, 'operatorJwt' | 'systemAccount' | 'systemAccountJwt'>): string {
  return [
    '# eva-operator: NATS in operator mode (written by `eva-operator nats-bootstrap`). Public JWTs only.',
    `operator: ${identity.operatorJwt}`,
    `system_account: ${identity.systemAccount}`,
    'resolver_preload {',
    `  ${identity.systemAccount}: ${identity.systemAccountJwt}`,
    '}',
    '',
  ].join('\n');
}

function operatorSecret(identity: OperatorIdentity, options: BootstrapOptions): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: { name: options.secretName, namespace: options.namespace, labels: { 'app.kubernetes.io/part-of': 'eva' } },
    stringData: { [OPERATOR_SECRET_KEYS.signingKey]: `${identity.operatorSigningSeed}\n`, [OPERATOR_SECRET_KEYS.systemCreds]: identity.systemCreds },
  });
}

function chartValues(identity: OperatorIdentity, options: BootstrapOptions): string {
  return stringify({
    nats: {
      auth: {
        existingSecret: options.secretName,
        operatorJwt: identity.operatorJwt,
        systemAccount: identity.systemAccount,
        systemAccountJwt: identity.systemAccountJwt,
      },
    },
  });
}

export async function bootstrap(options: BootstrapOptions): Promise<{ operator: string; systemAccount: string; files: string[] }> {
  const marker = join(options.out, 'operator.jwt');
  if (existsSync(marker) && !options.force) {
    throw new BootstrapRefused(
      `${options.out} already holds a bootstrap; keep it (accounts are signed with its keys) or pass --force to replace it`,
    );
  }
  const identity = await newOperatorIdentity(options.operatorName);
  const files: Record<string, string> = {
    'operator.nk': `${identity.operatorSeed}\n`,
    'operator.jwt': `${identity.operatorJwt}\n`,
    [OPERATOR_SECRET_KEYS.signingKey]: `${identity.operatorSigningSeed}\n`,
    'system-account.jwt': `${identity.systemAccountJwt}\n`,
    'system-account-signing-key.nk': `${identity.systemSigningSeed}\n`,
    [OPERATOR_SECRET_KEYS.systemCreds]: identity.systemCreds,
    'nats-auth.conf': authConfig(identity),
    'eva-operator-nats-secret.yaml': operatorSecret(identity, options),
    'eva-operator-nats-values.yaml': chartValues(identity, options),
  };
  mkdirSync(options.out, { recursive: true, mode: 0o700 });
  // operator.jwt last: its presence marks a complete bootstrap.
  const ordered = [...Object.keys(files).filter((f) => f !== 'operator.jwt'), 'operator.jwt'];
  for (const name of ordered) writeFileSync(join(options.out, name), files[name] ?? '', { mode: 0o600 });
  return { operator: readOperator(identity.operatorJwt).operator, systemAccount: identity.systemAccount, files: ordered };
}

export function summary(result: Awaited<ReturnType<typeof bootstrap>>, options: BootstrapOptions): string {
  return [
    `NATS operator ${result.operator} (system account ${result.systemAccount}) written to ${options.out}:`,
    `  nats-auth.conf                  include it in nats-server's configuration, next to a full resolver`,
    `                                  (resolver { type: full, dir: ..., allow_delete: true }) and jetstream`,
    `  eva-operator-nats-secret.yaml   kubectl apply -f it: Secret ${options.namespace}/${options.secretName} for the operator`,
    `  eva-operator-nats-values.yaml   helm install ... -f it, for the chart's quick-start NATS`,
    `  operator.nk, system-account-signing-key.nk   keep these OFFLINE (a vault); the operator never needs them`,
    `  operator-signing-key.nk, system.creds        the operator's Secret; whoever holds them controls every account`,
    '',
  ].join('\n');
}
