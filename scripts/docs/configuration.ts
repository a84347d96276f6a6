/**
 * docs/configuration.md: one row per value of the operator chart, from its values.schema.json (the
 * values, their types and limits) and values.yaml (the defaults, and the comments that say what a
 * value does). A value the schema declares but values.yaml leaves out shows no default.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMap, isPair, isScalar, type Node, parseDocument, type Pair, type YAMLMap } from 'yaml';
import { cell, code, generatedHeader, page, table } from './markdown.ts';

const CHART = 'charts/eva-operator';

interface JsonSchema {
  readonly $ref?: string;
  readonly type?: string | readonly string[];
  readonly description?: string;
  readonly enum?: readonly unknown[];
  readonly pattern?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly definitions?: Readonly<Record<string, JsonSchema>>;
}

export interface ValueRow {
  readonly path: string;
  readonly type: string;
  readonly defaultValue: string;
  readonly setting: string;
  readonly meaning: string;
}

/** What values.yaml says of each value: its default, the comment above it and the one after it on its line. */
interface Documented {
  readonly value: unknown;
  readonly above: string;
  readonly after: string;
}

/** The last paragraph of a comment block: the one that belongs to the key below it (a block before a blank line is about a section). */
const lastParagraph = (comment: string): string => (comment.split(/\n\s*\n/).at(-1) ?? '').replace(/\s*\n\s*/g, ' ').trim();

/** The comments of a key; a map's first key also gets the comment the parser hangs on the map itself. */
function documentedPair(pair: Pair, mapComment: string): Omit<Documented, 'value'> {
  const key = pair.key as Node | null;
  const value = pair.value as Node | null;
  const above = lastParagraph(key?.commentBefore ?? mapComment);
  const after = isScalar(value) || (isMap(value) && value.flow === true) ? (value.comment ?? '').trim() : '';
  return { above, after };
}

function documented(map: YAMLMap, prefix: string, out: Map<string, Documented>): Map<string, Documented> {
  map.items.forEach((pair, index) => {
    if (!isPair(pair) || !isScalar(pair.key)) return;
    const path = `${prefix}${String(pair.key.value)}`;
    const node = pair.value as Node | null;
    out.set(path, { value: node?.toJSON() as unknown, ...documentedPair(pair, index === 0 ? (map.commentBefore ?? '') : '') });
    if (isMap(node) && node.flow !== true) documented(node, `${path}.`, out);
  });
  return out;
}

function readValuesYaml(root: string): Map<string, Documented> {
  const doc = parseDocument(readFileSync(join(root, CHART, 'values.yaml'), 'utf8'));
  if (!isMap(doc.contents)) throw new Error(`${CHART}/values.yaml is not a mapping`);
  return documented(doc.contents, '', new Map());
}

const resolve = (schema: JsonSchema, root: JsonSchema): JsonSchema =>
  schema.$ref === undefined ? schema : { ...(root.definitions?.[schema.$ref.replace('#/definitions/', '')] ?? {}), ...schema, $ref: undefined };

function typeOf(schema: JsonSchema): string {
  const type = Array.isArray(schema.type) ? schema.type.join(' or ') : (schema.type as string | undefined) ?? 'any';
  const limits = [
    schema.enum && `one of ${schema.enum.map(String).join(', ')}`,
    schema.minimum !== undefined && schema.maximum !== undefined && `${String(schema.minimum)}..${String(schema.maximum)}`,
    schema.minimum !== undefined && schema.maximum === undefined && `>= ${String(schema.minimum)}`,
  ].filter((l): l is string => typeof l === 'string');
  return limits.length === 0 ? type : `${type} (${limits.join('; ')})`;
}

/**
 * The environment variable a text opens with (`EVA_BASE_DOMAIN: ...`, `OPERATOR_VERSION and ...`),
 * and the rest. A capitalised word without an underscore counts only before a colon (`SHARD:`),
 * so `NATS runs ...` is prose.
 */
function splitSetting(text: string): { setting: string; rest: string } {
  const match = /^([A-Z][A-Z0-9_]{2,})(:?)\s*(.*)$/s.exec(text);
  const [, name = '', colon = '', rest = ''] = match ?? [];
  return match && (name.includes('_') || colon === ':') ? { setting: name, rest } : { setting: '', rest: text };
}

function row(path: string, schema: JsonSchema, yaml: Documented | undefined, heading: boolean): ValueRow {
  const texts = [yaml?.after ?? '', yaml?.above ?? '', schema.description ?? ''].map(splitSetting);
  const meaning = texts.find((t) => t.rest !== '')?.rest ?? '';
  const setting = texts.find((t) => t.setting !== '')?.setting ?? '';
  const defaultValue = yaml === undefined || heading ? '' : JSON.stringify(yaml.value);
  return { path, type: typeOf(schema), defaultValue, setting, meaning };
}

/** Every value, depth first: an object with declared properties is opened (its own row only when it says something), anything else is one row. */
function valueRows(schema: JsonSchema, root: JsonSchema, yaml: Map<string, Documented>, prefix = ''): ValueRow[] {
  return Object.entries(schema.properties ?? {}).flatMap(([name, raw]) => {
    const path = `${prefix}${name}`;
    const child = resolve(raw, root);
    if (child.properties === undefined) return [row(path, child, yaml.get(path), false)];
    const said = child.description !== undefined || (yaml.get(path)?.above ?? '') !== '';
    return [...(said ? [row(path, child, yaml.get(path), true)] : []), ...valueRows(child, root, yaml, `${path}.`)];
  });
}

export function chartValueRows(root: string): ValueRow[] {
  const schema = JSON.parse(readFileSync(join(root, CHART, 'values.schema.json'), 'utf8')) as JsonSchema;
  return valueRows(schema, schema, readValuesYaml(root));
}

const INTRO = `Every value of the operator chart (\`${CHART}\`), with its type, its default from \`values.yaml\`, the
operator setting (environment variable) it becomes, and what it does. \`values.schema.json\` refuses
any other key and any value outside these types at \`helm install\` time. Set them with \`--set\` or
\`-f my-values.yaml\`; the install guide ([install.md](install.md)) says which ones a cluster usually
needs. Settings of the operator process itself: [operator.md](operator.md).`;

export function renderConfiguration(root: string): string {
  const rows = chartValueRows(root).map((r) => [code(r.path), cell(r.type), r.defaultValue === '' ? '' : code(r.defaultValue), r.setting === '' ? '' : code(r.setting), r.meaning]);
  return page([
    generatedHeader('Configuration: the operator chart\'s values', `${CHART}/values.schema.json and values.yaml`),
    INTRO,
    table(['value', 'type', 'default', 'setting', 'what it does'], rows),
  ]);
}
