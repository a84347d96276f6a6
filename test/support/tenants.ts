/** Reading EvaTenants and their conditions as a user would, through kubectl. */
import { eventually, kubectl, kubectlOk, tenantManifest } from './kubectl.ts';

export interface TenantView {
  phase?: string;
  conditions: Record<string, { status: string; reason: string; message: string }>;
  elapsedSeconds: Record<string, number>;
  generation?: number;
  observedGeneration?: number;
}

export function readTenant(name: string): TenantView | undefined {
  const result = kubectl(['get', 'evt', name, '-o', 'json']);
  return result.status === 0 ? parseTenantJson(result.stdout) : undefined;
}

/** The view of one EvaTenant from its JSON (`kubectl get evt <name> -o json`). */
export function parseTenantJson(json: string): TenantView {
  const obj = JSON.parse(json) as {
    metadata: { generation?: number };
    status?: { phase?: string; observedGeneration?: number; conditions?: { type: string; status: string; reason: string; message: string }[]; elapsedSeconds?: Record<string, number> };
  };
  const conditions: TenantView['conditions'] = {};
  for (const c of obj.status?.conditions ?? []) conditions[c.type] = { status: c.status, reason: c.reason, message: c.message };
  const view: TenantView = { conditions, elapsedSeconds: obj.status?.elapsedSeconds ?? {} };
  if (obj.status?.phase !== undefined) view.phase = obj.status.phase;
  if (obj.metadata.generation !== undefined) view.generation = obj.metadata.generation;
  if (obj.status?.observedGeneration !== undefined) view.observedGeneration = obj.status.observedGeneration;
  return view;
}

export async function waitForPhase(name: string, phase: string, timeoutMs = 60_000): Promise<TenantView> {
  let last: TenantView | undefined;
  const reached = await eventually(() => {
    last = readTenant(name);
    return last?.phase === phase && (phase !== 'Active' || last.observedGeneration === last.generation);
  }, timeoutMs, 200);
  if (!reached) throw new Error(`EvaTenant ${name} did not reach ${phase}; last seen: ${JSON.stringify(last)}`);
  return last as TenantView;
}

export async function waitForCondition(name: string, type: string, status: string, timeoutMs = 60_000, reason?: string): Promise<TenantView> {
  let last: TenantView | undefined;
  const reached = await eventually(() => {
    last = readTenant(name);
    const c = last?.conditions[type];
    return c?.status === status && (reason === undefined || c.reason === reason);
  }, timeoutMs, 100);
  if (!reached) throw new Error(`EvaTenant ${name}: ${type} did not become ${status}${reason ? `/${reason}` : ''}; last seen: ${JSON.stringify(last)}`);
  return last as TenantView;
}

export async function waitForGone(name: string, timeoutMs = 60_000): Promise<boolean> {
  return eventually(() => kubectl(['get', 'evt', name]).status !== 0, timeoutMs, 250);
}

/**
 * Polls (once a second: every poll is a kubectl process on a busy machine) until `check` holds for
 * the tenant; returns the view and the milliseconds since `since` (default: the call). Throws with
 * `what` and the last view.
 */
export async function waitForTenant(
  name: string,
  what: string,
  check: (tenant: TenantView) => boolean,
  timeoutMs = 180_000,
  since = Date.now(),
): Promise<{ tenant: TenantView; ms: number }> {
  let last: TenantView | undefined;
  const reached = await eventually(() => {
    last = readTenant(name);
    return last !== undefined && check(last);
  }, timeoutMs, 1_000);
  if (!reached || last === undefined) throw new Error(`EvaTenant ${name}: ${what} not seen in ${timeoutMs} ms; last seen: ${JSON.stringify(last)}`);
  return { tenant: last, ms: Date.now() - since };
}

/** Active on the current generation, with all five conditions True. */
export const isActive = (t: TenantView): boolean => t.phase === 'Active' && t.observedGeneration === t.generation;

/**
 * The condition `type` is False with `reason` (and the phase is `phase`, when given: a tenant that
 * failed shows Provisioning while a retry runs, so a settled phase needs waiting for too).
 */
export const conditionFalse = (type: string, reason: string, phase?: string) => (t: TenantView): boolean =>
  t.conditions[type]?.status === 'False' && t.conditions[type].reason === reason && (phase === undefined || t.phase === phase);

/** Creates (or updates) a tenant from a spec, as `kubectl apply` does. */
export function applyTenant(name: string, spec: Record<string, unknown>, labels?: Record<string, string>): void {
  kubectlOk(['apply', '-f', '-'], tenantManifest(name, spec, labels));
}

/** `kubectl patch evt <name> --type merge`: fields set to null are removed. */
export function patchTenantSpec(name: string, spec: Record<string, unknown>): void {
  kubectlOk(['patch', 'evt', name, '--type', 'merge', '-p', JSON.stringify({ spec })]);
}

/** Whether `kubectl describe evt <name>` lists a Warning event with this reason. */
export function describeShowsWarning(name: string, reason: string): boolean {
  const described = kubectl(['describe', 'evt', name]).stdout;
  return new RegExp(`^\\s*Warning\\s+${reason}\\s`, 'm').test(described);
}

/** The spec.operatorVersion of a tenant, or undefined when it does not exist (or is unpinned). */
export function pinnedVersion(name: string): string | undefined {
  const result = kubectl(['get', 'evt', name, '-o', 'jsonpath={.spec.operatorVersion}']);
  return result.status === 0 && result.stdout !== '' ? result.stdout : undefined;
}
