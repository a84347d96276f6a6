/**
 * GitOps status on real tenants, judged by the real code paths: the kstatus library Flux uses
 * (sigs.k8s.io/cli-utils, test/tools/kstatus) and deploy/argocd/health.lua run by gopher-lua as Argo
 * CD runs it (test/tools/argo-health), both on the same objects captured from the API server in
 * every phase: provisioning, Active, Stalled on bad input, unclaimed (pinned to a version nobody
 * runs; owned by an operator that is gone; labelled with a shard nobody serves; and unpinned with a
 * wave above the MAX_WAVE of every operator of its shard, which the Leases publish), each seen by
 * three operators and written by one, suspended (no writes while drift is
 * made by hand, then resume repairs it), Decommissioning, Decommissioned and being deleted.
 * (Hibernated tenants are judged in e2e/hibernation.test.ts.)
 *
 * Isolation (the cluster is shared): operators 9.8.0 and 9.8.1 with MAX_WAVE 0, tenants pinned to
 * them (or to the absent 9.8.9); 9.8.2 serves only shard gitops, with MAX_WAVE 1, and the two
 * unpinned tenants carry that shard's label (one at first a shard nobody serves); capsule codes
 * starting with GITO, all deleted at the end.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, kubectlOk, requiredEnv } from '../test/support/kubectl.ts';
import { auditOffset, auditWritesSince } from '../test/support/audit.ts';
import { repoRoot } from '../test/support/tools.ts';
import { operatorNamespace } from '../test/support/operator-identity.ts';
import { API_VERSION, KIND, MAX_WAVE_ANNOTATION, OWNER_ANNOTATION, SHARD_LABEL } from '../src/api/constants.ts';
import { leaseNameForVersion } from '../src/controller/lease-names.ts';
import { buildTool, captureTenant as capture, judge, labelled, type TenantObject as Obj } from '../test/support/health-verdicts.ts';
import { metricSum, scrape } from '../test/support/metrics.ts';
import { type OperatorProcess, startOperator } from '../test/support/operator.ts';
import { applyTenant, describeShowsWarning, isActive, patchTenantSpec, pinnedVersion, waitForGone, waitForTenant } from '../test/support/tenants.ts';

const OWNER = '9.8.0';
const SECOND = '9.8.1';
const ABSENT = '9.8.9';
/** Serves only shard SHARD, claiming unpinned tenants up to wave 1. */
const SHARDED = '9.8.2';
const SHARD = 'gitops';
const DRIFT_INTERVAL_SECONDS = 3;
const TENANTS = { live: 'GITOLV', bad: 'GITOBD', unclaimed: 'GITOUN', decommissioned: 'GITODC' } as const;
/** Unpinned, in shard SHARD, wave 2: above the MAX_WAVE of the only operator of its shard. */
const ABOVE_WAVE = 'GITOWV';
/** Unpinned, wave 1, labelled with ABSENT_SHARD, a shard no operator serves (then relabelled into SHARD). */
const IN_ABSENT_SHARD = 'GITOSH';
const ABSENT_SHARD = 'gitops-gone';
/** Pinned to OWNER but owned by GONE, an operator that never ran here (as one removed before it handed its tenants over). */
const ORPHAN = 'GITOOR';
const GONE = '9.8.7';
const nameOf = (code: string): string => code.toLowerCase();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

type Condition = { type: string; status: string; reason: string; message: string };

/** Each captured object under a label of its own: the phase it was captured in. */
const captured = new Map<string, Obj>();
function keep(label: string, obj: Obj): void {
  captured.set(label, labelled(label, obj));
}

/** The operator writes (status subresource included) to one tenant in the audit log since `offset`. */
const operatorWritesTo = (offset: number, name: string): string[] =>
  auditWritesSince(offset)
    .filter((e) => e.objectRef?.resource === 'evatenants' && e.objectRef.name === name && !(e.userAgent ?? '').startsWith('kubectl'))
    .map((e) => `${e.verb} ${e.objectRef?.subresource ?? ''} ${e.userAgent ?? ''}`);

/**
 * Every version of one tenant the API server sends to a watch (`kubectl get --watch -o json`), by
 * field selector so the watch may start before the tenant exists.
 */
function watchTenant(name: string): { stop: () => Obj[] } {
  const args = ['get', 'evt', '--field-selector', `metadata.name=${name}`, '--watch', '-o', 'json'];
  const child: ChildProcess = spawn(join(requiredEnv('EVA_TOOLS_DIR'), 'kubectl'), args, {
    env: { ...process.env, KUBECONFIG: requiredEnv('KUBECONFIG') },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return {
    stop: () => {
      child.kill('SIGTERM');
      return text.split(/(?<=\n\})\n/).filter((part) => part.trim().startsWith('{')).map((part) => JSON.parse(part) as Obj);
    },
  };
}

const condition = (obj: Obj, type: string): Condition | undefined => ((obj['status'] as { conditions?: Condition[] } | undefined)?.conditions ?? []).find((c) => c.type === type);
const phaseOf = (obj: Obj): string | undefined => (obj['status'] as { phase?: string } | undefined)?.phase;
/** A label or annotation key as a kubectl jsonpath segment (its dots escaped). */
const jsonpathKey = (key: string): string => key.replace(/\./g, '\\.');
const ownerOf = (name: string): string => kubectlOk(['get', 'evt', name, '-o', `jsonpath={.metadata.annotations.${jsonpathKey(OWNER_ANNOTATION)}}`]);

/**
 * docs/gitops.md's argocd-cm command, run as written (in the checkout, into an `argocd` namespace of this
 * test's own), and the script read back from the ConfigMap to a file: what Argo CD would run.
 */
function installedHealthCheck(): string {
  const page = readFileSync(join(repoRoot, 'docs/gitops.md'), 'utf8');
  const block = [...page.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1] ?? '').find((b) => b.trim().startsWith('kubectl -n argocd patch configmap argocd-cm'));
  if (block === undefined) throw new Error('docs/gitops.md has no argocd-cm block');
  kubectl(['create', 'namespace', 'argocd']);
  kubectl(['create', 'configmap', 'argocd-cm', '-n', 'argocd']);
  const env = { ...process.env, KUBECONFIG: requiredEnv('KUBECONFIG'), PATH: `${requiredEnv('EVA_TOOLS_DIR')}:${process.env['PATH'] ?? ''}` };
  execFileSync('bash', ['-euo', 'pipefail', '-c', block.replace(/^ {2}/gm, '')], { cwd: repoRoot, env, stdio: 'inherit' });
  const data = JSON.parse(kubectlOk(['get', 'configmap', 'argocd-cm', '-n', 'argocd', '-o', 'jsonpath={.data}'])) as Record<string, string>;
  const script = data['resource.customizations.health.eva.aidonow.com_EvaTenant'];
  expect(script).toBe(readFileSync(join(repoRoot, 'deploy/argocd/health.lua'), 'utf8'));
  // The same command installs the EvaRollout check (judged in test/gitops/argo-rollout-health.test.ts).
  expect(data['resource.customizations.health.eva.aidonow.com_EvaRollout']).toBe(readFileSync(join(repoRoot, 'deploy/argocd/rollout-health.lua'), 'utf8'));
  const file = join(mkdtempSync(join(tmpdir(), 'eva-argocd-')), 'health.lua');
  writeFileSync(file, script ?? '');
  return file;
}

describe('kstatus and Argo CD health on real tenants', () => {
  let owner: OperatorProcess;
  let second: OperatorProcess;
  let sharded: OperatorProcess;
  let kstatus: string;
  let argoHealth: string;

  beforeAll(async () => {
    kstatus = buildTool('kstatus');
    argoHealth = buildTool('argo-health');
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    const env = { MAX_WAVE: '0', DRIFT_INTERVAL_SECONDS: String(DRIFT_INTERVAL_SECONDS) };
    owner = startOperator({ ...env, OPERATOR_VERSION: OWNER });
    second = startOperator({ ...env, OPERATOR_VERSION: SECOND });
    sharded = startOperator({ ...env, OPERATOR_VERSION: SHARDED, SHARD, MAX_WAVE: '1' });
    await Promise.all([owner.ready(), second.ready(), sharded.ready()]);
    // Unpinned, so not in the list above: deleted by 9.8.2 if it claimed them, at once if nobody did.
    kubectl(['delete', 'evt', nameOf(ABOVE_WAVE), nameOf(IN_ABSENT_SHARD), '--ignore-not-found', '--timeout=240s']);
    // The orphan is taken by OWNER once its dead owner's annotation goes (a leftover included).
    kubectl(['annotate', 'evt', nameOf(ORPHAN), `${OWNER_ANNOTATION}-`]);
    const leftovers = [...Object.values(TENANTS), ORPHAN].map(nameOf).filter((name) => pinnedVersion(name) !== undefined);
    for (const name of leftovers) kubectl(['patch', 'evt', name, '--type=merge', '-p', JSON.stringify({ spec: { operatorVersion: OWNER, suspend: false, deletionProtection: false } })]);
    for (const name of leftovers) kubectl(['delete', 'evt', name, '--wait=false']);
    for (const name of leftovers) expect(await waitForGone(name, 240_000), `leftover ${name}`).toBe(true);
  }, 900_000);

  afterAll(async () => {
    for (const code of Object.values(TENANTS)) kubectl(['patch', 'evt', nameOf(code), '--type=merge', '-p', JSON.stringify({ spec: { operatorVersion: OWNER, suspend: false } })]);
    if (kubectl(['get', 'evt', nameOf(ORPHAN), '-o', `jsonpath={.metadata.annotations.${jsonpathKey(OWNER_ANNOTATION)}}`]).stdout === GONE) kubectl(['annotate', 'evt', nameOf(ORPHAN), `${OWNER_ANNOTATION}-`]);
    const all = [...Object.values(TENANTS), ABOVE_WAVE, IN_ABSENT_SHARD, ORPHAN];
    for (const code of all) kubectl(['delete', 'evt', nameOf(code), '--wait=false', '--ignore-not-found']);
    for (const code of all) await waitForGone(nameOf(code), 240_000);
    await Promise.all([owner.stop(), second.stop(), sharded.stop()]);
    kubectl(['delete', 'namespace', 'argocd', '--wait=false', '--ignore-not-found']);
  }, 600_000);

  it('provisioning, then Active', async () => {
    const watch = watchTenant(nameOf(TENANTS.live));
    await sleep(1_000);
    applyTenant(nameOf(TENANTS.live), { capsuleCode: TENANTS.live, tier: 'Starter', operatorVersion: OWNER });
    await waitForTenant(nameOf(TENANTS.live), 'Active', isActive, 240_000);
    await sleep(500);
    const versions = watch.stop();
    const provisioning = versions.find((o) => phaseOf(o) === 'Provisioning' && condition(o, 'Reconciling')?.status === 'True');
    expect(provisioning, `no Provisioning version among ${String(versions.length)} watched`).toBeDefined();
    if (provisioning) keep('provisioning', provisioning);
    const active = capture(nameOf(TENANTS.live));
    expect(condition(active, 'Reconciling')).toBeUndefined();
    expect(condition(active, 'Stalled')).toBeUndefined();
    keep('active', active);
  }, 300_000);

  it('bad input: Stalled with the reason', async () => {
    applyTenant(nameOf(TENANTS.bad), { capsuleCode: TENANTS.bad, tier: 'Starter', operatorVersion: OWNER, seedsVersion: 'no-such-seeds' });
    await waitForTenant(nameOf(TENANTS.bad), 'Stalled', (t) => t.conditions['Stalled']?.status === 'True' && t.observedGeneration === t.generation, 240_000);
    const bad = capture(nameOf(TENANTS.bad));
    expect(condition(bad, 'Stalled')?.reason).toBe('UnknownSeedsVersion');
    keep('stalled-bad-input', bad);
  }, 300_000);

  it('unclaimed (a pin nobody runs; a wave no operator of its shard claims; a shard nobody serves; an owner that is gone): one operator of the three that see them writes Stalled once, nobody rewrites it', async () => {
    const offset = auditOffset();
    const unclaimed = nameOf(TENANTS.unclaimed);
    const aboveWave = nameOf(ABOVE_WAVE);
    const inAbsentShard = nameOf(IN_ABSENT_SHARD);
    const orphan = nameOf(ORPHAN);
    applyTenant(unclaimed, { capsuleCode: TENANTS.unclaimed, tier: 'Starter', operatorVersion: ABSENT });
    applyTenant(aboveWave, { capsuleCode: ABOVE_WAVE, tier: 'Starter', wave: 2 }, { [SHARD_LABEL]: SHARD });
    applyTenant(inAbsentShard, { capsuleCode: IN_ABSENT_SHARD, tier: 'Starter', wave: 1 }, { [SHARD_LABEL]: ABSENT_SHARD });
    const orphaned = { apiVersion: API_VERSION, kind: KIND, metadata: { name: orphan, annotations: { [OWNER_ANNOTATION]: GONE } }, spec: { capsuleCode: ORPHAN, tier: 'Starter', operatorVersion: OWNER } };
    kubectlOk(['apply', '-f', '-'], JSON.stringify(orphaned));
    // The Lease of the shard's only operator publishes its MAX_WAVE, read by the others.
    expect(kubectlOk(['get', 'lease', leaseNameForVersion(SHARDED, SHARD), '-n', operatorNamespace(), '-o', `jsonpath={.metadata.annotations.${jsonpathKey(MAX_WAVE_ANNOTATION)}}`])).toBe('1');
    // The leaders judge a tenant as it appears (the informer's event), and all of them every 30 s.
    const stalled = (t: { conditions: Record<string, { status: string }> }): boolean => t.conditions['Stalled']?.status === 'True';
    const { tenant } = await waitForTenant(unclaimed, 'Stalled', stalled, 90_000);
    expect(tenant.conditions['Stalled']?.reason).toBe('OperatorVersionAbsent');
    expect(tenant.conditions['Stalled']?.message).toContain(`spec.operatorVersion ${ABSENT} is not running`);
    const above = (await waitForTenant(aboveWave, 'Stalled', stalled, 90_000)).tenant;
    expect(above.conditions['Stalled']).toMatchObject({ reason: 'OperatorWaveAbsent' });
    expect(above.conditions['Ready']).toMatchObject({ status: 'False', reason: 'OperatorWaveAbsent' });
    expect(above.conditions['Stalled']?.message).toContain(`spec.wave 2 is above the MAX_WAVE of every running operator of shard ${SHARD} (at most 1: Leases ${leaseNameForVersion(SHARDED, SHARD)} in ${operatorNamespace()})`);
    const noShard = (await waitForTenant(inAbsentShard, 'Stalled', stalled, 90_000)).tenant;
    expect(noShard.conditions['Stalled']).toMatchObject({ reason: 'OperatorShardAbsent' });
    expect(noShard.conditions['Ready']).toMatchObject({ status: 'False', reason: 'OperatorShardAbsent' });
    expect(noShard.conditions['Stalled']?.message).toContain(`shard ${ABSENT_SHARD} (label ${SHARD_LABEL}) has no running operator`);
    const ownerGone = (await waitForTenant(orphan, 'Stalled', stalled, 90_000)).tenant;
    expect(ownerGone.conditions['Stalled']).toMatchObject({ reason: 'OperatorOwnerAbsent' });
    expect(ownerGone.conditions['Stalled']?.message).toContain(`owned by operator ${GONE} (annotation ${OWNER_ANNOTATION}), which is not running`);
    await sleep(65_000);
    for (const name of [unclaimed, aboveWave, inAbsentShard, orphan]) expect(operatorWritesTo(offset, name), name).toEqual([`update status eva-operator/${OWNER}`]);
    expect(describeShowsWarning(orphan, 'OperatorOwnerAbsent')).toBe(true);
    for (const op of [owner, second, sharded]) expect(metricSum(await scrape(op), 'eva_tenants_owned_by_absent_operator')).toBeGreaterThanOrEqual(1);
    keep('unclaimed-owner', capture(orphan));
    // Positive control: without the dead owner's annotation, the operator it is pinned to claims it.
    kubectlOk(['annotate', 'evt', orphan, `${OWNER_ANNOTATION}-`]);
    await waitForTenant(orphan, 'claimed, not Stalled', (t) => t.conditions['Stalled'] === undefined, 90_000);
    expect(ownerOf(orphan)).toBe(OWNER);
    // Not claimed: no owner, no finalizer. Reported: the Warning Event, and the gauge of every leader.
    const waiting = capture(aboveWave);
    expect(ownerOf(aboveWave)).toBe('');
    expect(kubectlOk(['get', 'evt', aboveWave, '-o', 'jsonpath={.metadata.finalizers}'])).toBe('');
    expect(describeShowsWarning(aboveWave, 'OperatorWaveAbsent')).toBe(true);
    for (const op of [owner, second, sharded]) expect(metricSum(await scrape(op), 'eva_tenants_above_max_wave')).toBeGreaterThanOrEqual(1);
    keep('unclaimed', capture(unclaimed));
    keep('unclaimed-wave', waiting);
    // The shard nobody serves: not claimed either, reported by every leader's gauge.
    const shardless = capture(inAbsentShard);
    expect(ownerOf(inAbsentShard)).toBe('');
    expect(describeShowsWarning(inAbsentShard, 'OperatorShardAbsent')).toBe(true);
    for (const op of [owner, second, sharded]) expect(metricSum(await scrape(op), 'eva_tenants_in_absent_shard')).toBeGreaterThanOrEqual(1);
    keep('unclaimed-shard', shardless);
    // Positive control: labelled into the served shard, its operator claims it, and Stalled goes.
    kubectlOk(['label', 'evt', inAbsentShard, `${SHARD_LABEL}=${SHARD}`, '--overwrite']);
    await waitForTenant(inAbsentShard, 'claimed, not Stalled', (t) => t.conditions['Stalled'] === undefined, 90_000);
    expect(ownerOf(inAbsentShard)).toBe(`${SHARDED}/${SHARD}`);
    // Positive control: at wave 1 the shard's operator claims it, and Stalled goes.
    patchTenantSpec(aboveWave, { wave: 1 });
    const claimed = await waitForTenant(aboveWave, 'claimed, not Stalled', (t) => t.conditions['Stalled'] === undefined && t.observedGeneration === t.generation, 90_000);
    expect(claimed.tenant.conditions['Ready']?.reason).not.toBe('OperatorWaveAbsent');
    expect(ownerOf(aboveWave)).toBe(`${SHARDED}/${SHARD}`);
  }, 300_000);

  it('suspended: no write to anything the tenant owns while drift is made by hand; resume repairs it', async () => {
    const name = nameOf(TENANTS.live);
    const namespace = `eva-tenant-${name}`;
    patchTenantSpec(name, { suspend: true });
    await waitForTenant(name, 'Suspended', (t) => t.conditions['Suspended']?.status === 'True' && t.observedGeneration === t.generation, 60_000);
    const offset = auditOffset();
    // The audit log gets a request's line when its response completes, which may be after the
    // Suspended write above reached the watch (and so after the offset): status writes are counted
    // from the drift on, by the time the API server received them.
    const driftMadeAt = new Date().toISOString();
    kubectlOk(['delete', 'resourcequota', '--all', '-n', namespace]);
    await waitForTenant(name, 'drift shown', (t) => (t.conditions['Suspended']?.message ?? '').includes('drift observed, not repaired'), 60_000);
    await sleep(4 * DRIFT_INTERVAL_SECONDS * 1000);
    const operatorWrites = auditWritesSince(offset).filter((e) => !(e.userAgent ?? '').startsWith('kubectl'));
    const owned = operatorWrites.filter((e) => e.objectRef?.namespace === namespace || (e.objectRef?.resource === 'evatenants' && e.objectRef.subresource !== 'status'));
    expect(owned.map((e) => `${e.verb} ${e.objectRef?.resource ?? ''}/${e.objectRef?.name ?? ''} ${e.userAgent ?? ''}`)).toEqual([]);
    // The drift shows in status: one write (the message changed), none after.
    const statusWrites = operatorWrites.filter((e) => e.objectRef?.resource === 'evatenants' && e.objectRef.name === name && e.objectRef.subresource === 'status' && e.requestReceivedTimestamp >= driftMadeAt);
    expect(statusWrites.length).toBe(1);
    expect(kubectlOk(['get', 'resourcequota', '-n', namespace, '-o', 'name'])).toBe('');
    keep('suspended', capture(name));
    patchTenantSpec(name, { suspend: false });
    await waitForTenant(name, 'quota restored', () => kubectlOk(['get', 'resourcequota', '-n', namespace, '-o', 'name']) !== '', 120_000);
    const resumed = await waitForTenant(name, 'Active again', (t) => isActive(t) && t.conditions['Suspended'] === undefined, 120_000);
    expect(resumed.tenant.conditions['Ready']?.status).toBe('True');
  }, 300_000);

  it('Decommissioning and Decommissioned as asked, and being deleted', async () => {
    const name = nameOf(TENANTS.decommissioned);
    // Provisioned first, so that there is something to remove while the watch looks on.
    applyTenant(name, { capsuleCode: TENANTS.decommissioned, tier: 'Starter', operatorVersion: OWNER });
    await waitForTenant(name, 'Active', isActive, 240_000);
    const decommissioning = watchTenant(name);
    await sleep(1_000);
    patchTenantSpec(name, { lifecycle: 'Decommissioned' });
    await waitForTenant(name, 'Decommissioned', (t) => t.phase === 'Decommissioned' && t.conditions['Ready']?.status === 'True', 240_000);
    const underway = decommissioning.stop().find((o) => phaseOf(o) === 'Decommissioning');
    expect(underway, 'a Decommissioning version').toBeDefined();
    if (underway) keep('decommissioning', underway);
    keep('decommissioned', capture(name));
    // Suspended and deleted: the deletion waits, so the object is caught while being deleted.
    const live = nameOf(TENANTS.live);
    patchTenantSpec(live, { suspend: true });
    await waitForTenant(live, 'Suspended', (t) => t.conditions['Suspended']?.status === 'True' && t.observedGeneration === t.generation, 60_000);
    kubectlOk(['delete', 'evt', live, '--wait=false']);
    await waitForTenant(live, 'deletion waiting', (t) => (t.conditions['Suspended']?.message ?? '').includes('the deletion waits'), 60_000);
    const deletingSuspended = capture(live);
    keep('deleting-suspended', deletingSuspended);
    patchTenantSpec(live, { suspend: false });
    const watch = watchTenant(live);
    expect(await waitForGone(live, 240_000)).toBe(true);
    const versions = watch.stop();
    const deleting = versions.find((o) => (o['metadata'] as { deletionTimestamp?: string }).deletionTimestamp !== undefined && phaseOf(o) === 'Decommissioning');
    expect(deleting, 'a Decommissioning version while deleted').toBeDefined();
    if (deleting) keep('deleting', deleting);
  }, 600_000);

  it('kstatus and the Argo CD health check (installed by docs/gitops.md\'s command) agree with the phase on every captured object', () => {
    const objects = [...captured.values()];
    const flux = judge(kstatus, [], objects);
    const argo = judge(argoHealth, [installedHealthCheck()], objects);
    const table = objects.map((o) => {
      const label = o.metadata.name;
      const phase = phaseOf(o) ?? '(none)';
      return `${label.padEnd(20)} ${phase.padEnd(16)} ${(flux[label]?.status ?? '?').padEnd(12)} ${(argo[label]?.status ?? '?').padEnd(12)} ${argo[label]?.message ?? ''}`;
    });
    console.log(['[gitops] object               phase            kstatus      argo health  argo message', ...table].join('\n'));
    const verdicts = Object.fromEntries(objects.map((o) => [o.metadata.name, `${flux[o.metadata.name]?.status ?? '?'}/${argo[o.metadata.name]?.status ?? '?'}`]));
    expect(verdicts).toEqual({
      provisioning: 'InProgress/Progressing',
      active: 'Current/Healthy',
      'stalled-bad-input': 'Failed/Degraded',
      unclaimed: 'Failed/Degraded',
      'unclaimed-wave': 'Failed/Degraded',
      'unclaimed-owner': 'Failed/Degraded',
      'unclaimed-shard': 'Failed/Degraded',
      suspended: 'Current/Suspended',
      decommissioning: 'InProgress/Progressing',
      decommissioned: 'Current/Healthy',
      'deleting-suspended': 'Terminating/Suspended',
      deleting: 'Terminating/Progressing',
    });
    expect(argo['unclaimed']?.message).toContain('OperatorVersionAbsent');
    expect(argo['unclaimed-wave']?.message).toContain('OperatorWaveAbsent');
    expect(argo['unclaimed-shard']?.message).toContain('OperatorShardAbsent');
    expect(flux['unclaimed-shard']?.message).toContain(`shard ${ABSENT_SHARD} (label ${SHARD_LABEL}) has no running operator`);
    expect(flux['unclaimed-wave']?.message).toContain('spec.wave 2 is above the MAX_WAVE');
    expect(argo['stalled-bad-input']?.message).toContain('UnknownSeedsVersion');
  });
});
