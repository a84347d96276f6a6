/**
 * docs/api-reference.md: the EvaTenant API (and the EvaRollout's, at the end) from the CRDs (crds/, generated from src/api), the
 * condition and phase catalogues, the tiers, the names made from the capsule code, and every
 * eva.aidonow.com/ label and annotation. The example status is what the status code writes.
 */
import { stringify } from 'yaml';
import { API_VERSION, GROUP, KIND, PHASES, PROVISIONING_CONDITIONS, TIERS } from '../../src/api/constants.ts';
import type { EvaTenantStatus } from '../../src/api/evatenant.ts';
import { ROLLOUT_CRD_FILE } from '../../src/api/crd.ts';
import { ROLLOUT_KIND } from '../../src/api/evarollout.ts';
import { MODULES_BY_TIER } from '../../src/api/modules.ts';
import { parseEvaTenant } from '../../src/api/parse.ts';
import { MODULE_BOUNDS_BY_TIER } from '../../src/api/tiers.ts';
import { mergeConditions } from '../../src/status/conditions.ts';
import { sagaConditions } from '../../src/status/tenant-status.ts';
import { STEP_DESCRIPTORS } from '../../src/steps/registry.ts';
import { STEP_NAMES } from '../../src/steps/step.ts';
import { METADATA_KEYS, PHASE_MEANING, PROVISIONING_CONDITION_MEANING, SUMMARY_CONDITION_MEANING } from './api-metadata.ts';
import { type Crd, fieldRows, type FieldRow, readCrd } from './crd-fields.ts';
import { code, generatedHeader, page, table } from './markdown.ts';
import { tenantNames } from './tenant-names.ts';

const INTRO = `The \`${KIND}\` custom resource (\`${API_VERSION}\`) as the API server validates it. How to write one,
what a tenant may put in its module values and what the status fields say: [the EvaTenant guide](tenant-api.md);
what each reason means: [troubleshooting](troubleshooting.md).`;

function resourceSection(crd: Crd, heading = '## The resource'): string {
  const { names, scope } = crd.spec;
  const version = crd.spec.versions[0];
  const facts = table(['', ''], [
    ['apiVersion', code(API_VERSION)],
    ['kind', code(names.kind)],
    ['scope', scope],
    ['plural, short names, categories', [names.plural, ...(names.shortNames ?? []), ...(names.categories ?? [])].map(code).join(', ')],
  ]);
  const columns = table([`\`kubectl get ${names.shortNames?.[0] ?? names.plural}\` column`, 'from'], (version?.additionalPrinterColumns ?? []).map((c) => [c.name, code(c.jsonPath)]));
  return `${heading}\n\n${facts}\n\n${columns}`;
}

/** The smallest valid tenant: only the required fields (checked by the operator's own parser). */
function minimalExample(): string {
  const tenant = { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'acmeco' }, spec: { capsuleCode: 'ACMECO', tier: 'Starter' } };
  parseEvaTenant({ ...tenant, metadata: { ...tenant.metadata, uid: 'example' } });
  return `## The smallest tenant\n\nOnly \`capsuleCode\` and \`tier\` are required; \`seedsVersion\` defaults to the newest bundled seed data,\n\`lifecycle\` to \`Active\`, \`dataRetention\` to \`Delete\`, \`wave\` to \`1\`.\n\n\`\`\`yaml\n${stringify(tenant)}\`\`\``;
}

const fieldTable = (rows: readonly FieldRow[]): string =>
  table(['field', 'type', 'required', 'default', 'validation', 'description'], rows.map((r) => [code(r.path), r.type, r.required ? 'yes' : '', r.defaultValue === '' ? '' : code(r.defaultValue), r.validation, r.description]));

function fieldSections(crd: Crd, level = '##'): string {
  const root = crd.spec.versions[0]?.schema.openAPIV3Schema;
  const spec = root?.properties?.['spec'];
  const status = root?.properties?.['status'];
  if (!spec || !status) throw new Error('the CRD schema has no spec or status');
  return [
    `${level} spec\n\n${fieldTable(fieldRows('spec', spec, true).slice(1))}`,
    `${level} status\n\nWritten by the operator only (the status subresource).\n\n${fieldTable(fieldRows('status', status).slice(1))}`,
  ].join('\n\n');
}

/** The other kind of the API: a fleet rollout (crds/, generated from src/api/evarollout.ts). */
function rolloutSection(root: string): string {
  const crd = readCrd(root, ROLLOUT_CRD_FILE);
  const intro = `## ${ROLLOUT_KIND}\n\nMoves tenants to another operator version, wave by wave, judged by gates: [the rollout guide](rollouts.md).`;
  return [intro, resourceSection(crd, `### The resource`), fieldSections(crd, '###')].join('\n\n');
}

function conditionsSection(): string {
  const active = sagaConditions({ stage: 'active', wasActive: true }, false);
  const stepsOf = (condition: string): string => STEP_NAMES.filter((s) => STEP_DESCRIPTORS[s].condition === condition).map(code).join(', ');
  const five = PROVISIONING_CONDITIONS.map((c) => [code(c), PROVISIONING_CONDITION_MEANING[c], stepsOf(c), code(active[c]?.reason ?? '')]);
  const summary = Object.entries(SUMMARY_CONDITION_MEANING).map(([c, meaning]) => [code(c), meaning, '', c === 'Ready' ? code(active['Ready']?.reason ?? '') : '']);
  return `## Conditions\n\nEach carries \`observedGeneration\`. A False or Unknown condition's reason is one of [the catalogue](troubleshooting.md).\n\n${table(['type', 'what it covers', 'steps', 'reason when True'], [...five, ...summary])}`;
}

const phasesSection = (): string => `## Phases (\`status.phase\`)\n\n${table(['phase', 'meaning'], PHASES.map((p) => [code(p), PHASE_MEANING[p]]))}`;

/** The status of an Active Starter tenant, as the status code derives it (times fixed). */
function exampleStatus(): string {
  const at = '2026-01-01T00:00:00Z';
  const conditions = mergeConditions([], sagaConditions({ stage: 'active', wasActive: true }, false), at, 1);
  const modules = Object.fromEntries(MODULES_BY_TIER.Starter.map((m) => [m, { chartVersion: '1.0.0', replicas: 1, readyReplicas: 1, valuesDigest: 'sha256:…', message: 'available' }]));
  const status: EvaTenantStatus = { phase: 'Active', observedGeneration: 1, conditions, provisioningStartedAt: at, url: 'https://acmeco.tenants.example.com', modules };
  return `## Example status (an Active Starter tenant)\n\n\`\`\`yaml\nstatus:\n${stringify(status).replace(/^/gm, '  ').trimEnd()}\n\`\`\``;
}

function tiersSection(): string {
  const rows = TIERS.map((t) => {
    const bounds = MODULE_BOUNDS_BY_TIER[t];
    return [code(t), MODULES_BY_TIER[t].map(code).join(', '), String(bounds.maxReplicas), bounds.maxCpu, bounds.maxMemory];
  });
  return `## Tiers and their modules\n\nThe modules a tier gets, and the most a tenant may ask per module in \`spec.helmValues\` (replicas; cpu and memory per container, requests and limits).\n\n${table(['tier', 'modules', 'max replicas', 'max cpu', 'max memory'], rows)}`;
}

function namesSection(): string {
  const rows = tenantNames('ACMECO').map((n) => [n.what, n.name.includes(' ') ? n.name : code(n.name)]);
  return `## Names: \`metadata.name\` and \`spec.capsuleCode\`\n\n\`metadata.name\` is any name (the samples use the code in lower case); everything the tenant owns is\nnamed from \`spec.capsuleCode\`, which never changes. For capsule code \`ACMECO\`:\n\n${table(['what', 'name'], rows)}`;
}

function metadataSection(): string {
  const rows = Object.entries(METADATA_KEYS).map(([key, m]) => [code(`${GROUP}/${key}`), m.kind, m.on, m.meaning]);
  return `## Labels, annotations and the finalizer\n\n${table(['key', 'kind', 'on', 'meaning'], rows)}`;
}

export function renderApiReference(root: string): string {
  const crd = readCrd(root);
  return page([
    generatedHeader(`${KIND} API reference`, 'crds/ (src/api/evatenant.ts), src/api and scripts/docs/api-metadata.ts'),
    INTRO,
    resourceSection(crd),
    minimalExample(),
    fieldSections(crd),
    conditionsSection(),
    phasesSection(),
    exampleStatus(),
    tiersSection(),
    namesSection(),
    metadataSection(),
    rolloutSection(root),
  ]);
}
