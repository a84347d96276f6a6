/**
 * The `eva-operator` subcommands that scripts call for format logic, so each format has one reader
 * (bash keeps the process, namespace and mount plumbing):
 *   images check [--release] [--root DIR]     images.txt against the charts, Dockerfile and versions.env
 *   images lines [--file F] [--own]           every image line (--own: our own images only) as <number> TAB <repository> TAB <tag> TAB <digest hex | PLACEHOLDER>
 *                                             TAB <path> (the repository without its registry host)
 *   images registry <R>                       a mirror registry HOST[:PORT][/PREFIX], printed without trailing slashes
 *   images find <reference> [--file F] [--mirror R]  the line of a reference, by path (registry or mirror aside) and its digest, or its tag
 *   images write-digests [--file F]           fills PLACEHOLDER digests from "<line number> sha256:<hex>" lines on stdin
 *   images archive-header <writer>            the header of an image archive's images.txt (line N is images/N), naming its writer
 *   semver valid <version> / semver compare <a> <b>   exit 0 or 1 / prints -1, 0 or 1
 *   tenant-manifest --name --code --tier --wave --operator-version   an EvaTenant as YAML (tenant-manifest.ts)
 *   manifests images|value|section   what scripts read from YAML and JSON (manifests.ts)
 *   release images|stage-chart|verify-chart|manifest   what scripts/release.sh decides (publish-commands.ts)
 *   crd-plan --bundled F --app-version V [--installed F] [--merged F]   what quickstart.sh does with the installed CRD (crd-plan.ts)
 * Exit status: 0 done, 1 the check found problems (or a version is not semver), 2 a usage or input error.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Command } from 'commander';
import { DIGEST_PLACEHOLDER, ImageCatalogError, mirrorRegistry, OWN_PREFIX, parseReference, type PinnedParts, pinnedPartsOrProblem, readImageLines, splitRegistry } from '../bundle/images.ts';
import { releaseHelmBinary } from '../config.ts';
import { compareVersions, isSemver } from '../versions.ts';
import { CheckUsageError, checkImages } from './check-images.ts';
import { crdPlanCommand } from './crd-plan.ts';
import { manifestsCommand, readInput } from './manifests.ts';
import { publishCommand } from './publish-commands.ts';
import { tenantManifestCommand } from './tenant-manifest.ts';

class InputProblem extends Error {
  override readonly name = 'InputProblem';
}

const fail = (prefix: string, message: string, status: number): never => {
  process.stderr.write(`${prefix}${message}\n`);
  process.exit(status);
};

/** Image lines that follow the grammar, have a registry host and a digest; anything else is an InputProblem. */
function catalogueLines(file: string, shownAs = file): Array<{ number: number; parts: PinnedParts }> {
  return readImageLines(readFileSync(file, 'utf8')).map((line) => {
    const parts = pinnedPartsOrProblem(line, shownAs);
    if (typeof parts === 'string') throw new InputProblem(parts);
    return { number: line.number, parts };
  });
}

function imagesCommand(): Command {
  const images = new Command('images').description('read and check images.txt (the image catalogue)');
  images
    .command('check')
    .description('check images.txt against the charts, the Dockerfile and versions.env (HELM: the helm binary)')
    .option('--release', 'every digest must be filled in (no PLACEHOLDER)', false)
    .option('--root <dir>', 'the checkout to check', process.cwd())
    .action((options: { release: boolean; root: string }) => {
      try {
        const report = checkImages(options.root, { release: options.release, helm: releaseHelmBinary() });
        for (const w of report.warnings) process.stderr.write(`check-images: warning: ${w}\n`);
        for (const p of report.problems) process.stderr.write(`check-images: ERROR: ${p}\n`);
        if (report.problems.length > 0) fail('check-images: ', `${String(report.problems.length)} problem(s)`, 1);
        process.stdout.write(`${report.summary}\n`);
      } catch (err) {
        if (err instanceof CheckUsageError) fail('check-images: ', err.message, 2);
        throw err;
      }
    });
  images
    .command('find <reference>')
    .description('print the line of <repository>:<tag> or <repository>@sha256:<hex> as path, tag, digest (exit 1: not listed)')
    .option('--file <file>', 'the images file', 'images.txt')
    .option('--mirror <registry>', 'a registry (host[:port][/prefix]) the reference may already point at')
    .action((reference: string, options: { file: string; mirror?: string }) => {
      guarded(() => {
        const { repository, tag, digest } = parseReference(reference);
        // A digest decides when the reference has one, as for a pull; a tag otherwise.
        const matches = (parts: PinnedParts): boolean => (digest === '' ? parts.tag === tag : `sha256:${parts.digest}` === digest);
        const mirror = options.mirror?.replace(/\/+$/, '');
        const path = mirror && repository.startsWith(`${mirror}/`) ? repository.slice(mirror.length + 1) : splitRegistry(repository).path;
        const found = catalogueLines(options.file).find(({ parts }) => splitRegistry(parts.repository).path === path && matches(parts));
        if (found === undefined) process.exit(1);
        process.stdout.write(`${path}\t${found.parts.tag}\t${found.parts.digest}\n`);
      });
    });
  images
    .command('write-digests')
    .description('fill PLACEHOLDER digests, from "<line number> sha256:<64 hex>" lines on stdin (the file keeps its mode and owner)')
    .option('--file <file>', 'the images file', 'images.txt')
    .action(async (options: { file: string }) => {
      const digests = await readInput('-');
      guarded(() => {
        writeDigests(options.file, digests);
      });
    });
  images.addCommand(linesCommand());
  images.addCommand(registryCommand());
  images
    .command('archive-header <writer>')
    .description("print the header of an image archive's images.txt (what line N is, how to push it), naming the script that wrote it")
    .action((writer: string) => {
      process.stdout.write(archiveHeader(writer));
    });
  return images;
}

function linesCommand(): Command {
  return new Command('lines')
    .description('print every image line: number, repository, tag, digest (hex or PLACEHOLDER), path without the registry, tab-separated')
    .option('--file <file>', 'the images file', 'images.txt')
    .option('--name <name>', 'the name of the file in messages (default: its path)')
    .option('--own', `only our own images (${OWN_PREFIX}...); every line is checked all the same`, false)
    .action((options: { file: string; name?: string; own: boolean }) => {
      guarded(() => {
        const lines = catalogueLines(options.file, options.name).filter(({ parts }) => !options.own || parts.repository.startsWith(OWN_PREFIX));
        const rows = lines.map(({ number, parts }) =>
          `${String(number)}\t${parts.repository}\t${parts.tag}\t${parts.digest}\t${splitRegistry(parts.repository).path}\n`);
        process.stdout.write(rows.join(''));
      });
    });
}

function registryCommand(): Command {
  return new Command('registry')
    .argument('<registry>')
    .description('print a mirror registry HOST[:PORT][/PREFIX] without trailing slashes (exit 2: not one)')
    .action((registry: string) => {
      guarded(() => {
        process.stdout.write(`${mirrorRegistry(registry)}\n`);
      });
    });
}

/**
 * The header of the images.txt inside an image archive (scripts/build-image.sh's and
 * scripts/mirror-images.sh --archive's): image line N is the skopeo dir images/N.
 */
export const archiveHeader = (writer: string): string =>
  `# Written by ${writer}: line N (counting image lines from 0) is images/N,\n` +
  '# a skopeo dir: copy. Push with scripts/mirror-images.sh --from-archive <this file> --registry ...\n';

function writeDigests(file: string, pairs: string): void {
  const lines = readFileSync(file, 'utf8').split('\n');
  for (const pair of pairs.split('\n').filter((l) => l.trim() !== '')) {
    const m = /^(\d+)\s+sha256:([a-f0-9]{64})$/.exec(pair.trim());
    if (!m) throw new InputProblem(`expected "<line number> sha256:<64 hex digits>", got "${pair}"`);
    const index = Number(m[1]) - 1;
    const line = lines[index] ?? '';
    if (!line.includes(`@sha256:${DIGEST_PLACEHOLDER}`)) throw new InputProblem(`${file} line ${m[1] ?? ''} has no PLACEHOLDER digest`);
    lines[index] = line.replace(`@sha256:${DIGEST_PLACEHOLDER}`, `@sha256:${m[2] ?? ''}`);
  }
  // Rewritten in place, as the release step always did: the file keeps its mode and owner.
  writeFileSync(file, lines.join('\n'));
}

function guarded(action: () => void): void {
  try {
    action();
  } catch (err) {
    if (err instanceof InputProblem) fail('', err.message, 2);
    if (err instanceof ImageCatalogError) fail('', err.message, 2);
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') fail('', err.message, 2);
    throw err;
  }
}

function semverCommand(): Command {
  const semver = new Command('semver').description('semver precedence, as the operator orders versions');
  semver
    .command('valid <version>')
    .description('exit 0 when <version> is semver, else 1')
    .action((version: string) => {
      process.exit(isSemver(version) ? 0 : 1);
    });
  semver
    .command('compare <a> <b>')
    .description('print -1, 0 or 1 as <a> is lower than, equal to or higher than <b> (build metadata ignored)')
    .action((a: string, b: string) => {
      process.stdout.write(`${String(Math.sign(compareVersions(a, b)))}\n`);
    });
  return semver;
}

export const releaseCommands = (): Command[] => [imagesCommand(), semverCommand(), tenantManifestCommand(), manifestsCommand(), publishCommand(), crdPlanCommand()];
