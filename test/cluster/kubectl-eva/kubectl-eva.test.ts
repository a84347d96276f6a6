/**
 * kubectl-eva from the sources (node src/kubectl-eva/main.ts, as a user with the suite's admin
 * kubeconfig) against the test plane and the real operator process, one tenant through its life:
 * - status of a stuck tenant (operator with INGRESS_CLASS eva-plain: the Ingress never gets an address,
 *   WaitingForAddress) prints the troubleshooting entry and its link; the same operator version
 *   restarted with eva-lb makes it Active, and status shows every condition True and the URL;
 * - rotate sets the annotation; force refuses a misspelt step before writing anything;
 * - a tenant author (RBAC on evatenants, not the verb platform-control) is refused restore and force by
 *   the API server's admission policy eva-tenant-platform-controls: its message printed, exit 1, nothing
 *   written (the positive control: the same commands as the admin, in the purge and above);
 * - deleted with dataRetention Retain, retained lists its code and former uid;
 * - purge restores it and deletes it with Delete, waiting until gone; retained no longer lists it
 *   (so the run leaves no retained data on the shared plane).
 * Isolation: operator 9.9.41 with MAX_WAVE 0 claims only the tenant pinned to it (code KE + run letters).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORCE_DECOMMISSION_ANNOTATION, ROTATE_NATS_CREDENTIALS_ANNOTATION } from '../../../src/api/constants.ts';
import { REASON_GUIDE } from '../../../src/api/reason-guide.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../../support/operator.ts';
import { conditionFalse, isActive, waitForGone, waitForTenant } from '../../support/tenants.ts';
import { kubectl, kubectlOk, requiredEnv, tenantManifest } from '../../support/kubectl.ts';
import { operatorNamespace } from '../../support/operator-identity.ts';
import { runLetters } from '../../support/random.ts';
import { repoRoot } from '../../support/tools.ts';

const VERSION = '9.9.41';
const CODE = `KE${runLetters()}`;
const NAME = CODE.toLowerCase();
const home = mkdtempSync(join(tmpdir(), 'kubectl-eva-home-'));
/** A user with every verb a tenant author has on EvaTenants, and not platform-control. */
const AUTHOR = `kubectl-eva-author-${NAME}`;
const authorRbac = (): string =>
  [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: AUTHOR }, rules: [{ apiGroups: ['eva.aidonow.com'], resources: ['evatenants'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: AUTHOR }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: AUTHOR }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: AUTHOR }] },
  ].map((o) => JSON.stringify(o)).join('\n');
const DENIED = "ValidatingAdmissionPolicy 'eva-tenant-platform-controls' with binding 'eva-tenant-platform-controls' denied request";

/**
 * kubectl eva as a user runs it: no KUBECONFIG unless given, a HOME without ~/.kube. A child process
 * waited for without blocking: the operator's output pipes must keep draining meanwhile.
 */
function eva(args: readonly string[], env: Record<string, string> = { KUBECONFIG: requiredEnv('KUBECONFIG') }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(repoRoot, 'src/kubectl-eva/main.ts'), ...args], { env: { PATH: process.env['PATH'] ?? '', HOME: home, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let [stdout, stderr] = ['', ''];
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (status) => { resolve({ status, stdout, stderr }); }));
}

async function evaOk(args: readonly string[]): Promise<string> {
  const result = await eva(args);
  if (result.status !== 0) throw new Error(`kubectl eva ${args.join(' ')} exited ${String(result.status)}: ${result.stderr}`);
  return result.stdout;
}

const operatorWith = (ingressClass: string): OperatorProcess => startOperator({ OPERATOR_VERSION: VERSION, MAX_WAVE: '0', INGRESS_CLASS: ingressClass });
let operator: OperatorProcess;
let uid = '';

beforeAll(async () => {
  kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
  kubectlOk(['apply', '-f', '-'], authorRbac());
  operator = operatorWith('eva-plain');
  await operator.ready();
  kubectlOk(['apply', '-f', '-'], tenantManifest(NAME, { capsuleCode: CODE, tier: 'Starter', operatorVersion: VERSION, dataRetention: 'Retain' }));
  uid = kubectlOk(['get', 'evt', NAME, '-o', 'jsonpath={.metadata.uid}']);
});

afterAll(async () => {
  // Best effort after a failure midway: nothing of this run stays (the operator removes it, so it runs until then).
  kubectl(['patch', 'evt', NAME, '--type', 'merge', '-p', '{"spec":{"dataRetention":"Delete"}}']);
  kubectl(['delete', 'evt', NAME, '--wait=false', '--ignore-not-found']);
  await waitForGone(NAME, 120_000);
  await operator.stop();
  removeSecretsDir(operator);
  kubectl(['delete', 'clusterrolebinding,clusterrole', AUTHOR, '--ignore-not-found']);
  rmSync(home, { recursive: true, force: true });
}, 180_000);

describe('kubectl eva against the test plane', () => {
  it('status of a stuck tenant (no Ingress address): IngressReady False, WaitingForAddress with its troubleshooting entry and link', async () => {
    await waitForTenant(NAME, 'IngressReady False/WaitingForAddress', conditionFalse('IngressReady', 'WaitingForAddress'), 180_000);
    const text = await evaOk(['status', NAME]);
    console.log(`[kubectl-eva] status of a stuck tenant:\n${text}`);
    expect(text).toMatch(/IngressReady\s+False\s+WaitingForAddress\s+\d+(s|m\d*s?)\s/);
    expect(text).toContain('docs/troubleshooting.md#waitingforaddress');
    expect(text).toContain(REASON_GUIDE.WaitingForAddress.action);
    expect(text).toContain(`Owner version:  ${VERSION}`);
    // The positive control of the troubleshooting section: a True condition gets none.
    expect(text).not.toContain('docs/troubleshooting.md#namespaceactive');
    const json = JSON.parse(await evaOk(['status', NAME, '-o', 'json'])) as { uid: string; troubleshooting: { reason: string }[]; events: { reason: string }[] };
    expect(json.uid).toBe(uid);
    expect(json.troubleshooting.map((g) => g.reason)).toContain('WaitingForAddress');
    expect(json.events.map((e) => e.reason)).toContain('ProvisioningStarted');
  }, 240_000);

  it('status of the same tenant Active (operator restarted with eva-lb): every condition True, the URL, the modules, no troubleshooting', async () => {
    await operator.stop();
    removeSecretsDir(operator);
    operator = operatorWith('eva-lb');
    await operator.ready();
    await waitForTenant(NAME, 'Active', isActive, 240_000);
    const text = await evaOk(['status', NAME]);
    for (const type of ['Ready', 'NamespaceReady', 'Provisioned', 'SeedLoaded', 'ModulesDeployed', 'IngressReady']) expect(text).toMatch(new RegExp(`^  ${type}\\s+True\\s`, 'm'));
    expect(text).toMatch(new RegExp(`URL:\\s+https?://${NAME}\\.`));
    expect(text).not.toContain('Troubleshooting');
    expect(text).toMatch(/Modules:\n {2}MODULE\s+CHART\s+READY/);
  }, 300_000);

  it('honours --kubeconfig (and says so when there is no kubeconfig at all)', async () => {
    expect((await eva(['status', NAME, '--kubeconfig', requiredEnv('KUBECONFIG')], {})).stdout).toMatch(/Phase:\s+Active/);
    const none = await eva(['status', NAME], {});
    expect(none.status).toBe(1);
    expect(none.stderr).toContain('no kubeconfig');
  });

  it('rotate sets the rotation annotation to the current time; force refuses a misspelt step and writes nothing', async () => {
    const before = Date.now() - 1_000;
    await evaOk(['rotate', NAME]);
    const at = kubectlOk(['get', 'evt', NAME, '-o', `jsonpath={.metadata.annotations.${ROTATE_NATS_CREDENTIALS_ANNOTATION.replaceAll('.', '\\.')}}`]);
    expect(Date.parse(at)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    const refused = await eva(['force', NAME, '--past', 'strems']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/unknown decommission step\(s\): strems; the steps are .*streams/);
    expect(kubectlOk(['get', 'evt', NAME, '-o', 'jsonpath={.metadata.annotations}'])).not.toContain(FORCE_DECOMMISSION_ANNOTATION);
  });

  it('a tenant author is refused force and restore by the admission policy: its message, exit 1, nothing written', async () => {
    const force = await eva(['force', NAME, '--past', 'streams', '--as', AUTHOR]);
    expect(force.status).toBe(1);
    expect(force.stderr).toContain(DENIED);
    expect(force.stderr).toContain('annotation eva.aidonow.com/force-decommission may be set, changed or removed only by platform administrators');
    expect(kubectlOk(['get', 'evt', NAME, '-o', 'jsonpath={.metadata.annotations}'])).not.toContain(FORCE_DECOMMISSION_ANNOTATION);
    // The positive control: the admin may (then takes it off again, so the decommission below verifies every step).
    expect(await evaOk(['force', NAME, '--past', 'streams'])).toContain('It is not being decommissioned');
    expect(kubectlOk(['get', 'evt', NAME, '-o', `jsonpath={.metadata.annotations.${FORCE_DECOMMISSION_ANNOTATION.replaceAll('.', '\\.')}}`])).toBe('streams');
    kubectlOk(['annotate', 'evt', NAME, `${FORCE_DECOMMISSION_ANNOTATION}-`]);
    const other = `${NAME}-x`;
    const restore = await eva(['restore', other, '--code', CODE, '--from-uid', uid, '--as', AUTHOR]);
    expect(restore.status).toBe(1);
    expect(restore.stderr).toContain(DENIED);
    expect(restore.stderr).toContain('annotation eva.aidonow.com/restore-from-uid may be set');
    expect(kubectl(['get', 'evt', other]).status).not.toBe(0);
  });

  it('retained lists the code and former uid once the tenant is deleted with dataRetention Retain (and did not before)', async () => {
    const namespace = operatorNamespace();
    expect(await evaOk(['retained', '-n', namespace])).not.toContain(CODE);
    kubectlOk(['delete', 'evt', NAME, '--wait=false']);
    expect(await waitForGone(NAME, 180_000)).toBe(true);
    const text = await evaOk(['retained', '-n', namespace]);
    expect(text).toMatch(new RegExp(`^${CODE}\\s+${uid}\\s+\\S+\\s+\\S+\\s+no$`, 'm'));
  }, 240_000);

  it('purge restores the data, waits until Active, deletes it with Delete and waits until gone: retained no longer lists it', async () => {
    const out = await evaOk(['purge', CODE, '--from-uid', uid, '--operator-version', VERSION, '--timeout', '5m']);
    console.log(`[kubectl-eva] purge:\n${out}`);
    expect(out).toContain(`purged: ${CODE}`);
    expect(out).toMatch(/\] Active/);
    expect(kubectl(['get', 'evt', NAME]).status).not.toBe(0);
    expect(await evaOk(['retained', '-n', operatorNamespace()])).not.toContain(CODE);
  }, 600_000);
});
