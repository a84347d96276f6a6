/**
 * What GitOps tools make of captured EvaTenants, by their real code paths (health-tools.ts: the
 * kstatus library Flux uses, and the Argo CD health check run as Argo CD runs it), on tenants
 * captured from the control plane.
 */
import { ARGO_HEALTH, buildTool, judge, type Verdict } from './health-tools.ts';
import { kubectlOk } from './kubectl.ts';

export { buildTool, judge, labelled, type Verdict } from './health-tools.ts';

export type TenantObject = Record<string, unknown> & { metadata: { name: string } };

/** The EvaTenant as the API server serves it now. */
export function captureTenant(name: string): TenantObject {
  return JSON.parse(kubectlOk(['get', 'evt', name, '-o', 'json'])) as TenantObject;
}

/** `kstatus/argo` per object: what Flux and Argo CD say of each, side by side. */
export function fluxAndArgo(objects: readonly TenantObject[], healthLua = ARGO_HEALTH.EvaTenant): { verdicts: Record<string, string>; flux: Record<string, Verdict>; argo: Record<string, Verdict> } {
  const flux = judge(buildTool('kstatus'), [], objects);
  const argo = judge(buildTool('argo-health'), [healthLua], objects);
  const verdicts = Object.fromEntries(objects.map((o) => [o.metadata.name, `${flux[o.metadata.name]?.status ?? '?'}/${argo[o.metadata.name]?.status ?? '?'}`]));
  return { verdicts, flux, argo };
}
