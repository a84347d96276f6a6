import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { checkRender, checkStoredManifest, type RenderPolicy, refusalMessage } from './render-guard.ts';

const NS = 'eva-tenant-abcdef';
const IMAGE = 'ghcr.io/aidonow/orbit-crm@sha256:' + 'a'.repeat(64);
const POLICY: RenderPolicy = { namespace: NS, release: 'orbit-crm', images: [IMAGE] };

type Obj = Record<string, unknown>;

const deployment = (containers: Obj = {}): Obj => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'orbit-crm', annotations: { 'postrenderer.helm.sh/postrender-filename': 'orbit-crm/templates/deployment.yaml' } },
  spec: { template: { spec: { initContainers: [{ name: 'seed-loader', image: IMAGE }], containers: [{ name: 'orbit-crm', image: IMAGE }], ...containers } } },
});
const service = (spec: Obj = { type: 'ClusterIP' }): Obj => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'orbit-crm' }, spec });
const configMap = (metadata: Obj = {}): Obj => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'orbit-crm-config', ...metadata }, data: { 'config.yaml': 'a: 1\n' } });
const secret = (): Obj => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'orbit-crm-credentials', namespace: NS }, type: 'Opaque', data: {} });

/** What helm hands the post-renderer: one YAML stream. */
const stream = (...objects: Obj[]): string => objects.map((o) => `---\n${stringify(o)}`).join('');
const chartObjects = (): Obj[] => [deployment(), service(), configMap(), secret()];

function refusals(manifests: string, policy: RenderPolicy = POLICY): string[] {
  const verdict = checkRender(manifests, policy);
  if (verdict.allowed) throw new Error('expected a refusal, the guard allowed it');
  return verdict.refusals.map((r) => `${r.object}: ${r.message}`);
}

function allowed(manifests: string, policy: RenderPolicy = POLICY): Obj[] {
  const verdict = checkRender(manifests, policy);
  if (!verdict.allowed) throw new Error(`expected it allowed, refused: ${refusalMessage(verdict.refusals)}`);
  return verdict.output.split(/^---$/m).filter((doc) => doc.trim() !== '').map((doc) => JSON.parse(doc) as Obj);
}

describe('the render guard', () => {
  it('allows exactly what the module contract renders and prints it back, object for object (as JSON)', () => {
    expect(allowed(stream(...chartObjects()))).toEqual(chartObjects());
  });

  it('allows objects without a namespace (helm puts them in the release namespace) and with the tenant namespace', () => {
    expect(allowed(stream(configMap(), configMap({ namespace: NS })))).toHaveLength(2);
    expect(refusals(stream(configMap({ namespace: 'kube-system' })))).toEqual([`ConfigMap/kube-system/orbit-crm-config: only namespace ${NS} is allowed`]);
  });

  it('refuses every kind a module does not own, cluster-scoped ones included, naming kind/[namespace/]name as written', () => {
    const foreign = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'pwned' } },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'pwned' }, roleRef: { name: 'cluster-admin' } },
      { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'orbit-crm' } },
      { apiVersion: 'v1', kind: 'List', metadata: {}, items: [configMap({ namespace: 'kube-system' })] },
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'orbit-crm' } },
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'orbit-crm', namespace: NS } },
    ];
    expect(refusals(stream(...chartObjects(), ...foreign))).toEqual([
      `Namespace/pwned: v1 Namespace is not a kind a module may own (apps/v1 Deployment, v1 Service, v1 ConfigMap, v1 Secret)`,
      `ClusterRoleBinding/pwned: rbac.authorization.k8s.io/v1 ClusterRoleBinding is not a kind a module may own (apps/v1 Deployment, v1 Service, v1 ConfigMap, v1 Secret)`,
      `Ingress/orbit-crm: networking.k8s.io/v1 Ingress is not a kind a module may own (apps/v1 Deployment, v1 Service, v1 ConfigMap, v1 Secret)`,
      `List/<no name>: v1 List is not a kind a module may own (apps/v1 Deployment, v1 Service, v1 ConfigMap, v1 Secret)`,
      `Pod/orbit-crm: v1 Pod is not a kind a module may own (apps/v1 Deployment, v1 Service, v1 ConfigMap, v1 Secret)`,
      `Pod/${NS}/orbit-crm: v1 Pod is not a kind a module may own (apps/v1 Deployment, v1 Service, v1 ConfigMap, v1 Secret)`,
    ]);
  });

  it('refuses an owned kind under another API group (a custom resource may be cluster-scoped)', () => {
    expect(allowed(stream(deployment()))).toHaveLength(1);
    expect(refusals(stream({ ...deployment(), apiVersion: 'evil.example.com/v1' }))[0]).toContain('evil.example.com/v1 Deployment is not a kind a module may own');
  });

  it('refuses names the chart does not make, and generateName', () => {
    expect(allowed(stream(configMap()))).toHaveLength(1);
    expect(refusals(stream({ ...configMap(), metadata: { name: 'eva-nats' } }))).toEqual([`ConfigMap/${NS}/eva-nats: the chart names this ConfigMap orbit-crm-config`]);
    expect(refusals(stream({ ...secret(), metadata: { name: 'orbit-itsm-credentials' } }))).toEqual([`Secret/${NS}/orbit-itsm-credentials: the chart names this Secret orbit-crm-credentials`]);
    expect(refusals(stream(configMap({ generateName: 'x-' })))).toEqual([`ConfigMap/${NS}/orbit-crm-config: generateName is not allowed`]);
  });

  it('refuses helm hooks (the module contract has none)', () => {
    expect(allowed(stream(configMap({ annotations: { 'eva.aidonow.com/x': 'y' } })))).toHaveLength(1);
    expect(refusals(stream(configMap({ annotations: { 'helm.sh/hook': 'pre-install' } })))).toEqual([`ConfigMap/${NS}/orbit-crm-config: helm hooks are not allowed`]);
  });

  it('allows a ClusterIP Service (or no type) and refuses NodePort, LoadBalancer and ExternalName', () => {
    expect(allowed(stream(service(), service({})))).toHaveLength(2);
    for (const type of ['NodePort', 'LoadBalancer', 'ExternalName']) {
      expect(refusals(stream(service({ type })))).toEqual([`Service/${NS}/orbit-crm: Service type ${type} is not allowed (ClusterIP only)`]);
    }
  });

  it('allows the catalogue image in every container list and refuses any other image, each named once', () => {
    expect(allowed(stream(deployment({ ephemeralContainers: [{ name: 'debug', image: IMAGE }] })))).toHaveLength(1);
    const byTag = 'ghcr.io/aidonow/orbit-crm:1.0.0';
    expect(refusals(stream(deployment({ containers: [{ name: 'a', image: byTag }, { name: 'b', image: byTag }] })))).toEqual([
      `Deployment/${NS}/orbit-crm: image ${byTag} is not in the catalogue (allowed: ${IMAGE})`,
    ]);
    expect(refusals(stream(deployment({ initContainers: [{ name: 'x', image: 'docker.io/evil/miner:1' }] })))[0]).toContain('image docker.io/evil/miner:1 is not in the catalogue');
    expect(refusals(stream(deployment({ ephemeralContainers: [{ name: 'x' }] })))[0]).toContain('image <no image> is not in the catalogue');
    expect(refusals(stream(deployment()), { ...POLICY, images: [] })[0]).toContain('(allowed: none)');
  });

  it('lists every problem of an object and every refused object', () => {
    const bad = stream({ ...configMap({ namespace: 'default' }), metadata: { name: 'x', namespace: 'default' } }, service({ type: 'NodePort' }));
    expect(refusals(bad)).toEqual([
      `ConfigMap/default/x: only namespace ${NS} is allowed; the chart names this ConfigMap orbit-crm-config`,
      `Service/${NS}/orbit-crm: Service type NodePort is not allowed (ClusterIP only)`,
    ]);
  });

  it('the structure-injection attack of issue 18 (a ConfigMap in kube-system after a valid Deployment) is refused', () => {
    const injected = `${stream(deployment())}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pwned\n  namespace: kube-system\ndata:\n  x: |1\n    y\n`;
    expect(refusals(injected)).toEqual([
      'ConfigMap/kube-system/pwned: only namespace eva-tenant-abcdef is allowed; the chart names this ConfigMap orbit-crm-config',
    ]);
  });

  it('refuses what it cannot read exactly: invalid YAML, duplicate keys, a non-object document, a number beyond 2^53', () => {
    expect(allowed(`${stream(configMap())}---\n# only a comment\n---\n`)).toHaveLength(1);
    expect(refusals('apiVersion: v1\nkind: [\n')[0]).toMatch(/^document 1: not valid YAML/);
    expect(refusals('apiVersion: v1\nkind: ConfigMap\nkind: Namespace\nmetadata: {name: orbit-crm-config}\n')[0]).toMatch(/^document 1: not valid YAML.*unique/i);
    expect(refusals('- a\n- b\n')).toEqual(['document 1: not a Kubernetes object']);
    expect(allowed(stream({ ...deployment(), spec: { ...(deployment()['spec'] as Obj), progressDeadlineSeconds: 600 } }))).toHaveLength(1);
    expect(refusals(stream(deployment()).replace('initContainers', 'x: 9007199254740993\n      initContainers'))[0]).toContain('the number 9007199254740993 is too large to check exactly');
  });

  it('YAML aliases and merge keys are resolved before the check: what is checked is what helm gets', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata: &m {name: orbit-crm-config}\ndata: {a: "1"}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  <<: *m\n';
    // The second document cannot see the first one's anchor: an invalid stream, refused.
    expect(checkRender(text, POLICY).allowed).toBe(false);
    const merged = 'apiVersion: v1\nkind: ConfigMap\nx: &ns {namespace: kube-system}\nmetadata:\n  <<: *ns\n  name: orbit-crm-config\n';
    expect(refusals(merged)).toEqual([`ConfigMap/kube-system/orbit-crm-config: only namespace ${NS} is allowed`]);
  });
});

describe('the render guard on JSON lines (the helm server converts helm\'s render with helm\'s own YAML reader)', () => {
  const lines = (...objects: Obj[]): string => objects.map((o) => `${JSON.stringify(o)}\n`).join('');

  it('judges exactly as on YAML: the same objects allowed and printed back, the same refusals', () => {
    const verdict = checkRender(lines(...chartObjects()), POLICY, 'json-lines');
    expect(verdict).toEqual(checkRender(stream(...chartObjects()), POLICY));
    const foreign = configMap({ namespace: 'kube-system' });
    expect(checkRender(lines(deployment(), foreign), POLICY, 'json-lines')).toEqual(checkRender(stream(deployment(), foreign), POLICY));
  });

  it('refuses what it cannot read exactly: a line that is not JSON, a non-object, an integer beyond 2^53 (never rounded)', () => {
    const verdict = checkRender(`${lines(configMap())}\n{"apiVersion": "v1",\n[1]\n`, POLICY, 'json-lines');
    expect(verdict.allowed).toBe(false);
    expect(verdict.allowed ? [] : verdict.refusals.map((r) => `${r.object}: ${r.message}`)).toEqual([
      expect.stringMatching(/^document 2: not valid JSON/) as string,
      'document 3: not a Kubernetes object',
    ]);
    const huge = lines(deployment()).replace('"spec":{', '"spec":{"x":9007199254740993,');
    const refused = checkRender(huge, POLICY, 'json-lines');
    expect(refused.allowed ? '' : refusalMessage(refused.refusals)).toContain('the number 9007199254740993 is too large to check exactly');
    // Positive control: a large number that is exact in a double passes as itself.
    expect(checkRender(lines(deployment()).replace('"spec":{', '"spec":{"x":9007199254740991,'), POLICY, 'json-lines').allowed).toBe(true);
  });
});

describe('stored manifests (release records)', () => {
  it('are judged once per namespace, release and manifest: the same verdict again, another tenant\'s policy judged anew', () => {
    const manifest = stream(configMap({ namespace: NS }));
    const first = checkStoredManifest(manifest, POLICY);
    expect(first).toEqual([]);
    expect(checkStoredManifest(manifest, POLICY)).toBe(first);
    expect(checkStoredManifest(manifest, { ...POLICY, namespace: 'eva-tenant-zzzzzz' })).toEqual([
      { object: `ConfigMap/${NS}/orbit-crm-config`, message: 'only namespace eva-tenant-zzzzzz is allowed' },
    ]);
  });
});
