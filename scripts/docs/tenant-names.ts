/** What the operator names from a capsule code, from the functions and constants that name them. */
import { accountKeysName } from '../../src/nats/account-keys.ts';
import { NATS_CREDENTIALS_SECRET } from '../../src/steps/account.ts';
import { credentialsSecretName } from '../../src/steps/credentials.ts';
import { INGRESS_NAME } from '../../src/steps/ingress/ingress.ts';
import { TLS_SECRET_NAME } from '../../src/steps/ingress/ingress-tls.ts';
import { NETWORK_POLICY_NAME } from '../../src/steps/network.ts';
import { TENANTS_BUCKET } from '../../src/steps/record.ts';
import { commandsStream, dataBucket, eventsStream, inboxPrefix, streamSubject, tenantNamespace, tenantSubjects } from '../../src/tenancy/names.ts';

export interface TenantName {
  readonly what: string;
  readonly name: string;
}

export function tenantNames(code: string): TenantName[] {
  const ns = tenantNamespace(code);
  return [
    { what: 'namespace (Pod Security restricted)', name: ns },
    { what: 'host of the tenant Ingress', name: `${code.toLowerCase()}.<baseDomain>` },
    { what: 'Ingress, NetworkPolicy', name: `${ns}/${INGRESS_NAME}, ${ns}/${NETWORK_POLICY_NAME}` },
    { what: "modules' NATS credentials (keys url, nats.creds)", name: `${ns}/${NATS_CREDENTIALS_SECRET}` },
    { what: "modules' generated credentials", name: `${ns}/${credentialsSecretName(code)}` },
    { what: 'TLS Secret of the host (when TLS is configured)', name: `${ns}/${TLS_SECRET_NAME}` },
    { what: 'module releases', name: 'one per module, named as the module, in the tenant namespace' },
    { what: 'JetStream streams', name: `${eventsStream(code)} (${streamSubject(code, 'events')}), ${commandsStream(code)} (${streamSubject(code, 'commands')})` },
    { what: 'seed data bucket', name: dataBucket(code) },
    { what: "the modules' subjects and inbox prefix", name: `${tenantSubjects(code)}, ${inboxPrefix(code)}` },
    { what: 'tenant record', name: `key ${code} in bucket ${TENANTS_BUCKET} (the operator's account)` },
    { what: "NATS account keys (operator's namespace)", name: accountKeysName(code) },
  ];
}
