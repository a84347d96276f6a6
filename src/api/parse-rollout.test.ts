import { describe, expect, it } from 'vitest';
import { API_VERSION } from './constants.ts';
import { InvalidRolloutError, parseEvaRollout } from './parse-rollout.ts';

const raw = (spec: unknown): unknown => ({ apiVersion: API_VERSION, kind: 'EvaRollout', metadata: { name: 'r', generation: 2, creationTimestamp: '2030-01-01T00:00:00Z' }, spec });

describe('parseEvaRollout', () => {
  it('applies the defaults the API server would', () => {
    const rollout = parseEvaRollout(raw({ targetVersion: '1.5.0', waves: [{ wave: 1, batch: { count: 2 } }] }));
    expect(rollout.metadata).toEqual({ name: 'r', generation: 2, creationTimestamp: '2030-01-01T00:00:00Z' });
    expect(rollout.spec).toMatchObject({ onFailure: 'Rollback', paused: false, waves: [{ wave: 1, batch: { count: 2 }, bakeSeconds: 300 }] });
  });

  it('names every problem with its path', () => {
    let error: unknown;
    try {
      parseEvaRollout(raw({ targetVersion: 'latest', waves: [{ wave: 4, batch: { count: 0 } }] }));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidRolloutError);
    const problems = (error as InvalidRolloutError).problems.join('\n');
    expect(problems).toContain('/spec/targetVersion');
    expect(problems).toContain('/spec/waves/0/wave');
    expect(problems).toContain('/spec/waves/0/batch/count');
  });
});
