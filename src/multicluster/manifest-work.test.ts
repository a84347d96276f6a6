import { describe, expect, it } from 'vitest';
import { FEEDBACK_PATHS, hubView, type ManifestWork, memberAvailability, tenantWork, withSummary, workSummary } from './manifest-work.ts';

const starter = tenantWork({ apiVersion: 'eva.aidonow.com/v1alpha1', kind: 'EvaTenant', metadata: { name: 'acme' }, spec: { capsuleCode: 'ACMEXX', tier: 'Starter' } }, 'member-1', { namespace: 'eva-operator', name: 'eva-hub-executor' });

/** The work as the engine reports it: `values` fed back, Applied at `appliedGeneration`. */
function reported(values: Record<string, string | number | boolean>, appliedGeneration = 1): ManifestWork {
  const fieldValue = (v: string | number | boolean) =>
    typeof v === 'number' ? { type: 'Integer' as const, integer: v } : typeof v === 'boolean' ? { type: 'Boolean' as const, boolean: v } : { type: 'String' as const, string: v };
  return {
    ...starter,
    metadata: { ...starter.metadata, generation: 1 },
    status: {
      conditions: [{ type: 'Applied', status: 'True', observedGeneration: appliedGeneration }],
      resourceStatus: { manifests: [{ statusFeedback: { values: Object.entries(values).map(([name, v]) => ({ name, fieldValue: fieldValue(v) })) } }] },
    },
  };
}

describe('the ManifestWork of a placed tenant', () => {
  it('sits in the member cluster namespace, labelled with its tenant, applied server-side (never forced) as the engine field manager and as the member executor', () => {
    expect(starter.metadata).toEqual({ name: 'evatenant-acme', namespace: 'member-1', labels: { 'eva.aidonow.com/tenant': 'acme' } });
    expect(starter.spec.workload.manifests[0]?.spec).toEqual({ capsuleCode: 'ACMEXX', tier: 'Starter' });
    expect(starter.spec.manifestConfigs[0]?.updateStrategy.serverSideApply).toEqual({ fieldManager: expect.stringMatching(/^work-agent/) as unknown, force: false });
    expect(starter.spec.executor).toEqual({ subject: { type: 'ServiceAccount', serviceAccount: { namespace: 'eva-operator', name: 'eva-hub-executor' } } });
  });

  it('asks for every condition kstatus and the health check read, and each module of any tier, by names used once', () => {
    const names = FEEDBACK_PATHS.map((p) => p.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining(['condition.Ready.status', 'condition.Stalled.reason', 'condition.Reconciling.observedGeneration', 'module.eva-forge.readyReplicas', 'generation', 'deletionTimestamp', 'suspend', 'lifecycle', 'url']));
  });
});

describe("the hub's view of a placed tenant", () => {
  it('rebuilds the member status from the fed-back values', () => {
    const view = hubView(
      reported({ generation: 2, suspend: false, lifecycle: 'Active', phase: 'Active', observedGeneration: 2, url: 'http://acme.example', 'condition.Ready.status': 'True', 'condition.Ready.reason': 'Provisioned', 'condition.Ready.observedGeneration': 2, 'module.orbit-crm.readyReplicas': 1, 'module.orbit-crm.replicas': 1 }),
    );
    expect(view).toEqual({
      cluster: 'member-1',
      applied: true,
      tenant: {
        apiVersion: 'eva.aidonow.com/v1alpha1',
        kind: 'EvaTenant',
        metadata: { name: 'acme', generation: 2 },
        spec: { suspend: false, lifecycle: 'Active' },
        status: { phase: 'Active', observedGeneration: 2, url: 'http://acme.example', conditions: [{ type: 'Ready', status: 'True', reason: 'Provisioned', observedGeneration: 2 }], modules: { 'orbit-crm': { readyReplicas: 1, replicas: 1 } } },
      },
    });
  });

  it('has no status the member has not reported, and is not applied while the engine applied an older generation', () => {
    const view = hubView(reported({}, 0));
    expect(view.applied).toBe(false);
    expect(view.tenant.status).toEqual({ conditions: [], modules: {} });
    expect(view.tenant.spec).toEqual({});
    expect(hubView(reported({})).applied).toBe(true);
  });

  it('keeps a member\'s last report but judges it stale while the engine says the member is not available', () => {
    const work = reported({ phase: 'Active', 'condition.Ready.status': 'True', 'condition.Ready.reason': 'Provisioned', 'condition.IngressReady.status': 'True', 'condition.Reconciling.status': 'True' });
    const stale = hubView(work, { status: 'Unknown', since: '2026-11-29T05:00:00Z' }).tenant.status;
    expect(stale.phase).toBe('Active');
    expect(stale.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['IngressReady', 'True', undefined],
      ['Ready', 'Unknown', 'MemberNotReporting'],
      ['Stalled', 'True', 'MemberNotReporting'],
    ]);
    expect(stale.conditions.find((c) => c.type === 'Stalled')?.message).toContain('since 2026-11-29T05:00:00Z');
    // The control: an available member's report is taken as it is.
    const fresh = hubView(work, { status: 'True' }).tenant.status.conditions;
    expect(fresh.map((c) => [c.type, c.status])).toEqual([['IngressReady', 'True'], ['Ready', 'True'], ['Reconciling', 'True']]);
  });

  it("is Stalled with the member's own error when the member refused the tenant the engine applied", () => {
    const work = reported({});
    work.status = { ...work.status, resourceStatus: { manifests: [{ conditions: [{ type: 'Applied', status: 'False', reason: 'AppliedManifestFailed', message: 'Failed to apply manifest: no matches for kind "EvaTenant"' }] }] } };
    const conditions = hubView(work, { status: 'True' }).tenant.status.conditions;
    expect(conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Ready', 'False', 'MemberRefusedTenant'],
      ['Stalled', 'True', 'MemberRefusedTenant'],
    ]);
    expect(conditions[0]?.message).toBe('the member cluster member-1 refused the tenant: Failed to apply manifest: no matches for kind "EvaTenant"');
  });
});

describe('the summary the hub controller writes onto a tenant work', () => {
  const active = { generation: 1, observedGeneration: 1, phase: 'Active', 'condition.Ready.status': 'True', 'condition.Ready.reason': 'Provisioned', 'condition.Ready.message': 'all five steps True' };
  const shown = (work: ManifestWork, available = 'True'): string[] => workSummary(work, { status: available }).map((c) => `${c.type}=${c.status}/${c.reason}@${String(c.observedGeneration)}`);

  it("is the member's summary, with its message, at the work's generation", () => {
    expect(shown(reported(active))).toEqual(['Ready=True/Provisioned@1']);
    expect(workSummary(reported(active), { status: 'True' })[0]?.message).toBe('all five steps True');
  });

  it("is Reconciling while the engine has not applied the work's generation, or the member's operator has not observed the tenant's", () => {
    expect(shown(reported(active, 0))).toEqual(['Ready=False/MemberApplying@1', 'Reconciling=True/Progressing@1']);
    expect(workSummary(reported(active, 0), { status: 'True' })[0]?.message).toBe('the engine has not applied generation 1 of the work on member-1 yet');
    expect(shown(reported({ ...active, generation: 2 }))).toEqual(['Ready=False/MemberApplying@1', 'Reconciling=True/Progressing@1']);
    // No status from the member's operator yet.
    expect(shown(reported({ generation: 1 }))).toEqual(['Ready=False/MemberApplying@1', 'Reconciling=True/Progressing@1']);
  });

  it('is Stalled, never Ready, while the member is not available, whatever it reported last', () => {
    expect(shown(reported(active), 'Unknown')).toEqual(['Ready=Unknown/MemberNotReporting@1', 'Stalled=True/MemberNotReporting@1']);
    expect(shown(reported(active, 0), 'False')).toEqual(['Ready=Unknown/MemberNotReporting@1', 'Stalled=True/MemberNotReporting@1']);
  });

  it("keeps the engine's conditions and a transition time while the status stays; writes nothing when the work says it already", () => {
    const work = reported(active);
    const first = withSummary(work.status?.conditions ?? [], workSummary(work, { status: 'True' }), '2026-12-07T00:00:00Z');
    expect(first?.map((c) => [c.type, c.status, c.lastTransitionTime])).toEqual([['Applied', 'True', undefined], ['Ready', 'True', '2026-12-07T00:00:00Z']]);
    const written: ManifestWork = { ...work, status: { ...work.status, conditions: first ?? [] } };
    expect(withSummary(first ?? [], workSummary(written, { status: 'True' }), '2026-12-07T00:01:00Z')).toBeUndefined();
    // The member stops reporting, then reports again: Stalled comes and goes, Ready's time moves with its status.
    const stale = withSummary(first ?? [], workSummary(written, { status: 'Unknown' }), '2026-12-07T00:02:00Z') ?? [];
    expect(stale.map((c) => [c.type, c.status, c.lastTransitionTime])).toEqual([['Applied', 'True', undefined], ['Ready', 'Unknown', '2026-12-07T00:02:00Z'], ['Stalled', 'True', '2026-12-07T00:02:00Z']]);
    const back = withSummary(stale, workSummary(work, { status: 'True' }), '2026-12-07T00:03:00Z') ?? [];
    expect(back.map((c) => [c.type, c.status, c.lastTransitionTime])).toEqual([['Applied', 'True', undefined], ['Ready', 'True', '2026-12-07T00:03:00Z']]);
  });

  it("reads a member's availability from its ManagedCluster, Unknown before the engine said anything", () => {
    expect(memberAvailability({ metadata: { name: 'm' } })).toEqual({ status: 'Unknown' });
    expect(memberAvailability({ metadata: { name: 'm' }, status: { conditions: [{ type: 'ManagedClusterConditionAvailable', status: 'False', lastTransitionTime: '2026-12-07T00:00:00Z' }] } })).toEqual({ status: 'False', since: '2026-12-07T00:00:00Z' });
  });
});
