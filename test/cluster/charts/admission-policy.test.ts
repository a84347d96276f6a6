/**
 * The operator chart's ValidatingAdmissionPolicy (templates/admission-policy.yaml) on the real API
 * server: the chart's ServiceAccount, RBAC and policy are rendered by `helm template` of the real
 * chart and applied; then writes are made as the ServiceAccount (kubectl --as, server-side dry run,
 * which goes through admission). Every refusal is checked to come from the policy (its message),
 * not from RBAC; every refused write has a positive control (the same write in a managed tenant
 * namespace, or with the policy's binding removed). test/cluster/charts/operator-chart.test.ts runs the real
 * operator through a whole tenant under the same policy (the operator's own writes pass).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, FINALIZER, FORCE_DECOMMISSION_ANNOTATION, KIND, LABELS, MANAGED_BY, OWNER_ANNOTATION, SHARD_LABEL, WAVE_LABEL } from '../../../src/api/constants.ts';
import { type CommandResult, kubectl, kubectlOk } from '../../support/kubectl.ts';
import { repoRoot } from '../../support/tools.ts';
import { runLetters } from '../../support/random.ts';
import { type ChartRelease, fullnameOf, policyOf, policyRefusal, renderConfinement, serviceAccountUser, untilConfinement } from '../../support/operator-identity.ts';
import { applyTenant } from '../../support/tenants.ts';
import { ROLLOUT_ANNOTATIONS, ROLLOUT_KIND } from '../../../src/api/evarollout.ts';

const runId = randomBytes(3).toString('hex');
const CHART: ChartRelease = { release: `adm-${runId}`, namespace: `eva-adm-${runId}` };
const RELEASE_NAMESPACE = CHART.namespace;
const FULLNAME = fullnameOf(CHART);
const POLICY = policyOf(CHART);
const OPERATOR = serviceAccountUser(CHART);
/** A namespace as the operator makes it (src/steps/namespace.ts): managed-by and Pod Security restricted. */
const TENANT_NAMESPACE = `eva-tenant-adm${runId}`;
const TENANT_LABELS = { [LABELS.managedBy]: MANAGED_BY, 'pod-security.kubernetes.io/enforce': 'restricted' };
/** Somebody else's namespace (named like a tenant's, not labelled like one), for deletes and relabelling. */
const FOREIGN_NAMESPACE = `eva-tenant-foreign${runId}`;
const WIDENED = `${FULLNAME}-probe-cluster-admin`;
const TENANT = `adm${runId}`;
const ROLLOUT = `adm-${runId}`;

const POLICY_REFUSAL = policyRefusal(POLICY);

type Manifest = Record<string, unknown>;

/** The chart's own objects that confine the ServiceAccount, exactly as helm renders them. */
let rendered = '';

/** A write as the operator's ServiceAccount; server-side dry run unless told otherwise. */
function asOperator(args: readonly string[], input?: string): CommandResult {
  return kubectl(['--as', OPERATOR, ...args, '--dry-run=server'], input);
}

const createAsOperator = (object: Manifest): CommandResult => asOperator(['create', '-f', '-'], JSON.stringify(object));

function expectPolicyRefusal(result: CommandResult, what: string): void {
  expect(result.status, `${what} was not refused`).not.toBe(0);
  expect(result.stderr, what).toContain(POLICY_REFUSAL);
}

function expectAllowed(result: CommandResult, what: string): void {
  expect(result.stderr, what).toBe('');
  expect(result.status, what).toBe(0);
}

const meta = (name: string, namespace?: string, labels?: Record<string, string>): Manifest => ({
  name,
  ...(namespace === undefined ? {} : { namespace }),
  ...(labels === undefined ? {} : { labels }),
});

const configMap = (namespace: string): Manifest => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('pwned', namespace), data: { x: 'y' } });
const secret = (namespace: string, labels?: Record<string, string>): Manifest => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: meta('pwned', namespace, labels),
  stringData: { x: 'y' },
});
const deployment = (namespace: string): Manifest => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: meta('pwned', namespace),
  spec: {
    selector: { matchLabels: { app: 'pwned' } },
    template: {
      metadata: { labels: { app: 'pwned' } },
      spec: {
        securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          { name: 'x', image: 'registry.invalid/x:1', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } },
        ],
      },
    },
  },
});
/** The escalation a rendered object could attempt: the operator's own ServiceAccount made admin. */
const subjects = [{ kind: 'ServiceAccount', name: FULLNAME, namespace: RELEASE_NAMESPACE }];
const roleBinding = (namespace: string): Manifest => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'RoleBinding',
  metadata: meta('pwned', namespace),
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' },
  subjects,
});
const clusterRoleBinding: Manifest = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRoleBinding',
  metadata: meta(`pwned-${runId}`),
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
  subjects,
};
const clusterRole: Manifest = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  metadata: meta(`pwned-${runId}`),
  rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
};
const namespace = (name: string, labels?: Record<string, string>): Manifest => ({ apiVersion: 'v1', kind: 'Namespace', metadata: meta(name, undefined, labels) });
const lease = (namespaceName: string): Manifest => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: meta(`probe-${runId}`, namespaceName),
  spec: { holderIdentity: 'probe' },
});
const event = (involvedObject: Manifest): Manifest => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { generateName: 'probe.', namespace: 'default' },
  involvedObject,
  reason: 'Probe',
  message: 'probe',
  type: 'Normal',
});

/** What the rollout controller writes to move a tenant (src/rollout/tenants.ts). */
const rolloutMove = (version: string, extraSpec: Manifest = {}): Manifest => ({
  metadata: { annotations: { [ROLLOUT_ANNOTATIONS.rollout]: ROLLOUT, [ROLLOUT_ANNOTATIONS.wave]: '1', [ROLLOUT_ANNOTATIONS.batch]: '1', [ROLLOUT_ANNOTATIONS.from]: '0.0.0-admission-probe' } },
  spec: { operatorVersion: version, ...extraSpec },
});

const NAMESPACED_WRITES = { ConfigMap: configMap, Secret: (ns: string) => secret(ns), Deployment: deployment } as const;
const FOREIGN_NAMESPACES = ['kube-system', 'default'] as const;

/** Until the API server's policy informer has seen a change (it is not synchronous with the write). */
async function untilRefusal(refused: boolean): Promise<void> {
  expect(await untilConfinement(['--as', OPERATOR], POLICY, refused), `the policy did not become ${refused ? 'active' : 'inactive'}`).toBe(true);
}

beforeAll(async () => {
  kubectlOk(['apply', '-f', join(repoRoot, 'crds')]);
  rendered = renderConfinement(CHART);
  kubectlOk(['create', '-f', '-'], JSON.stringify(namespace(RELEASE_NAMESPACE)));
  kubectlOk(['create', '-f', '-'], JSON.stringify(namespace(TENANT_NAMESPACE, TENANT_LABELS)));
  kubectlOk(['create', '-f', '-'], JSON.stringify(namespace(FOREIGN_NAMESPACE)));
  kubectlOk(['apply', '-f', '-'], rendered);
  applyTenant(TENANT, { capsuleCode: `ZA${runLetters()}`, tier: 'Starter', seedsVersion: '1.0.0', wave: 1, operatorVersion: '0.0.0-admission-probe' }, { team: 'probe' });
  kubectlOk(['create', '-f', '-'], JSON.stringify({ apiVersion: API_VERSION, kind: ROLLOUT_KIND, metadata: meta(ROLLOUT), spec: { targetVersion: '9.9.9', waves: [{ wave: 1, batch: { count: 1 } }] } }));
  await untilRefusal(true);
}, 120_000);

afterAll(() => {
  kubectl(['delete', 'clusterrolebinding', WIDENED, '--ignore-not-found']);
  kubectl(['delete', '-f', '-', '--ignore-not-found'], rendered);
  kubectl(['delete', 'evt', TENANT, '--ignore-not-found', '--wait=false']);
  kubectl(['delete', 'evr', ROLLOUT, '--ignore-not-found', '--wait=false']);
  kubectl(['delete', 'namespace', RELEASE_NAMESPACE, TENANT_NAMESPACE, FOREIGN_NAMESPACE, '--ignore-not-found', '--wait=false']);
}, 120_000);

describe('with exactly the chart RBAC', () => {
  it('the policy is scoped to the chart ServiceAccount: the same write by another user is not judged by it', () => {
    expectAllowed(kubectl(['create', '-f', '-', '--dry-run=server'], JSON.stringify(configMap('kube-system'))), 'admin ConfigMap in kube-system');
  });

  for (const ns of FOREIGN_NAMESPACES) {
    it.each(Object.entries(NAMESPACED_WRITES))(`%s in ${ns}, which RBAC grants cluster-wide: refused by the policy`, (kind, make) => {
      expectPolicyRefusal(createAsOperator(make(ns)), `${kind} in ${ns}`);
    });
  }

  it.each(Object.entries(NAMESPACED_WRITES))('%s in a managed tenant namespace: allowed (positive control)', (kind, make) => {
    expectAllowed(createAsOperator(make(TENANT_NAMESPACE)), `${kind} in ${TENANT_NAMESPACE}`);
  });

  it('a RoleBinding never reaches admission: RBAC grants no RBAC objects', () => {
    const result = createAsOperator(roleBinding(TENANT_NAMESPACE));
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('cannot create resource "rolebindings"');
  });

  it('its own policy and binding: RBAC keeps the operator away (the API server exempts admission objects from admission policies)', () => {
    for (const resource of ['validatingadmissionpolicybindings', 'validatingadmissionpolicies']) {
      const result = asOperator(['delete', resource, POLICY]);
      expect(result.status, `delete ${resource}`).not.toBe(0);
      expect(result.stderr).toContain(`cannot delete resource "${resource}"`);
    }
  });

  it('its release namespace: on a values source only the binding (uid label added, values-source label removed, retired-from set); never its data, other metadata, a rebinding or an unlabelled object', () => {
    const uid = LABELS.tenantUid;
    const source = 'eva.aidonow.com/values-source';
    for (const kind of ['secret', 'configmap'] as const) {
      const [labelled, bound, plain] = ['labelled', 'bound', 'plain'].map((n) => `vs-${n}-${runId}`) as [string, string, string];
      for (const name of [labelled, bound, plain]) kubectlOk(['create', kind, ...(kind === 'secret' ? ['generic'] : []), name, '-n', RELEASE_NAMESPACE, '--from-literal=values.yaml=config: {a: 1}']);
      kubectlOk(['label', kind, labelled, bound, '-n', RELEASE_NAMESPACE, `${source}=true`, 'eva.aidonow.com/tenant=acme']);
      kubectlOk(['label', kind, bound, '-n', RELEASE_NAMESPACE, `${uid}=uid-earlier`]);
      const on = (name: string, ...args: string[]): CommandResult => asOperator([...args.slice(0, 1), kind, name, '-n', RELEASE_NAMESPACE, ...args.slice(1)]);
      const merge = (name: string, patch: Manifest): CommandResult => on(name, 'patch', '--type', 'merge', '-p', JSON.stringify(patch));
      // Positive controls: exactly the two writes of src/steps/modules/values-from-sources.ts.
      expectAllowed(on(labelled, 'label', `${uid}=uid-now`), `${kind}: binding`);
      expectAllowed(merge(bound, { metadata: { labels: { [source]: null }, annotations: { 'eva.aidonow.com/retired-from': 'uid-earlier' } } }), `${kind}: retiring`);
      expectPolicyRefusal(on(bound, 'label', `${uid}=uid-now`, '--overwrite'), `${kind}: rebinding`);
      expectPolicyRefusal(on(bound, 'label', `${uid}-`), `${kind}: unbinding`);
      expectPolicyRefusal(on(labelled, 'label', 'eva.aidonow.com/tenant=other', '--overwrite'), `${kind}: renaming its tenant`);
      expectPolicyRefusal(on(labelled, 'label', `${source}=false`, '--overwrite'), `${kind}: changing values-source`);
      expectPolicyRefusal(on(labelled, 'annotate', 'example.com/other=x'), `${kind}: another annotation`);
      expectPolicyRefusal(merge(labelled, { data: { 'values.yaml': kind === 'secret' ? Buffer.from('x').toString('base64') : 'x' } }), `${kind}: its data`);
      expectPolicyRefusal(on(plain, 'label', `${uid}=uid-now`), `${kind}: binding an object that is not a values source`);
      expectPolicyRefusal(on(plain, 'label', `${source}=true`), `${kind}: making an object a values source`);
    }
  });

  it("a rollout's move (spec.operatorVersion and its annotations) and its status: allowed; the rollout's spec: refused by RBAC", () => {
    expectAllowed(asOperator(['patch', 'evt', TENANT, '--type', 'merge', '-p', JSON.stringify(rolloutMove('9.9.9'))]), 'a move');
    expectAllowed(asOperator(['patch', 'evr', ROLLOUT, '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify({ status: { phase: 'Moving' } })]), 'the status');
    const result = asOperator(['patch', 'evr', ROLLOUT, '--type', 'merge', '-p', JSON.stringify({ spec: { paused: true } })]);
    expect(result.stderr).toContain('cannot patch resource "evarollouts"');
  });

  it('namespaces: without the label refused; labelled eva-tenant-* under Pod Security restricted allowed', () => {
    expectPolicyRefusal(createAsOperator(namespace(`eva-tenant-x${runId}`)), 'unlabelled namespace');
    expectAllowed(createAsOperator(namespace(`eva-tenant-x${runId}`, TENANT_LABELS)), 'labelled namespace');
  });
});

describe('with RBAC as wide as cluster-admin (a ClusterRoleBinding of the test): the policy alone', () => {
  beforeAll(() => {
    kubectlOk(['create', 'clusterrolebinding', WIDENED, '--clusterrole=cluster-admin', `--serviceaccount=${RELEASE_NAMESPACE}:${FULLNAME}`]);
  });

  afterAll(() => {
    kubectl(['delete', 'clusterrolebinding', WIDENED, '--ignore-not-found']);
  });

  for (const ns of FOREIGN_NAMESPACES) {
    it(`a RoleBinding in ${ns}: refused`, () => {
      expectPolicyRefusal(createAsOperator(roleBinding(ns)), `RoleBinding in ${ns}`);
    });
  }

  it('a RoleBinding in a managed tenant namespace: allowed (positive control; RBAC, not the policy, keeps the operator out of RBAC there)', () => {
    expectAllowed(createAsOperator(roleBinding(TENANT_NAMESPACE)), 'RoleBinding in the tenant namespace');
  });

  it('cluster-scoped RBAC (ClusterRoleBinding to cluster-admin, ClusterRole with wildcards): refused', () => {
    expectPolicyRefusal(createAsOperator(clusterRoleBinding), 'ClusterRoleBinding');
    expectPolicyRefusal(createAsOperator(clusterRole), 'ClusterRole');
    expectAllowed(kubectl(['create', '-f', '-', '--dry-run=server'], JSON.stringify(clusterRoleBinding)), 'the same ClusterRoleBinding by admin');
  });

  it('namespaces: no other name, no namespace without Pod Security restricted, no adopting or deleting a foreign one', () => {
    expectPolicyRefusal(createAsOperator(namespace(`kube-x${runId}`, TENANT_LABELS)), 'a labelled namespace not named eva-tenant-*');
    expectPolicyRefusal(createAsOperator(namespace(`eva-tenant-y${runId}`, { [LABELS.managedBy]: MANAGED_BY })), 'a managed namespace without Pod Security');
    const adopt = ['label', 'namespace', FOREIGN_NAMESPACE, `${LABELS.managedBy}=${MANAGED_BY}`, 'pod-security.kubernetes.io/enforce=restricted'];
    expectPolicyRefusal(asOperator(adopt), 'adopting a foreign namespace');
    expectPolicyRefusal(asOperator(['label', 'namespace', 'default', `${LABELS.managedBy}=${MANAGED_BY}`]), 'adopting default');
    expectPolicyRefusal(asOperator(['label', 'namespace', TENANT_NAMESPACE, 'pod-security.kubernetes.io/enforce=privileged', '--overwrite']), 'lifting Pod Security');
    expectPolicyRefusal(asOperator(['delete', 'namespace', FOREIGN_NAMESPACE]), 'deleting a foreign namespace');
    // Positive controls: relabelling and deleting its own tenant namespace; restoring the managed-by
    // label of a namespace it made (tenant-uid label) after someone removed it.
    kubectlOk(['label', 'namespace', FOREIGN_NAMESPACE, `${LABELS.tenantUid}=probe`]);
    expectAllowed(asOperator(adopt), 'restoring the label');
    kubectlOk(['label', 'namespace', FOREIGN_NAMESPACE, `${LABELS.tenantUid}-`]);
    expectAllowed(asOperator(['label', 'namespace', TENANT_NAMESPACE, `${LABELS.tier}=Starter`]), 'relabelling a tenant namespace');
    expectAllowed(asOperator(['delete', 'namespace', TENANT_NAMESPACE]), 'deleting a tenant namespace');
  });

  it('its release namespace: Leases and Secrets labelled managed-by=eva-operator only', () => {
    expectAllowed(createAsOperator(lease(RELEASE_NAMESPACE)), 'Lease');
    expectAllowed(createAsOperator(secret(RELEASE_NAMESPACE, { [LABELS.managedBy]: MANAGED_BY })), 'labelled Secret');
    expectPolicyRefusal(createAsOperator(secret(RELEASE_NAMESPACE)), 'unlabelled Secret');
    expectPolicyRefusal(createAsOperator(deployment(RELEASE_NAMESPACE)), 'Deployment');
    expectPolicyRefusal(createAsOperator(configMap(RELEASE_NAMESPACE)), 'ConfigMap');
    expectPolicyRefusal(createAsOperator(lease('kube-system')), 'a Lease in kube-system');
  });

  it('default: Events about EvaTenants and EvaRollouts only', () => {
    expectAllowed(createAsOperator(event({ apiVersion: API_VERSION, kind: KIND, name: TENANT })), 'Event about an EvaTenant');
    expectAllowed(createAsOperator(event({ apiVersion: API_VERSION, kind: ROLLOUT_KIND, name: ROLLOUT })), 'Event about an EvaRollout');
    expectPolicyRefusal(createAsOperator(event({ apiVersion: 'v1', kind: 'Pod', name: 'x', namespace: 'default' })), 'Event about a Pod');
  });

  it('EvaTenants: only the metadata the operator keeps, never the spec; never created or deleted', () => {
    expectAllowed(asOperator(['label', 'evt', TENANT, `${WAVE_LABEL}=2`, '--overwrite']), 'the wave label');
    expectAllowed(asOperator(['annotate', 'evt', TENANT, `${OWNER_ANNOTATION}=9.9.9`]), 'the owner-version annotation');
    expectAllowed(asOperator(['patch', 'evt', TENANT, '--type', 'merge', '-p', JSON.stringify({ metadata: { finalizers: [FINALIZER] } })]), 'its finalizer');
    expectPolicyRefusal(asOperator(['label', 'evt', TENANT, `${SHARD_LABEL}=elsewhere`]), 'the shard label (hands the tenant over)');
    expectPolicyRefusal(asOperator(['label', 'evt', TENANT, 'team-']), 'removing a label');
    expectPolicyRefusal(asOperator(['annotate', 'evt', TENANT, `${FORCE_DECOMMISSION_ANNOTATION}=all`]), 'the force-decommission annotation');
    expectPolicyRefusal(asOperator(['patch', 'evt', TENANT, '--type', 'merge', '-p', JSON.stringify({ metadata: { finalizers: ['example.com/other'] } })]), 'another finalizer');
    expectPolicyRefusal(asOperator(['patch', 'evt', TENANT, '--type', 'merge', '-p', JSON.stringify({ spec: { tier: 'Platform' } })]), 'a spec change');
    expectPolicyRefusal(asOperator(['delete', 'evt', TENANT]), 'deleting an EvaTenant');
    // A rollout's move may carry nothing else: no other spec field, no other annotation.
    expectAllowed(asOperator(['patch', 'evt', TENANT, '--type', 'merge', '-p', JSON.stringify(rolloutMove('9.9.8'))]), "a rollout's move");
    expectPolicyRefusal(asOperator(['patch', 'evt', TENANT, '--type', 'merge', '-p', JSON.stringify(rolloutMove('9.9.8', { tier: 'Platform' }))]), 'a move with a spec change');
    expectPolicyRefusal(asOperator(['patch', 'evt', TENANT, '--type', 'merge', '-p', JSON.stringify({ spec: { suspend: true } })]), 'spec.suspend');
    expectPolicyRefusal(asOperator(['annotate', 'evt', TENANT, 'eva.aidonow.com/rollout-other=x']), 'an annotation named like a rollout one');
    const another = { apiVersion: API_VERSION, kind: KIND, metadata: meta(`${TENANT}x`), spec: { capsuleCode: `ZA${runLetters()}`, tier: 'Starter', seedsVersion: '1.0.0', wave: 1 } };
    expectPolicyRefusal(createAsOperator(another), 'creating an EvaTenant');
  });

  it("EvaRollouts: only their status; never their spec, never created or deleted", () => {
    expectAllowed(asOperator(['patch', 'evr', ROLLOUT, '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify({ status: { phase: 'Baking' } })]), 'the status');
    expectPolicyRefusal(asOperator(['patch', 'evr', ROLLOUT, '--type', 'merge', '-p', JSON.stringify({ spec: { paused: true } })]), 'its spec');
    expectPolicyRefusal(asOperator(['delete', 'evr', ROLLOUT]), 'deleting it');
  });
});

describe('without the policy binding (what an installer with admissionPolicy.enabled=false has)', () => {
  beforeAll(async () => {
    kubectlOk(['delete', 'validatingadmissionpolicybinding', POLICY]);
    await untilRefusal(false);
  }, 60_000);

  afterAll(async () => {
    kubectlOk(['apply', '-f', '-'], rendered);
    await untilRefusal(true);
  }, 60_000);

  for (const ns of FOREIGN_NAMESPACES) {
    it.each(Object.entries(NAMESPACED_WRITES))(`%s in ${ns}: the refused write now succeeds (RBAC alone lets it through)`, (kind, make) => {
      expectAllowed(createAsOperator(make(ns)), `${kind} in ${ns}`);
    });
  }

  it('an unlabelled namespace: now created', () => {
    expectAllowed(createAsOperator(namespace(`eva-tenant-x${runId}`)), 'unlabelled namespace');
  });
});
