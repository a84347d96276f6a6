/**
 * One tenant's EvaTenant never touches another tenant's NATS data (issue 26), with the real operator
 * process, API server, helm and NATS:
 * (a) the attack: a second EvaTenant with a live tenant's capsule code naming its uid in
 *     restore-from-uid is refused, then deleted; every stream, message, bucket value, account JWT,
 *     keys Secret and the victim's Secret eva-nats stay, and its own credentials still read its messages;
 * (b) the positive control: a legitimate restore of retained data takes it over, and what was
 *     published before the delete is readable with the new tenant's credentials;
 * (c) a restore naming a uid whose data is not marked retained is refused with RestoreRefused: a live
 *     (kept, Decommissioned) tenant's, and a tenant's deleted with Delete;
 * (d) force-decommission all still removes: namespace, account, streams and keys are gone.
 *
 * Isolation: its own NATS and operator version 9.7.26 with MAX_WAVE 0; tenants pinned to it, capsule
 * codes VICTMA, RSTORA, RSTKEP, RSTDEL and FORCDA, deleted at the end.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, FORCE_DECOMMISSION_ANNOTATION, KIND, LABELS, OWNER_ANNOTATION, RESTORE_FROM_ANNOTATION, RESTORED_FROM_UID_ANNOTATION } from '../src/api/constants.ts';
import { eventually, kubectl, kubectlOk } from '../test/support/kubectl.ts';
import { operatorNatsEnv, startNatsServer, type TestNatsServer } from '../test/support/nats-server.ts';
import { operatorNamespace } from '../test/support/operator-identity.ts';
import { repoRoot } from '../test/support/tools.ts';
import { type Credentials, inTenant, moduleCredentials, type NatsTarget, publishAsModule, readAsModule, refused, streamNames, tenantAccount } from '../test/support/nats.ts';
import { type OperatorProcess, removeSecretsDir, startOperator } from '../test/support/operator.ts';
import { isActive, patchTenantSpec, pinnedVersion, type TenantView, waitForGone, waitForTenant } from '../test/support/tenants.ts';

const VERSION = '9.7.26';
const VICTIM = 'VICTMA';
const RETAINED = 'RSTORA';
const KEPT = 'RSTKEP';
const DELETED = 'RSTDEL';
const FORCED = 'FORCDA';
const CODES = [VICTIM, RETAINED, KEPT, DELETED, FORCED] as const;
const ACTIVE_MS = 240_000;
const CASE_MS = 900_000;
const SENT = ['before-1', 'before-2', 'before-3'];
const KV_VALUE = 'the tenant\'s own value';

const nsOf = (code: string): string => `eva-tenant-${code.toLowerCase()}`;
const keysSecret = (code: string): string => `eva-nats-account-${code.toLowerCase()}`;

function tenant(name: string, code: string, spec: Record<string, unknown> = {}, annotations: Record<string, string> = {}): void {
  const manifest = { apiVersion: API_VERSION, kind: KIND, metadata: { name, annotations }, spec: { capsuleCode: code, tier: 'Starter', wave: 1, operatorVersion: VERSION, ...spec } };
  kubectlOk(['apply', '-f', '-'], JSON.stringify(manifest));
}

const uidOf = (name: string): string => kubectlOk(['get', 'evt', name, '-o', 'jsonpath={.metadata.uid}']);
const secretJson = (name: string, namespace: string): { metadata: { resourceVersion: string; labels?: Record<string, string>; annotations?: Record<string, string> } } | undefined => {
  const result = kubectl(['get', 'secret', name, '-n', namespace, '-o', 'json']);
  return result.status === 0 ? (JSON.parse(result.stdout) as ReturnType<typeof secretJson>) : undefined;
};
const refusedWith = (reason: string) => (t: TenantView): boolean => Object.values(t.conditions).some((c) => c.status === 'False' && c.reason === reason);
const conditionMessages = (name: string): string => JSON.stringify(kubectlOk(['get', 'evt', name, '-o', 'jsonpath={.status.conditions}']));
const eventMessages = (uid: string, reason: string, type: 'Normal' | 'Warning'): string =>
  kubectlOk(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.uid=${uid},reason=${reason},type=${type}`, '-o', 'jsonpath={.items[*].message}']);
const warnings = (uid: string, reason: string): string => eventMessages(uid, reason, 'Warning');

/** Deletes a tenant of ours, whoever made it, with its data (Delete) and no protection. */
function deleteOurs(name: string): void {
  if (pinnedVersion(name) === undefined) return;
  kubectl(['annotate', 'evt', name, `${OWNER_ANNOTATION}-`]);
  kubectl(['patch', 'evt', name, '--type=merge', '-p', JSON.stringify({ spec: { deletionProtection: false, dataRetention: 'Delete', lifecycle: 'Active' } })]);
  kubectl(['delete', 'evt', name, '--wait=false']);
}

const NAMES = [...CODES.map((c) => c.toLowerCase()), 'attacker', 'restorer', 'kept-restorer', 'deleted-restorer'];

describe('tenant against tenant: NATS data by proof, force-decommission that removes', () => {
  let nats: TestNatsServer;
  let target: NatsTarget;
  let operator: OperatorProcess;

  const waitActive = async (name: string): Promise<void> => {
    await waitForTenant(name, 'Active', isActive, ACTIVE_MS);
  };

  beforeAll(async () => {
    kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
    kubectlOk(['wait', '--for=condition=Established', 'crd/evatenants.eva.aidonow.com']);
    nats = await startNatsServer();
    target = { url: nats.url };
    operator = startOperator({ OPERATOR_VERSION: VERSION, MAX_WAVE: '0', DRIFT_INTERVAL_SECONDS: '3', ...operatorNatsEnv(nats) });
    await operator.ready();
    for (const name of NAMES) deleteOurs(name);
    for (const name of NAMES) expect(await waitForGone(name, ACTIVE_MS), `leftover ${name}`).toBe(true);
    // Keys an earlier run left (their NATS went with that run): this run starts without them.
    kubectl(['delete', 'secret', '-n', operatorNamespace(), '--ignore-not-found', ...CODES.map(keysSecret)]);
  }, 600_000);

  afterAll(async () => {
    for (const name of NAMES) deleteOurs(name);
    for (const name of NAMES) await waitForGone(name, 300_000);
    await operator.stop();
    removeSecretsDir(operator);
    await nats.stop();
  }, 600_000);

  it('(a) a second tenant naming a live tenant\'s uid is refused, then deleted: every stream, message, bucket value, account, key and Secret of the victim stays', async () => {
    tenant('victma', VICTIM);
    await waitActive('victma');
    const victimUid = uidOf('victma');
    await publishAsModule(VICTIM, SENT);
    await inTenant(VICTIM, async (s) => (await s.existingKv(`eva-${VICTIM}-data`))?.put('e2e.own', KV_VALUE), target);
    const credentials = moduleCredentials(VICTIM);
    const before = {
      keys: secretJson(keysSecret(VICTIM), operatorNamespace())?.metadata.resourceVersion,
      creds: secretJson('eva-nats', nsOf(VICTIM))?.metadata.resourceVersion,
      account: tenantAccount(VICTIM),
      streams: await streamNames(VICTIM, target),
    };
    expect(before.streams).toEqual([`KV_eva-${VICTIM}-data`, `eva-${VICTIM}-commands`, `eva-${VICTIM}-events`]);

    tenant('attacker', VICTIM, {}, { [RESTORE_FROM_ANNOTATION]: victimUid });
    await waitForTenant('attacker', 'refused (CapsuleCodeInUse)', refusedWith('CapsuleCodeInUse'), ACTIVE_MS);
    const attackerUid = uidOf('attacker');
    kubectlOk(['delete', 'evt', 'attacker', '--wait=false']);
    expect(await waitForGone('attacker', ACTIVE_MS), 'the attacker was not deleted').toBe(true);
    // Its DeprovisionComplete says it held nothing of the code, never that the code's resources are gone.
    const complete = eventMessages(attackerUid, 'DeprovisionComplete', 'Normal');
    expect(complete).toContain('belongs to another EvaTenant and was left untouched');
    expect(complete).not.toContain(`every resource of tenant ${VICTIM} is gone`);

    expect(secretJson(keysSecret(VICTIM), operatorNamespace())?.metadata.resourceVersion).toBe(before.keys);
    expect(secretJson('eva-nats', nsOf(VICTIM))?.metadata.resourceVersion).toBe(before.creds);
    expect(tenantAccount(VICTIM)).toBe(before.account);
    // An administrator's user of the account logs in only while NATS holds the account JWT.
    expect(await streamNames(VICTIM, target)).toEqual(before.streams);
    expect(await inTenant(VICTIM, async (s) => (await (await s.existingKv(`eva-${VICTIM}-data`))?.get('e2e.own'))?.string(), target)).toBe(KV_VALUE);
    expect(await readAsModule(VICTIM, SENT.length, credentials)).toEqual(SENT);
    expect(isActive((await waitForTenant('victma', 'Active', isActive, ACTIVE_MS)).tenant)).toBe(true);
  }, CASE_MS);

  it('(b) a legitimate restore of retained data takes it over: the messages published before the delete are readable with the new tenant\'s credentials', async () => {
    tenant('rstora', RETAINED, { dataRetention: 'Retain' });
    await waitActive('rstora');
    const retainedUid = uidOf('rstora');
    await publishAsModule(RETAINED, SENT);
    const account = tenantAccount(RETAINED);
    kubectlOk(['delete', 'evt', 'rstora', '--wait=false']);
    expect(await waitForGone('rstora', ACTIVE_MS)).toBe(true);
    const marked = secretJson(keysSecret(RETAINED), operatorNamespace())?.metadata.annotations ?? {};
    expect(marked).toMatchObject({ 'eva.aidonow.com/retained-from-uid': retainedUid, 'eva.aidonow.com/retained-code': RETAINED });

    tenant('restorer', RETAINED, {}, { [RESTORE_FROM_ANNOTATION]: retainedUid });
    await waitActive('restorer');
    const restored = secretJson(keysSecret(RETAINED), operatorNamespace())?.metadata;
    expect(restored?.labels?.[LABELS.tenantUid]).toBe(uidOf('restorer'));
    expect(restored?.annotations?.[RESTORED_FROM_UID_ANNOTATION]).toBe(retainedUid);
    expect(restored?.annotations?.['eva.aidonow.com/retained-from-uid']).toBeUndefined();
    expect(tenantAccount(RETAINED)).toBe(account);
    expect(await readAsModule(RETAINED, SENT.length, moduleCredentials(RETAINED))).toEqual(SENT);
  }, CASE_MS);

  it('(c) a restore naming a uid whose data is not marked retained is refused with RestoreRefused: a live tenant\'s, a tenant\'s deleted with Delete', async () => {
    // A live tenant (kept with lifecycle Decommissioned, its data retained): refused while it exists.
    tenant('rstkep', KEPT, { dataRetention: 'Retain' });
    await waitActive('rstkep');
    const keptUid = uidOf('rstkep');
    await publishAsModule(KEPT, SENT);
    patchTenantSpec('rstkep', { lifecycle: 'Decommissioned' });
    await waitForTenant('rstkep', 'Decommissioned', (t) => t.phase === 'Decommissioned', ACTIVE_MS);
    const keptKeys = secretJson(keysSecret(KEPT), operatorNamespace())?.metadata.resourceVersion;
    tenant('kept-restorer', KEPT, {}, { [RESTORE_FROM_ANNOTATION]: keptUid });
    await waitForTenant('kept-restorer', 'RestoreRefused', refusedWith('RestoreRefused'), ACTIVE_MS);
    expect(conditionMessages('kept-restorer')).toContain(`EvaTenant rstkep (uid ${keptUid}) still exists`);
    kubectlOk(['delete', 'evt', 'kept-restorer', '--wait=false']);
    expect(await waitForGone('kept-restorer', ACTIVE_MS)).toBe(true);
    expect(secretJson(keysSecret(KEPT), operatorNamespace())?.metadata.resourceVersion).toBe(keptKeys);
    expect(await inTenant(KEPT, async ({ jsm }) => (await jsm.streams.info(`eva-${KEPT}-events`)).state.messages, target)).toBe(SENT.length);

    // A tenant deleted with Delete: nothing retained, so nothing to restore (no empty account is handed out).
    tenant('rstdel', DELETED);
    await waitActive('rstdel');
    const deletedUid = uidOf('rstdel');
    kubectlOk(['delete', 'evt', 'rstdel', '--wait=false']);
    expect(await waitForGone('rstdel', ACTIVE_MS)).toBe(true);
    tenant('deleted-restorer', DELETED, {}, { [RESTORE_FROM_ANNOTATION]: deletedUid });
    await waitForTenant('deleted-restorer', 'RestoreRefused', refusedWith('RestoreRefused'), ACTIVE_MS);
    expect(conditionMessages('deleted-restorer')).toContain('has no retained data');
    expect(tenantAccount(DELETED)).toBeUndefined();
  }, CASE_MS);

  it('(d) force-decommission all still runs every remove: the namespace, the account, its streams and keys are gone, and the event says so', async () => {
    tenant('forcda', FORCED);
    await waitActive('forcda');
    const uid = uidOf('forcda');
    const credentials: Credentials = moduleCredentials(FORCED);
    expect(await streamNames(FORCED, target)).toHaveLength(3);
    kubectlOk(['annotate', 'evt', 'forcda', `${FORCE_DECOMMISSION_ANNOTATION}=all`]);
    kubectlOk(['delete', 'evt', 'forcda', '--wait=false']);
    expect(await waitForGone('forcda', ACTIVE_MS)).toBe(true);
    expect(await eventually(() => kubectl(['get', 'namespace', nsOf(FORCED)]).status !== 0, ACTIVE_MS, 500), 'namespace left').toBe(true);
    expect(tenantAccount(FORCED)).toBeUndefined();
    expect(await refused(FORCED, credentials)).toBe(true);
    const event = warnings(uid, 'DecommissionForced');
    expect(event).toContain('forced past the verification of: ingress (remove ran)');
    expect(event).toContain('account (remove ran)');
  }, CASE_MS);
});
