/**
 * The hub controller (`eva-operator hub`): the one eva component on a multi-cluster hub. Each pass
 * lists the tenants' works and Placements and the members' availability once, writes the hub's view
 * of each tenant onto its work and Placement (reporter.ts: what GitOps tools read on the hub), and,
 * with moves on, moves the tenants whose placement changed (mover.ts).
 */
import type { Kube } from '../adapters/kube.ts';
import type { Logger } from '../log.ts';
import { listMemberAvailability, listTenantPlacements, listTenantWorks } from './hub-objects.ts';
import { Mover } from './mover.ts';
import { SummaryReporter } from './reporter.ts';

export interface HubControllerOptions {
  readonly hub: Kube;
  /** Its own namespace: the members' access Secrets and the move records. */
  readonly namespace: string;
  /** Where the portal writes the tenants' Placements. */
  readonly tenantsNamespace: string;
  /** Move tenants whose Placement decided another member (needs the members' access Secrets). */
  readonly moves: boolean;
  readonly log: Logger;
  readonly now?: () => Date;
}

export class HubController {
  private readonly hub: Kube;
  private readonly tenantsNamespace: string;
  private readonly reporter: SummaryReporter;
  private readonly mover: Mover | undefined;

  constructor(options: HubControllerOptions) {
    this.hub = options.hub;
    this.tenantsNamespace = options.tenantsNamespace;
    const now = options.now === undefined ? {} : { now: options.now };
    this.reporter = new SummaryReporter({ hub: options.hub, log: options.log.child({ part: 'reporter' }), ...now });
    this.mover = options.moves ? new Mover({ ...options, log: options.log.child({ part: 'mover' }) }) : undefined;
  }

  async pass(): Promise<void> {
    const [works, placements, members] = await Promise.all([listTenantWorks(this.hub), listTenantPlacements(this.hub, this.tenantsNamespace), listMemberAvailability(this.hub)]);
    await this.reporter.pass(works, placements, members);
    await this.mover?.pass(works, placements);
  }
}
