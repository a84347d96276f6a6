/**
 * A stand-in helm binary for unit tests: a shell script that records "<args>\t<env>" and answers per
 * subcommand. Its files live in one temporary folder, removed when the test process exits.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface FakeResult {
  stdout?: string;
  stderr?: string;
  exit?: number;
  sleepSeconds?: number;
}

export interface FakeHelm {
  readonly binary: string;
  /** Every call so far: its arguments, its environment (as `env` printed it) and its process id. */
  calls(): { args: string[]; env: string; pid: number }[];
}

let dir: string | undefined;
let counter = 0;

function folder(): string {
  if (dir === undefined) {
    const created = mkdtempSync(join(tmpdir(), 'eva-fake-helm-'));
    process.once('exit', () => {
      rmSync(created, { recursive: true, force: true });
    });
    dir = created;
  }
  return dir;
}

export function fakeHelm(answers: Record<string, FakeResult> = {}): FakeHelm {
  const base = folder();
  counter += 1;
  const binary = join(base, `helm-${String(counter)}`);
  const log = join(base, `log-${String(counter)}`);
  const cases = Object.entries(answers)
    .map(([sub, r]) => {
      // Answers go through files: no quoting of helm's text in the script.
      const out = join(base, `${String(counter)}-${sub}.out`);
      const err = join(base, `${String(counter)}-${sub}.err`);
      writeFileSync(out, r.stdout ?? '');
      writeFileSync(err, r.stderr ?? '');
      const sleep = r.sleepSeconds === undefined ? '' : `sleep ${String(r.sleepSeconds)};`;
      return `  ${sub}) ${sleep} cat ${out}; cat ${err} >&2; exit ${String(r.exit ?? 0)} ;;`;
    })
    .join('\n');
  // One file per call, named by its start time (microseconds) and pid, written whole: calls made at
  // once appending to one log interleaved their writes, and a line could be lost.
  mkdirSync(log);
  writeFileSync(
    binary,
    `#!/usr/bin/env bash\nline="$(printf '%s\\x1f' "$@")"$'\\t'"$(env | tr '\\n' ' ')"\ncall=${log}/\${EPOCHREALTIME/./}-$$\nprintf '%s\\n' "$line" > "$call.tmp" && mv "$call.tmp" "$call"\ncase "$1" in\n${cases}\n  *) exit 0 ;;\nesac\n`,
  );
  chmodSync(binary, 0o755);
  return {
    binary,
    calls: () =>
      readdirSync(log)
        .filter((name) => !name.endsWith('.tmp'))
        .sort()
        .map((name) => {
          const [args = '', env = ''] = readFileSync(join(log, name), 'utf8').replace(/\n$/, '').split('\t');
          return { args: args.split('\x1f').filter((a) => a !== ''), env, pid: Number(name.split('-')[1]) };
        }),
  };
}
