/** Where untyped API objects become typed EvaRollouts (or a clear error naming every problem), as parse.ts does for EvaTenants. */
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { API_VERSION } from './constants.ts';
import { type EvaRollout, type EvaRolloutSpec, EvaRolloutSpecSchema, type EvaRolloutStatus, EvaRolloutStatusSchema, ROLLOUT_KIND } from './evarollout.ts';

export class InvalidRolloutError extends Error {
  override readonly name = 'InvalidRolloutError';
  readonly problems: readonly string[];
  constructor(objectName: string, problems: readonly string[]) {
    super(`EvaRollout ${objectName} is invalid: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

const specChecker = TypeCompiler.Compile(EvaRolloutSpecSchema);
const statusChecker = TypeCompiler.Compile(EvaRolloutStatusSchema);

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function problemsOf(checker: typeof specChecker | typeof statusChecker, value: unknown, prefix: string): string[] {
  return checker.Check(value) ? [] : [...checker.Errors(value)].map((e) => `${prefix}${e.path || '/'}: ${e.message}`);
}

function problemsWith(raw: Record<string, unknown>, spec: unknown): string[] {
  return [
    ...(raw['apiVersion'] === API_VERSION ? [] : [`apiVersion must be ${API_VERSION}`]),
    ...(raw['kind'] === ROLLOUT_KIND ? [] : [`kind must be ${ROLLOUT_KIND}`]),
    ...problemsOf(specChecker, spec, '/spec'),
    ...(raw['status'] === undefined ? [] : problemsOf(statusChecker, raw['status'], '/status')),
  ];
}

/** The metadata fields the operator reads, absent ones left out. */
function metadataOf(metadata: Record<string, unknown>, name: string): EvaRollout['metadata'] {
  const generation = metadata['generation'];
  const fields = { uid: text(metadata['uid']), generation: typeof generation === 'number' ? generation : undefined, resourceVersion: text(metadata['resourceVersion']), creationTimestamp: text(metadata['creationTimestamp']) };
  return { name, ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) };
}

/** Parses an EvaRollout read from the API server, defaults applied as the API server would. */
export function parseEvaRollout(raw: unknown): EvaRollout {
  const metadata = isRecord(raw) && isRecord(raw['metadata']) ? raw['metadata'] : undefined;
  const name = text(metadata?.['name']) ?? '<unnamed>';
  if (!isRecord(raw) || metadata === undefined) throw new InvalidRolloutError(name, ['not a Kubernetes object']);
  const spec = Value.Default(EvaRolloutSpecSchema, structuredClone(raw['spec'] ?? {}));
  const problems = problemsWith(raw, spec);
  if (problems.length > 0) throw new InvalidRolloutError(name, problems);
  return {
    apiVersion: API_VERSION,
    kind: ROLLOUT_KIND,
    metadata: metadataOf(metadata, name),
    spec: spec as EvaRolloutSpec,
    ...(raw['status'] === undefined ? {} : { status: raw['status'] as EvaRolloutStatus }),
  };
}
