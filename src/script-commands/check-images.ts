/**
 * `eva-operator images check`: images.txt against everything that uses images (scripts/check-images.sh
 * calls it; its header lists the rules). Every problem is collected and printed, not only the first:
 *   - every line follows the grammar, has a registry and a digest (PLACEHOLDER allowed for our own
 *     images until the release fills it; a third-party PLACEHOLDER warns; --release fails on any);
 *   - every image the charts render (`helm template`) is listed, with the listed digest;
 *   - every Dockerfile FROM is pinned by digest and listed (a FROM ${ARG} through the ARG's default);
 *   - versions agree with versions.env.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TIERS } from '../api/constants.ts';
import { DIGEST_PLACEHOLDER, normalizeReference, OWN_PREFIX, type PinnedParts, pinnedPartsOrProblem, readImageLines } from '../bundle/images.ts';

export class CheckUsageError extends Error {
  override readonly name = 'CheckUsageError';
}

export interface CheckReport {
  problems: string[];
  warnings: string[];
  /** The OK line when there is no problem. */
  summary: string;
}

/** versions.env as NAME -> value (the last assignment wins, as when bash sources it). */
function readVersions(file: string): (name: string) => string {
  const values = new Map<string, string>();
  for (const m of readFileSync(file, 'utf8').matchAll(/^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/gm)) values.set(m[1] ?? '', m[2] ?? '');
  return (name) => {
    const value = values.get(name);
    if (value === undefined || value === '') throw new CheckUsageError(`${name} missing from ${file}`);
    return value;
  };
}

class Catalogue {
  readonly digests = new Map<string, string>();
  readonly lines = new Map<string, number>();
}

const PINNED_BY_VERSIONS_ENV: Readonly<Record<string, string>> = {
  'docker.io/library/node': 'NODE_VERSION',
  'docker.io/library/nats': 'NATS_SERVER_VERSION',
  'docker.io/library/golang': 'GO_TOOLCHAIN',
};

/** A listed image's PLACEHOLDER and versions.env agreement. */
function checkListedLine(where: string, key: string, parts: PinnedParts, context: { release: boolean; version: (name: string) => string }, report: CheckReport): void {
  const { repository, tag, digest } = parts;
  if (digest === DIGEST_PLACEHOLDER && context.release) report.problems.push(`${where}: ${key} still has the PLACEHOLDER digest (a release needs every digest)`);
  else if (digest === DIGEST_PLACEHOLDER && !repository.startsWith(OWN_PREFIX)) report.warnings.push(`${where}: third-party image ${key} has the PLACEHOLDER digest; the release step must fill it (--release fails)`);
  const versionName = PINNED_BY_VERSIONS_ENV[repository];
  if (versionName === undefined) return;
  const want = context.version(versionName);
  const agrees = tag === want || tag.startsWith(`${want}-`) || (versionName === 'GO_TOOLCHAIN' && tag.startsWith(`${want}.`));
  if (!agrees) report.problems.push(`${where}: ${key} does not match ${versionName}=${want} in versions.env`);
}

function checkCatalogue(text: string, release: boolean, version: (name: string) => string, report: CheckReport): Catalogue {
  const catalogue = new Catalogue();
  for (const line of readImageLines(text)) {
    const parts = pinnedPartsOrProblem(line);
    if (typeof parts === 'string') {
      report.problems.push(parts);
      continue;
    }
    const where = `images.txt line ${String(line.number)}`;
    const key = `${parts.repository}:${parts.tag}`;
    const earlier = catalogue.lines.get(key);
    if (earlier !== undefined) {
      report.problems.push(`${where}: ${key} is listed twice (also line ${String(earlier)})`);
      continue;
    }
    catalogue.lines.set(key, line.number);
    catalogue.digests.set(key, `sha256:${parts.digest}`);
    checkListedLine(where, key, parts, { release, version }, report);
  }
  return catalogue;
}

/** Is a referenced image listed? `pinned`: the reference itself must carry a digest. */
function checkListed(catalogue: Catalogue, ref: string, where: string, pinned: boolean, report: CheckReport): void {
  const { repository, tag, digest } = normalizeReference(ref);
  if (pinned && digest === '') report.problems.push(`${where} ${ref} is not pinned by digest (@sha256:<64 hex digits>)`);
  if (tag !== '') {
    const key = `${repository}:${tag}`;
    const line = catalogue.lines.get(key);
    const listedDigest = catalogue.digests.get(key);
    if (line === undefined) report.problems.push(`${where} ${ref} is not listed in images.txt (expected a line ${key}@sha256:...)`);
    else if (digest !== '' && digest !== listedDigest) report.problems.push(`${where} ${ref} has digest ${digest} but images.txt line ${String(line)} has ${listedDigest ?? ''}`);
    return;
  }
  const listed = [...catalogue.digests].some(([key, d]) => key.slice(0, key.lastIndexOf(':')) === repository && d === digest);
  if (!listed) report.problems.push(`${where} ${ref} is not listed in images.txt (no ${repository} line with digest ${digest})`);
}

/** Values that render the chart's quick-start NATS: it renders only with the bootstrap's public JWTs; any text will do for listing images. */
export const QUICK_START_NATS: readonly string[] = ['nats.enabled=true', 'nats.auth.operatorJwt=unused', 'nats.auth.systemAccount=unused', 'nats.auth.systemAccountJwt=unused'];

/** Every `image:` value of a rendered manifest, once each. */
export function renderedImages(manifest: string): string[] {
  const images = [...manifest.matchAll(/^\s*(?:- )?image:\s*["']?([^"'\s]+)["']?\s*$/gm)].map((m) => m[1] ?? '');
  return [...new Set(images)].sort();
}

function render(helm: string, what: string, chart: string, args: readonly string[], report: CheckReport): string | undefined {
  try {
    return execFileSync(helm, ['template', 'check-images', chart, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    report.problems.push(`${what}: helm template failed: ${stderr.replace(/\n/g, ' ')}`);
    return undefined;
  }
}

function checkCharts(root: string, helm: string, catalogue: Catalogue, report: CheckReport): number {
  let rendered = 0;
  const listAll = (what: string, manifest: string | undefined): void => {
    for (const image of manifest === undefined ? [] : renderedImages(manifest)) {
      checkListed(catalogue, image, `${what} renders image`, false, report);
      rendered += 1;
    }
  };
  // The quick-start NATS renders only with the bootstrap's public JWTs; any text will do for listing images.
  const nats = QUICK_START_NATS.flatMap((v) => ['--set', v]);
  const operatorWhat = 'charts/eva-operator (nats.enabled=true)';
  listAll('charts/eva-operator', render(helm, operatorWhat, join(root, 'charts/eva-operator'), ['--namespace', 'eva-system', ...nats], report));
  const modulesDir = join(root, 'charts/modules');
  for (const name of readdirSync(modulesDir).sort()) {
    const chart = join(modulesDir, name);
    const chartYaml = join(chart, 'Chart.yaml');
    if (!existsSync(chartYaml) || /^type:\s*library/m.test(readFileSync(chartYaml, 'utf8'))) continue;
    for (const tier of TIERS) {
      const what = `charts/modules/${name} (tier ${tier})`;
      listAll(what, render(helm, what, chart, ['--namespace', 'eva-tenant-abcdef', '--set', 'tenant.code=ABCDEF', '--set', `tenant.tier=${tier}`], report));
    }
  }
  return rendered;
}

/** The image a FROM line names (after its --flags), and the stage it declares with AS. */
function fromLine(line: string): { image: string; stage?: string } | undefined {
  const words = line.trim().split(/\s+/);
  if (words[0]?.toLowerCase() !== 'from') return undefined;
  let i = 1;
  while (words[i]?.startsWith('--')) i += 1;
  const stage = /^as$/i.test(words[i + 1] ?? '') ? (words[i + 2] ?? '').toLowerCase() : undefined;
  return stage === undefined ? { image: words[i] ?? '' } : { image: words[i] ?? '', stage };
}

/** A FROM ${NAME}: the default of the global ARG NAME, or the problem. */
function throughArg(image: string, number: string, globalArgs: ReadonlyMap<string, string>): { image: string; where: string } | string {
  const name = /^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$/.exec(image)?.[1];
  const value = name === undefined ? undefined : globalArgs.get(name);
  if (name === undefined || value === undefined || value === '') {
    return `Dockerfile line ${number}: FROM ${image} uses a build argument without a default: declare ARG NAME=<image pinned by digest> before the first FROM, so it can be checked`;
  }
  return { image: value, where: `Dockerfile line ${number} (FROM ${image}, the default of ARG ${name}): FROM` };
}

/** The base images of the Dockerfile; a FROM ${ARG} is checked through the ARG's default (before the first FROM). */
function checkDockerfile(text: string, catalogue: Catalogue, version: (name: string) => string, report: CheckReport): number {
  const stages = new Set<string>();
  const argRe = /^[Aa][Rr][Gg]\s+([A-Za-z_][A-Za-z0-9_]*)=["']?([^"'\s]*)["']?\s*$/;
  const lines = text.split('\n').map((raw) => raw.replace(/\r$/, ''));
  const firstFrom = lines.findIndex((line) => fromLine(line) !== undefined);
  const globalArgs = new Map(
    lines.slice(0, firstFrom === -1 ? lines.length : firstFrom).flatMap((line) => {
      const arg = argRe.exec(line);
      return arg ? [[arg[1] ?? '', arg[2] ?? ''] as const] : [];
    }),
  );
  let froms = 0;
  lines.forEach((line, index) => {
    const number = String(index + 1);
    const from = fromLine(line);
    if (from === undefined) return;
    if (from.stage !== undefined) stages.add(from.stage);
    const { image } = from;
    if (image === '' || image.toLowerCase() === 'scratch' || stages.has(image.toLowerCase())) return;
    const target = image.includes('$') ? throughArg(image, number, globalArgs) : { image, where: `Dockerfile line ${number}: FROM` };
    if (typeof target === 'string') {
      report.problems.push(target);
      return;
    }
    checkListed(catalogue, target.image, target.where, true, report);
    froms += 1;
  });
  for (const name of ['HELM_VERSION', 'NODE_VERSION']) {
    const want = version(name);
    const got = new RegExp(`^\\s*ARG\\s+${name}=["']?([^"'\\s]*)["']?\\s*$`, 'm').exec(text)?.[1];
    if (got === undefined || got === '') report.problems.push(`Dockerfile: no ARG ${name}=<version> (it must default to versions.env's ${name}=${want})`);
    else if (got !== want) report.problems.push(`Dockerfile: ARG ${name}=${got} disagrees with versions.env ${name}=${want}`);
  }
  return froms;
}

export function checkImages(root: string, options: { release: boolean; helm: string }): CheckReport {
  const files = ['images.txt', 'Dockerfile', 'versions.env', 'charts/eva-operator/Chart.yaml'].map((f) => join(root, f));
  for (const f of files) if (!existsSync(f)) throw new CheckUsageError(`${f} not found`);
  const report: CheckReport = { problems: [], warnings: [], summary: '' };
  const version = readVersions(join(root, 'versions.env'));
  for (const name of ['NODE_VERSION', 'HELM_VERSION', 'NATS_SERVER_VERSION', 'GO_TOOLCHAIN']) version(name);
  const catalogue = checkCatalogue(readFileSync(join(root, 'images.txt'), 'utf8'), options.release, version, report);
  const rendered = checkCharts(root, options.helm, catalogue, report);
  const froms = checkDockerfile(readFileSync(join(root, 'Dockerfile'), 'utf8'), catalogue, version, report);
  report.summary = `check-images: OK: ${String(catalogue.lines.size)} images listed; ${String(rendered)} chart image references and ${String(froms)} Dockerfile base images are listed${options.release ? '; no PLACEHOLDER (release)' : ''}`;
  return report;
}
