/**
 * An EvaTenant placed on a member cluster by Open Cluster Management (docs/multi-cluster.md): the
 * ManifestWork that carries it, in the member's namespace on the hub, and the member's status as the
 * engine's work agent feeds it back. Pure: it builds and reads objects; placing, delivering and
 * reporting are the engine's.
 */
import { API_VERSION, GROUP, KIND, PROVISIONING_CONDITIONS } from '../api/constants.ts';
import type { EvaTenantSpecInput } from '../api/evatenant.ts';
import { MODULES } from '../api/modules.ts';
import { type Standing, SUMMARY_TYPES, summarize } from '../status/summarize.ts';

export const WORK_API_VERSION = 'work.open-cluster-management.io/v1';
/** On the tenant's engine objects (its Placement and ManifestWork): the tenant's name, to find them on the hub. */
export const TENANT_WORK_LABEL = `${GROUP}/tenant`;

/** The conditions the hub reads back: the saga's steps and the summary kstatus and Argo CD judge by. */
export const FED_BACK_CONDITIONS = [...PROVISIONING_CONDITIONS, 'Ready', 'Reconciling', 'Stalled', 'Suspended'] as const;
const CONDITION_FIELDS = ['status', 'reason', 'observedGeneration'] as const;
/** The summary's messages too: what a GitOps tool shows of the tenant (the saga's steps say it in their reasons). */
const fieldsOf = (type: string): readonly string[] => (SUMMARY_TYPES.has(type) ? [...CONDITION_FIELDS, 'message'] : CONDITION_FIELDS);
const MODULE_FIELDS = ['readyReplicas', 'replicas'] as const;

/** An EvaTenant as the hub hands it to a member: what its author wrote, nothing the member adds. */
export interface TenantManifest {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: EvaTenantSpecInput;
}

interface JsonPath {
  name: string;
  path: string;
}

export type FieldValue =
  | { type: 'String'; string: string }
  | { type: 'Integer'; integer: number }
  | { type: 'Boolean'; boolean: boolean }
  | { type: 'JsonRaw'; jsonRaw: string };

export interface WorkCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

/**
 * The member's ServiceAccount a tenant work applies as (the operator chart's hubExecutor, bound to the
 * portal role there): the work agent asks the member's API server whether it may write each object
 * before writing it, so a work carries only what the portal may write on the member.
 */
export interface WorkExecutor {
  namespace: string;
  name: string;
}

export interface ManifestWork {
  apiVersion: typeof WORK_API_VERSION;
  kind: 'ManifestWork';
  metadata: { name: string; namespace: string; labels?: Record<string, string>; generation?: number; resourceVersion?: string };
  spec: {
    executor?: { subject: { type: 'ServiceAccount'; serviceAccount: WorkExecutor } };
    workload: { manifests: TenantManifest[] };
    manifestConfigs: {
      resourceIdentifier: { group: string; resource: string; name: string };
      feedbackRules: { type: 'JSONPaths'; jsonPaths: JsonPath[] }[];
      updateStrategy: { type: 'ServerSideApply'; serverSideApply: { fieldManager: string; force: boolean } };
    }[];
  };
  status?: {
    conditions?: WorkCondition[];
    resourceStatus?: { manifests?: { conditions?: WorkCondition[]; statusFeedback?: { values?: { name: string; fieldValue: FieldValue }[] } }[] };
  };
}

/** The work's name in the member's namespace on the hub. */
export const workName = (tenant: string): string => `evatenant-${tenant}`;

const conditionPath = (type: string, field: string): JsonPath => ({
  name: `condition.${type}.${field}`,
  path: `.status.conditions[?(@.type=="${type}")].${field}`,
});

const modulePath = (module: string, field: string): JsonPath => ({ name: `module.${module}.${field}`, path: `.status.modules.${module}.${field}` });

/**
 * What the member's work agent reports back: every field kstatus and the Argo CD health check
 * (deploy/argocd/health.lua) read, one value per field (the engine returns scalars only), every
 * module named so that any tier's are covered.
 */
export const FEEDBACK_PATHS: readonly JsonPath[] = [
  { name: 'generation', path: '.metadata.generation' },
  { name: 'deletionTimestamp', path: '.metadata.deletionTimestamp' },
  // What the health checks read of the spec, as the member has it (its platform role may set them there).
  { name: 'suspend', path: '.spec.suspend' },
  { name: 'lifecycle', path: '.spec.lifecycle' },
  { name: 'phase', path: '.status.phase' },
  { name: 'observedGeneration', path: '.status.observedGeneration' },
  { name: 'url', path: '.status.url' },
  ...FED_BACK_CONDITIONS.flatMap((type) => fieldsOf(type).map((field) => conditionPath(type, field))),
  ...MODULES.flatMap((module) => MODULE_FIELDS.map((field) => modulePath(module, field))),
];

/**
 * The ManifestWork that places `tenant` on `cluster`, applied there as `executor` (without one, with
 * the agent's own rights: only the platform writes such a work, e.g. the mover's restore). Server-side apply
 * as the engine's own field manager, never forced: the work owns the fields its author wrote and
 * nothing else, so the member's operator (status, finalizer, ownership) and the member's platform
 * role (its controls) keep theirs.
 */
export function tenantWork(tenant: TenantManifest, cluster: string, executor?: WorkExecutor): ManifestWork {
  const name = tenant.metadata.name;
  return {
    apiVersion: WORK_API_VERSION,
    kind: 'ManifestWork',
    metadata: { name: workName(name), namespace: cluster, labels: { [TENANT_WORK_LABEL]: name } },
    spec: {
      ...(executor === undefined ? {} : { executor: { subject: { type: 'ServiceAccount', serviceAccount: executor } } }),
      workload: { manifests: [tenant] },
      manifestConfigs: [
        {
          resourceIdentifier: { group: GROUP, resource: 'evatenants', name },
          feedbackRules: [{ type: 'JSONPaths', jsonPaths: [...FEEDBACK_PATHS] }],
          updateStrategy: { type: 'ServerSideApply', serverSideApply: { fieldManager: 'work-agent-eva', force: false } },
        },
      ],
    },
  };
}

/** The member's tenant as the hub sees it through the work's feedback: its status, and where it is. */
export interface HubTenantView {
  /** The member cluster holding it (the work's namespace). */
  cluster: string;
  /** The engine applied the work's current generation on the member. */
  applied: boolean;
  /** The member's EvaTenant, rebuilt from the fed-back fields: what kstatus and the health check judge. */
  tenant: {
    apiVersion: typeof API_VERSION;
    kind: typeof KIND;
    metadata: { name: string; generation?: number; deletionTimestamp?: string };
    spec: { suspend?: boolean; lifecycle?: string };
    status: { phase?: string; observedGeneration?: number; url?: string; conditions: WorkCondition[]; modules: Record<string, Record<string, number>> };
  };
}

type Scalar = string | number | boolean;

function scalarOf(value: FieldValue): Scalar {
  switch (value.type) {
    case 'String':
      return value.string;
    case 'Integer':
      return value.integer;
    case 'Boolean':
      return value.boolean;
    case 'JsonRaw':
      return value.jsonRaw;
  }
}

function fedBack(work: ManifestWork): Map<string, Scalar> {
  const values = work.status?.resourceStatus?.manifests?.[0]?.statusFeedback?.values ?? [];
  return new Map(values.map((v) => [v.name, scalarOf(v.fieldValue)]));
}

const asString = (v: Scalar | undefined): string | undefined => (v === undefined ? undefined : String(v));
const asNumber = (v: Scalar | undefined): number | undefined => (typeof v === 'number' ? v : undefined);
/** `{ [key]: value }`, or nothing for a value the member did not report. */
const present = <T>(key: string, value: T | undefined): Record<string, T> => (value === undefined ? {} : { [key]: value });

function conditionsOf(values: Map<string, Scalar>): WorkCondition[] {
  return FED_BACK_CONDITIONS.flatMap((type) => {
    const status = asString(values.get(`condition.${type}.status`));
    if (status === undefined) return [];
    const reason = asString(values.get(`condition.${type}.reason`));
    const message = asString(values.get(`condition.${type}.message`));
    const observedGeneration = asNumber(values.get(`condition.${type}.observedGeneration`));
    return [{ type, status, ...present('reason', reason), ...present('message', message), ...present('observedGeneration', observedGeneration) }];
  });
}

function modulesOf(values: Map<string, Scalar>): Record<string, Record<string, number>> {
  const modules: Record<string, Record<string, number>> = {};
  for (const module of MODULES) {
    for (const field of MODULE_FIELDS) {
      const value = asNumber(values.get(`module.${module}.${field}`));
      if (value !== undefined) modules[module] = { ...modules[module], [field]: value };
    }
  }
  return modules;
}

const isAppliedAtGeneration = (work: ManifestWork): boolean =>
  (work.status?.conditions ?? []).some((c) => c.type === 'Applied' && c.status === 'True' && c.observedGeneration === work.metadata.generation);

/** The engine's word on a member: its ManagedCluster's ManagedClusterConditionAvailable. */
export interface MemberAvailability {
  status: string;
  /** Since when it has been so (the condition's lastTransitionTime). */
  since?: string;
}

export const MANAGED_CLUSTER_API_VERSION = 'cluster.open-cluster-management.io/v1';

/** A member cluster as the engine keeps it on the hub (MANAGED_CLUSTER_API_VERSION). */
export interface ManagedCluster {
  metadata: { name: string };
  status?: { conditions?: { type: string; status: string; lastTransitionTime?: string }[] };
}

/** What the engine says of `cluster`'s availability: Unknown until it has said anything. */
export function memberAvailability(cluster: ManagedCluster): MemberAvailability {
  const available = cluster.status?.conditions?.find((c) => c.type === 'ManagedClusterConditionAvailable');
  if (available === undefined) return { status: 'Unknown' };
  return { status: available.status, ...present('since', available.lastTransitionTime) };
}

/** summarize()'s conditions for where the hub sees a tenant stand. */
export const summaryConditions = (standing: Standing): (WorkCondition & { reason: string; message: string })[] =>
  Object.entries(summarize(standing)).map(([type, state]) => ({ type, ...state }));

/** The conditions, their summary replaced by summarize()'s for `standing` (a view the hub judges itself). */
function resummarized(conditions: WorkCondition[], standing: Standing): WorkCondition[] {
  return [...conditions.filter((c) => !SUMMARY_TYPES.has(c.type)), ...summaryConditions(standing)];
}

/** Why the member's API server refused the tenant, if the engine says it did. */
function refusal(work: ManifestWork): string | undefined {
  const applied = work.status?.resourceStatus?.manifests?.[0]?.conditions?.find((c) => c.type === 'Applied');
  return applied?.status === 'False' ? (applied.message ?? applied.reason ?? 'not applied') : undefined;
}

/**
 * The member's report as the hub may show it: kept but judged stale (Ready Unknown, Stalled) while the
 * engine says the member is not available, so that kstatus and the health check never call a tenant
 * Ready from a member that stopped reporting; Stalled when the member refused the tenant; else as
 * reported.
 */
function judgedConditions(work: ManifestWork, reported: WorkCondition[], member: MemberAvailability | undefined): WorkCondition[] {
  if (member !== undefined && member.status !== 'True') {
    const since = member.since === undefined ? '' : ` since ${member.since}`;
    return resummarized(reported, { kind: 'unreported', message: `the member cluster is not reporting (available: ${member.status}${since}); this is its last report` });
  }
  const refused = refusal(work);
  if (refused !== undefined) return resummarized(reported, { kind: 'refused-by-member', message: `the member cluster ${work.metadata.namespace} refused the tenant: ${refused}` });
  return reported;
}

/**
 * What the hub knows of the tenant `work` carries; with `member`, the engine's word on its member
 * (judgedConditions).
 */
export function hubView(work: ManifestWork, member?: MemberAvailability): HubTenantView {
  const values = fedBack(work);
  const name = work.spec.workload.manifests[0]?.metadata.name ?? work.metadata.name;
  const suspend = values.get('suspend');
  return {
    cluster: work.metadata.namespace,
    applied: isAppliedAtGeneration(work),
    tenant: {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name, ...present('generation', asNumber(values.get('generation'))), ...present('deletionTimestamp', asString(values.get('deletionTimestamp'))) },
      spec: { ...present('suspend', typeof suspend === 'boolean' ? suspend : undefined), ...present('lifecycle', asString(values.get('lifecycle'))) },
      status: {
        ...present('phase', asString(values.get('phase'))),
        ...present('observedGeneration', asNumber(values.get('observedGeneration'))),
        ...present('url', asString(values.get('url'))),
        conditions: judgedConditions(work, conditionsOf(values), member),
        modules: modulesOf(values),
      },
    },
  };
}

/**
 * Why the hub cannot take the member's report for the work's present generation yet: the engine has
 * not applied that generation or fed anything back, or the member's operator has not observed its
 * EvaTenant's generation.
 */
function pendingOf(work: ManifestWork, view: HubTenantView): string | undefined {
  if (!view.applied) return `the engine has not applied generation ${String(work.metadata.generation)} of the work on ${view.cluster} yet`;
  const { generation } = view.tenant.metadata;
  if (generation === undefined) return `the engine has fed back nothing of the tenant on ${view.cluster} yet`;
  if (view.tenant.status.observedGeneration !== generation) return `the operator on ${view.cluster} has not observed generation ${String(generation)} of the tenant yet`;
  return undefined;
}

/** A reason for a summary condition the member reported without one (summarize() always gives one). */
const REPORTED = 'MemberReported';

/** Summary conditions as the hub controller writes them on an engine object at its `generation`. */
export const atGeneration = (summary: readonly WorkCondition[], generation: number | undefined): WorkCondition[] =>
  summary.map((c) => ({ type: c.type, status: c.status, reason: c.reason ?? REPORTED, message: c.message ?? '', observedGeneration: generation ?? 0 }));

/**
 * The summary of the tenant a work carries, as the hub controller writes it onto the work's status
 * (src/hub/reporter.ts), so that a GitOps tool reading the work judges the tenant: the member's Ready,
 * Reconciling, Stalled and Suspended as hubView judges them (stale while the member is not available,
 * Stalled when it refused the tenant), Reconciling while the member has not caught up with the
 * work's generation; each at the work's generation. kstatus judges the work by them; the Argo CD
 * health check (deploy/argocd/health.lua) rebuilds the tenant from them and the fed-back fields.
 */
export function workSummary(work: ManifestWork, member: MemberAvailability | undefined): WorkCondition[] {
  const view = hubView(work, member);
  const judged = view.tenant.status.conditions.filter((c) => SUMMARY_TYPES.has(c.type));
  const stalled = judged.some((c) => c.type === 'Stalled' && c.status === 'True');
  const pending = stalled ? undefined : pendingOf(work, view);
  const summary = pending === undefined ? judged : summaryConditions({ kind: 'applying', message: pending });
  return atGeneration(summary, work.metadata.generation);
}

const sameCondition = (a: WorkCondition, b: WorkCondition): boolean =>
  a.status === b.status && a.reason === b.reason && a.message === b.message && a.observedGeneration === b.observedGeneration;

/**
 * An engine object's conditions (a work's, a Placement's) with the hub's summary replaced by
 * `summary` (the engine's own kept, a transition time kept while its status stays), or undefined when
 * they already say so.
 */
export function withSummary(current: readonly WorkCondition[], summary: readonly WorkCondition[], now: string): WorkCondition[] | undefined {
  const held = new Map(current.filter((c) => SUMMARY_TYPES.has(c.type)).map((c) => [c.type, c]));
  const unchanged = held.size === summary.length && summary.every((c) => {
    const was = held.get(c.type);
    return was !== undefined && sameCondition(was, c);
  });
  if (unchanged) return undefined;
  const written = summary.map((c) => {
    const was = held.get(c.type);
    return { ...c, lastTransitionTime: was !== undefined && was.status === c.status && was.lastTransitionTime !== undefined ? was.lastTransitionTime : now };
  });
  return [...current.filter((c) => !SUMMARY_TYPES.has(c.type)), ...written];
}
