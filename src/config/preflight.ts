/**
 * What `eva-operator preflight` checks the cluster and NATS against: the operator's own settings, read
 * by the same readers, so a preflight with the operator's environment (the chart's `helm test` pod)
 * checks exactly what the operator will use. Unlike the operator, NATS may be left unset here: the
 * preflight then fails its NATS checks, saying what to pass, instead of refusing to start.
 */
import type { EnvReader } from './env-reader.ts';
import { type IngressTls, readIngressTls } from './ingress.ts';
import { readNatsUrl, readSystemCredsFile } from './nats.ts';
import { type NetworkPolicySettings, readIngressException } from './network-policy.ts';

export interface PreflightSettings {
  nats: { url?: string; systemCredsFile?: string };
  /** INGRESS_CLASS; undefined: the cluster's default class. */
  ingressClass?: string;
  networkPolicy: Pick<NetworkPolicySettings, 'enabled' | 'ingressNamespaces'>;
  tls: IngressTls;
  /** The operator chart's Chart.yaml: its kubeVersion is the Kubernetes floor. */
  operatorChartFile: string;
}

export function readPreflight(env: EnvReader, operatorChartFile: string): PreflightSettings {
  const url = readNatsUrl(env);
  const systemCredsFile = readSystemCredsFile(env);
  const ingressClass = env.optional('INGRESS_CLASS');
  return {
    nats: { ...(url !== undefined ? { url } : {}), ...(systemCredsFile !== undefined ? { systemCredsFile } : {}) },
    ...(ingressClass !== undefined ? { ingressClass } : {}),
    networkPolicy: readIngressException(env),
    tls: readIngressTls(env),
    operatorChartFile,
  };
}
