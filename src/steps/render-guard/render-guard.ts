/**
 * The render guard: what helm is about to apply for one module release, checked before anything is
 * applied. helm's post-renderer (helm-plugins/eva-render-guard) hands the rendered manifests to the
 * operator, which runs this check (./render-guard-server.ts), inside the same `helm upgrade --install`
 * that applies the result, so nothing is rendered twice and nothing unchecked can be applied: helm
 * applies only what the guard printed, and applies nothing when the guard refuses (a non-zero exit).
 *
 * A module release may hold only what the module contract (charts/modules/README.md) renders:
 *   - the kinds a module owns, each under the name the chart gives it (Deployment and Service
 *     `<release>`, ConfigMap `<release>-config`, Secret `<release>-credentials`);
 *   - only in the tenant's namespace (no other namespace; every other kind, cluster-scoped ones
 *     included, is refused by the first rule);
 *   - no helm hooks (the contract has none; hooks live outside the release's own objects);
 *   - Services of type ClusterIP only (NodePort and LoadBalancer open ports on every node, and
 *     ExternalName aliases a name outside the namespace);
 *   - container images only from the catalogue: exactly the references the operator resolved from
 *     images.txt (or the air-gap mirror that replaces its registry).
 *
 * Pure: a string in, a verdict out. What it allows it prints back as JSON documents, so helm applies
 * exactly the objects this code read (no second YAML reading can disagree with ours). Merge keys
 * (`<<`) are resolved as helm's YAML reader resolves them, then printed as plain keys.
 */
import { createHash } from 'node:crypto';
import { parseAllDocuments } from 'yaml';
import { MAX_YAML_DEPTH, syntaxDepth } from '../tenant-yaml.ts';

/** What the operator allows one release to render; set by the operator, never from an EvaTenant. */
export interface RenderPolicy {
  /** The tenant's namespace, where the release lives. */
  readonly namespace: string;
  /** The release name (= the module name). */
  readonly release: string;
  /** The image references the release may run (the catalogue's, as the chart prints them). */
  readonly images: readonly string[];
}

/** One object or image the guard refuses, in words that name it. */
export interface Refusal {
  /** kind/namespace/name of the object (namespace as helm would apply it). */
  readonly object: string;
  readonly message: string;
}

export type GuardVerdict = { readonly allowed: true; readonly output: string } | { readonly allowed: false; readonly refusals: readonly Refusal[] };

type Json = Record<string, unknown>;

/** apiVersion + kind -> the name the chart gives that object, from the release name. */
const OWNED_KINDS: Readonly<Record<string, (release: string) => string>> = {
  'apps/v1 Deployment': (release) => release,
  'v1 Service': (release) => release,
  'v1 ConfigMap': (release) => `${release}-config`,
  'v1 Secret': (release) => `${release}-credentials`,
};

const HOOK_ANNOTATION = 'helm.sh/hook';
const POD_CONTAINER_LISTS = ['initContainers', 'containers', 'ephemeralContainers'] as const;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const field = (value: unknown, ...path: string[]): unknown => path.reduce<unknown>((v, key) => (isObject(v) ? v[key] : undefined), value);

/** `apiVersion kind`, the key of OWNED_KINDS. */
const kindOf = (object: Json): string => `${text(object['apiVersion'])} ${text(object['kind'])}`;
const isOwnedKind = (object: Json): boolean => OWNED_KINDS[kindOf(object)] !== undefined;

/**
 * kind/namespace/name as helm would apply the object: an owned kind without a namespace goes to the
 * release's; any other kind is named as written (kind/name when it has none: it may be cluster-scoped).
 */
function describe(object: Json, policy: RenderPolicy): string {
  const namespace = text(field(object, 'metadata', 'namespace')) || (isOwnedKind(object) ? policy.namespace : '');
  return [text(object['kind']) || '<no kind>', namespace, text(field(object, 'metadata', 'name')) || '<no name>'].filter((part) => part !== '').join('/');
}

/** Every image of the object's pod template (init, regular and ephemeral containers). */
export function podImages(object: Json): string[] {
  const pod = field(object, 'spec', 'template', 'spec');
  return POD_CONTAINER_LISTS.flatMap((list) => {
    const containers = field(pod, list);
    return Array.isArray(containers) ? containers.map((c) => (isObject(c) && typeof c['image'] === 'string' ? c['image'] : '<no image>')) : [];
  });
}

/** Where the object goes and what it is called: the tenant's namespace, the chart's name, no hook. */
function placementProblems(object: Json, policy: RenderPolicy, expectedName: string): string[] {
  const problems: string[] = [];
  const namespace = field(object, 'metadata', 'namespace');
  if (namespace !== undefined && namespace !== policy.namespace) problems.push(`only namespace ${policy.namespace} is allowed`);
  if (field(object, 'metadata', 'name') !== expectedName) problems.push(`the chart names this ${text(object['kind'])} ${expectedName}`);
  if (field(object, 'metadata', 'generateName') !== undefined) problems.push('generateName is not allowed');
  if (field(object, 'metadata', 'annotations', HOOK_ANNOTATION) !== undefined) problems.push('helm hooks are not allowed');
  return problems;
}

/** What the object exposes or runs: a ClusterIP Service only, images from the catalogue only. */
function contentProblems(object: Json, policy: RenderPolicy): string[] {
  const problems: string[] = [];
  const serviceType = field(object, 'spec', 'type');
  if (object['kind'] === 'Service' && serviceType !== undefined && serviceType !== 'ClusterIP') problems.push(`Service type ${text(serviceType) || '?'} is not allowed (ClusterIP only)`);
  for (const image of new Set(podImages(object))) {
    if (!policy.images.includes(image)) problems.push(`image ${image} is not in the catalogue (allowed: ${policy.images.join(', ') || 'none'})`);
  }
  return problems;
}

/** Why one object may not be applied, or an empty list: where it goes and what it is, then what it runs and exposes. */
export function objectProblems(object: Json, policy: RenderPolicy): string[] {
  const problems = storedObjectProblems(object, policy);
  return isOwnedKind(object) ? [...problems, ...contentProblems(object, policy)] : problems;
}

/** A YAML integer beyond 2^53 would change when printed back as JSON: refused rather than altered. */
function jsonOf(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'bigint') return v;
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw new RangeError(`the number ${v.toString()} is too large to check exactly`);
    return Number(v);
  });
}

/**
 * Why an object of a stored release record (steps/modules/release-records.ts) may not be acted on: helm
 * deletes such objects (uninstall, or an upgrade that no longer renders them) and diffs an upgrade
 * against them, but never applies them again, so where they are and what they are is what matters:
 * the kinds and names a module owns, in the tenant's namespace, no hooks. What they run or expose
 * (images, Service type) is not judged: a record an older catalogue made stays acceptable.
 */
export function storedObjectProblems(object: Json, policy: RenderPolicy): string[] {
  const kind = kindOf(object);
  const expectedName = OWNED_KINDS[kind];
  if (expectedName === undefined) return [`${kind.trim() || 'an object without apiVersion/kind'} is not a kind a module may own (${Object.keys(OWNED_KINDS).join(', ')})`];
  return placementProblems(object, policy, expectedName(policy.release));
}

/** One document of a manifest stream: what it parsed to, or why it does not parse. */
type Document = { readonly object: unknown } | { readonly invalid: string };

/** The manifests are YAML as helm rendered them (the CLI plugin's), or JSON lines (the helm server's). */
export type ManifestFormat = 'yaml' | 'json-lines';

function* yamlDocuments(manifests: string): Generator<Document> {
  for (const document of parseAllDocuments(manifests, { intAsBigInt: true, uniqueKeys: true, merge: true })) {
    if (document.errors.length > 0) {
      yield { invalid: `not valid YAML: ${document.errors[0]?.message ?? ''}` };
      continue;
    }
    try {
      yield { object: document.toJS() };
    } catch (err) {
      yield { invalid: `not valid YAML: ${(err as Error).message}` };
    }
  }
}

/** JSON.parse's reviver: an integer beyond 2^53 comes back exact, as a BigInt (which jsonOf refuses), never rounded. */
function exactIntegers(_key: string, value: unknown, context?: { source?: string }): unknown {
  const source = context?.source ?? '';
  return typeof value === 'number' && !Number.isSafeInteger(value) && /^-?\d+$/.test(source) ? BigInt(source) : value;
}

/**
 * The helm server converts helm's render with helm's own YAML reader, one JSON document per line: the
 * guard reads what helm applies, and JSON costs a fraction of YAML to read.
 */
function* jsonDocuments(manifests: string): Generator<Document> {
  for (const line of manifests.split('\n')) {
    if (line.trim() === '') continue;
    try {
      yield { object: JSON.parse(line, exactIntegers) };
    } catch (err) {
      yield { invalid: `not valid JSON: ${(err as Error).message}` };
    }
  }
}

/** Judges every document with `rule`; `accept` turns an object that passed into its output (or throws why not). */
function judge(documents: Iterable<Document>, policy: RenderPolicy, rule: (object: Json, policy: RenderPolicy) => string[], accept: (object: Json) => string): { refusals: Refusal[]; allowed: string[] } {
  const refusals: Refusal[] = [];
  const allowed: string[] = [];
  let index = 0;
  for (const document of documents) {
    index += 1;
    const where = `document ${String(index)}`;
    if ('invalid' in document) {
      refusals.push({ object: where, message: document.invalid });
      continue;
    }
    const { object } = document;
    if (object === null || object === undefined) continue;
    if (!isObject(object)) {
      refusals.push({ object: where, message: 'not a Kubernetes object' });
      continue;
    }
    const problems = rule(object, policy);
    try {
      if (problems.length === 0) allowed.push(accept(object));
    } catch (err) {
      problems.push((err as Error).message);
    }
    if (problems.length > 0) refusals.push({ object: describe(object, policy), message: problems.join('; ') });
  }
  return { refusals, allowed };
}

/** Checks a rendered manifest stream against the policy; allowed objects come back as JSON documents. */
export function checkRender(manifests: string, policy: RenderPolicy, format: ManifestFormat = 'yaml'): GuardVerdict {
  const documents = format === 'json-lines' ? jsonDocuments(manifests) : yamlDocuments(manifests);
  const { refusals, allowed } = judge(documents, policy, objectProblems, jsonOf);
  if (refusals.length > 0) return { allowed: false, refusals };
  return { allowed: true, output: allowed.map((json) => `---\n${json}\n`).join('') };
}

/** What in a stored release's manifest may not be deleted or diffed against (storedObjectProblems), or nothing. */
/**
 * A stored manifest comes from a Secret anyone with write access to the namespace could have forged: its
 * nesting is measured before the parser builds it (thousands of `[` overflow the parser's stack), and
 * the parser's own words (they quote the text, a genuine record's values included) are never passed on.
 */
export function checkStoredManifest(manifest: string, policy: RenderPolicy): readonly Refusal[] {
  const key = createHash('sha256').update(`${policy.namespace}\0${policy.release}\0`).update(manifest).digest('base64');
  const known = storedVerdicts.get(key);
  if (known !== undefined) {
    storedVerdicts.delete(key); // most recently used last: the oldest goes first
    storedVerdicts.set(key, known);
    return known;
  }
  const verdict = judgeStoredManifest(manifest, policy);
  storedVerdicts.set(key, verdict);
  if (storedVerdicts.size > STORED_VERDICTS_KEPT) storedVerdicts.delete(storedVerdicts.keys().next().value ?? key);
  return verdict;
}

/**
 * Stored manifests already judged, by digest of namespace, release and manifest: every helm call
 * checks every stored revision of its release, and a revision does not change, so each is read once
 * (reading them was a fifth of the operator's CPU per release). Bounded: least recently used go first.
 */
const storedVerdicts = new Map<string, readonly Refusal[]>();
const STORED_VERDICTS_KEPT = 8192;

function judgeStoredManifest(manifest: string, policy: RenderPolicy): readonly Refusal[] {
  if (syntaxDepth(manifest, MAX_YAML_DEPTH) > MAX_YAML_DEPTH) return [{ object: 'the stored manifest', message: `nested deeper than ${MAX_YAML_DEPTH} levels: not a module's objects` }];
  return judge(yamlDocuments(manifest), policy, storedObjectProblems, () => '').refusals.map((r) => (r.message.startsWith('not valid YAML') ? { ...r, message: 'not valid YAML' } : r));
}

/** One line for a condition: every refused object with why. */
export const refusalMessage = (refusals: readonly Refusal[]): string =>
  `the render guard refused: ${refusals.map((r) => `${r.object}: ${r.message}`).join('; ')}`;
