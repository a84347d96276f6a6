/**
 * Helm as the tests observe it: releases through the pinned CLI, running helm processes and helm
 * servers through /proc, and every call an operator makes through a recording wrapper (its HELM_BINARY).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processStat, tool } from './tools.ts';

export interface HelmRelease {
  name: string;
  revision: string;
  status: string;
}

/** Releases of `namespace`, in every status (Helm 4 lists them all by default), sorted by name. */
export function helmReleases(namespace: string): HelmRelease[] {
  const out = spawnSync(tool('helm'), ['list', '-n', namespace, '-o', 'json'], { encoding: 'utf8', env: process.env });
  if (out.status !== 0) throw new Error(`helm list -n ${namespace} failed: ${out.stderr}`);
  return (JSON.parse(out.stdout) as HelmRelease[])
    .map(({ name, revision, status }) => ({ name, revision, status }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

export interface HelmProcess {
  pid: number;
  argv: string[];
}

/**
 * The helm processes running with `--namespace <namespace>`, read from /proc in-process: no process
 * to spawn, so it is cheap enough to repeat every few milliseconds.
 */
export function helmProcesses(namespace: string): HelmProcess[] {
  const found: HelmProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile
    }
    const flag = argv.indexOf('--namespace');
    if (argv[0]?.split('/').pop() === 'helm' && flag > 0 && argv[flag + 1] === namespace) found.push({ pid: Number(entry), argv });
  }
  return found;
}

/**
 * The helm servers (eva-helm-server) an operator process started: its children of that name, read
 * from /proc. A server whose operator died is no longer its child: keep the pid to check it later.
 */
export function helmServerPids(operatorPid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      const stat = processStat(pid);
      return stat?.comm === 'eva-helm-server' && stat.ppid === operatorPid;
    });
}

/** A values file as helm found it when it started: where, its mode, its filesystem, which needles it held. */
export interface HelmValuesFile {
  path: string;
  /** Octal permission bits, as `stat -c %a` prints them (`600`). */
  mode: string;
  /** The filesystem's type, as `stat -f -c %T` prints it (`tmpfs`). */
  filesystem: string;
  needles: string[];
}

export interface HelmCall {
  argv: string[];
  valuesFiles: HelmValuesFile[];
}

export interface RecordingHelm {
  /** For HELM_BINARY: records the call, then execs the pinned helm with the same arguments. */
  readonly binary: string;
  /** Every call so far, in no particular order. */
  calls(): HelmCall[];
  remove(): void;
}

/**
 * A helm that records each call's argv and, for each `--values` file, where it is, its mode and
 * filesystem and which of `needles` it holds (searched while helm runs, as helm reads it), then execs
 * the real helm. The needles and the records stay on a tmpfs (/dev/shm): a secret the product leaked
 * into an argument is not written to disk by the test either.
 */
export function recordingHelm(needles: readonly string[]): RecordingHelm {
  const records = mkdtempSync('/dev/shm/eva-helm-calls-');
  const scriptDir = mkdtempSync(join(tmpdir(), 'eva-recording-helm-'));
  const needlesFile = join(records, 'needles');
  writeFileSync(needlesFile, needles.map((n) => `${n}\n`).join(''), { mode: 0o600 });
  const binary = join(scriptDir, 'helm');
  writeFileSync(
    binary,
    `#!/usr/bin/env bash
set -u
call=$(mktemp ${JSON.stringify(join(records, 'call.XXXXXX'))})
printf '%s\\0' "$@" > "$call"
prev=
for arg in "$@"; do
  file=
  case "$prev" in --values|-f) file=$arg ;; esac
  case "$arg" in --values=*) file=\${arg#--values=} ;; esac
  if [ -n "$file" ]; then
    found=$(grep -oF -f ${JSON.stringify(needlesFile)} -- "$file" | sort -u | paste -sd, -)
    printf '%s\\t%s\\t%s\\t%s\\n' "$file" "$(stat -c %a -- "$file")" "$(stat -f -c %T -- "$file")" "$found" >> "$call.values"
  fi
  prev=$arg
done
exec ${JSON.stringify(tool('helm'))} "$@"
`,
  );
  chmodSync(binary, 0o755);
  const remove = (): void => {
    rmSync(records, { recursive: true, force: true });
    rmSync(scriptDir, { recursive: true, force: true });
  };
  process.once('exit', remove);
  const valuesOf = (call: string): HelmValuesFile[] =>
    existsSync(`${call}.values`)
      ? readFileSync(`${call}.values`, 'utf8').trim().split('\n').map((line) => {
        const [path = '', mode = '', filesystem = '', found = ''] = line.split('\t');
        return { path, mode, filesystem, needles: found === '' ? [] : found.split(',') };
      })
      : [];
  return {
    binary,
    calls: () =>
      readdirSync(records)
        .filter((name) => /^call\.[A-Za-z0-9]+$/.test(name))
        .map((name) => join(records, name))
        .map((call) => ({ argv: readFileSync(call, 'utf8').split('\0').slice(0, -1), valuesFiles: valuesOf(call) })),
    remove,
  };
}
