/**
 * The Go tools that judge objects as GitOps tools do: the kstatus library Flux uses
 * (sigs.k8s.io/cli-utils, test/tools/kstatus) and an Argo CD health check run by gopher-lua as Argo
 * CD runs it (test/tools/argo-health). Built once and cached outside the checkout by
 * test/tools/build.sh. No control plane: the objects are given (health-verdicts.ts captures them from one).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './tools.ts';

export interface Verdict {
  status: string;
  message: string;
}

/** The Argo CD health checks as shipped, by kind (argocd-cm key resource.customizations.health.<group>_<kind>). */
export const ARGO_HEALTH = {
  EvaTenant: join(repoRoot, 'deploy/argocd/health.lua'),
  EvaRollout: join(repoRoot, 'deploy/argocd/rollout-health.lua'),
  // On a hub: the same check, installed for ManifestWorks too (docs/multi-cluster.md).
  ManifestWork: join(repoRoot, 'deploy/argocd/health.lua'),
} as const;

/** A Kubernetes object as the API server serves it; its name is the label a verdict is reported under. */
export interface Named {
  readonly metadata: { readonly name: string };
}

/** Builds (once, cached outside the checkout) and returns a test tool's binary. */
export function buildTool(tool: 'kstatus' | 'argo-health'): string {
  return execFileSync(join(repoRoot, 'test/tools/build.sh'), [tool], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 600_000 }).trim();
}

/** The same object under another name: the label a verdict is reported under. */
export const labelled = <T extends Named>(label: string, obj: T): T => ({ ...obj, metadata: { ...obj.metadata, name: label } });

/** Runs one tool on the objects (as a List on stdin); verdicts by object name. */
export function judge(binary: string, args: readonly string[], objects: readonly Named[]): Record<string, Verdict> {
  const list = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects });
  return JSON.parse(execFileSync(binary, args, { input: list, encoding: 'utf8' })) as Record<string, Verdict>;
}
