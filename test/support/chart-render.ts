/** Runs the real helm binary against the bundled module charts and parses what it renders. */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { repoRoot, tool } from './tools.ts';

export const chartsDir = join(repoRoot, 'charts/modules');
export const libChart = 'eva-module-lib';

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs helm with the given arguments; never throws on a non-zero exit. */
export function helm(args: readonly string[]): Promise<HelmResult> {
  return new Promise((resolve, reject) => {
    execFile(tool('helm'), args, { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== 'number') {
        reject(new Error(`helm ${args.join(' ')} did not run: ${error.message}`, { cause: error }));
        return;
      }
      resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
    });
  });
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}

/** The parts of the rendered objects the tests read (structural; helm output is plain data). */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
}
export interface Probe {
  httpGet?: { path: string; port: string | number };
}
export interface Container {
  name: string;
  image?: string;
  args?: string[];
  env?: EnvVar[];
  ports?: { name?: string; containerPort: number; protocol?: string }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
export interface Volume {
  name: string;
  secret?: { secretName: string; items?: { key: string; path: string }[]; defaultMode?: number };
  configMap?: { name: string };
  emptyDir?: { medium?: string; sizeLimit?: string };
}
export interface Deployment extends KubeObject {
  spec?: {
    replicas?: number;
    selector: { matchLabels?: Record<string, string> };
    template: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec?: { securityContext?: Record<string, unknown>; initContainers?: Container[]; containers: Container[]; volumes?: Volume[] };
    };
  };
}
export interface Service extends KubeObject {
  spec?: {
    selector?: Record<string, string>;
    ports?: { name?: string; port: number; targetPort?: string | number; protocol?: string }[];
  };
}
export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}
export interface Secret extends KubeObject {
  data?: Record<string, string>;
}

export interface Rendered {
  objects: KubeObject[];
  deployment: Deployment;
  service: Service;
  configMap: ConfigMap;
  secret: Secret;
}

function isKubeObject(value: unknown): value is KubeObject {
  if (typeof value !== 'object' || value === null) return false;
  const { apiVersion, kind, metadata } = value as Record<string, unknown>;
  return (
    typeof apiVersion === 'string' &&
    typeof kind === 'string' &&
    typeof metadata === 'object' &&
    metadata !== null &&
    typeof (metadata as Record<string, unknown>)['name'] === 'string'
  );
}

/** Parses a multi-document manifest; fails on YAML errors and on documents that are not objects. */
export function parseManifest(text: string): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML from helm: ${doc.errors.map(String).join('; ')}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    if (!isKubeObject(value)) throw new Error(`not a Kubernetes object: ${JSON.stringify(value)}`);
    objects.push(value);
  }
  return objects;
}

function single(objects: readonly KubeObject[], kind: string): KubeObject {
  const found = objects.filter((o) => o.kind === kind);
  if (found.length !== 1 || found[0] === undefined) throw new Error(`expected exactly one ${kind}, got ${found.length}`);
  return found[0];
}

/** `helm template`'s raw result, with the values passed through a values file (as the operator does). */
export async function template(module: string, values: unknown, release = module): Promise<HelmResult> {
  const dir = mkdtempSync(join(tmpdir(), 'eva-chart-values-'));
  try {
    const file = join(dir, 'values.yaml');
    writeFileSync(file, stringify(values), { mode: 0o600 });
    return await helm(['template', release, join(chartsDir, module), '--namespace', 'tenant-test', '-f', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Renders a module chart and returns its objects; fails when helm fails. */
export async function render(module: string, values: unknown, release = module): Promise<Rendered> {
  const result = await template(module, values, release);
  if (result.code !== 0) throw new Error(`helm template ${module} failed (${result.code}): ${result.stderr}`);
  const objects = parseManifest(result.stdout);
  return {
    objects,
    // The kinds are checked; the rest is what helm rendered, read through the structural types above.
    deployment: single(objects, 'Deployment'),
    service: single(objects, 'Service'),
    configMap: single(objects, 'ConfigMap'),
    secret: single(objects, 'Secret'),
  };
}
