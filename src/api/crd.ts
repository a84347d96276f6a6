/** Builds the CustomResourceDefinitions (EvaTenant, EvaRollout) from their TypeBox schemas (the one source of truth). */
import { stringify } from 'yaml';
import type { TSchema } from '@sinclair/typebox';
import {
  API_VERSION,
  CATEGORIES,
  CRD_NAME,
  GROUP,
  KIND,
  OWNER_ANNOTATION,
  PLURAL,
  SHORT_NAMES,
  SINGULAR,
  VERSION,
} from './constants.ts';
import { EvaTenantSpecSchema, EvaTenantStatusSchema } from './evatenant.ts';
import { EvaRolloutSpecSchema, EvaRolloutStatusSchema, ROLLOUT_KIND, ROLLOUT_PLURAL, ROLLOUT_SHORT_NAMES } from './evarollout.ts';

type JsonObject = Record<string, unknown>;

/** Plain JSON: drops TypeBox's symbol-keyed bookkeeping. */
function toJson(schema: unknown): JsonObject {
  return JSON.parse(JSON.stringify(schema)) as JsonObject;
}

const annotationPath = (key: string): string => `.metadata.annotations.${key.replaceAll('.', '\\.')}`;

interface Definition {
  readonly kind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly description: string;
  readonly spec: TSchema;
  readonly status: TSchema;
  readonly printerColumns: readonly JsonObject[];
}

const TENANT: Definition = {
  kind: KIND,
  plural: PLURAL,
  singular: SINGULAR,
  shortNames: SHORT_NAMES,
  description: `${KIND} (${API_VERSION}) is one customer tenant: namespace, quotas, streams, data, modules and ingress.`,
  spec: EvaTenantSpecSchema,
  status: EvaTenantStatusSchema,
  printerColumns: [
    { name: 'Code', type: 'string', jsonPath: '.spec.capsuleCode' },
    { name: 'Tier', type: 'string', jsonPath: '.spec.tier' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Wave', type: 'integer', jsonPath: '.spec.wave' },
    { name: 'Owner', type: 'string', jsonPath: annotationPath(OWNER_ANNOTATION), description: 'Operator version that owns the tenant' },
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'URL', type: 'string', jsonPath: '.status.url' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
};

const ROLLOUT: Definition = {
  kind: ROLLOUT_KIND,
  plural: ROLLOUT_PLURAL,
  singular: ROLLOUT_KIND.toLowerCase(),
  shortNames: ROLLOUT_SHORT_NAMES,
  description: `${ROLLOUT_KIND} (${API_VERSION}) moves the tenants of a fleet to another operator version, wave by wave, judged by gates (docs/rollouts.md).`,
  spec: EvaRolloutSpecSchema,
  status: EvaRolloutStatusSchema,
  printerColumns: [
    { name: 'Target', type: 'string', jsonPath: '.spec.targetVersion' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Wave', type: 'integer', jsonPath: '.status.wave' },
    { name: 'Batch', type: 'integer', jsonPath: '.status.batch' },
    { name: 'Moved', type: 'integer', jsonPath: '.status.moved' },
    { name: 'Total', type: 'integer', jsonPath: '.status.total' },
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    // Where the gates left it: RolloutBaking, GateFailed, RolledBack, ... (status.gates has the verdicts).
    { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
};

function buildCrd(definition: Definition): JsonObject {
  const { kind, plural, singular } = definition;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${plural}.${GROUP}`,
      labels: { 'app.kubernetes.io/name': 'eva-operator', 'app.kubernetes.io/part-of': 'eva' },
    },
    spec: {
      group: GROUP,
      scope: 'Cluster',
      names: { kind, listKind: `${kind}List`, plural, singular, shortNames: [...definition.shortNames], categories: [...CATEGORIES] },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: definition.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: definition.description,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: toJson(definition.spec),
                status: toJson(definition.status),
              },
            },
          },
        },
      ],
    },
  };
}

const render = (definition: Definition, source: string): string =>
  `# Generated from ${source} by \`npm run crd:generate\`. Do not edit by hand.\n${stringify(buildCrd(definition), { lineWidth: 0 })}`;

export const CRD_FILE = `crds/${CRD_NAME}.yaml`;
export const ROLLOUT_CRD_FILE = `crds/${ROLLOUT_PLURAL}.${GROUP}.yaml`;

/** The EvaTenant CRD (`eva-operator crd`). */
export function renderCrdYaml(): string {
  return render(TENANT, 'src/api/evatenant.ts');
}

/** Every CRD of the API, by the file under crds/ it is written to. */
export function renderAllCrds(): ReadonlyMap<string, string> {
  return new Map([
    [CRD_FILE, renderCrdYaml()],
    [ROLLOUT_CRD_FILE, render(ROLLOUT, 'src/api/evarollout.ts')],
  ]);
}
