/**
 * What `status.modules` and `status.url` show an on-call engineer: per module of the tier, its release
 * and Deployment (chart version, replicas, the values digest last applied, what is wrong), and the
 * tenant's address from its Ingress (https when the Ingress has TLS for the host). Pure reads, from
 * the API or the watch caches, made only when the reconcile writes status anyway.
 */
import type { V1Deployment, V1Ingress } from '@kubernetes/client-node';
import type { ModuleStatus } from '../api/evatenant.ts';
import type { ModuleName } from '../api/modules.ts';
import { readReleases, type ReleaseRecord } from '../adapters/helm.ts';
import type { KubeReads } from '../adapters/tenant-objects.ts';
import { INGRESS_NAME } from './ingress/ingress.ts';
import { deploymentProblem } from './modules/module-readiness.ts';
import { VALUES_HASH_LABEL } from './modules/release-state.ts';
import { isHibernated, type TenantScope } from '../tenancy/scope.ts';

export interface ObservedTenant {
  modules: Record<string, ModuleStatus>;
  url?: string;
}

const MESSAGE_LIMIT = 1024;
const CHART_LABEL = 'helm.sh/chart';

/** The tenant's address: the Ingress's first host, https when a TLS entry covers it. */
export function ingressUrl(ingress: V1Ingress | undefined): string | undefined {
  const host = ingress?.spec?.rules?.find((rule) => rule.host !== undefined)?.host;
  if (host === undefined) return undefined;
  const tls = (ingress?.spec?.tls ?? []).some((entry) => entry.hosts === undefined || entry.hosts.length === 0 || entry.hosts.includes(host));
  return `${tls ? 'https' : 'http'}://${host}`;
}

/** `helm.sh/chart` is `<chart>-<version>` (with `+` as `_`): the version part. */
function chartVersionOf(module: string, deployment: V1Deployment | undefined): string | undefined {
  const label = deployment?.metadata?.labels?.[CHART_LABEL];
  return label?.startsWith(`${module}-`) ? label.slice(module.length + 1).replaceAll('_', '+') : undefined;
}

function moduleMessage(scope: TenantScope, release: ReleaseRecord | undefined, deployment: V1Deployment | undefined): string {
  if (release === undefined) return 'no release installed';
  if (release.status !== 'deployed') return `release revision ${release.version} is ${release.status}`;
  if (deployment === undefined) return 'the release has no Deployment';
  const wanted = deployment.spec?.replicas ?? 1;
  if (wanted === 0) return isHibernated(scope) ? 'scaled to zero (spec.lifecycle: Suspended)' : 'scaled to zero';
  return deploymentProblem(deployment)?.message ?? 'available';
}

export function moduleStatus(scope: TenantScope, module: ModuleName, release: ReleaseRecord | undefined, deployment: V1Deployment | undefined): ModuleStatus {
  const status: ModuleStatus = {
    readyReplicas: deployment?.status?.readyReplicas ?? 0,
    replicas: deployment?.spec?.replicas ?? 0,
    message: moduleMessage(scope, release, deployment).slice(0, MESSAGE_LIMIT),
  };
  const chartVersion = chartVersionOf(module, deployment);
  if (chartVersion !== undefined) status.chartVersion = chartVersion;
  const digest = release?.labels[VALUES_HASH_LABEL];
  if (digest !== undefined) status.valuesDigest = digest;
  return status;
}

/** `reads`: the API reader, or the watch caches (what the caller chose). */
export async function observeTenant(scope: TenantScope, reads: KubeReads): Promise<ObservedTenant> {
  const [releases, deployments, ingress] = await Promise.all([
    readReleases(reads, scope.namespace),
    reads.list('Deployment', scope.namespace),
    reads.get('Ingress', scope.namespace, INGRESS_NAME),
  ]);
  const modules: Record<string, ModuleStatus> = {};
  for (const module of scope.modules) {
    const deployment = deployments.find((d) => d.metadata?.labels?.['app.kubernetes.io/instance'] === module);
    modules[module] = moduleStatus(scope, module, releases.find((r) => r.name === module), deployment);
  }
  const url = ingressUrl(ingress);
  return url === undefined ? { modules } : { modules, url };
}
