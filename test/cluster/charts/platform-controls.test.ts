/**
 * The platform's controls on an EvaTenant (charts/eva-operator/templates/platform-controls.yaml, the
 * ValidatingAdmissionPolicy eva-tenant-platform-controls) and the chart's two roles
 * (templates/tenant-roles.yaml), on the real API server. A portal identity (impersonated: kubectl --as),
 * bound by this test to the chart's ClusterRole <fullname>-tenant-portal, is refused by the policy each
 * control on create and on update (set, changed, removed), in a message naming the key and who may set
 * it; it may create and update tenants with the fields a portal may set, and update a tenant that
 * carries every control (the operator's owner annotation included) without touching them. A platform
 * administrator (a group and a user of the chart value platformAdmins) and the operator's
 * ServiceAccount (the chart's own RBAC) may. Positive control: with the policy's binding removed, every
 * refused portal write goes through. Writes are server-side dry runs (they pass admission and store
 * nothing); the fixture tenants, written by the admin, are suspended and pinned to an operator version
 * (or a shard) that nobody runs, so no operator acts on them.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  API_VERSION,
  FINALIZER,
  FORCE_DECOMMISSION_ANNOTATION,
  KIND,
  OWNER_ANNOTATION,
  RESTORE_FROM_ANNOTATION,
  RESTORE_FROM_NATS_ANNOTATION,
  ROTATE_NATS_CREDENTIALS_ANNOTATION,
  SHARD_LABEL,
} from '../../../src/api/constants.ts';
import { type CommandResult, eventually, kubectl, kubectlOk } from '../../support/kubectl.ts';
import { type ChartRelease, fullnameOf, renderConfinement, renderTemplates, serviceAccountUser } from '../../support/operator-identity.ts';
import { ROLLOUT_ANNOTATIONS } from '../../../src/api/evarollout.ts';
import { runLetters } from '../../support/random.ts';
import { repoRoot } from '../../support/tools.ts';

const runId = randomBytes(3).toString('hex');
const CHART: ChartRelease = { release: `pc-${runId}`, namespace: `eva-pc-${runId}` };
const FULLNAME = fullnameOf(CHART);
/** How scripts/dev-cluster.sh renders the cluster-wide policies (release and namespace do not change them). */
const DEV_CLUSTER: ChartRelease = { release: 'eva', namespace: 'default' };
const POLICY = 'eva-tenant-platform-controls';
const DENIED = `ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request: `;
const WHO = ' only by platform administrators (chart value platformAdmins: the RBAC verb platform-control on evatenants) and the operator';

const PORTAL_USER = `portal-${runId}`;
const PORTAL_BINDING = `${FULLNAME}-portal-probe`;
const ADMIN_GROUP = `eva-platform-${runId}`;
const ADMIN_USER = `platform-${runId}`;
const PORTAL = ['--as', PORTAL_USER] as const;
const ADMIN_BY_GROUP = ['--as', `someone-${runId}`, '--as-group', ADMIN_GROUP] as const;
const ADMIN_BY_USER = ['--as', ADMIN_USER] as const;
const OPERATOR = ['--as', serviceAccountUser(CHART)] as const;

/** An operator version and a shard nobody runs: the fixtures stay untouched by any operator. */
const PIN = `0.0.0-pc-${runId}`;
const NO_SHARD = `nobody-${runId}`;

type Manifest = Record<string, unknown>;
type ControlValue = string | boolean;

/** A merge patch of an EvaTenant (null removes a key). */
interface TenantPatch {
  metadata?: { labels?: Record<string, ControlValue | null>; annotations?: Record<string, ControlValue | null>; finalizers?: string[] | null };
  spec?: Record<string, unknown>;
}

interface Control {
  /** How a refusal names it. */
  readonly named: string;
  /** A merge patch that sets it (null: removes it). */
  readonly patch: (value: ControlValue | null) => TenantPatch;
  /** The value the fixtures hold, and another. */
  readonly held: ControlValue;
  readonly other: ControlValue;
}

const annotation = (key: string, held: string, other: string): Control => ({ named: `annotation ${key}`, patch: (value) => ({ metadata: { annotations: { [key]: value } } }), held, other });
const label = (key: string, held: string, other: string): Control => ({ named: `label ${key}`, patch: (value) => ({ metadata: { labels: { [key]: value } } }), held, other });
const specField = (field: string, held: ControlValue, other: ControlValue): Control => ({ named: `spec.${field}`, patch: (value) => ({ spec: { [field]: value } }), held, other });

const CONTROLS: readonly Control[] = [
  annotation(RESTORE_FROM_ANNOTATION, '0b7c1e9a-0000-4000-8000-000000000001', '0b7c1e9a-0000-4000-8000-000000000002'),
  // Where a moved tenant's data is copied from: forged, the destination would read from a server of the writer's choosing.
  annotation(RESTORE_FROM_NATS_ANNOTATION, 'nats://127.0.0.1:4222', 'nats://127.0.0.1:4223'),
  annotation(FORCE_DECOMMISSION_ANNOTATION, 'all', 'streams'),
  annotation(OWNER_ANNOTATION, PIN, '9.9.9'),
  label(SHARD_LABEL, NO_SHARD, 'eu'),
  specField('operatorVersion', PIN, '9.9.9'),
  specField('suspend', true, false),
  // A rollout's move record: forged, it would make a rollback hand the tenant to another version.
  annotation(ROLLOUT_ANNOTATIONS.rollout, 'to-2-0-0', 'to-3-0-0'),
  annotation(ROLLOUT_ANNOTATIONS.wave, '1', '2'),
  annotation(ROLLOUT_ANNOTATIONS.batch, '1', '2'),
  annotation(ROLLOUT_ANNOTATIONS.from, '1.0.0', '1.1.0'),
];

/** A new tenant with `patches` applied (what a client sends to create it). */
function tenant(name: string, code: string, ...patches: TenantPatch[]): Manifest {
  const merged = (part: (p: TenantPatch) => object | null | undefined): Record<string, unknown> => Object.assign({}, ...patches.map(part)) as Record<string, unknown>;
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: {
      name,
      labels: merged((p) => p.metadata?.labels),
      annotations: merged((p) => p.metadata?.annotations),
      finalizers: patches.flatMap((p) => p.metadata?.finalizers ?? []),
    },
    spec: { capsuleCode: code, tier: 'Starter', seedsVersion: '1.0.0', wave: 1, ...merged((p) => p.spec) },
  };
}

const code = (index: number): string => `P${String.fromCharCode(65 + index)}${runLetters()}`;
/** The fixture holding every control (and the finalizer); one per control holding every other. */
const CONTROLLED = `pc${runId}-controlled`;
const withoutName = (index: number): string => `pc${runId}-without-${String(index)}`;
const held = (except?: Control): TenantPatch[] => CONTROLS.filter((c) => c !== except).map((c) => c.patch(c.held));

const dryRun = (identity: readonly string[], args: readonly string[], input?: string): CommandResult => kubectl([...identity, ...args, '--dry-run=server'], input);
const create = (identity: readonly string[], manifest: Manifest): CommandResult => dryRun(identity, ['create', '-f', '-'], JSON.stringify(manifest));
const patch = (identity: readonly string[], name: string, body: TenantPatch): CommandResult => dryRun(identity, ['patch', 'evt', name, '--type', 'merge', '-p', JSON.stringify(body)]);
const newTenant = (...patches: TenantPatch[]): Manifest => tenant(`pc${runId}-new`, code(20), ...patches);
const REMOVE_FINALIZER: TenantPatch = { metadata: { finalizers: null } };

function expectRefused(result: CommandResult, named: string, verb = 'set, changed or removed'): void {
  expect(result.status, `${named} was not refused`).not.toBe(0);
  expect(result.stderr).toContain(DENIED);
  expect(result.stderr).toContain(`${named} may be ${verb}${WHO}`);
}

function expectAllowed(result: CommandResult, what: string): void {
  expect(result.stderr, what).toBe('');
  expect(result.status, what).toBe(0);
}

/** Until the API server's policy informer (and RBAC's) shows the policy in force, or gone, for the portal. */
async function untilPolicy(inForce: boolean): Promise<void> {
  const probe = (): boolean => {
    const result = create(PORTAL, newTenant({ metadata: { annotations: { [FORCE_DECOMMISSION_ANNOTATION]: 'all' } } }));
    return inForce ? result.stderr.includes(DENIED) : result.status === 0;
  };
  expect(await eventually(probe, 30_000, 200), `the policy did not become ${inForce ? 'active' : 'inactive'}`).toBe(true);
}

const renderPolicy = (): string => renderTemplates(DEV_CLUSTER, ['platform-controls']);
const roles = (): string => renderTemplates(CHART, ['tenant-roles'], ['--set', `platformAdmins.groups={${ADMIN_GROUP}}`, '--set', `platformAdmins.users={${ADMIN_USER}}`]);
const canControl = (identity: readonly string[]): boolean => kubectl([...identity, 'auth', 'can-i', 'platform-control', 'evatenants.eva.aidonow.com']).stdout.trim() === 'yes';

beforeAll(async () => {
  kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
  kubectlOk(['create', 'namespace', CHART.namespace]);
  kubectlOk(['apply', '-f', '-'], `${renderConfinement(CHART)}\n---\n${roles()}`);
  kubectlOk(['create', 'clusterrolebinding', PORTAL_BINDING, `--clusterrole=${FULLNAME}-tenant-portal`, `--user=${PORTAL_USER}`]);
  kubectlOk(['create', '-f', '-'], JSON.stringify(tenant(CONTROLLED, code(0), ...held(), { metadata: { finalizers: [FINALIZER] } })));
  CONTROLS.forEach((control, index) => kubectlOk(['create', '-f', '-'], JSON.stringify(tenant(withoutName(index), code(index + 1), ...held(control)))));
  expect(await eventually(() => canControl(ADMIN_BY_GROUP) && canControl(OPERATOR), 30_000, 200), 'RBAC did not grant platform-control').toBe(true);
  await untilPolicy(true);
}, 120_000);

afterAll(() => {
  kubectl(['delete', 'clusterrolebinding', PORTAL_BINDING, '--ignore-not-found']);
  kubectl(['patch', 'evt', CONTROLLED, '--type', 'merge', '-p', JSON.stringify(REMOVE_FINALIZER)]);
  kubectl(['delete', 'evt', CONTROLLED, ...CONTROLS.map((_, index) => withoutName(index)), '--ignore-not-found', '--wait=false']);
  kubectl(['delete', '-f', '-', '--ignore-not-found'], `${renderConfinement(CHART)}\n---\n${roles()}`);
  kubectl(['delete', 'namespace', CHART.namespace, '--ignore-not-found', '--wait=false']);
}, 120_000);

describe('the policy and the roles', () => {
  it('is installed by dev-cluster.sh up as the chart renders it', () => {
    const binding = kubectlOk(['get', 'validatingadmissionpolicybinding', POLICY, '-o', 'jsonpath={.spec.policyName}/{.spec.validationActions}']);
    expect(binding).toBe(`${POLICY}/["Deny"]`);
    const rendered = parseAllDocuments(renderPolicy()).map((d) => d.toJS() as { kind?: string; spec?: unknown }).find((d) => d.kind === 'ValidatingAdmissionPolicy');
    const live = JSON.parse(kubectlOk(['get', 'validatingadmissionpolicy', POLICY, '-o', 'json'])) as { spec: Record<string, unknown> };
    const judged = (spec: unknown): unknown => {
      const { matchConditions, variables, validations } = spec as Record<string, unknown>;
      return { matchConditions, variables, validations };
    };
    expect(judged(live.spec)).toEqual(judged(rendered?.spec));
  });

  it('grants platform-control to platform administrators and the operator, not to the portal', () => {
    expect(canControl(PORTAL)).toBe(false);
    expect(canControl(ADMIN_BY_GROUP)).toBe(true);
    expect(canControl(ADMIN_BY_USER)).toBe(true);
    expect(canControl(OPERATOR)).toBe(true);
    expect(canControl([])).toBe(true);
  });
});

describe('the portal (ClusterRole tenant-portal)', () => {
  it.each(CONTROLS.map((c) => [c.named, c] as const))('is refused %s on create', (named, control) => {
    expectRefused(create(PORTAL, newTenant(control.patch(control.held))), named);
  });

  it.each(CONTROLS.map((c, index) => [c.named, c, index] as const))('is refused setting %s on update', (named, control, index) => {
    expectRefused(patch(PORTAL, withoutName(index), control.patch(control.held)), named);
  });

  it.each(CONTROLS.map((c) => [c.named, c] as const))('is refused changing and removing %s', (named, control) => {
    expectRefused(patch(PORTAL, CONTROLLED, control.patch(control.other)), named);
    expectRefused(patch(PORTAL, CONTROLLED, control.patch(null)), named);
  });

  it('is refused removing the finalizer', () => {
    expectRefused(patch(PORTAL, CONTROLLED, REMOVE_FINALIZER), `the finalizer ${FINALIZER}`, 'removed');
  });

  it('may create a tenant with what a portal sets: dataRetention, deletionProtection, lifecycle, suspend false, labels, the rotation annotation', () => {
    const allowed = {
      metadata: { labels: { team: 'a' }, annotations: { [ROTATE_NATS_CREDENTIALS_ANNOTATION]: 'now' } },
      spec: { dataRetention: 'Retain', deletionProtection: true, lifecycle: 'Suspended', suspend: false },
    };
    expectAllowed(create(PORTAL, newTenant(allowed)), 'create with the portal fields');
  });

  it('may update a tenant that carries every control, leaving them as they are (patch and a whole replace)', () => {
    const spec = { spec: { tier: 'Customer', dataRetention: 'Retain', deletionProtection: true, lifecycle: 'Active' } };
    expectAllowed(patch(PORTAL, CONTROLLED, { ...spec, metadata: { labels: { team: 'b' } } }), 'patch of the portal fields');
    // What a client that writes the object whole sends: everything it read, one field changed.
    const current = JSON.parse(kubectlOk(['get', 'evt', CONTROLLED, '-o', 'json'])) as { spec: Record<string, unknown> };
    expectAllowed(dryRun(PORTAL, ['replace', '-f', '-'], JSON.stringify({ ...current, spec: { ...current.spec, tier: 'Customer' } })), 'replace');
  });
});

describe('platform administrators (chart value platformAdmins) and the operator', () => {
  const ADMINS = [
    ['a group of platformAdmins.groups', ADMIN_BY_GROUP],
    ['a user of platformAdmins.users', ADMIN_BY_USER],
  ] as const;

  it.each(ADMINS)('%s may set, change and remove every control', (_who, identity) => {
    expectAllowed(create(identity, newTenant(...held())), 'create with every control');
    CONTROLS.forEach((control, index) => {
      expectAllowed(patch(identity, withoutName(index), control.patch(control.held)), `set ${control.named}`);
      expectAllowed(patch(identity, CONTROLLED, control.patch(control.other)), `change ${control.named}`);
      expectAllowed(patch(identity, CONTROLLED, control.patch(null)), `remove ${control.named}`);
    });
    expectAllowed(patch(identity, CONTROLLED, REMOVE_FINALIZER), 'remove the finalizer');
  });

  it('the operator ServiceAccount may claim a tenant (set the owner annotation) and hand it over (change it)', () => {
    const owner = CONTROLS.findIndex((c) => c.named === `annotation ${OWNER_ANNOTATION}`);
    expectAllowed(patch(OPERATOR, withoutName(owner), { metadata: { annotations: { [OWNER_ANNOTATION]: PIN } } }), 'claim');
    expectAllowed(patch(OPERATOR, CONTROLLED, { metadata: { annotations: { [OWNER_ANNOTATION]: '9.9.9' } } }), 'hand over');
  });
});

describe('without the policy binding (what a cluster with platformControlsPolicy=false and no other has)', () => {
  beforeAll(async () => {
    kubectlOk(['delete', 'validatingadmissionpolicybinding', POLICY]);
    await untilPolicy(false);
  }, 60_000);

  // Never leave the shared test plane without it, whatever happened above.
  afterAll(async () => {
    kubectlOk(['apply', '-f', '-'], renderPolicy());
    await untilPolicy(true);
  }, 60_000);

  it.each(CONTROLS.map((c, index) => [c.named, c, index] as const))('the portal writes refused for %s now go through', (named, control, index) => {
    expectAllowed(create(PORTAL, newTenant(control.patch(control.held))), `create with ${named}`);
    expectAllowed(patch(PORTAL, withoutName(index), control.patch(control.held)), `set ${named}`);
    expectAllowed(patch(PORTAL, CONTROLLED, control.patch(control.other)), `change ${named}`);
    expectAllowed(patch(PORTAL, CONTROLLED, control.patch(null)), `remove ${named}`);
  });

  it('so does removing the finalizer', () => {
    expectAllowed(patch(PORTAL, CONTROLLED, REMOVE_FINALIZER), 'remove the finalizer');
  });
});
