/**
 * Reads the operator's environment variables one by one, collecting every problem (each naming its
 * variable) instead of stopping at the first, so a misconfigured Deployment says all that is wrong at once.
 */
import { readFileSync } from 'node:fs';

export type Env = Readonly<Record<string, string | undefined>>;

/** Label selectors as matchLabels. */
export type Labels = Readonly<Record<string, string>>;

export const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

export class EnvReader {
  readonly problems: string[] = [];
  private readonly env: Env;
  constructor(env: Env) {
    this.env = env;
  }

  string(name: string, fallback: string): string {
    return this.optional(name) ?? fallback;
  }

  optional(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  required(name: string, hint: string): string {
    const value = this.optional(name);
    if (value === undefined) this.problems.push(`${name} is required (${hint})`);
    return value ?? '';
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  }

  boolean(name: string): boolean {
    const raw = this.optional(name)?.toLowerCase();
    if (raw === undefined || raw === 'false' || raw === '0') return false;
    if (raw === 'true' || raw === '1') return true;
    this.problems.push(`${name} must be true or false, got "${raw}"`);
    return false;
  }

  matching(name: string, value: string, pattern: RegExp, expected: string): void {
    if (value !== '' && !pattern.test(value)) this.problems.push(`${name} must be ${expected}, got "${value}"`);
  }

  /** An equality label selector, `key=value[,key=value...]`, as matchLabels. */
  labels(name: string, fallback: string): Labels {
    const raw = this.string(name, fallback);
    const pairs = raw.split(',').map((part) => part.trim().split('='));
    const valid = pairs.every((p) => p.length === 2 && LABEL_KEY.test(p[0] ?? '') && LABEL_VALUE.test(p[1] ?? ''));
    if (!valid) {
      this.problems.push(`${name} must be a label selector like key=value,key2=value2, got "${raw}"`);
      return {};
    }
    return Object.fromEntries(pairs.map(([k, v]) => [k ?? '', v ?? '']));
  }

  /** A file that must exist and pass `check` (which throws with a reason); only its path is kept. */
  file(name: string, hint: string, check: (content: string) => void): string {
    const path = this.required(name, hint);
    if (path !== '') this.checkFile(name, path, check);
    return path;
  }

  /** As file(), for a file that may be left unset (undefined then). */
  optionalFile(name: string, check: (content: string) => void): string | undefined {
    const path = this.optional(name);
    if (path !== undefined) this.checkFile(name, path, check);
    return path;
  }

  private checkFile(name: string, path: string, check: (content: string) => void): void {
    let content: string;
    try {
      content = readFileSync(path, 'utf8');
    } catch (err) {
      this.problems.push(`${name}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      return;
    }
    try {
      check(content);
    } catch (err) {
      // The reason names the kind of key, never the content.
      this.problems.push(`${name}: ${path} ${err instanceof Error ? err.message : 'is not valid'}`);
    }
  }
}
