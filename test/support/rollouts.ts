/**
 * What the rollout e2e tests (e2e/rollout.test.ts on the local control plane, e2e/real-node.test.ts on
 * the real node) share: their tenants planned by wave, the tenants and rollouts as the API server has
 * them (through whichever kubectl reaches that cluster), and copies of the bundled charts whose module
 * Deployments a version changes.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { API_VERSION, OWNER_ANNOTATION, ownerVersion, SHARD_LABEL } from '../../src/api/constants.ts';
import { ROLLOUT_KIND, type EvaRolloutSpec, type EvaRolloutStatus } from '../../src/api/evarollout.ts';
import { tenantNamespace } from '../../src/tenancy/names.ts';
import { type CommandResult, eventually, tenantManifest } from './kubectl.ts';
import { repoRoot } from './tools.ts';

export interface Planned {
  readonly name: string;
  readonly code: string;
  readonly wave: number;
}

const letter = (n: number): string => String.fromCharCode(65 + n);

/** `n` in base 26 as `width` letters (A = 0). */
const letters = (n: number, width: number): string =>
  Array.from({ length: width }, (_, i) => letter(Math.floor(n / 26 ** (width - 1 - i)) % 26)).join('');

/**
 * `sizes[i]` tenants in wave i + 1; capsule codes `<prefix><wave letter><index letters>`, six letters
 * in all: a 4-letter prefix leaves 26 tenants per wave, a 3-letter one 676.
 */
export function plannedTenants(prefix: string, sizes: readonly number[]): readonly Planned[] {
  const width = 6 - prefix.length - 1;
  const most = Math.max(...sizes);
  if (width < 1 || most > 26 ** width) throw new Error(`a prefix of ${String(prefix.length)} letters cannot number ${String(most)} tenants in a wave`);
  return sizes.flatMap((size, w) =>
    Array.from({ length: size }, (_, i) => {
      const code = `${prefix}${letter(w + 1)}${letters(i, width)}`;
      return { name: `ro-${code.toLowerCase()}`, code, wave: w + 1 };
    }),
  );
}

export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

export interface TenantObject {
  metadata: { name: string; generation?: number; annotations?: Record<string, string> };
  spec: { operatorVersion?: string };
  status?: { phase?: string; observedGeneration?: number };
}

interface RolloutObject {
  status?: EvaRolloutStatus;
}

/** Active on the current generation, pinned to and owned by `version`. */
export const activeOn = (t: TenantObject | undefined, version: string): boolean =>
  t?.status?.phase === 'Active' && t.status.observedGeneration === t.metadata.generation && t.spec.operatorVersion === version && ownerVersion(t.metadata.annotations?.[OWNER_ANNOTATION]) === version;

export const conditionOf = (status: EvaRolloutStatus, type: string): string | undefined => status.conditions?.find((c) => c.type === type)?.status;

/** The one gate that did not pass, and the tenants it names. */
export function expectFailedGate(status: EvaRolloutStatus, gate: string, tenants: readonly Planned[]): void {
  const failed = (status.gates ?? []).filter((g) => g.verdict !== 'Passed');
  expect(failed.map((g) => g.gate), JSON.stringify(status.gates)).toEqual([gate]);
  expect([...(failed[0]?.tenants ?? [])].sort()).toEqual(tenants.map((t) => t.name).sort());
}

export type Kubectl = (args: readonly string[], input?: string) => CommandResult;

/** One shard's tenants and the rollouts over them, on the cluster `kubectl` reaches. */
export class RolloutCluster {
  private readonly kubectl: Kubectl;
  readonly shard: string;
  private readonly stepMs: number;

  constructor(kubectl: Kubectl, shard: string, stepMs: number) {
    this.kubectl = kubectl;
    this.shard = shard;
    this.stepMs = stepMs;
  }

  private ok(args: readonly string[], input?: string): string {
    const result = this.kubectl(args, input);
    if (result.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${result.stderr}`);
    return result.stdout;
  }

  /** A Starter tenant of the shard, in its wave, pinned to `version`. */
  applyTenant(t: Planned, version: string): void {
    const spec = { capsuleCode: t.code, tier: 'Starter', seedsVersion: '1.0.0', wave: t.wave, operatorVersion: version };
    this.ok(['apply', '-f', '-'], tenantManifest(t.name, spec, { [SHARD_LABEL]: this.shard }));
  }

  /** Deletes the tenants; resolves with whether they were gone within `timeoutMs`. */
  deleteTenants(tenants: readonly Pick<Planned, 'name'>[], timeoutMs: number): Promise<boolean> {
    this.kubectl(['delete', 'evt', ...tenants.map((t) => t.name), '--ignore-not-found', '--wait=false']);
    return eventually(() => tenants.every((t) => this.kubectl(['get', 'evt', t.name]).status !== 0), timeoutMs, 2_000);
  }

  tenants(): Map<string, TenantObject> {
    const list = JSON.parse(this.ok(['get', 'evt', '-l', `${SHARD_LABEL}=${this.shard}`, '-o', 'json'])) as { items: TenantObject[] };
    return new Map(list.items.map((t) => [t.metadata.name, t]));
  }

  /** Waits until every tenant is Active on `version`; resolves with those that were not within `timeoutMs`. */
  async untilActiveOn(tenants: readonly Planned[], version: string, timeoutMs = this.stepMs): Promise<string[]> {
    let laggards: string[] = [];
    await eventually(() => {
      const now = this.tenants();
      laggards = tenants.filter((t) => !activeOn(now.get(t.name), version)).map((t) => t.name);
      return laggards.length === 0;
    }, timeoutMs, 2_000);
    return laggards;
  }

  async allActiveOn(tenants: readonly Planned[], version: string, timeoutMs = this.stepMs): Promise<void> {
    const laggards = await this.untilActiveOn(tenants, version, timeoutMs);
    expect(laggards, `not Active on ${version}`).toEqual([]);
  }

  readRollout(name: string): RolloutObject | undefined {
    const result = this.kubectl(['get', 'evr', name, '-o', 'json']);
    return result.status === 0 ? (JSON.parse(result.stdout) as RolloutObject) : undefined;
  }

  applyRollout(name: string, spec: EvaRolloutSpec): void {
    this.ok(['apply', '-f', '-'], JSON.stringify({ apiVersion: API_VERSION, kind: ROLLOUT_KIND, metadata: { name }, spec }));
  }

  /** Polls the rollout's phase every second until `phase`, noting when each phase was first seen. */
  async untilPhase(name: string, phase: string, seen: Map<string, number>, timeoutMs = this.stepMs): Promise<EvaRolloutStatus> {
    let last: EvaRolloutStatus | undefined;
    const reached = await eventually(() => {
      last = this.readRollout(name)?.status;
      const now = last?.phase;
      if (now !== undefined && !seen.has(now)) seen.set(now, Date.now());
      return now === phase;
    }, timeoutMs, 1_000);
    expect(reached, `rollout ${name} did not reach ${phase}; last status: ${JSON.stringify(last)}`).toBe(true);
    return last ?? {};
  }

  /** The tenants each Event of a rollout moved or returned, by reason. */
  eventTenants(rollout: string, reason: string): string[] {
    // By uid: a plane the suite reuses still holds, for an hour, the events of an earlier run's rollout of the same name.
    const uid = this.ok(['get', 'evarollouts', rollout, '-o', 'jsonpath={.metadata.uid}']);
    const list = JSON.parse(this.ok(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${rollout},involvedObject.uid=${uid},reason=${reason}`, '-o', 'json'])) as { items: { message: string }[] };
    // "wave 1 batch 2: moving a, b" / "returning batch 2: a, b"
    return list.items.flatMap((e) => e.message.replace(/^[^:]*: (moving )?/, '').split(', ').filter((n) => n !== ''));
  }

  /** What a rollback must keep: the tenant's namespace and its NATS credentials (the data's keys). */
  tenantData(t: Planned): string {
    const namespace = tenantNamespace(t.code);
    const uid = this.ok(['get', 'namespace', namespace, '-o', 'jsonpath={.metadata.uid}']);
    const creds = this.ok(['get', 'secret', 'eva-nats', '-n', namespace, '-o', 'jsonpath={.data.nats\\.creds}']);
    return `${uid}/${creds}`;
  }
}

/**
 * A copy of the bundled charts (for an operator's CHART_BASE_PATH) in which every module's Deployment
 * is the library's, changed by `change`: template lines that modify `$d`, the Deployment as a dict.
 */
export function chartsWithDeployment(name: string, change: string): string {
  const dir = mkdtempSync(join(tmpdir(), `eva-rollout-${name}-charts-`));
  cpSync(join(repoRoot, 'charts'), dir, { recursive: true });
  const modules = join(dir, 'modules');
  for (const module of readdirSync(modules)) {
    const template = join(modules, module, 'templates', 'deployment.yaml');
    if (!existsSync(template)) continue;
    writeFileSync(template, `{{- $d := include "eva-module-lib.deployment" . | fromYaml }}\n${change}\n{{ toYaml $d }}\n`);
  }
  return dir;
}
