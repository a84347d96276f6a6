/**
 * Each module chart's values.schema.json, generated from the values contract (module-values.ts): the
 * tenant's keys as the CRD allows them, the operator's typed and patterned, nothing else. Helm checks
 * it before rendering, so a chart installed by hand is held to the same contract as the operator.
 * `npm run charts:schema` writes the files; a test fails when they drift.
 */
import { GROUP, PLURAL } from './constants.ts';
import { VALUES_POLICY_NAME, valuesPolicyValidations } from './module-values-cel.ts';
import { OperatorModuleValuesSchema, TenantModuleValuesSchema } from './module-values.ts';
import type { ModuleName } from './modules.ts';

export const chartSchemaFile = (module: ModuleName): string => `charts/modules/${module}/values.schema.json`;

/** The schema text (stable, with a trailing newline) of every module chart. */
export function chartValuesSchemaJson(): string {
  const plain = (schema: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
  const schema = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'EVA module values (generated from src/api/module-values.ts; do not edit)',
    type: 'object',
    properties: {
      ...plain(TenantModuleValuesSchema)['properties'] as object,
      ...plain(OperatorModuleValuesSchema)['properties'] as object,
      // Helm's own: the library dependency's values and the global scope.
      'eva-module-lib': { type: 'object' },
      global: { type: 'object' },
    },
    additionalProperties: false,
  };
  return `${JSON.stringify(schema, null, 2)}\n`;
}

export const VALUES_POLICY_FILE = 'charts/eva-operator/templates/tenant-values-policy.yaml';

/**
 * The operator chart's template of the values policy (the CEL rules of module-values-cel.ts), with the
 * same single-owner guard as templates/deletion-protection.yaml: cluster-wide, installed by the first
 * release (or the dev cluster), left alone by any other. JSON strings are valid YAML scalars, so no
 * expression or message needs escaping.
 */
export function valuesPolicyTemplate(): string {
  const q = (text: string): string => JSON.stringify(text);
  const validations = valuesPolicyValidations()
    .map((v) => `    - expression: ${q(v.expression)}\n      message: ${q(v.message)}\n${v.messageExpression === undefined ? '' : `      messageExpression: ${q(v.messageExpression)}\n`}      reason: ${v.reason}`)
    .join('\n');
  // Cluster-wide, serving every release: uninstalling the release that installed it must not lift it.
  const labels = '  labels:\n    app.kubernetes.io/name: eva-operator\n    app.kubernetes.io/component: tenant-values\n  annotations:\n    helm.sh/resource-policy: keep';
  return `# Generated from src/api/module-values-cel.ts by \`npm run charts:schema\`; do not edit (a test compares).
# The module values contract at apply time: operator-owned keys in spec.helmValues, keys outside the
# contract and values above the tier's bounds are refused by the API server, naming the key or the bound. A policy, not CRD rules:
# it judges a create and an update that changes the spec, never a write of status or metadata, so a
# tenant stored before the contract stays writable and the operator reports it (InvalidHelmValues).
# Installed by the chart, and rendered from here by scripts/dev-cluster.sh up (quickstart --local too).
{{- if and .Values.tenantValuesPolicy (include "eva-operator.ownsClusterPolicy" (list $ ${q(VALUES_POLICY_NAME)})) }}
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: ${VALUES_POLICY_NAME}
${labels}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [${GROUP}]
        apiVersions: ["*"]
        operations: [CREATE, UPDATE]
        resources: [${PLURAL}]
  matchConditions:
    - name: spec-written
      expression: "request.operation == 'CREATE' || object.spec != oldObject.spec"
  validations:
${validations}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: ${VALUES_POLICY_NAME}
${labels}
spec:
  policyName: ${VALUES_POLICY_NAME}
  validationActions: [Deny]
{{- end }}
`;
}
