/**
 * The hub's view of each tenant written onto the engine's objects GitOps tools read on the hub
 * (docs/multi-cluster.md, "The hub's view of a tenant"). The engine feeds the member's status back onto
 * the tenant's work, but its own conditions (Applied, Available) say nothing of the tenant's health,
 * and it leaves the last feedback in place when the member stops reporting. So every pass writes on
 * each tenant work's status the summary workSummary() judges from the feedback and the member's
 * availability, and on each tenant Placement the engine placed nowhere its Stalled summary: what
 * kstatus and the Argo CD health check read there. Only the summary's condition types are the
 * reporter's; the write is guarded by the object's resourceVersion, since the engine patches the same
 * status (a conflict is left to the next pass).
 */
import { describeApiError, isConflict, isNotFound, type Kube, MERGE_PATCH } from '../adapters/kube.ts';
import type { Logger } from '../log.ts';
import { type ManifestWork, type MemberAvailability, type WorkCondition, withSummary, workSummary } from '../multicluster/manifest-work.ts';
import { type Placement, placementSummary } from '../multicluster/placement.ts';
import { PLACEMENT_GROUP, PLACEMENT_VERSION, WORK_GROUP, WORK_VERSION } from './hub-objects.ts';

/** A member the engine does not know (its ManagedCluster removed): nothing it holds is reported. */
const UNKNOWN_MEMBER: MemberAvailability = { status: 'Unknown' };

/** The object a summary is written on, as its status subresource is addressed. */
interface Target {
  group: string;
  version: string;
  plural: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
}

export class SummaryReporter {
  private readonly hub: Kube;
  private readonly log: Logger;
  private readonly now: () => Date;

  constructor(options: { hub: Kube; log: Logger; now?: () => Date }) {
    this.hub = options.hub;
    this.log = options.log;
    this.now = options.now ?? (() => new Date());
  }

  /** Writes the summary of every tenant work and Placement whose status does not say it yet. */
  async pass(works: readonly ManifestWork[], placements: readonly Placement[], members: ReadonlyMap<string, MemberAvailability>): Promise<void> {
    const now = this.now().toISOString();
    for (const work of works) {
      const summary = workSummary(work, members.get(work.metadata.namespace) ?? UNKNOWN_MEMBER);
      await this.write({ group: WORK_GROUP, version: WORK_VERSION, plural: 'manifestworks', metadata: work.metadata }, withSummary(work.status?.conditions ?? [], summary, now));
    }
    for (const placement of placements) {
      const summary = placementSummary(placement);
      await this.write({ group: PLACEMENT_GROUP, version: PLACEMENT_VERSION, plural: 'placements', metadata: placement.metadata }, withSummary(placement.status?.conditions ?? [], summary, now));
    }
  }

  private async write(target: Target, conditions: WorkCondition[] | undefined): Promise<void> {
    if (conditions === undefined) return;
    const { group, version, plural, metadata: { name, namespace, resourceVersion } } = target;
    try {
      await this.hub.custom.patchNamespacedCustomObjectStatus({ group, version, plural, namespace, name, body: { metadata: { resourceVersion }, status: { conditions } } }, MERGE_PATCH);
    } catch (err) {
      // Changed since the listing (the engine's status, the mover's rewrite) or gone: the next pass judges it again.
      if (isConflict(err) || isNotFound(err)) return;
      this.log.warn({ [plural]: `${namespace}/${name}`, err: describeApiError(err) }, 'the tenant summary was not written; retried on the next pass');
    }
  }
}
