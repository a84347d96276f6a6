/**
 * What the gates read, reduced to numbers: a Prometheus instant query's answer and a tenant's module
 * pods. Pure, so every shape the API can return is tested; asking is the controller's.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { QueryAnswer } from './gates.ts';

/** The one sample of a result, or why there is not exactly one. */
function oneSample(resultType: unknown, result: unknown): readonly unknown[] | string {
  if (!Array.isArray(result)) return `the query gave a ${String(resultType)}, not one number`;
  const items: readonly unknown[] = result;
  if (resultType === 'scalar') return items;
  if (resultType !== 'vector') return `the query gave a ${String(resultType)}, not one number`;
  if (items.length !== 1) return `the query gave ${String(items.length)} series, not one number`;
  const value = (items[0] as { value?: unknown }).value;
  return Array.isArray(value) ? value : 'the query gave a sample without a value';
}

/** The number an instant query gave: a scalar, or a vector of exactly one sample; anything else is no answer. */
export function queryAnswer(body: unknown): QueryAnswer {
  const reply = body as { status?: unknown; error?: unknown; data?: { resultType?: unknown; result?: unknown } } | null;
  if (reply?.status !== 'success') return { error: typeof reply?.error === 'string' ? reply.error : 'Prometheus did not answer with success' };
  const sample = oneSample(reply.data?.resultType, reply.data?.result);
  if (typeof sample === 'string') return { error: sample };
  return typeof sample[1] === 'string' ? { value: Number(sample[1]) } : { error: 'the query gave a sample without a value' };
}

/** Asks Prometheus's HTTP API once, bounded by `timeoutMs`; every failure is an answer with an error, never a pass. */
export async function askPrometheus(url: string, query: string, timeoutMs = 10_000): Promise<QueryAnswer> {
  try {
    const endpoint = new URL('api/v1/query', url.endsWith('/') ? url : `${url}/`);
    const response = await fetch(endpoint, { method: 'POST', body: new URLSearchParams({ query }), signal: AbortSignal.timeout(timeoutMs) });
    const body: unknown = await response.json().catch(() => undefined);
    if (!response.ok && body === undefined) return { error: `HTTP ${String(response.status)}` };
    return queryAnswer(body);
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

const isReady = (pod: V1Pod): boolean => pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

/** Restarts of its containers when the pod started at or after `since`, else 0 (earlier restarts are not the move's). */
function restartsSince(pod: V1Pod, since: Date): number {
  const started = pod.metadata?.creationTimestamp;
  if (started === undefined || new Date(started) < since) return 0;
  return (pod.status?.containerStatuses ?? []).reduce((n, status) => n + status.restartCount, 0);
}

/**
 * Restarts of the containers of pods started since `since`, and how many pods are not Ready. Pods
 * being deleted are left out: a rolling update's old pods stay for their grace period, not Ready, after
 * the Deployment (and so the tenant) is Ready on the new ones.
 */
export function podFigures(pods: readonly V1Pod[], since: Date): { restarts: number; unready: number } {
  const staying = pods.filter((pod) => pod.metadata?.deletionTimestamp === undefined);
  return {
    restarts: staying.reduce((n, pod) => n + restartsSince(pod, since), 0),
    unready: staying.filter((pod) => !isReady(pod)).length,
  };
}
