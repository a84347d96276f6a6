/**
 * The hub's view of each tenant written onto its work (docs/multi-cluster.md, "The hub's view of a
 * tenant"). The engine feeds the member's status back onto the work, but its own conditions (Applied,
 * Available) say nothing of the tenant's health, and it leaves the last feedback in place when the
 * member stops reporting. So every pass writes on each tenant work's status the summary workSummary()
 * judges from the feedback and the member's availability: what kstatus and the Argo CD health check
 * read there. Only the summary's condition types are the reporter's; the write is guarded by the
 * work's resourceVersion, since the member's work agent patches the same status (a conflict is left
 * to the next pass).
 */
import { describeApiError, isConflict, isNotFound, type Kube, MERGE_PATCH } from '../adapters/kube.ts';
import type { Logger } from '../log.ts';
import { type ManifestWork, type MemberAvailability, withWorkSummary, workSummary } from '../multicluster/manifest-work.ts';
import { WORK_GROUP, WORK_VERSION } from './hub-objects.ts';

/** A member the engine does not know (its ManagedCluster removed): nothing it holds is reported. */
const UNKNOWN_MEMBER: MemberAvailability = { status: 'Unknown' };

export class WorkReporter {
  private readonly hub: Kube;
  private readonly log: Logger;
  private readonly now: () => Date;

  constructor(options: { hub: Kube; log: Logger; now?: () => Date }) {
    this.hub = options.hub;
    this.log = options.log;
    this.now = options.now ?? (() => new Date());
  }

  /** Writes the summary of every work whose status does not say it yet. */
  async pass(works: readonly ManifestWork[], members: ReadonlyMap<string, MemberAvailability>): Promise<void> {
    const now = this.now().toISOString();
    for (const work of works) {
      const conditions = withWorkSummary(work, workSummary(work, members.get(work.metadata.namespace) ?? UNKNOWN_MEMBER), now);
      if (conditions !== undefined) await this.write(work, conditions);
    }
  }

  private async write(work: ManifestWork, conditions: NonNullable<ReturnType<typeof withWorkSummary>>): Promise<void> {
    const { name, namespace, resourceVersion } = work.metadata;
    try {
      await this.hub.custom.patchNamespacedCustomObjectStatus(
        { group: WORK_GROUP, version: WORK_VERSION, plural: 'manifestworks', namespace, name, body: { metadata: { resourceVersion }, status: { conditions } } },
        MERGE_PATCH,
      );
    } catch (err) {
      // Changed since the listing (the agent's status, the mover's rewrite) or gone: the next pass judges it again.
      if (isConflict(err) || isNotFound(err)) return;
      this.log.warn({ work: `${namespace}/${name}`, err: describeApiError(err) }, "the tenant work's summary was not written; retried on the next pass");
    }
  }
}
