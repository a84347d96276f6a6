/**
 * What GitOps tools make of captured EvaTenants, by their real code paths: the kstatus library Flux
 * uses (sigs.k8s.io/cli-utils, test/tools/kstatus) and an Argo CD health check run by gopher-lua as
 * Argo CD runs it (test/tools/argo-health). Both tools are Go, built once and cached outside the
 * checkout by test/tools/build.sh.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { kubectlOk } from './kubectl.ts';
import { repoRoot } from './tools.ts';

export interface Verdict {
  status: string;
  message: string;
}

export type TenantObject = Record<string, unknown> & { metadata: { name: string } };

/** The Argo CD health check as shipped. */
export const HEALTH_LUA = join(repoRoot, 'deploy/argocd/health.lua');

/** Builds (once, cached outside the checkout) and returns a test tool's binary. */
export function buildTool(tool: 'kstatus' | 'argo-health'): string {
  return execFileSync(join(repoRoot, 'test/tools/build.sh'), [tool], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 600_000 }).trim();
}

/** The EvaTenant as the API server serves it now. */
export function captureTenant(name: string): TenantObject {
  return JSON.parse(kubectlOk(['get', 'evt', name, '-o', 'json'])) as TenantObject;
}

/** The same object under another name: the label a verdict is reported under. */
export const labelled = (label: string, obj: TenantObject): TenantObject => ({ ...obj, metadata: { ...obj.metadata, name: label } });

/** Runs one tool on the objects (as a List on stdin); verdicts by object name. */
export function judge(binary: string, args: readonly string[], objects: readonly TenantObject[]): Record<string, Verdict> {
  const list = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects });
  return JSON.parse(execFileSync(binary, args, { input: list, encoding: 'utf8' })) as Record<string, Verdict>;
}

/** `kstatus/argo` per object: what Flux and Argo CD say of each, side by side. */
export function fluxAndArgo(objects: readonly TenantObject[], healthLua = HEALTH_LUA): { verdicts: Record<string, string>; flux: Record<string, Verdict>; argo: Record<string, Verdict> } {
  const flux = judge(buildTool('kstatus'), [], objects);
  const argo = judge(buildTool('argo-health'), [healthLua], objects);
  const verdicts = Object.fromEntries(objects.map((o) => [o.metadata.name, `${flux[o.metadata.name]?.status ?? '?'}/${argo[o.metadata.name]?.status ?? '?'}`]));
  return { verdicts, flux, argo };
}
