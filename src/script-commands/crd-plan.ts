/**
 * What scripts/quickstart.sh does with the installed EvaTenant CRD, decided here (bash only fetches
 * the objects): install it when absent, leave it when it is the same, upgrade it when it is older,
 * and never downgrade one that is newer (an API version crds/ lacks, a later version stamp, or a
 * schema crds/ would take something away from without a later stamp: newer, or changed by hand).
 *
 *   eva-operator crd-plan --bundled <crds file> --app-version <v> [--installed <kubectl -o json, empty: absent>]
 *                         [--merged <the server-side dry run of crds/, -o json>]
 * prints the state (absent, same, older, or compare: run again with --merged) on its first line and
 * what to tell the user on the next ones; a refusal goes to stderr, exit 1; bad input, exit 2.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { parse } from 'yaml';
import { canonicalJson } from '../canonical-json.ts';
import { compareVersions, isSemver } from '../versions.ts';

export const CRD_STAMP = 'eva.aidonow.com/crd-version';
/** How many removed or changed fields a refusal lists. */
const SHOWN_FIELDS = 12;

/** The installed CRD as the decision reads it. */
export interface InstalledCrd {
  readonly servedApis: readonly string[];
  readonly storedApis: readonly string[];
  /** The annotation eva.aidonow.com/crd-version (the chart version that applied it), when there is one. */
  readonly stamp: string | undefined;
  readonly spec: unknown;
}

export interface PlanInput {
  readonly bundledApis: readonly string[];
  readonly appVersion: string;
  readonly installed: InstalledCrd | undefined;
  /** The spec applying crds/ would give (server-side dry run); needed only when the API versions are the same. */
  readonly merged?: unknown;
}

export type CrdPlan =
  /** `compare`: the same API versions, run again with the spec applying crds/ would give. */
  | { readonly state: 'absent' | 'same' | 'older' | 'compare'; readonly lines: readonly string[] }
  | { readonly state: 'refuse'; readonly message: string };

const line = (text: string): string => `  CRD      ${text}`;

export function planCrdUpgrade({ bundledApis, appVersion, installed, merged }: PlanInput): CrdPlan {
  if (installed === undefined) return { state: 'absent', lines: [line(`evatenants.eva.aidonow.com is not installed: step 2 installs the bundled one (${appVersion}, API versions ${bundledApis.join(' ')})`)] };
  const { stamp, notes } = readStamp(installed.stamp);
  const label = stamp === undefined ? `installed with no ${CRD_STAMP} annotation` : `installed version ${stamp}`;
  const newerApis = [...new Set([...installed.servedApis, ...installed.storedApis])].filter((api) => !bundledApis.includes(api));
  if (newerApis.length > 0) {
    return refuse(`the installed EvaTenant CRD is NEWER than this checkout's: it serves or stores ${newerApis.join(' ')}, which crds/ (${appVersion}: ${bundledApis.join(' ')}) does not have. Refusing to downgrade it: use the quickstart of the release that installed it`);
  }
  if (stamp !== undefined && compareVersions(stamp, appVersion) > 0) {
    return refuse(`the installed EvaTenant CRD is NEWER than this checkout's: ${CRD_STAMP}=${stamp}, crds/ is ${appVersion}. Refusing to downgrade it: use the quickstart of release ${stamp} or later`);
  }
  const olderApis = bundledApis.filter((api) => !installed.servedApis.includes(api));
  if (olderApis.length > 0) {
    return { state: 'older', lines: [...notes, line(`OLDER than crds/ (${label}; API versions ${installed.servedApis.join(' ')}, crds/ adds ${olderApis.join(' ')}): step 2 upgrades it to ${appVersion}`)] };
  }
  if (merged === undefined) return { state: 'compare', lines: [] };
  const plan = sameApisPlan(installed, merged, { label, stamp, appVersion });
  return plan.state === 'refuse' ? plan : { ...plan, lines: [...notes, ...plan.lines] };
}

/** The installed CRD's version stamp, when it is one (a stamp that is not a version is said to be ignored). */
function readStamp(annotation: string | undefined): { stamp: string | undefined; notes: string[] } {
  if (annotation === undefined || annotation === '') return { stamp: undefined, notes: [] };
  if (isSemver(annotation)) return { stamp: annotation, notes: [] };
  return { stamp: undefined, notes: [line(`ignoring the annotation ${CRD_STAMP}='${annotation}' of the installed CRD: not a version`)] };
}

/** The same API versions: the spec the API server has against the one applying crds/ would give. */
function sameApisPlan(installed: InstalledCrd, merged: unknown, { label, stamp, appVersion }: { label: string; stamp: string | undefined; appVersion: string }): CrdPlan {
  if (canonicalJson(installed.spec) === canonicalJson(merged)) return { state: 'same', lines: [line(`the SAME as crds/ (${label}; API versions ${installed.servedApis.join(' ')}): step 2 changes nothing in it`)] };
  if (stamp !== undefined && compareVersions(stamp, appVersion) < 0) return { state: 'older', lines: [line(`OLDER than crds/ (${label}, crds/ is ${appVersion}): step 2 upgrades it`)] };
  const taken = takenAway(installed.spec, merged, 'spec');
  if (taken.length === 0) return { state: 'older', lines: [line(`OLDER than crds/ (${label}; crds/ only adds to its schema): step 2 upgrades it to ${appVersion}`)] };
  const shown = taken.slice(0, SHOWN_FIELDS).map((path) => `  - ${path}`);
  return refuse(
    [
      `applying crds/ would remove or change ${String(taken.length)} field(s) of the installed CRD:`,
      ...shown,
      `the installed EvaTenant CRD (${label}) is NEWER than this checkout's ${appVersion}, or was changed by hand. Refusing to downgrade it. If this checkout is the one you want, apply it yourself (kubectl apply --server-side --force-conflicts -f crds/) and run again`,
    ].join('\n'),
  );
}

const refuse = (message: string): CrdPlan => ({ state: 'refuse', message });

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The paths of `before` that `after` removes or changes (what it adds is not listed). */
export function takenAway(before: unknown, after: unknown, path: string): string[] {
  if (Array.isArray(before)) {
    if (!Array.isArray(after)) return [path];
    return before.flatMap((item, index) => (index < after.length ? takenAway(item, after[index], `${path}[${String(index)}]`) : [`${path}[${String(index)}]`]));
  }
  if (isRecord(before)) {
    if (!isRecord(after)) return [path];
    return Object.entries(before).flatMap(([key, value]) => (key in after ? takenAway(value, after[key], `${path}.${key}`) : [`${path}.${key}`]));
  }
  return canonicalJson(before) === canonicalJson(after) ? [] : [path];
}

// ---- the command -------------------------------------------------------------------------------------

class PlanInputError extends Error {}

function readObject(file: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new PlanInputError(`cannot read ${what} ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!isRecord(parsed)) throw new PlanInputError(`${what} ${file} is not a CustomResourceDefinition`);
  return parsed;
}

/** `object.key`, when it is an object. */
const field = (object: unknown, key: string): Record<string, unknown> | undefined => {
  const value = isRecord(object) ? object[key] : undefined;
  return isRecord(value) ? value : undefined;
};
const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string' && item !== '') : []);
const apisOf = (crd: Record<string, unknown>): string[] => {
  const versions = field(crd, 'spec')?.['versions'];
  return strings(Array.isArray(versions) ? versions.map((version: unknown) => (isRecord(version) ? version['name'] : undefined)) : []);
};

function installedFrom(file: string | undefined): InstalledCrd | undefined {
  if (file === undefined || readFileSync(file, 'utf8').trim() === '') return undefined;
  const crd = readObject(file, 'the installed CRD');
  const stamp = field(field(crd, 'metadata'), 'annotations')?.[CRD_STAMP];
  return { servedApis: apisOf(crd), storedApis: strings(field(crd, 'status')?.['storedVersions']), stamp: typeof stamp === 'string' ? stamp : undefined, spec: crd['spec'] };
}

export function crdPlanCommand(): Command {
  return new Command('crd-plan')
    .description("what quickstart.sh does with the installed EvaTenant CRD: absent, same, older, compare (again with --merged), or a refusal (exit 1)")
    .requiredOption('--bundled <file>', 'the CRD of this checkout (crds/)')
    .requiredOption('--app-version <version>', "this checkout's version (the chart's appVersion)")
    .option('--installed <file>', 'the installed CRD (kubectl get -o json; empty or absent: not installed)')
    .option('--merged <file>', 'the server-side dry run of applying --bundled (-o json)')
    .action((options: { bundled: string; appVersion: string; installed?: string; merged?: string }) => {
      try {
        const input: PlanInput = {
          bundledApis: apisOf(readObject(options.bundled, 'the bundled CRD')),
          appVersion: options.appVersion,
          installed: installedFrom(options.installed),
          ...(options.merged === undefined ? {} : { merged: readObject(options.merged, 'the merged CRD')['spec'] }),
        };
        const plan = planCrdUpgrade(input);
        if (plan.state === 'refuse') {
          process.stderr.write(`${plan.message}\n`);
          process.exit(1);
        }
        process.stdout.write([plan.state, ...plan.lines].map((l) => `${l}\n`).join(''));
      } catch (err) {
        if (!(err instanceof PlanInputError)) throw err;
        process.stderr.write(`${err.message}\n`);
        process.exit(2);
      }
    });
}
