import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { gzipSync } from 'node:zlib';
import { encodePayload, MAX_RELEASE_PAYLOAD_BYTES, parseStoredRelease, type StoredRelease } from '../../adapters/helm-storage.ts';
import { recordProblems, refusalOf } from './release-records.ts';

const NS = 'eva-tenant-abcdef';
const EXPECTED = { namespace: NS, release: 'orbit-crm' };

type Obj = Record<string, unknown>;
const honestObjects = (): Obj[] => [
  { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'orbit-crm', namespace: NS }, spec: { template: { spec: { containers: [{ name: 'c', image: 'an/old-image:0.1' }] } } } },
  { apiVersion: 'v1', kind: 'Service', metadata: { name: 'orbit-crm' } },
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'orbit-crm-config' } },
  { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'orbit-crm-credentials' } },
];
const manifestOf = (objects: Obj[]): string => objects.map((o) => `---\n${stringify(o)}`).join('');

/** A storage Secret as helm writes it, with `change` applied to the release payload first. */
function record(version: number, status: string, change: (release: Obj) => void = () => undefined): StoredRelease {
  const release: Obj = { name: 'orbit-crm', namespace: NS, version, info: { status, description: 'Install complete' }, manifest: manifestOf(honestObjects()), config: { replicaCount: 1 } };
  change(release);
  return parseStoredRelease({
    metadata: { name: `sh.helm.release.v1.orbit-crm.v${String(version)}`, labels: { owner: 'helm', name: 'orbit-crm', version: String(version), status } },
    data: { release: encodePayload(release) },
  });
}

describe('helm storage records', () => {
  it('reads the payload helm writes (gzip, base64, base64 again by the Secret)', () => {
    const read = record(3, 'deployed');
    expect(read.body).toMatchObject({ name: 'orbit-crm', namespace: NS, version: 3, status: 'deployed', hooks: [] });
    expect(read.body?.manifest).toContain('orbit-crm-config');
  });

  it('names a payload helm could not read', () => {
    const broken = parseStoredRelease({ metadata: { name: 'sh.helm.release.v1.orbit-crm.v1', labels: { name: 'orbit-crm', version: '1', status: 'deployed' } }, data: { release: 'bm90IGJhc2U2NA==' } });
    expect(broken.body).toBeUndefined();
    expect(broken.unreadable).toMatch(/^its data\.release is not a helm release/);
  });

  it('a forged record that would expand past the limit (a gzip bomb) is unreadable, not read into memory', () => {
    const bomb = gzipSync(Buffer.alloc(MAX_RELEASE_PAYLOAD_BYTES + 1, 0x20));
    const forged = parseStoredRelease({ metadata: { name: 'sh.helm.release.v1.orbit-crm.v1', labels: { name: 'orbit-crm', version: '1', status: 'deployed' } }, data: { release: Buffer.from(bomb.toString('base64'), 'latin1').toString('base64') } });
    expect(forged.body).toBeUndefined();
    expect(recordProblems(forged, EXPECTED)).toEqual([expect.stringMatching(/over 8 MiB expanded/)]);
    // Positive control: the same size just under the limit is decoded (and is no release).
    const small = gzipSync(Buffer.from('{"name":"orbit-crm"}'));
    expect(parseStoredRelease({ metadata: { name: 'x' }, data: { release: Buffer.from(small.toString('base64'), 'latin1').toString('base64') } }).body?.name).toBe('orbit-crm');
  });

  it('a stored manifest nested past the limit is refused before the parser builds it, and no parser text is passed on', () => {
    const deep = record(1, 'deployed', (release) => {
      release['manifest'] = `---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: orbit-crm-config}\ndata: ${'['.repeat(20_000)}`;
    });
    expect(recordProblems(deep, EXPECTED).join('; ')).toMatch(/nested deeper than 64 levels/);
    const broken = record(1, 'deployed', (release) => {
      release['manifest'] = '---\nkind: ConfigMap\nmetadata: {name: "secret-value-here\n';
    });
    const problems = recordProblems(broken, EXPECTED).join('; ');
    expect(problems).toMatch(/not valid YAML/);
    expect(problems).not.toContain('secret-value-here');
  });
});

describe('release records checked before helm acts on them', () => {
  it('accepts what the operator writes, whatever image an older catalogue put in it', () => {
    expect(recordProblems(record(1, 'superseded'), EXPECTED)).toEqual([]);
    expect(recordProblems(record(2, 'pending-upgrade'), EXPECTED)).toEqual([]);
  });

  it('refuses an object in another namespace and a kind or name the module does not own, naming each', () => {
    const forged = record(2, 'pending-upgrade', (release) => {
      release['manifest'] = manifestOf([
        ...honestObjects(),
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'orbit-crm-config', namespace: 'eva-tenant-victim' } },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'orbit-crm' } },
        { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'eva-nats' } },
      ]);
    });
    expect(recordProblems(forged, EXPECTED)).toEqual([
      `ConfigMap/eva-tenant-victim/orbit-crm-config: only namespace ${NS} is allowed`,
      'RoleBinding/orbit-crm: rbac.authorization.k8s.io/v1 RoleBinding is not a kind a module may own (apps/v1 Deployment, v1 Service, v1 ConfigMap, v1 Secret)',
      `Secret/${NS}/eva-nats: the chart names this Secret orbit-crm-credentials`,
    ]);
  });

  it('refuses hooks (an uninstall would run them) and a payload that is not what its labels say', () => {
    const hooked = record(1, 'deployed', (release) => {
      release['hooks'] = [{ name: 'wipe', path: 'orbit-crm/templates/wipe.yaml', manifest: 'kind: Job' }];
    });
    expect(recordProblems(hooked, EXPECTED)).toEqual(['hook orbit-crm/templates/wipe.yaml: helm hooks are not allowed']);
    const elsewhere = record(4, 'deployed', (release) => {
      Object.assign(release, { name: 'eva-forge', namespace: 'eva-tenant-victim', version: 9, info: { status: 'pending-upgrade' } });
    });
    expect(recordProblems(elsewhere, EXPECTED)).toEqual([
      'its payload is release eva-forge',
      'its payload is in namespace eva-tenant-victim',
      'its payload is revision 9, its label 4',
      'its payload is pending-upgrade, its label deployed',
    ]);
  });

  it('one refusal for the release, naming each failing revision and its Secret', () => {
    const forged = record(2, 'pending-upgrade', (release) => {
      release['manifest'] = manifestOf([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'orbit-crm-config', namespace: 'eva-tenant-victim' } }]);
    });
    expect(refusalOf([record(1, 'deployed')], EXPECTED)).toBeUndefined();
    const refusal = refusalOf([record(1, 'deployed'), forged], EXPECTED);
    expect(refusal?.reason).toBe('ReleaseRecordRefused');
    expect(refusal?.message).toBe(
      'release orbit-crm has a record the operator did not write, so helm is not run on it until a platform administrator removes the record: ' +
        `revision 2 (Secret sh.helm.release.v1.orbit-crm.v2): ConfigMap/eva-tenant-victim/orbit-crm-config: only namespace ${NS} is allowed`,
    );
  });
});
