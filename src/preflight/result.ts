/** One row of the preflight's table: a check's name, its result, what it saw and, for a failure, how to fix it. */

export type CheckResult =
  | { readonly check: string; readonly result: 'ok' | 'warn'; readonly detail: string }
  | { readonly check: string; readonly result: 'fail'; readonly detail: string; readonly fix: string };

export const ok = (check: string, detail: string): CheckResult => ({ check, result: 'ok', detail });
export const warn = (check: string, detail: string): CheckResult => ({ check, result: 'warn', detail });
export const fail = (check: string, detail: string, fix: string): CheckResult => ({ check, result: 'fail', detail, fix });

/** 0 when nothing failed (warnings allowed), 1 otherwise. */
export const exitCodeOf = (results: readonly CheckResult[]): 0 | 1 => (results.some((r) => r.result === 'fail') ? 1 : 0);

/** The detail of a check that could not run. */
export const couldNotCheck = (error: string): string => `could not check: ${error}`;
