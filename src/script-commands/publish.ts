/**
 * What scripts/release.sh decides, as data: the images.txt a release ships, the chart it packages, the
 * check that the chart deploys only what that images.txt names, and the manifest of what was published.
 * Every problem is collected and reported together, before anything is pushed.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Document, parse, parseDocument } from 'yaml';
import { DIGEST_PLACEHOLDER, normalizeReference, OWN_PREFIX, pinnedPartsOrProblem, readImageLines, splitRegistry } from '../bundle/images.ts';
import { isSemver } from '../versions.ts';
import { QUICK_START_NATS, renderedImages } from './check-images.ts';

export class ReleaseRefused extends Error {
  override readonly name = 'ReleaseRefused';
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(problems.join('\n'));
    this.problems = problems;
  }
}

const refuseIfAny = (problems: readonly string[]): void => {
  if (problems.length > 0) throw new ReleaseRefused(problems);
};

/** The digests a build made (scripts/build-image.sh's images.txt), by `<repository>:<tag>`. */
function builtDigests(builtText: string): Map<string, string> {
  const digests = new Map<string, string>();
  for (const line of readImageLines(builtText)) {
    if (line.parts?.digest !== undefined && line.parts.digest !== DIGEST_PLACEHOLDER) digests.set(`${line.parts.repository}:${line.parts.tag}`, line.parts.digest);
  }
  return digests;
}

/**
 * The images.txt a release ships: every own line (ghcr.io/aidonow/...) points where the release pushed
 * it (`<registry>/<path>`) with the digest the build made; third-party lines stay as pinned. Comments
 * are kept. Refused when an own image was not built, or any digest would stay PLACEHOLDER.
 */
export function releasedCatalogue(catalogueText: string, builtText: string, registry: string, version: string): string {
  const built = builtDigests(builtText);
  const problems: string[] = [];
  const lines = catalogueText.split('\n');
  for (const line of readImageLines(catalogueText)) {
    const parts = pinnedPartsOrProblem(line);
    if (typeof parts === 'string') {
      problems.push(parts);
      continue;
    }
    const key = `${parts.repository}:${parts.tag}`;
    if (!parts.repository.startsWith(OWN_PREFIX)) {
      if (parts.digest === DIGEST_PLACEHOLDER) problems.push(`images.txt line ${String(line.number)}: third-party image ${key} still has the ${DIGEST_PLACEHOLDER} digest`);
      continue;
    }
    const digest = built.get(key);
    if (digest === undefined) {
      problems.push(`images.txt line ${String(line.number)}: ${key} was not built (scripts/build-image.sh's images.txt has no digest for it)`);
      continue;
    }
    lines[line.number - 1] = `${registry}/${splitRegistry(parts.repository).path}:${parts.tag}@sha256:${digest}`;
  }
  refuseIfAny(problems);
  return `# eva-operator ${version}: the images of this release, published to ${registry} by scripts/release.sh.\n${lines.join('\n')}`;
}

/** The operator's own line of a released images.txt (the one whose path ends in /eva-operator). */
export function operatorLine(imagesText: string): { repository: string; tag: string; digest: string } {
  const line = readImageLines(imagesText).find((l) => l.parts !== undefined && splitRegistry(l.parts.repository).path.endsWith('aidonow/eva-operator'));
  const parts = line?.parts;
  if (parts?.digest === undefined || parts.digest === DIGEST_PLACEHOLDER) throw new ReleaseRefused(['images.txt names no operator image with a digest (…/aidonow/eva-operator:<tag>@sha256:<hex>)']);
  return { repository: parts.repository, tag: parts.tag, digest: `sha256:${parts.digest}` };
}

/** What a release changes in each chart it ships, by the chart's name. */
interface StagedChart {
  /** The values path of the operator's image (the hub chart runs the same program). */
  readonly operatorImage: readonly string[];
  /** Third-party images' values paths, pinned by images.txt's digest. */
  readonly thirdParty: readonly (readonly string[])[];
  /** The value sets the packaged chart is rendered with to list what it can deploy. */
  readonly renderings: readonly (readonly string[])[];
}

const STAGED: Readonly<Record<string, StagedChart>> = {
  'eva-operator': { operatorImage: ['image'], thirdParty: [['nats', 'image']], renderings: [['nats.url=nats://nats.example:4222'], QUICK_START_NATS] },
  'eva-hub': { operatorImage: ['controller', 'image'], thirdParty: [], renderings: [[], ['controller.moves=true']] },
};

function stagedAs(name: string): StagedChart {
  const staged = STAGED[name];
  if (staged === undefined) throw new ReleaseRefused([`no release knows a chart named ${name} (only ${Object.keys(STAGED).join(', ')})`]);
  return staged;
}

/**
 * Makes a copy of charts/eva-operator or charts/eva-hub the released chart: its version must already
 * be the release's (the version is decided in Chart.yaml, reviewed like any change, not by a flag); its
 * default operator image becomes the pushed operator by digest, and it carries the released images.txt
 * (the operator chart renders it into a ConfigMap the operator reads, so module images resolve to the
 * release's digests; scripts/mirror-images.sh --chart reads it from either).
 */
export function stageChart(chartDir: string, imagesText: string, version: string): void {
  if (!isSemver(version)) throw new ReleaseRefused([`"${version}" is not a semver version`]);
  const chart = parseDocument(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8'));
  const name = String(chart.get('name'));
  const staged = stagedAs(name);
  const problems = (['version', 'appVersion'] as const)
    .filter((key) => String(chart.get(key)) !== version)
    .map((key) => `charts/${name}/Chart.yaml ${key} is ${String(chart.get(key))}, not ${version}: set it (and the operator image's tag in images.txt) in a commit first`);
  const operator = operatorLine(imagesText);
  if (operator.tag !== version) problems.push(`images.txt tags the operator ${operator.tag}, not ${version}`);
  refuseIfAny(problems);
  const valuesFile = join(chartDir, 'values.yaml');
  const values = parseDocument(readFileSync(valuesFile, 'utf8'));
  values.setIn([...staged.operatorImage, 'repository'], operator.repository);
  values.setIn([...staged.operatorImage, 'digest'], operator.digest);
  for (const path of staged.thirdParty) pinThirdParty(values, path, imagesText);
  writeFileSync(valuesFile, values.toString());
  writeFileSync(join(chartDir, 'images.txt'), imagesText);
}

/** Pins an image value of the chart ({repository, tag, digest}) by the digest images.txt lists for its tag. */
function pinThirdParty(values: Document, path: readonly string[], imagesText: string): void {
  const repository = String(values.getIn([...path, 'repository']));
  const tag = String(values.getIn([...path, 'tag']));
  const line = readImageLines(imagesText).find((l) => l.parts?.repository === repository && l.parts.tag === tag);
  const digest = line?.parts?.digest;
  if (digest === undefined || digest === DIGEST_PLACEHOLDER) throw new ReleaseRefused([`values ${path.join('.')} is ${repository}:${tag}, which images.txt does not pin by digest`]);
  values.setIn([...path, 'digest'], `sha256:${digest}`);
}

/**
 * Problems with a packaged chart against the images.txt it ships: every image it renders must be a
 * line of that file, pinned by the same digest (the operator by digest, never by tag).
 */
export function chartImageProblems(helm: string, chart: string, imagesText: string): string[] {
  const listed = new Set(readImageLines(imagesText).flatMap((l) => (l.parts?.digest === undefined ? [] : [`${l.parts.repository}@sha256:${l.parts.digest}`])));
  const { name } = parse(execFileSync(helm, ['show', 'chart', chart], { encoding: 'utf8' })) as { name: string };
  return stagedAs(name).renderings.flatMap((sets) => {
    const manifest = execFileSync(helm, ['template', name, chart, '--namespace', 'eva-system', ...sets.flatMap((s) => ['--set', s])], { encoding: 'utf8' });
    return renderedImages(manifest).flatMap((image) => {
      const { repository, digest } = normalizeReference(image);
      if (digest === '') return [`the chart deploys ${image} by tag, not by digest`];
      return listed.has(`${repository}@${digest}`) ? [] : [`the chart deploys ${image}, which its images.txt does not list with that digest`];
    });
  });
}

export interface PublishedChart {
  reference: string;
  digest: string;
}

export interface ReleaseManifest {
  version: string;
  registry: string;
  /** The operator chart (every cluster that runs tenants). */
  chart: PublishedChart;
  /** The hub chart (charts/eva-hub: a multi-cluster hub), released at the same version. */
  hubChart: PublishedChart;
  images: string[];
}

/** The digests helm push reported for the release's two charts. */
export interface ChartDigests {
  chart: string;
  hubChart: string;
}

/** The record of what a release published: both charts by digest and every image of its images.txt. */
export function releaseManifest(version: string, registry: string, digests: ChartDigests, imagesText: string): ReleaseManifest {
  const bad = [digests.chart, digests.hubChart].filter((d) => !/^sha256:[a-f0-9]{64}$/.test(d));
  if (bad.length > 0) throw new ReleaseRefused(bad.map((d) => `"${d}" is not a sha256 digest`));
  const images = readImageLines(imagesText).flatMap((l) => (l.parts?.digest === undefined ? [] : [`${l.parts.repository}:${l.parts.tag}@sha256:${l.parts.digest}`]));
  const published = (name: string, digest: string): PublishedChart => ({ reference: `oci://${registry}/charts/${name}:${version}`, digest });
  return { version, registry, chart: published('eva-operator', digests.chart), hubChart: published('eva-hub', digests.hubChart), images };
}
