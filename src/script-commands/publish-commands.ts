/**
 * `eva-operator release ...`: the decisions scripts/release.sh asks for (src/script-commands/publish.ts); the
 * script keeps the building, pushing and packaging.
 *   release images --built F --registry R --version V [--file images.txt]   the images.txt the release ships (stdout)
 *   release stage-chart <dir> --images F --version V                        make a chart copy the released chart
 *   release verify-chart <chart> --images F                                 the chart deploys only what F lists, by digest
 *   release manifest --version V --registry R --chart-digest D --hub-chart-digest H --images F   the record of what was published (JSON)
 * Exit status: 0 done, 1 refused (every reason on stderr), 2 usage or input errors.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { ImageCatalogError, mirrorRegistry } from '../bundle/images.ts';
import { releaseHelmBinary } from '../config.ts';
import { chartImageProblems, ReleaseRefused, releasedCatalogue, releaseManifest, stageChart } from './publish.ts';

function refusing(action: () => void): void {
  try {
    action();
  } catch (err) {
    if (err instanceof ImageCatalogError) {
      process.stderr.write(`release: ${err.message}\n`);
      process.exit(2);
    }
    if (!(err instanceof ReleaseRefused)) throw err;
    for (const problem of err.problems) process.stderr.write(`release: refused: ${problem}\n`);
    process.exit(1);
  }
}

export function publishCommand(): Command {
  const release = new Command('release').description('what scripts/release.sh decides: the released images.txt, chart and manifest');
  release
    .command('images')
    .requiredOption('--built <file>', "scripts/build-image.sh's images.txt (the digests it built)")
    .requiredOption('--registry <registry>', 'where the release pushes, HOST[:PORT][/PREFIX]')
    .requiredOption('--version <version>', 'the release version')
    .option('--file <file>', 'the catalogue', 'images.txt')
    .action((o: { built: string; registry: string; version: string; file: string }) => {
      refusing(() => {
        process.stdout.write(releasedCatalogue(readFileSync(o.file, 'utf8'), readFileSync(o.built, 'utf8'), mirrorRegistry(o.registry), o.version));
      });
    });
  release
    .command('stage-chart <dir>')
    .requiredOption('--images <file>', 'the released images.txt')
    .requiredOption('--version <version>', 'the release version')
    .action((dir: string, o: { images: string; version: string }) => {
      refusing(() => {
        stageChart(dir, readFileSync(o.images, 'utf8'), o.version);
      });
    });
  release
    .command('verify-chart <chart>')
    .requiredOption('--images <file>', 'the released images.txt')
    .action((chart: string, o: { images: string }) => {
      refusing(() => {
        const problems = chartImageProblems(releaseHelmBinary(), chart, readFileSync(o.images, 'utf8'));
        if (problems.length > 0) throw new ReleaseRefused(problems);
      });
    });
  release
    .command('manifest')
    .requiredOption('--version <version>', 'the release version')
    .requiredOption('--registry <registry>', 'where it was pushed')
    .requiredOption('--chart-digest <digest>', 'the digest helm push reported for the operator chart')
    .requiredOption('--hub-chart-digest <digest>', 'the digest helm push reported for the hub chart')
    .requiredOption('--images <file>', 'the released images.txt')
    .action((o: { version: string; registry: string; chartDigest: string; hubChartDigest: string; images: string }) => {
      refusing(() => {
        const manifest = releaseManifest(o.version, mirrorRegistry(o.registry), { chart: o.chartDigest, hubChart: o.hubChartDigest }, readFileSync(o.images, 'utf8'));
        process.stdout.write(`${JSON.stringify(manifest, null, 2)}\n`);
      });
    });
  return release;
}
