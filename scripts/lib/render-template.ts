/**
 * Renders one of the scripts' template files (scripts/dev-cluster/, scripts/real-node/,
 * scripts/build-image/, scripts/build-components/) to stdout: `${NAME}` becomes the value given as
 * NAME=value, for the names given only (as `envsubst '${NAME}...'` does; anything else, `$x` or
 * `${OTHER}`, stays as written).
 * Run by Node from node_modules (scripts/lib/eva-cli.sh: eva_render), so the local control plane
 * needs no system package for it; it starts in a fraction of the `eva-operator` command's time.
 *
 *   node scripts/lib/render-template.ts <template> [NAME=value...]
 */
import { readFileSync } from 'node:fs';

export function renderTemplate(template: string, values: ReadonlyMap<string, string>): string {
  return template.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) => values.get(name) ?? whole);
}

export function parseAssignments(args: readonly string[]): Map<string, string> {
  return new Map(
    args.map((arg) => {
      const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(arg);
      if (!m) throw new Error(`expected NAME=value, got "${arg}"`);
      return [m[1] ?? '', m[2] ?? ''] as const;
    }),
  );
}

if (import.meta.main) {
  const [template, ...assignments] = process.argv.slice(2);
  try {
    if (template === undefined) throw new Error('usage: render-template.ts <template> [NAME=value...]');
    process.stdout.write(renderTemplate(readFileSync(template, 'utf8'), parseAssignments(assignments)));
  } catch (err) {
    process.stderr.write(`render-template: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  }
}
