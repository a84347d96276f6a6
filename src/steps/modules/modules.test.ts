import { describe, expect, it } from 'vitest';
import { DependencyError, InputError } from '../../errors.ts';
import { combineFailures } from './modules.ts';

describe('failures of several modules', () => {
  it('surfaces an InputError first and names every module', () => {
    const err = combineFailures([
      { module: 'orbit-crm', error: new DependencyError('HelmFailed', 'api down') },
      { module: 'orbit-itsm', error: new InputError('ChartRenderFailed', 'bad value') },
    ]);
    expect(err).toBeInstanceOf(InputError);
    expect(err?.reason).toBe('ChartRenderFailed');
    expect(err?.message).toBe('orbit-crm: api down; orbit-itsm: bad value');
    expect(combineFailures([])).toBeUndefined();
    expect(combineFailures([{ module: 'x', error: new Error('plain') }])).toBeInstanceOf(DependencyError);
  });
});
