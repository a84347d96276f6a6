import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ReleaseRefused, releasedCatalogue, releaseManifest, stageChart } from './publish.ts';

const hex = (c: string): string => c.repeat(64);
const CATALOGUE = [
  '# our images',
  'ghcr.io/aidonow/eva-operator:0.1.0@sha256:PLACEHOLDER',
  'ghcr.io/aidonow/eva-forge:1.0.0@sha256:PLACEHOLDER',
  `docker.io/library/nats:2.15.0-alpine@sha256:${hex('c')}`,
  '',
].join('\n');
const BUILT = `ghcr.io/aidonow/eva-operator:0.1.0@sha256:${hex('a')}\nghcr.io/aidonow/eva-forge:1.0.0@sha256:${hex('b')}\n`;

const refusal = (action: () => unknown): readonly string[] => {
  try {
    action();
  } catch (err) {
    if (err instanceof ReleaseRefused) return err.problems;
    throw err;
  }
  throw new Error('not refused');
};

describe('the released images.txt', () => {
  it('points every own image where it was pushed, with the digest the build made; third-party lines and comments stay', () => {
    const released = releasedCatalogue(CATALOGUE, BUILT, 'registry.example:5000/eva', '0.1.0');
    expect(released).toContain(`registry.example:5000/eva/aidonow/eva-operator:0.1.0@sha256:${hex('a')}`);
    expect(released).toContain(`registry.example:5000/eva/aidonow/eva-forge:1.0.0@sha256:${hex('b')}`);
    expect(released).toContain(`docker.io/library/nats:2.15.0-alpine@sha256:${hex('c')}`);
    expect(released).toContain('# our images');
    expect(released).not.toContain('PLACEHOLDER');
  });

  it('is refused, naming each image, when an own image was not built or a third-party digest is missing', () => {
    const catalogue = `${CATALOGUE}ghcr.io/aidonow/orbit-crm:1.0.0@sha256:PLACEHOLDER\ndocker.io/library/node:24@sha256:PLACEHOLDER\n`;
    const problems = refusal(() => releasedCatalogue(catalogue, BUILT, 'r.example', '0.1.0'));
    expect(problems).toEqual([
      'images.txt line 5: ghcr.io/aidonow/orbit-crm:1.0.0 was not built (scripts/build-image.sh\'s images.txt has no digest for it)',
      'images.txt line 6: third-party image docker.io/library/node:24 still has the PLACEHOLDER digest',
    ]);
    // The control: the same catalogue without those two lines is released.
    expect(() => releasedCatalogue(CATALOGUE, BUILT, 'r.example', '0.1.0')).not.toThrow();
  });
});

describe('the released chart', () => {
  const work = mkdtempSync(join(tmpdir(), 'eva-publish-'));
  afterAll(() => {
    rmSync(work, { recursive: true, force: true });
  });
  const chartCopy = (chart = 'eva-operator'): string => {
    const dir = mkdtempSync(join(work, 'chart-'));
    cpSync(join(import.meta.dirname, '../../charts', chart), dir, { recursive: true });
    return dir;
  };
  const released = releasedCatalogue(CATALOGUE, BUILT, 'registry.example:5000/eva', '0.1.0');

  it('deploys the pushed operator and the pinned NATS by digest, and carries the released images.txt', () => {
    const dir = chartCopy();
    stageChart(dir, released, '0.1.0');
    const values = parse(readFileSync(join(dir, 'values.yaml'), 'utf8')) as { image: { repository: string; digest: string }; nats: { image: { digest: string } } };
    expect(values.image).toMatchObject({ repository: 'registry.example:5000/eva/aidonow/eva-operator', digest: `sha256:${hex('a')}` });
    expect(values.nats.image.digest).toBe(`sha256:${hex('c')}`);
    expect(readFileSync(join(dir, 'images.txt'), 'utf8')).toBe(released);
    // Comments of values.yaml are kept: they are the chart's documentation.
    expect(readFileSync(join(dir, 'values.yaml'), 'utf8')).toContain('# sha256:<64 hex digits>');
  });

  it("deploys the pushed operator by digest as the hub chart's controller too", () => {
    const dir = chartCopy('eva-hub');
    stageChart(dir, released, '0.1.0');
    const values = parse(readFileSync(join(dir, 'values.yaml'), 'utf8')) as { controller: { image: { repository: string; digest: string } } };
    expect(values.controller.image).toMatchObject({ repository: 'registry.example:5000/eva/aidonow/eva-operator', digest: `sha256:${hex('a')}` });
    expect(readFileSync(join(dir, 'images.txt'), 'utf8')).toBe(released);
    expect(refusal(() => { stageChart(dir, released, '0.2.0'); })).toContain('charts/eva-hub/Chart.yaml version is 0.1.0, not 0.2.0: set it (and the operator image\'s tag in images.txt) in a commit first');
  });

  it('is refused when the version is not the one Chart.yaml and images.txt already carry', () => {
    const dir = chartCopy();
    expect(refusal(() => { stageChart(dir, released, '0.2.0'); })).toHaveLength(3);
    expect(refusal(() => { stageChart(dir, released, 'v0.1.0'); })).toEqual(['"v0.1.0" is not a semver version']);
  });

  it('is refused when NATS is not pinned by the images.txt it ships', () => {
    const dir = chartCopy();
    const withoutNats = released.replace(/^docker\.io\/library\/nats.*$/m, '');
    expect(refusal(() => { stageChart(dir, withoutNats, '0.1.0'); })).toEqual([
      'values nats.image is docker.io/library/nats:2.15.0-alpine, which images.txt does not pin by digest',
    ]);
  });
});

describe('the release manifest', () => {
  it('names both charts by digest and every image', () => {
    const released = releasedCatalogue(CATALOGUE, BUILT, 'r.example/eva', '0.1.0');
    const manifest = releaseManifest('0.1.0', 'r.example/eva', { chart: `sha256:${hex('d')}`, hubChart: `sha256:${hex('e')}` }, released);
    expect(manifest.chart).toEqual({ reference: 'oci://r.example/eva/charts/eva-operator:0.1.0', digest: `sha256:${hex('d')}` });
    expect(manifest.hubChart).toEqual({ reference: 'oci://r.example/eva/charts/eva-hub:0.1.0', digest: `sha256:${hex('e')}` });
    expect(manifest.images).toHaveLength(3);
    expect(refusal(() => releaseManifest('0.1.0', 'r.example', { chart: 'sha256:short', hubChart: `sha256:${hex('e')}` }, released))).toEqual(['"sha256:short" is not a sha256 digest']);
    expect(refusal(() => releaseManifest('0.1.0', 'r.example', { chart: `sha256:${hex('d')}`, hubChart: '' }, released))).toEqual(['"" is not a sha256 digest']);
  });
});
