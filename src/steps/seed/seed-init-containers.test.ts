import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { podSeeded } from './seed-init-containers.ts';

function pod(args: string[], exitCode: number | undefined): V1Pod {
  return {
    spec: { containers: [], initContainers: [{ name: 'seed-loader', args }] },
    status: { initContainerStatuses: [{ name: 'seed-loader', image: 'x', imageID: '', ready: false, restartCount: 0, state: exitCode === undefined ? { running: {} } : { terminated: { exitCode } } }] },
  };
}

describe('podSeeded', () => {
  it.each([
    ['exit 0 for the desired version', pod(['seed', '--version', '1.0.0'], 0), true],
    ['exit 1', pod(['seed', '--version', '1.0.0'], 1), false],
    ['still running', pod(['seed', '--version', '1.0.0'], undefined), false],
    ['another version', pod(['seed', '--version', '0.9.0'], 0), false],
    ['no version argument', pod(['seed'], 0), false],
  ])('%s -> %s', (_label, p, expected) => {
    expect(podSeeded(p, '1.0.0')).toBe(expected);
  });
});
