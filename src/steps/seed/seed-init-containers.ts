/**
 * The second way SeedLoaded can become True, as in the reference design: every module of the tenant
 * has a pod whose `seed-loader` init container loaded the desired seeds version and exited 0.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Kube } from '../../adapters/kube.ts';
import type { ModuleName } from '../../api/modules.ts';

const SEED_INIT_CONTAINER = 'seed-loader';
const MODULE_LABEL = 'eva.aidonow.com/module';

/** The pod ran the seed loader for `version` and it exited 0. */
export function podSeeded(pod: V1Pod, version: string): boolean {
  const spec = pod.spec?.initContainers?.find((c) => c.name === SEED_INIT_CONTAINER);
  const args = spec?.args ?? [];
  const versionArg = args[args.indexOf('--version') + 1];
  if (!args.includes('--version') || versionArg !== version) return false;
  const status = pod.status?.initContainerStatuses?.find((c) => c.name === SEED_INIT_CONTAINER);
  return status?.state?.terminated?.exitCode === 0;
}

export async function seededByInitContainers(kube: Kube, namespace: string, modules: readonly ModuleName[], version: string): Promise<boolean> {
  if (modules.length === 0) return false;
  const pods = await kube.core.listNamespacedPod({ namespace, labelSelector: MODULE_LABEL });
  return modules.every((module) => pods.items.some((pod) => pod.metadata?.labels?.[MODULE_LABEL] === module && podSeeded(pod, version)));
}
