/**
 * `kubectl eva restore` and `kubectl eva purge`, as docs/lifecycle.md writes them by hand ("Restore",
 * "Purge retained data later"): an EvaTenant with the retained capsule code, annotated with the deleted
 * tenant's uid; a purge waits until it is Active, deletes it with dataRetention Delete and waits until
 * it is gone (the decommission's zero-residue verification). The operator decides whether the restore is
 * honoured (the keys Secret's retained marks), the API server whether the caller may ask for it.
 */
import { CAPSULE_CODE_PATTERN, DATA_RETENTIONS, RESTORE_FROM_ANNOTATION, type Tier } from '../api/constants.ts';
import type { EvaTenant } from '../api/evatenant.ts';
import { type Cluster, CommandFailed } from './cluster.ts';
import { formatElapsed } from './duration.ts';

export interface RestoreRequest {
  name: string;
  code: string;
  fromUid: string;
  tier: Tier;
  /** spec.operatorVersion: the operator version that may own it (blue/green, docs/operations.md); unset: any. */
  operatorVersion?: string;
  /** A purge deletes what it restored: it states Delete so that an earlier Retain cannot stand. */
  dataRetention?: (typeof DATA_RETENTIONS)[number];
}

export const isCapsuleCode = (code: string): boolean => new RegExp(CAPSULE_CODE_PATTERN).test(code);

/** The EvaTenant that restores, with only the fields kubectl-eva manages (server-side apply). */
export function restoreManifest(r: RestoreRequest): { metadata: { name: string; annotations: Record<string, string> }; spec: Record<string, unknown> } {
  return {
    metadata: { name: r.name, annotations: { [RESTORE_FROM_ANNOTATION]: r.fromUid } },
    spec: {
      capsuleCode: r.code,
      tier: r.tier,
      ...(r.operatorVersion === undefined ? {} : { operatorVersion: r.operatorVersion }),
      ...(r.dataRetention === undefined ? {} : { dataRetention: r.dataRetention }),
    },
  };
}

/**
 * Refuses to write onto an EvaTenant that exists and is not this restore (another tenant of that
 * name, or a restore from another uid or code): a restore adds to nothing, and a purge never deletes
 * a tenant it did not create.
 */
export async function restoreOrRefuse(cluster: Cluster, r: RestoreRequest): Promise<void> {
  const existing = await cluster.tenant(r.name);
  if (existing === undefined) return;
  const restoring = existing.metadata.annotations?.[RESTORE_FROM_ANNOTATION];
  if (restoring !== r.fromUid || existing.spec.capsuleCode !== r.code) {
    throw new CommandFailed(`EvaTenant ${r.name} exists and is not a restore of ${r.code} from uid ${r.fromUid} (its code ${existing.spec.capsuleCode}, restore-from-uid ${restoring ?? 'none'}); choose another name`);
  }
}

/** One line about where a tenant is: phase and the first condition that is not True. */
export function progressLine(tenant: EvaTenant | undefined): string {
  if (tenant === undefined) return 'gone';
  const waiting = (tenant.status?.conditions ?? []).find((c) => c.type !== 'Ready' && c.status !== 'True' && c.type !== 'Reconciling');
  const phase = tenant.status?.phase ?? 'no status yet';
  return waiting === undefined ? phase : `${phase}: ${waiting.type} ${waiting.status} (${waiting.reason}) ${waiting.message}`;
}

/** Stalled True: the operator cannot go on without a change (e.g. RestoreRefused); waiting longer is pointless. */
export const stalledOf = (tenant: EvaTenant | undefined): string | undefined => {
  const stalled = tenant?.status?.conditions?.find((c) => c.type === 'Stalled' && c.status === 'True');
  return stalled === undefined ? undefined : `${stalled.reason}: ${stalled.message}`;
};

export interface Waiting {
  read: () => Promise<EvaTenant | undefined>;
  say: (line: string) => void;
  timeoutMs: number;
  intervalMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/** Polls until `done` holds, printing each new progress line; CommandFailed on Stalled or after the timeout. */
export async function waitUntil(what: string, done: (tenant: EvaTenant | undefined) => boolean, w: Waiting): Promise<void> {
  const now = w.now ?? Date.now;
  const sleep = w.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const started = now();
  let said = '';
  for (;;) {
    const tenant = await w.read();
    const line = progressLine(tenant);
    if (line !== said) w.say(`  [${formatElapsed(now() - started)}] ${line}`);
    said = line;
    if (done(tenant)) return;
    const stalled = stalledOf(tenant);
    if (stalled !== undefined) throw new CommandFailed(`${what}: stalled, ${stalled}`);
    if (now() - started > w.timeoutMs) throw new CommandFailed(`${what}: not within ${formatElapsed(w.timeoutMs)} (last: ${line})`);
    await sleep(w.intervalMs ?? 2_000);
  }
}

/** A --timeout: 90s, 10m, 1h, or plain seconds. */
export function parseTimeout(raw: string): number {
  const match = /^(\d+)(s|m|h)?$/.exec(raw.trim());
  if (!match) throw new CommandFailed(`--timeout ${raw}: give a duration such as 90s, 10m or 1h`);
  const unit = { s: 1_000, m: 60_000, h: 3_600_000 }[match[2] as 's' | 'm' | 'h' | undefined ?? 's'];
  return Number(match[1]) * unit;
}
