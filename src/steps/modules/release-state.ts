/**
 * Observe, then decide (Flux helm-controller's state.go and atomic_release.go): what a module's release
 * looks like against what the tenant wants is one closed state, from which both the action ensure takes
 * and the problem verify reports follow. Pure, so the decision table is tested as a table.
 *
 * A release a dead helm left locked ("another operation is in progress") is unlocked, then upgraded
 * through the render guard (its stored records checked: release-records.ts); nothing is ever rolled back to a stored manifest.
 */
import { GROUP, LABELS, MANAGED_BY } from '../../api/constants.ts';
import { isModuleName, type ModuleName } from '../../api/modules.ts';
import { Reason } from '../../api/reasons.ts';
import type { ReleaseRecord } from '../../adapters/helm.ts';

/** The release label that says "this release has exactly these values on exactly this chart". */
export const VALUES_HASH_LABEL = `${GROUP}/values-hash`;

const PENDING_STATUSES: ReadonlySet<string> = new Set(['pending-install', 'pending-upgrade', 'pending-rollback']);
export const isPending = (status: string): boolean => PENDING_STATUSES.has(status);

export type ReleaseState =
  /** No release: install it. */
  | { readonly kind: 'Absent' }
  /** A helm process died mid-operation and left it pending: unlock, then upgrade --install. */
  | { readonly kind: 'Locked'; readonly revision: number; readonly status: string }
  /** The last operation failed (or it was uninstalled): upgrade. */
  | { readonly kind: 'Failed'; readonly revision: number; readonly status: string }
  /** Deployed, with other values or another chart than wanted: upgrade. */
  | { readonly kind: 'OutOfSync'; readonly revision: number }
  /** Deployed as wanted, but its Deployment was deleted: only helm puts it back (upgrade). */
  | { readonly kind: 'Drifted'; readonly revision: number }
  /** Deployed as wanted: nothing to do (its pods' readiness is verify's to judge). */
  | { readonly kind: 'InSync'; readonly revision: number };

export function releaseState(desiredHash: string, current: ReleaseRecord | undefined, deploymentPresent: boolean): ReleaseState {
  if (current === undefined) return { kind: 'Absent' };
  const revision = current.version;
  if (isPending(current.status)) return { kind: 'Locked', revision, status: current.status };
  if (current.status !== 'deployed') return { kind: 'Failed', revision, status: current.status };
  if (current.labels[VALUES_HASH_LABEL] !== desiredHash) return { kind: 'OutOfSync', revision };
  if (!deploymentPresent) return { kind: 'Drifted', revision };
  return { kind: 'InSync', revision };
}

export type ReleaseAction = 'none' | 'upgrade' | 'unlock-then-upgrade';

/** What ensure does about a state (`helm upgrade --install` both installs and upgrades). */
export function actionFor(state: ReleaseState): ReleaseAction {
  switch (state.kind) {
    case 'InSync':
      return 'none';
    case 'Locked':
      return 'unlock-then-upgrade';
    default:
      return 'upgrade';
  }
}

/** What verify reports about a state, or undefined when the release is as wanted. */
export function problemFor(module: string, state: ReleaseState): { reason: Reason; message: string } | undefined {
  switch (state.kind) {
    case 'InSync':
      return undefined;
    case 'Absent':
      return { reason: Reason.ReleaseMissing, message: `${module} is not installed` };
    case 'Locked':
    case 'Failed':
      return { reason: Reason.ReleaseNotDeployed, message: `${module} revision ${String(state.revision)} is ${state.status}` };
    case 'OutOfSync':
      return { reason: Reason.ReleaseOutdated, message: `${module} revision ${String(state.revision)} has other values or chart than desired` };
    case 'Drifted':
      return { reason: Reason.DeploymentMissing, message: `${module} has no Deployment` };
  }
}

/** What is wrong with the releases against the desired hashes (in module order), if anything. */
export function releaseProblems(
  desired: ReadonlyMap<ModuleName, string>,
  releases: readonly ReleaseRecord[],
  withDeployment: ReadonlySet<string>,
): { reason: Reason; message: string }[] {
  const byName = new Map(releases.map((r) => [r.name, r]));
  const problems: { reason: Reason; message: string }[] = [];
  for (const [module, hash] of desired) {
    const problem = problemFor(module, releaseState(hash, byName.get(module), withDeployment.has(module)));
    if (problem !== undefined) problems.push(problem);
  }
  for (const release of undesiredReleases(desired, releases)) {
    problems.push({ reason: Reason.UndesiredRelease, message: `${release.name} is installed but not part of the tier` });
  }
  return problems;
}

/** A module release this operator installed (helm may hold others in the namespace). */
export const isOurs = (release: ReleaseRecord): boolean =>
  release.labels[LABELS.managedBy] === MANAGED_BY && isModuleName(release.name);

/** Releases this operator installed for modules the tenant no longer has (e.g. after a tier downgrade). */
export function undesiredReleases(desired: ReadonlyMap<ModuleName, string> | ReadonlySet<string>, releases: readonly ReleaseRecord[]): ReleaseRecord[] {
  return releases.filter((r) => isOurs(r) && !desired.has(r.name as ModuleName));
}
