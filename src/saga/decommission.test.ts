import { describe, expect, it } from 'vitest';
import { DECOMMISSION_ORDER, forcedSteps } from './decommission.ts';

describe('forcedSteps (eva.aidonow.com/force-decommission)', () => {
  it('reads a comma-separated list of step names', () => {
    expect(forcedSteps(' streams, record ')).toEqual({ steps: new Set(['streams', 'record']), unknown: [] });
  });

  it('reports names that are not steps instead of ignoring them silently', () => {
    expect(forcedSteps('streams,everything')).toEqual({ steps: new Set(['streams']), unknown: ['everything'] });
  });

  it('`all` forces every step', () => {
    expect(forcedSteps('all').steps).toEqual(new Set(DECOMMISSION_ORDER));
  });

  it('no annotation forces nothing', () => {
    expect(forcedSteps(undefined)).toEqual({ steps: new Set(), unknown: [] });
  });
});

describe('decommission order', () => {
  it('removes traffic first and the namespace last', () => {
    expect(DECOMMISSION_ORDER[0]).toBe('ingress');
    expect(DECOMMISSION_ORDER[1]).toBe('modules');
    expect(DECOMMISSION_ORDER.at(-1)).toBe('namespace');
  });
});
