/**
 * `kubectl eva force NAME --past STEP[,STEP]`: the value of annotation eva.aidonow.com/force-decommission.
 * Step names are checked here against the decommission's own list (so a typo is refused before it is
 * written, with the names that exist); the API server's admission policy still decides who may set it.
 */
import { DECOMMISSION_ORDER, forcedSteps } from '../saga/decommission.ts';

/** The steps a decommission can be forced past, in its order. */
export const STEPS: readonly string[] = DECOMMISSION_ORDER;
/** What the annotation accepts besides the step names. */
export const ALL_STEPS = 'all';

export class UnknownSteps extends Error {
  override readonly name = 'UnknownSteps';
  readonly unknown: readonly string[];
  constructor(unknown: readonly string[]) {
    super(`unknown decommission step(s): ${unknown.join(', ')}; the steps are ${[...DECOMMISSION_ORDER, ALL_STEPS].join(', ')}`);
    this.unknown = unknown;
  }
}

const namesIn = (list: string | undefined): string[] => (list ?? '').split(',').map((n) => n.trim()).filter(Boolean);

/**
 * The annotation's new value: the steps already forced and the ones asked for, in decommission order
 * (forcing one more step never un-forces an earlier one), or `all`. Throws UnknownSteps for a name the
 * decommission does not have.
 */
export function forceValue(requested: string, current: string | undefined): string {
  const asked = namesIn(requested);
  if (asked.length === 0) throw new UnknownSteps(['(none given)']);
  const { unknown } = forcedSteps(asked.filter((n) => n !== ALL_STEPS).join(','));
  if (unknown.length > 0) throw new UnknownSteps(unknown);
  const wanted = new Set([...asked, ...namesIn(current)]);
  if (wanted.has(ALL_STEPS)) return ALL_STEPS;
  return DECOMMISSION_ORDER.filter((step) => wanted.has(step)).join(',');
}
