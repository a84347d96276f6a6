import { describe, expect, it } from 'vitest';
import { type CrdPlan, type InstalledCrd, planCrdUpgrade, takenAway } from './crd-plan.ts';

const spec = (fields: readonly string[], versions = ['v1alpha1']): unknown => ({
  group: 'eva.aidonow.com',
  versions: versions.map((name) => ({ name, schema: { openAPIV3Schema: { properties: { spec: { properties: Object.fromEntries(fields.map((f) => [f, { type: 'string' }])) } } } } })),
});
const installed = (stamp: string | undefined, fields = ['tier', 'lifecycle'], apis = ['v1alpha1']): InstalledCrd => ({ servedApis: apis, storedApis: apis, stamp, spec: spec(fields, apis) });
const plan = (input: Partial<Parameters<typeof planCrdUpgrade>[0]>): CrdPlan => planCrdUpgrade({ bundledApis: ['v1alpha1'], appVersion: '1.4.0', installed: undefined, ...input });
const shown = (p: CrdPlan): string => (p.state === 'refuse' ? `refuse: ${p.message}` : `${p.state}: ${p.lines.join(' | ')}`);

describe('the installed CRD against crds/', () => {
  it.each<[string, Partial<Parameters<typeof planCrdUpgrade>[0]>, RegExp]>([
    ['not installed: installed', {}, /^absent: .*not installed: step 2 installs the bundled one \(1\.4\.0, API versions v1alpha1\)/],
    ['an API version crds/ lacks: newer, refused', { installed: installed('1.4.0', ['tier'], ['v1alpha1', 'v1beta1']) }, /^refuse: .*serves or stores v1beta1, which crds\/ \(1\.4\.0: v1alpha1\) does not have/],
    ['a stored version crds/ lacks: newer, refused', { installed: { ...installed('1.4.0'), storedApis: ['v1alpha0'] } }, /^refuse: .*serves or stores v1alpha0/],
    ['a later stamp: newer, refused', { installed: installed('2.0.0') }, /^refuse: .*eva\.aidonow\.com\/crd-version=2\.0\.0, crds\/ is 1\.4\.0\. Refusing to downgrade it/],
    ['crds/ adds an API version: older', { bundledApis: ['v1alpha1', 'v1beta1'], installed: installed('1.3.0') }, /^older: .*OLDER than crds\/ \(installed version 1\.3\.0; API versions v1alpha1, crds\/ adds v1beta1\): step 2 upgrades it to 1\.4\.0/],
    ['the same API versions: compare the specs first', { installed: installed('1.4.0') }, /^compare: $/],
    ['the same spec: same', { installed: installed('1.4.0'), merged: spec(['tier', 'lifecycle']) }, /^same: .*the SAME as crds\/ \(installed version 1\.4\.0; API versions v1alpha1\)/],
    ['an earlier stamp, a spec that differs: older', { installed: installed('1.3.0'), merged: spec(['tier']) }, /^older: .*OLDER than crds\/ \(installed version 1\.3\.0, crds\/ is 1\.4\.0\)/],
    ['no stamp, crds/ only adds: older', { installed: installed(undefined, ['tier']), merged: spec(['tier', 'lifecycle']) }, /^older: .*installed with no eva\.aidonow\.com\/crd-version annotation; crds\/ only adds to its schema/],
    ['the same stamp, crds/ takes a field away: newer or changed by hand, refused', { installed: installed('1.4.0'), merged: spec(['tier']) }, /^refuse: applying crds\/ would remove or change 1 field\(s\) of the installed CRD:\n {2}- spec\.versions\[0\]\.schema\.openAPIV3Schema\.properties\.spec\.properties\.lifecycle\n.*\(installed version 1\.4\.0\) is NEWER than this checkout's 1\.4\.0, or was changed by hand/],
  ])('%s', (_label, input, expected) => {
    expect(shown(plan(input))).toMatch(expected);
  });

  it('says it ignores a stamp that is not a version, and judges without it', () => {
    const p = plan({ installed: installed('latest', ['tier']), merged: spec(['tier', 'lifecycle']) });
    expect(p.state).toBe('older');
    expect(p.state === 'refuse' ? [] : p.lines[0]).toContain("ignoring the annotation eva.aidonow.com/crd-version='latest'");
  });
});

describe('takenAway', () => {
  it('lists what the second removes or changes, not what it adds', () => {
    expect(takenAway({ a: 1, b: { c: [1, 2] } }, { a: 1, b: { c: [1, 2, 3] }, d: 4 }, 'spec')).toEqual([]);
    expect(takenAway({ a: 1, b: { c: [1, 2] } }, { a: 2, b: { c: [1] } }, 'spec')).toEqual(['spec.a', 'spec.b.c[1]']);
    expect(takenAway({ a: { b: 1 } }, { a: 'x' }, 'spec')).toEqual(['spec.a']);
  });
});
