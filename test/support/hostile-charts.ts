/**
 * A test-only copy of the bundled charts (CHART_BASE_PATH of a test operator) whose module charts
 * can be made hostile for chosen tenants only: the way a value injected through an unquoted string
 * would make them render. The product's charts are never touched; the render guard must stop
 * whatever these render.
 */
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModuleName } from '../../src/api/modules.ts';
import { repoRoot } from './tools.ts';

/** The issue's attack, verbatim: through an unquoted probe path it rendered a ConfigMap in kube-system. */
export const PROBE_ATTACK = '/livez\n              port: http\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pwned\n  namespace: kube-system\ndata:\n  x: |1';
/** Strings that would become structure (or template code) wherever a chart printed a value unquoted. */
export const HOSTILE = [
  PROBE_ATTACK,
  'x\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: pwned',
  '{{ .Release.Name }}{{ fail "templated" }}',
  'a: b\n- c\n| d\n> e',
  '&anchor *alias !!binary # comment',
  `'single' "double" \`back\` \\ backslash`,
  '- item',
];

export interface HostileCharts {
  /** The charts folder (holds modules/<module>). */
  readonly path: string;
  /** Writes (or replaces) a template of a module chart; the chart's fingerprint changes with it. */
  plant(module: ModuleName, file: string, template: string): void;
  /** Restores a module chart's template from the bundled chart (or removes a planted one). */
  restore(module: ModuleName, file: string): void;
  remove(): void;
}

/** `{{- if <the tenant is one of codes> }}` ... `{{- end }}`. */
const forCodes = (codes: readonly string[], body: string): string =>
  `{{- if has .Values.tenant.code (list ${codes.map((c) => JSON.stringify(c)).join(' ')}) }}\n${body}{{- end }}\n`;

/** A ConfigMap in another namespace (the injection of issue 18). */
export const configMapIn = (namespace: string, name: string, codes: readonly string[]): string =>
  forCodes(codes, `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\ndata:\n  tenant: {{ .Values.tenant.code | quote }}\n`);

/** A ClusterRoleBinding of the namespace's default ServiceAccount to cluster-admin (cluster-scoped). */
export const clusterAdminBinding = (name: string, codes: readonly string[]): string =>
  forCodes(
    codes,
    `apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: ${name}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects:\n  - {kind: ServiceAccount, name: default, namespace: {{ .Release.Namespace }}}\n`,
  );

/** The module's own Deployment, running `image` instead of the catalogue's (a replacement deployment.yaml). */
export const deploymentWithImage = (image: string, codes: readonly string[]): string =>
  `${forCodes(codes, `{{- $_ := set .Values.image "repository" ${JSON.stringify(image.split(':')[0])} }}\n{{- $_ := set .Values.image "tag" ${JSON.stringify(image.split(':')[1] ?? 'latest')} }}\n{{- $_ := set .Values.image "digest" "" }}\n`)}{{- include "eva-module-lib.deployment" . }}\n`;

export function hostileCharts(): HostileCharts {
  const path = mkdtempSync(join(tmpdir(), 'eva-hostile-charts-'));
  cpSync(join(repoRoot, 'charts/modules'), join(path, 'modules'), { recursive: true });
  const remove = (): void => {
    rmSync(path, { recursive: true, force: true });
  };
  process.once('exit', remove);
  const template = (module: ModuleName, file: string): string => join(path, 'modules', module, 'templates', file);
  return {
    path,
    plant: (module, file, text) => {
      writeFileSync(template(module, file), text);
    },
    restore: (module, file) => {
      rmSync(template(module, file), { force: true });
      const bundled = join(repoRoot, 'charts/modules', module, 'templates', file);
      if (existsSync(bundled)) cpSync(bundled, template(module, file));
    },
    remove,
  };
}
