/**
 * YAML a tenant controls (a values source's key, a ConfigMap in its namespace), read so that no text
 * can take the operator down or loop it: at most 64 KiB, nested at most 64 deep (measured on the
 * parser's concrete syntax tree, which it builds without recursion, before the recursive composer
 * runs: thousands of `[` overflow its stack, and a second overflow has aborted the whole process),
 * at most 100 aliases resolved (the yaml library's own guard against alias-expansion bombs), and no
 * alias inside its own anchor (`&a {x: *a}` becomes a cyclic object that merging and hashing recurse
 * on forever). Each refusal is a sentence a tenant can act on, never a JS exception's text.
 */
import { type CST, Parser, parseDocument } from 'yaml';
import { MAX_VALUES_SOURCE_BYTES } from '../api/values-from.ts';

/** How deep mappings and lists may nest: far beyond any module's values, far below the parser's stack. */
export const MAX_YAML_DEPTH = 64;
/** Aliases resolved per document (the yaml library's default, named here because it is a limit we rely on). */
export const MAX_YAML_ALIASES = 100;
/** Mappings, lists and scalars once every alias is expanded: what merging, hashing and writing visit. */
export const MAX_YAML_NODES = 50_000;

export type TenantYaml =
  | { readonly ok: true; readonly value: unknown }
  /** `parserMessage`: the problem is the parser's own words, which quote the source text. */
  | { readonly ok: false; readonly problem: string; readonly parserMessage: boolean };

const refused = (problem: string, parserMessage = false): TenantYaml => ({ ok: false, problem, parserMessage });

/** The deepest collection nesting in the syntax tree, walked with an explicit stack; stops past `limit`. */
export function syntaxDepth(text: string, limit: number): number {
  const stack: { token: CST.Token | undefined; depth: number }[] = [];
  for (const token of new Parser().parse(text)) stack.push({ token, depth: 0 });
  let deepest = 0;
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const { token, depth } = frame;
    if (token === undefined) continue;
    if (token.type === 'document') stack.push({ token: token.value, depth });
    if (token.type !== 'block-map' && token.type !== 'block-seq' && token.type !== 'flow-collection') continue;
    deepest = Math.max(deepest, depth + 1);
    if (deepest > limit) return deepest;
    for (const item of token.items) {
      if ('key' in item) stack.push({ token: item.key ?? undefined, depth: depth + 1 });
      stack.push({ token: item.value, depth: depth + 1 });
    }
  }
  return deepest;
}

/**
 * What a parsed value would be once expanded, walked with an explicit stack: 'cyclic' when an object
 * contains itself, 'deep' or 'large' past the limits (aliases can nest and repeat what the text does
 * not), else undefined.
 */
export function shapeProblem(value: unknown): 'cyclic' | 'deep' | 'large' | undefined {
  const ancestors = new Set<object>();
  const stack: ({ node: unknown; depth: number } | { leave: object })[] = [{ node: value, depth: 0 }];
  let nodes = 0;
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    if ('leave' in frame) {
      ancestors.delete(frame.leave);
      continue;
    }
    nodes += 1;
    if (nodes > MAX_YAML_NODES) return 'large';
    const { node, depth } = frame;
    if (typeof node !== 'object' || node === null) continue;
    if (ancestors.has(node)) return 'cyclic';
    if (depth >= MAX_YAML_DEPTH) return 'deep';
    ancestors.add(node);
    stack.push({ leave: node });
    for (const child of Object.values(node)) stack.push({ node: child, depth: depth + 1 });
  }
  return undefined;
}

const SHAPE_PROBLEMS = {
  cyclic: 'an alias refers to its own anchor (a cyclic value, e.g. `&a {x: *a}`); write the value out instead',
  deep: `nested more than ${String(MAX_YAML_DEPTH)} levels deep`,
  large: `more than ${String(MAX_YAML_NODES)} values once its aliases are expanded`,
} as const;

/** Parses one YAML document a tenant wrote, or says in a sentence why it is refused. */
export function parseTenantYaml(text: string): TenantYaml {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_VALUES_SOURCE_BYTES) return refused(`${String(bytes)} bytes, above the limit of ${String(MAX_VALUES_SOURCE_BYTES)}`);
  if (syntaxDepth(text, MAX_YAML_DEPTH) > MAX_YAML_DEPTH) return refused(SHAPE_PROBLEMS.deep);
  const document = parseDocument(text);
  const [error] = document.errors;
  if (error !== undefined) return refused(error.message.split('\n')[0] ?? '', true);
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: MAX_YAML_ALIASES });
  } catch {
    // What toJS raises on the core schema is about aliases: an unknown anchor, or too many resolved.
    return refused(`an alias with no anchor before it, or more than ${String(MAX_YAML_ALIASES)} aliases resolved (the limit against alias-expansion bombs)`);
  }
  const shape = shapeProblem(value);
  return shape === undefined ? { ok: true, value } : refused(SHAPE_PROBLEMS[shape]);
}
