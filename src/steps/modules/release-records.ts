/**
 * helm's release records checked before helm acts on them. An upgrade deletes the objects the
 * stored release lists that the new render no longer has, and diffs against them; an uninstall
 * deletes every object the newest record lists and runs its delete hooks. Those objects come from
 * the record, not from the render guard: a record the operator did not write (anything that may
 * write Secrets in the tenant namespace can) could name another tenant's objects. So before any helm
 * call on a module release, every stored revision of it (helm chooses which one it acts on by its
 * own rules; checking all of them needs none of those rules) must hold only what the operator
 * writes: the release's name and namespace in its payload, payload and labels agreeing, no hooks,
 * and a manifest the render guard's placement rules allow (render-guard/render-guard.ts storedObjectProblems).
 * Anything else is refused with ReleaseRecordRefused, naming release, revision and what is wrong,
 * and helm is not run on that release at all.
 *
 * A release a dead helm left pending is unlocked (Flux helm-controller's unlock): its pending
 * revision is marked failed and the caller upgrades, through the render guard. No rollback: a
 * rollback applies a stored manifest again, which no guard ever sees.
 */
import { Reason } from '../../api/reasons.ts';
import type { Kube } from '../../adapters/kube.ts';
import { markReleaseFailed, readStoredReleases, type StoredBody, type StoredRelease } from '../../adapters/helm-storage.ts';
import { InputError } from '../../errors.ts';
import { checkStoredManifest } from '../render-guard/render-guard.ts';
import { isPending } from './release-state.ts';

/** The release a record must belong to: helm's release name (= the module) in the tenant's namespace. */
export interface ReleaseIdentity {
  readonly namespace: string;
  readonly release: string;
}

function identityProblems(body: StoredBody, labels: StoredRelease['labels'], expected: ReleaseIdentity): string[] {
  const problems: string[] = [];
  if (body.name !== expected.release) problems.push(`its payload is release ${body.name || '<none>'}`);
  if (body.namespace !== expected.namespace) problems.push(`its payload is in namespace ${body.namespace || '<none>'}`);
  if (String(body.version) !== labels.version) problems.push(`its payload is revision ${String(body.version)}, its label ${labels.version || '<none>'}`);
  if (body.status !== labels.status) problems.push(`its payload is ${body.status || '<no status>'}, its label ${labels.status || '<none>'}`);
  return problems;
}

/** What is wrong with one stored revision, or an empty list when the operator could have written it. */
export function recordProblems(record: StoredRelease, expected: ReleaseIdentity): string[] {
  const { body } = record;
  if (body === undefined) return [record.unreadable ?? 'its payload is not a helm release'];
  const refusals = checkStoredManifest(body.manifest, { ...expected, images: [] });
  return [
    ...identityProblems(body, record.labels, expected),
    ...body.hooks.map((hook) => `hook ${hook.path || '<unnamed>'}: helm hooks are not allowed`),
    ...refusals.map((refusal) => `${refusal.object}: ${refusal.message}`),
  ];
}

/** The refusal for the release: every failing revision with its Secret and what is wrong, or undefined. */
export function refusalOf(records: readonly StoredRelease[], expected: ReleaseIdentity): InputError | undefined {
  const refused = records.flatMap((record) => {
    const problems = recordProblems(record, expected);
    return problems.length === 0 ? [] : [`revision ${record.labels.version || '?'} (Secret ${record.secret}): ${problems.join('; ')}`];
  });
  if (refused.length === 0) return undefined;
  return new InputError(
    Reason.ReleaseRecordRefused,
    `release ${expected.release} has a record the operator did not write, so helm is not run on it until a platform administrator removes the record: ${refused.join('; ')}`,
  );
}

/** Every stored revision of the release, each checked; throws ReleaseRecordRefused when one fails. */
export async function checkedRecords(kube: Kube, expected: ReleaseIdentity): Promise<StoredRelease[]> {
  const records = await readStoredReleases(kube, expected.namespace, expected.release);
  const refusal = refusalOf(records, expected);
  if (refusal !== undefined) throw refusal;
  return records;
}

/** The newest revision by its label (checkedRecords made label and payload agree). */
const newest = (records: readonly StoredRelease[]): StoredRelease | undefined =>
  records.reduce<StoredRelease | undefined>((top, record) => (top === undefined || Number(record.labels.version) > Number(top.labels.version) ? record : top), undefined);

/**
 * Unlocks a release a dead helm left pending (helm refuses every later operation with "another
 * operation is in progress"): only the operator runs helm for its tenants, one call per release at a
 * time, so a pending record seen before a call is stale. Returns the revision it unlocked, if any.
 */
export async function unlockRelease(kube: Kube, namespace: string, records: readonly StoredRelease[]): Promise<StoredRelease | undefined> {
  const top = newest(records);
  if (top === undefined || !isPending(top.labels.status)) return undefined;
  await markReleaseFailed(kube, namespace, top, `Release unlocked by eva-operator from stale ${top.labels.status} state (an interrupted helm)`);
  return top;
}
