/**
 * `kubectl eva status`: what an on-call engineer needs first about one EvaTenant, built from the typed
 * tenant and its Events without I/O (so it is tested as a table): phase, owner, the conditions with
 * their age, the troubleshooting entry of every reason that is not True, modules, URL, recent Events.
 */
import { CONDITION_TYPES, OWNER_ANNOTATION } from '../api/constants.ts';
import type { Condition, EvaTenant } from '../api/evatenant.ts';
import type { Reason } from '../api/reasons.ts';
import { REASON_GUIDE, reasonDocLink } from '../api/reason-guide.ts';
import { ageOf } from './duration.ts';
import { columns } from './table.ts';

/** An Event about the tenant, as much of it as the view shows. */
export interface TenantEvent {
  type: string;
  reason: string;
  message: string;
  count: number;
  /** When it was last seen (RFC 3339); absent on an Event without any time. */
  lastSeen?: string;
}

export interface ConditionView {
  type: string;
  /** True, False, Unknown; `-` when the operator has not written the condition yet. */
  status: string;
  reason: string;
  message: string;
  lastTransitionTime?: string;
  /** Since lastTransitionTime, e.g. 4m12s. */
  age: string;
}

export interface GuideView {
  reason: string;
  /** The conditions that are not True with this reason. */
  conditions: string[];
  meaning: string;
  cause: string;
  action: string;
  link: string;
}

export interface ModuleView {
  module: string;
  chartVersion: string;
  ready: string;
  message: string;
}

export interface EventView extends TenantEvent {
  age: string;
}

export interface StatusView {
  name: string;
  uid: string;
  phase: string;
  /** The operator version that owns the tenant (annotation), and the one its spec pins, if any. */
  ownerVersion: string;
  pinnedVersion?: string;
  lifecycle: string;
  url?: string;
  conditions: ConditionView[];
  troubleshooting: GuideView[];
  unknownReasons: string[];
  modules: ModuleView[];
  events: EventView[];
}

/** How many Events the view keeps, newest first. */
export const EVENTS_SHOWN = 10;

const isReason = (reason: string): reason is Reason => Object.hasOwn(REASON_GUIDE, reason);

/** Ready first, then the five provisioning conditions in saga order, then any other the status holds. */
function orderedConditions(conditions: readonly Condition[], now: Date): ConditionView[] {
  const known: readonly string[] = ['Ready', ...CONDITION_TYPES.filter((type) => type !== 'Ready')];
  const byType = new Map(conditions.map((c) => [c.type, c]));
  const types = [...known, ...conditions.map((c) => c.type).filter((type) => !known.includes(type))];
  return types.map((type) => {
    const c = byType.get(type);
    if (c === undefined) return { type, status: '-', reason: '-', message: 'not reported yet', age: '-' };
    return { type, status: c.status, reason: c.reason, message: c.message, lastTransitionTime: c.lastTransitionTime, age: ageOf(c.lastTransitionTime, now) };
  });
}

/** One entry per reason of a condition that is not True (Ready repeats the failing condition's reason). */
function guidesOf(conditions: readonly ConditionView[]): { guides: GuideView[]; unknown: string[] } {
  const failing = conditions.filter((c) => c.status !== 'True' && c.status !== '-');
  const reasons = [...new Set(failing.map((c) => c.reason))];
  const guides = reasons.filter(isReason).map((reason) => {
    const { meaning, cause, action } = REASON_GUIDE[reason];
    return { reason, conditions: failing.filter((c) => c.reason === reason).map((c) => c.type), meaning, cause, action, link: reasonDocLink(reason) };
  });
  return { guides, unknown: reasons.filter((reason) => !isReason(reason)) };
}

function modulesOf(tenant: EvaTenant): ModuleView[] {
  return Object.entries(tenant.status?.modules ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([module, m]) => ({ module, chartVersion: m.chartVersion ?? '-', ready: `${String(m.readyReplicas)}/${String(m.replicas)}`, message: m.message }));
}

function eventsOf(events: readonly TenantEvent[], now: Date): EventView[] {
  const time = (e: TenantEvent): number => (e.lastSeen === undefined ? 0 : Date.parse(e.lastSeen) || 0);
  return [...events]
    .sort((a, b) => time(b) - time(a))
    .slice(0, EVENTS_SHOWN)
    .map((e) => ({ ...e, age: ageOf(e.lastSeen, now) }));
}

export function statusView(tenant: EvaTenant, events: readonly TenantEvent[], now: Date): StatusView {
  const conditions = orderedConditions(tenant.status?.conditions ?? [], now);
  const { guides, unknown } = guidesOf(conditions);
  const pinned = tenant.spec.operatorVersion;
  const url = tenant.status?.url;
  return {
    name: tenant.metadata.name,
    uid: tenant.metadata.uid ?? '',
    phase: tenant.status?.phase ?? 'none yet (no operator has written a status)',
    ownerVersion: tenant.metadata.annotations?.[OWNER_ANNOTATION] ?? 'none (no operator has claimed it)',
    ...(pinned === undefined ? {} : { pinnedVersion: pinned }),
    lifecycle: tenant.spec.lifecycle,
    ...(url === undefined ? {} : { url }),
    conditions,
    troubleshooting: guides,
    unknownReasons: unknown,
    modules: modulesOf(tenant),
    events: eventsOf(events, now),
  };
}

function guideLines(guide: GuideView): string[] {
  return [
    `  ${guide.reason} (${guide.conditions.join(', ')}): ${guide.link}`,
    `    Meaning:      ${guide.meaning}`,
    `    Likely cause: ${guide.cause}`,
    `    What to do:   ${guide.action}`,
  ];
}

const section = (title: string, lines: readonly string[], empty: string): string[] => ['', `${title}:`, ...(lines.length > 0 ? lines : [`  ${empty}`])];

export function renderStatus(view: StatusView): string {
  const head = columns([
    ['Name:', `${view.name} (uid ${view.uid})`],
    ['Phase:', view.phase],
    ['Lifecycle:', view.lifecycle],
    ['Owner version:', `${view.ownerVersion}${view.pinnedVersion === undefined ? '' : ` (spec pins ${view.pinnedVersion})`}`],
    ['URL:', view.url ?? 'none (the tenant has no Ingress)'],
  ]);
  const conditions = columns([['TYPE', 'STATUS', 'REASON', 'AGE', 'MESSAGE'], ...view.conditions.map((c) => [c.type, c.status, c.reason, c.age, c.message])], '  ');
  const guides = [...view.troubleshooting.flatMap(guideLines), ...view.unknownReasons.map((r) => `  ${r}: not in this version's catalogue (an operator newer than kubectl-eva?)`)];
  const modules = columns([['MODULE', 'CHART', 'READY', 'MESSAGE'], ...view.modules.map((m) => [m.module, m.chartVersion, m.ready, m.message])], '  ');
  const events = columns([['AGE', 'TYPE', 'REASON', 'COUNT', 'MESSAGE'], ...view.events.map((e) => [e.age, e.type, e.reason, String(e.count), e.message])], '  ');
  return [
    ...head,
    '',
    'Conditions:',
    ...conditions,
    ...(guides.length > 0 ? section('Troubleshooting (conditions not True)', guides, '') : []),
    ...section('Modules', view.modules.length > 0 ? modules : [], 'none reported yet'),
    ...section(`Events (newest first, at most ${String(EVENTS_SHOWN)})`, view.events.length > 0 ? events : [], 'none (Events expire after an hour by default)'),
    '',
  ].join('\n');
}
