/**
 * EvaTenant specs the schema refuses, each with the spec field it must name: the run-time parser
 * (src/api/parse.test.ts) and the CRD on the API server (test/cluster/api/evatenant-crd.test.ts)
 * refuse the same ones, since both come from src/api/evatenant.ts.
 */
export const INVALID_SPECS: ReadonlyArray<readonly [label: string, spec: Record<string, unknown>, field: string]> = [
  ['a lowercase code', { capsuleCode: 'abcdef', tier: 'Starter' }, 'capsuleCode'],
  ['a 5-letter code', { capsuleCode: 'ABCDE', tier: 'Starter' }, 'capsuleCode'],
  ['a 7-letter code', { capsuleCode: 'ABCDEFG', tier: 'Starter' }, 'capsuleCode'],
  ['an unknown tier', { capsuleCode: 'ABCDEF', tier: 'Gold' }, 'tier'],
  ['wave 0', { capsuleCode: 'ABCDEF', tier: 'Starter', wave: 0 }, 'wave'],
  ['wave 4', { capsuleCode: 'ABCDEF', tier: 'Starter', wave: 4 }, 'wave'],
  ['a non-semver operatorVersion (latest)', { capsuleCode: 'ABCDEF', tier: 'Starter', operatorVersion: 'latest' }, 'operatorVersion'],
  ['a non-semver operatorVersion (v1.2)', { capsuleCode: 'ABCDEF', tier: 'Starter', operatorVersion: 'v1.2' }, 'operatorVersion'],
  ['a path in seedsVersion (../etc)', { capsuleCode: 'ABCDEF', tier: 'Starter', seedsVersion: '../etc' }, 'seedsVersion'],
  ['a path in seedsVersion (../../etc)', { capsuleCode: 'ABCDEF', tier: 'Starter', seedsVersion: '../../etc' }, 'seedsVersion'],
  ['an unknown lifecycle', { capsuleCode: 'ABCDEF', tier: 'Starter', lifecycle: 'Paused' }, 'lifecycle'],
  ['an unknown dataRetention', { capsuleCode: 'ABCDEF', tier: 'Starter', dataRetention: 'Keep' }, 'dataRetention'],
];
