/**
 * The render guard as helm runs it: the post-renderer plugin helm-plugins/eva-render-guard starts
 * `node <this file>` with the rendered manifests on stdin. Allowed: the checked objects on stdout,
 * exit 0. Refused (or anything unexpected): nothing on stdout, exit 1, so helm applies nothing.
 *
 * Its parameters come from the operator, through helm's environment, never from an argument:
 *   EVA_RENDER_GUARD_POLICY   {"namespace", "release", "images"} (steps/render-guard.ts)
 *   EVA_RENDER_GUARD_REPORT   a file for the refusals and the guard's own cost: helm keeps a
 *                             post-renderer's stderr to itself and says only "plugin exited with
 *                             error", so the operator reads them here.
 * A separate entry, not an `eva-operator` subcommand: it loads the guard and `yaml` only, which is
 * what a node start per helm call can afford (figures: `npm run bench:provision`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { checkRender, parsePolicy, refusalMessage, type GuardReport, type Refusal } from './steps/render-guard.ts';

/** The report: the refusals, if any, and what this process cost (wall time since it started, CPU). */
function report(refusals: readonly Refusal[]): void {
  const path = process.env['EVA_RENDER_GUARD_REPORT'];
  const { user, system } = process.cpuUsage();
  const content: GuardReport = { refusals, cost: { ms: Math.round(performance.now()), cpuMs: Math.round((user + system) / 1000) } };
  if (path !== undefined && path !== '') writeFileSync(path, JSON.stringify(content), { mode: 0o600 });
}

try {
  const verdict = checkRender(readFileSync(0, 'utf8'), parsePolicy(process.env['EVA_RENDER_GUARD_POLICY']));
  if (verdict.allowed) {
    process.stdout.write(verdict.output);
    report([]);
  } else {
    report(verdict.refusals);
    process.stderr.write(`${refusalMessage(verdict.refusals)}\n`);
    process.exitCode = 1;
  }
} catch (err) {
  // Fail closed: no refusals in the report means "the guard could not judge", a dependency problem, not the tenant's.
  process.stderr.write(`eva render guard: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 2;
}
