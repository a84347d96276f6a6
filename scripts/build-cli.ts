/**
 * `npm run build:cli`: kubectl-eva (src/kubectl-eva/) as one executable with Node inside,
 * dist/kubectl-eva, so a machine with only kubectl runs `kubectl eva ...` (docs/cli.md). Node's Single
 * Executable Application recipe for Node 24, with the project's own Node (the npm package `node`):
 * esbuild bundles the CLI to one CommonJS file (package.json's version defined in, not read at run
 * time), `node --experimental-sea-config` makes the blob, and postject injects it into a copy of that
 * node binary behind the SEA fuse. Prints the executable's size and how long the build took.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const started = Date.now();
const root = fileURLToPath(new URL('..', import.meta.url));
const work = join(root, 'dist', 'kubectl-eva.build');
const executable = join(root, 'dist', 'kubectl-eva');
/** The fuse Node's SEA support looks for in the binary (node's src/node_sea.cc). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
/** The project's Node 24 (devDependency `node`), not whatever node runs this script. */
const node = realpathSync(join(root, 'node_modules', '.bin', 'node'));

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

await build({
  absWorkingDir: root,
  entryPoints: ['src/kubectl-eva/main.ts'],
  outfile: join(work, 'kubectl-eva.cjs'),
  bundle: true,
  platform: 'node',
  // An SEA's main script is CommonJS (Node 24).
  format: 'cjs',
  target: 'node24',
  minify: true,
  define: { KUBECTL_EVA_VERSION: JSON.stringify(version) },
  legalComments: 'none',
  logLevel: 'warning',
  // config.ts finds files of a checkout through import.meta.url; kubectl-eva calls none of those functions.
  logOverride: { 'empty-import-meta': 'silent' },
});

const seaConfig = {
  main: join(work, 'kubectl-eva.cjs'),
  output: join(work, 'sea-prep.blob'),
  disableExperimentalSEAWarning: true,
  // V8's code cache of the bundle, made now: startup does not compile it again.
  useCodeCache: true,
};
writeFileSync(join(work, 'sea-config.json'), `${JSON.stringify(seaConfig, null, 2)}\n`);
execFileSync(node, ['--experimental-sea-config', join(work, 'sea-config.json')], { stdio: ['ignore', 'ignore', 'pipe'] });

rmSync(executable, { force: true });
copyFileSync(node, executable);
chmodSync(executable, 0o755);
// postject is CommonJS without types: its one function, as its README documents it. Its ELF reader
// (LIEF) prints "Can't find string offset for section name '.note...'" for Node's note sections: harmless.
const { inject } = createRequire(import.meta.url)('postject') as {
  inject: (file: string, resource: string, data: Buffer, options: { sentinelFuse: string }) => Promise<void>;
};
await inject(executable, 'NODE_SEA_BLOB', readFileSync(seaConfig.output), { sentinelFuse: SEA_FUSE });
rmSync(work, { recursive: true, force: true });

const mib = (statSync(executable).size / 2 ** 20).toFixed(1);
process.stdout.write(`dist/kubectl-eva ${version}: ${mib} MiB, built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
