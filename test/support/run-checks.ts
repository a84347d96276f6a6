/**
 * Checks a global setup registers to run once every test has run (e.g. "no write of the tests'
 * operators was refused"): the summary reporter runs them before its closing line and counts each
 * problem they return as a failure, so the closing line stays the last line and says failed.
 * Kept on globalThis: vitest may load the reporter and a global setup as two module instances.
 */
export type RunCheck = () => string[];

const KEY = Symbol.for('eva-operator.run-checks');

function registered(): RunCheck[] {
  const holder = globalThis as { [KEY]?: RunCheck[] };
  holder[KEY] ??= [];
  return holder[KEY];
}

export function registerRunCheck(check: RunCheck): void {
  registered().push(check);
}

/** Every registered check's problems; a check that throws is a problem too. */
export function runChecks(): string[] {
  return registered().flatMap((check) => {
    try {
      return check();
    } catch (err) {
      return [`an end-of-run check could not run: ${err instanceof Error ? err.message : String(err)}`];
    }
  });
}
