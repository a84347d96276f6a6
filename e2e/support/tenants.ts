/** Reading EvaTenants and their conditions as a user would, through kubectl. */
import { eventually, kubectl } from '../../test/support/kubectl.ts';

export interface TenantView {
  phase?: string;
  conditions: Record<string, { status: string; reason: string; message: string }>;
  elapsedSeconds: Record<string, number>;
  generation?: number;
  observedGeneration?: number;
}

export function readTenant(name: string): TenantView | undefined {
  const result = kubectl(['get', 'evt', name, '-o', 'json']);
  if (result.status !== 0) return undefined;
  const obj = JSON.parse(result.stdout) as {
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

export function tenantYaml(name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({ apiVersion: 'eva.aidonow.com/v1alpha1', kind: 'EvaTenant', metadata: { name }, spec });
}
