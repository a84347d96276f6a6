/**
 * On a multi-cluster hub, GitOps tools judge a tenant by its ManifestWork (docs/multi-cluster.md):
 * deploy/argocd/health.lua run as Argo CD runs it (test/tools/argo-health) and the kstatus library Flux
 * uses (test/tools/kstatus), on the member's EvaTenant and on the hub's work carrying it, side by side,
 * for each place a tenant can stand. The work is what the engine feeds back of that EvaTenant (the
 * feedback paths evaluated here as the work agent does: the e2e has the real agent) with the summary
 * the hub controller writes (workSummary). Same verdict on both, or the hub's view is not believed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, KIND, PROVISIONING_CONDITIONS } from '../../src/api/constants.ts';
import { Reason } from '../../src/api/reasons.ts';
import { FEEDBACK_PATHS, type FieldValue, type ManifestWork, type MemberAvailability, tenantWork, withSummary, workSummary } from '../../src/multicluster/manifest-work.ts';
import { type Placement, placementSummary, tenantPlacement } from '../../src/multicluster/placement.ts';
import { type Standing, summarize } from '../../src/status/summarize.ts';
import type { ConditionState } from '../../src/status/conditions.ts';
import { ARGO_HEALTH, buildTool, judge, labelled, type Verdict } from '../support/health-tools.ts';

interface MemberTenant {
  apiVersion: string;
  kind: string;
  metadata: { name: string; generation: number; deletionTimestamp?: string };
  spec: Record<string, unknown>;
  status?: { phase: string; observedGeneration: number; url?: string; conditions: ({ type: string } & ConditionState & { observedGeneration: number })[] };
}

const steps = (state: ConditionState): Record<(typeof PROVISIONING_CONDITIONS)[number], ConditionState> =>
  Object.fromEntries(PROVISIONING_CONDITIONS.map((c) => [c, state])) as Record<(typeof PROVISIONING_CONDITIONS)[number], ConditionState>;
const TRUE: ConditionState = { status: 'True', reason: Reason.Provisioned, message: '' };

/** The member's EvaTenant standing at `standing`, its status written at `observed` for spec generation `generation`. */
function memberTenant(standing: Standing, phase: string, options: { generation?: number; observed?: number; spec?: Record<string, unknown>; deleting?: boolean } = {}): MemberTenant {
  const { generation = 1, observed = generation, spec = {} } = options;
  const conditions = Object.entries(summarize(standing)).map(([type, state]) => ({ type, ...state, observedGeneration: observed }));
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: 'acme', generation, ...(options.deleting === true ? { deletionTimestamp: '2026-12-07T00:00:00Z' } : {}) },
    spec: { capsuleCode: 'ACMEXX', tier: 'Starter', ...spec },
    status: { phase, observedGeneration: observed, url: 'https://acme.example', conditions },
  };
}

/** One JSONPath of FEEDBACK_PATHS on `obj`: `.a.b` or `.status.conditions[?(@.type=="X")].field`. */
function valueAt(obj: unknown, path: string): unknown {
  const filter = /^\.status\.conditions\[\?\(@\.type=="(\w+)"\)\]\.(\w+)$/.exec(path);
  if (filter !== null) return (obj as MemberTenant).status?.conditions.find((c) => c.type === filter[1])?.[filter[2] as keyof ConditionState];
  return path.slice(1).split('.').reduce<unknown>((at, key) => (at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined), obj);
}

function fieldValue(value: unknown): FieldValue | undefined {
  if (typeof value === 'string') return { type: 'String', string: value };
  if (typeof value === 'number') return { type: 'Integer', integer: value };
  if (typeof value === 'boolean') return { type: 'Boolean', boolean: value };
  return undefined;
}

/**
 * The hub's work carrying `tenant`: what the engine fed back of it, Applied at `applied` (the work's
 * generation by default), and the summary the hub controller wrote given the member's availability.
 */
function hubWork(tenant: MemberTenant | undefined, options: { member?: MemberAvailability; applied?: number; workGeneration?: number; summary?: boolean } = {}): ManifestWork {
  const { workGeneration = 1, applied = workGeneration, member = { status: 'True' }, summary = true } = options;
  const work = tenantWork({ apiVersion: API_VERSION, kind: KIND, metadata: { name: 'acme' }, spec: { capsuleCode: 'ACMEXX', tier: 'Starter' } }, 'member-eu');
  const values = tenant === undefined ? [] : FEEDBACK_PATHS.flatMap((p) => {
    const value = fieldValue(valueAt(tenant, p.path));
    return value === undefined ? [] : [{ name: p.name, fieldValue: value }];
  });
  const reported: ManifestWork = {
    ...work,
    metadata: { ...work.metadata, generation: workGeneration },
    status: {
      conditions: [{ type: 'Applied', status: 'True', reason: 'AppliedManifestWorkComplete', observedGeneration: applied }, { type: 'Available', status: 'True', reason: 'ResourcesAvailable', observedGeneration: applied }],
      resourceStatus: { manifests: [{ statusFeedback: { values } }] },
    },
  };
  if (!summary) return reported;
  return { ...reported, status: { ...reported.status, conditions: withSummary(reported.status?.conditions ?? [], workSummary(reported, member), '2026-12-07T00:00:00Z') ?? [] } };
}

const active = memberTenant({ kind: 'provisioning', conditions: steps(TRUE) }, 'Active');
const STALE: MemberAvailability = { status: 'Unknown', since: '2026-12-07T00:00:00Z' };

/** Each place a tenant stands on its member: the member's EvaTenant and the hub's work, judged alike. */
const ALIKE: Record<string, MemberTenant> = {
  active,
  provisioning: memberTenant({ kind: 'provisioning', conditions: { ...steps(TRUE), ModulesDeployed: { status: 'False', reason: 'DeploymentUnavailable', message: 'orbit-crm 0/1' } } }, 'Provisioning'),
  'spec change not observed': memberTenant({ kind: 'provisioning', conditions: steps(TRUE) }, 'Active', { generation: 2, observed: 1 }),
  'waiting for the user': memberTenant({ kind: 'provisioning', conditions: { ...steps(TRUE), ModulesDeployed: { status: 'False', reason: 'ChartRenderFailed', message: 'values' } }, needsUser: Reason.ChartRenderFailed }, 'Provisioning'),
  suspended: memberTenant({ kind: 'suspended', message: 'spec.suspend is true' }, 'Active', { spec: { suspend: true } }),
  hibernated: memberTenant({ kind: 'hibernated' }, 'Suspended', { spec: { lifecycle: 'Suspended' } }),
  decommissioning: memberTenant({ kind: 'decommissioning', pending: ['modules'] }, 'Decommissioning', { deleting: true }),
  failed: memberTenant({ kind: 'provisioning', conditions: { ...steps(TRUE), SeedLoaded: { status: 'False', reason: 'NatsUnavailable', message: 'NATS refused the seed' } } }, 'Failed'),
};

describe('the hub\'s work of a tenant, judged as the member\'s EvaTenant', () => {
  let argo: Record<string, Verdict>;
  let flux: Record<string, Verdict>;
  const hubOnly: Record<string, ManifestWork> = {
    'member not reporting': hubWork(active, { member: STALE }),
    'work changed, not applied yet': hubWork(active, { workGeneration: 2, applied: 1 }),
    'no status from the member yet': hubWork(undefined),
    // The threat the hub controller's summary stops: a stale work judged by the engine's conditions alone.
    'member not reporting, no summary': hubWork(active, { member: STALE, summary: false }),
    'not a tenant work': (() => {
      const w = hubWork(active, { summary: false });
      return { ...w, metadata: { ...w.metadata, labels: {} } };
    })(),
    'not a tenant work, refused': (() => {
      const w = hubWork(undefined, { summary: false });
      return { ...w, metadata: { ...w.metadata, labels: {} }, status: { conditions: [{ type: 'Applied', status: 'False', reason: 'AppliedManifestFailed', message: 'forbidden' }] } };
    })(),
  };

  /** A tenant's Placement as the engine judged it (PlacementSatisfied), with the hub controller's summary. */
  const judgedPlacement = (satisfied: 'True' | 'False'): Placement => {
    const p = tenantPlacement('acme', 'eva-tenants', 'eva-members', { region: 'mars' });
    const engine = { ...p, metadata: { ...p.metadata, generation: 1 }, status: { conditions: [{ type: 'PlacementSatisfied', status: satisfied, reason: satisfied === 'True' ? 'AllDecisionsScheduled' : 'NoManagedClusterMatched', message: satisfied === 'True' ? 'All cluster decisions scheduled' : 'No ManagedCluster matches any of the cluster predicate' }] } };
    return { ...engine, status: { conditions: withSummary(engine.status.conditions, placementSummary(engine), '2026-12-07T00:00:00Z') ?? engine.status.conditions } };
  };

  beforeAll(() => {
    const objects = [
      ...Object.entries(ALIKE).flatMap(([label, tenant]) => [labelled(`member: ${label}`, tenant), labelled(`hub: ${label}`, hubWork(tenant))]),
      ...Object.entries(hubOnly).map(([label, work]) => labelled(`hub: ${label}`, work)),
      labelled('placement: nowhere', judgedPlacement('False')),
      labelled('placement: decided', judgedPlacement('True')),
    ];
    argo = judge(buildTool('argo-health'), [ARGO_HEALTH.ManifestWork], objects);
    flux = judge(buildTool('kstatus'), [], objects);
  }, 600_000);

  const verdict = (label: string): string => `${flux[label]?.status ?? '?'}/${argo[label]?.status ?? '?'}`;

  it('gives the work the verdict of the member\'s EvaTenant at every place it stands', () => {
    const table = Object.keys(ALIKE).map((label) => `${label.padEnd(26)} ${verdict(`member: ${label}`).padEnd(24)} ${verdict(`hub: ${label}`).padEnd(24)} ${argo[`hub: ${label}`]?.message ?? ''}`);
    console.log(['[work-health] tenant                     member (kstatus/argo)    hub work                 argo message on the hub', ...table].join('\n'));
    const pairs = Object.fromEntries(Object.keys(ALIKE).map((label) => [label, verdict(`hub: ${label}`)]));
    // kstatus calls the member's EvaTenant Terminating while it is deleted; the work is not, so InProgress: both not Current.
    const onMember = (label: string): string => verdict(`member: ${label}`).replace(/^Terminating\//, 'InProgress/');
    expect(pairs).toEqual(Object.fromEntries(Object.keys(ALIKE).map((label) => [label, onMember(label)])));
    // Every verdict a tenant can get is among them, so the equality above is about something.
    expect(new Set(Object.values(pairs))).toEqual(new Set(['Current/Healthy', 'InProgress/Progressing', 'Failed/Degraded', 'Current/Suspended', 'InProgress/Degraded']));
    // And with the member's words: its summary's reasons and messages come back through the engine.
    expect(Object.fromEntries(Object.keys(ALIKE).map((label) => [label, argo[`hub: ${label}`]?.message]))).toEqual(Object.fromEntries(Object.keys(ALIKE).map((label) => [label, argo[`member: ${label}`]?.message])));
  });

  it('judges what only the hub knows: a member not reporting, a change not applied yet, no status yet', () => {
    expect(verdict('hub: member not reporting')).toBe('Failed/Degraded');
    expect(argo['hub: member not reporting']?.message).toMatch(/^MemberNotReporting: the member cluster is not reporting \(available: Unknown since 2026-12-07T00:00:00Z\)/);
    expect(verdict('hub: work changed, not applied yet')).toBe('InProgress/Progressing');
    expect(argo['hub: work changed, not applied yet']?.message).toBe('MemberApplying: the engine has not applied generation 2 of the work on member-eu yet');
    expect(verdict('hub: no status from the member yet')).toBe('InProgress/Progressing');
  });

  it("judges a tenant's Placement the engine placed nowhere Stalled, one it decided Healthy", () => {
    expect(verdict('placement: nowhere')).toBe('Failed/Degraded');
    expect(argo['placement: nowhere']?.message).toBe('NoMemberMatches: the engine placed tenant-acme on no member: No ManagedCluster matches any of the cluster predicate');
    expect(verdict('placement: decided')).toBe('Current/Healthy');
  });

  it('without the summary, a stale work would be Healthy by the engine\'s conditions (the control), and other works are judged by those', () => {
    expect(argo['hub: member not reporting, no summary']).toEqual({ status: 'Progressing', message: 'waiting for the hub controller (eva-operator hub) to judge generation 1 of the work' });
    expect(verdict('hub: not a tenant work')).toBe('Current/Healthy');
    expect(verdict('hub: not a tenant work, refused')).toBe('Current/Degraded');
    // kstatus reads no summary there: the engine's stale Available is all a tool has without the hub controller.
    expect(flux['hub: member not reporting, no summary']?.status).toBe('Current');
  });
});
