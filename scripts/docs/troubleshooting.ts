/**
 * docs/troubleshooting.md from the reason catalogue (src/api/reasons.ts) and its guide
 * (src/api/reason-guide.ts): every reason, by area, with its meaning, likely cause and what to do.
 */
import { Reason } from '../../src/api/reasons.ts';
import { REASON_AREAS, REASON_GUIDE, type ReasonArea, reasonAnchor } from '../../src/api/reason-guide.ts';
import { code, generatedHeader, page } from './markdown.ts';

const INTRO = `Every reason the operator writes on a condition, into \`status.decommission\` or on an Event, from
the one catalogue (\`src/api/reasons.ts\`). Start from the tenant:

\`\`\`text
kubectl get evt                      # phase, ready and URL of every tenant
kubectl describe evt <name>          # conditions (type, status, reason, message) and recent Events
kubectl get events -n default --field-selector involvedObject.kind=EvaTenant,involvedObject.name=<name>
\`\`\`

Events about EvaTenants are recorded in namespace \`default\` (EvaTenants are cluster-scoped). The first
condition that is not True is where the tenant is; \`Ready\` repeats its reason, and \`Stalled\` (present
only while True) means the operator cannot go on until someone changes something: the reasons
whose meaning starts with *Stalled* below. Everything else the operator retries with backoff, and it
clears by itself once the cause is gone. Conditions, phases and fields: [the API reference](api-reference.md).`;

/** Reasons in catalogue order, grouped by the area their guide entry names. */
function byArea(): Map<ReasonArea, Reason[]> {
  const groups = new Map<ReasonArea, Reason[]>(Object.keys(REASON_AREAS).map((area) => [area as ReasonArea, []]));
  for (const reason of Object.values(Reason)) groups.get(REASON_GUIDE[reason].area)?.push(reason);
  return groups;
}

function entry(reason: Reason): string {
  const { meaning, cause, action } = REASON_GUIDE[reason];
  return [`### ${reason}`, '', `- **Meaning:** ${meaning}`, `- **Likely cause:** ${cause}`, `- **What to do:** ${action}`].join('\n');
}

const contents = (groups: Map<ReasonArea, Reason[]>): string =>
  [...groups].map(([area, reasons]) => `- ${REASON_AREAS[area]}: ${reasons.map((r) => `[${code(r)}](#${reasonAnchor(r)})`).join(', ')}`).join('\n');

export function renderTroubleshooting(): string {
  const groups = byArea();
  const sections = [...groups].map(([area, reasons]) => [`## ${REASON_AREAS[area]}`, ...reasons.map(entry)].join('\n\n'));
  return page([generatedHeader('Troubleshooting: every reason', 'src/api/reason-guide.ts and src/api/reasons.ts'), INTRO, contents(groups), ...sections]);
}
