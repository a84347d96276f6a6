/** Builds the EvaTenant CustomResourceDefinition from the TypeBox schema (the one source of truth). */
import { stringify } from 'yaml';
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

type JsonObject = Record<string, unknown>;

/** Plain JSON: drops TypeBox's symbol-keyed bookkeeping. */
function toJson(schema: unknown): JsonObject {
  return JSON.parse(JSON.stringify(schema)) as JsonObject;
}

const annotationPath = (key: string): string => `.metadata.annotations.${key.replaceAll('.', '\\.')}`;

const printerColumns = [
  { name: 'Code', type: 'string', jsonPath: '.spec.capsuleCode' },
  { name: 'Tier', type: 'string', jsonPath: '.spec.tier' },
  { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
  { name: 'Wave', type: 'integer', jsonPath: '.spec.wave' },
  { name: 'Owner', type: 'string', jsonPath: annotationPath(OWNER_ANNOTATION), description: 'Operator version that owns the tenant' },
  { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  { name: 'URL', type: 'string', jsonPath: '.status.url' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];

function buildCrd(): JsonObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: CRD_NAME,
      labels: { 'app.kubernetes.io/name': 'eva-operator', 'app.kubernetes.io/part-of': 'eva' },
    },
    spec: {
      group: GROUP,
      scope: 'Cluster',
      names: { kind: KIND, listKind: `${KIND}List`, plural: PLURAL, singular: SINGULAR, shortNames: [...SHORT_NAMES], categories: [...CATEGORIES] },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: printerColumns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: `${KIND} (${API_VERSION}) is one customer tenant: namespace, quotas, streams, data, modules and ingress.`,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: toJson(EvaTenantSpecSchema),
                status: toJson(EvaTenantStatusSchema),
              },
            },
          },
        },
      ],
    },
  };
}

export const CRD_FILE = `crds/${CRD_NAME}.yaml`;

export function renderCrdYaml(): string {
  return `# Generated from src/api/evatenant.ts by \`npm run crd:generate\`. Do not edit by hand.\n${stringify(buildCrd(), { lineWidth: 0 })}`;
}
