/** NETWORK_POLICY_*: what the tenant namespace's NetworkPolicy lets in and out (steps/network.ts). */
import { isIP } from 'node:net';
import type { EnvReader, Labels } from './env-reader.ts';
import type { NatsSettings } from './nats.ts';

export interface NetworkPolicySettings {
  enabled: boolean;
  /** Namespaces allowed to send traffic in (the ingress controller's). */
  ingressNamespaces: Labels;
  /** Where NATS runs: pods in namespaces, or an address range (NATS outside the cluster). */
  nats: ({ namespaces: Labels; pods: Labels } | { cidr: string }) & { port: number };
  dns: { namespaces: Labels; pods: Labels };
  /** Delete NetworkPolicies in tenant namespaces that the operator did not write (else: report them). */
  removeForeign: boolean;
}

/** An IPv4 or IPv6 address range, e.g. 10.0.0.0/16 or fd00::/64. */
function isCidr(value: string): boolean {
  const [address = '', prefix, ...rest] = value.split('/');
  const family = isIP(address);
  if (family === 0 || prefix === undefined || rest.length > 0 || !/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

function natsPort(url: string): number {
  const port = /:(\d+)\/?$/.exec(url.split(',')[0]?.trim() ?? '')?.[1];
  return port === undefined ? 4222 : Number(port);
}

/** Whether tenant namespaces get the NetworkPolicy, and which namespaces its ingress exception lets in. */
export function readIngressException(env: EnvReader): Pick<NetworkPolicySettings, 'enabled' | 'ingressNamespaces'> {
  return {
    enabled: env.optional('NETWORK_POLICY') === undefined ? true : env.boolean('NETWORK_POLICY'),
    ingressNamespaces: env.labels('NETWORK_POLICY_INGRESS_NAMESPACES', 'kubernetes.io/metadata.name=ingress-nginx'),
  };
}

export function readNetworkPolicy(env: EnvReader, nats: Pick<NatsSettings, 'moduleUrl'>, operatorNamespace: string): NetworkPolicySettings {
  const cidr = env.optional('NETWORK_POLICY_NATS_CIDR');
  if (cidr !== undefined && !isCidr(cidr)) env.problems.push(`NETWORK_POLICY_NATS_CIDR must be an address range like 10.0.0.5/32, got "${cidr}"`);
  const port = natsPort(nats.moduleUrl);
  return {
    ...readIngressException(env),
    nats:
      cidr !== undefined
        ? { cidr, port }
        : {
            namespaces: env.labels('NETWORK_POLICY_NATS_NAMESPACES', `kubernetes.io/metadata.name=${operatorNamespace}`),
            pods: env.labels('NETWORK_POLICY_NATS_PODS', 'app.kubernetes.io/component=nats'),
            port,
          },
    dns: {
      namespaces: env.labels('NETWORK_POLICY_DNS_NAMESPACES', 'kubernetes.io/metadata.name=kube-system'),
      pods: env.labels('NETWORK_POLICY_DNS_PODS', 'k8s-app=kube-dns'),
    },
    removeForeign: env.boolean('NETWORK_POLICY_REMOVE_FOREIGN'),
  };
}
