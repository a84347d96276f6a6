{{/*
Helpers shared by every EVA module chart. Always called with the module chart's root context,
so .Chart is the module chart (its name is the module name) and .Values its values.
*/}}

{{/* The module name, e.g. orbit-crm. */}}
{{- define "eva-module-lib.module" -}}
{{- .Chart.Name -}}
{{- end -}}

{{/* The base name of every resource: the release name (the operator uses the module name). */}}
{{- define "eva-module-lib.fullname" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "eva-module-lib.configMapName" -}}
{{- printf "%s-config" (include "eva-module-lib.fullname" .) -}}
{{- end -}}

{{- define "eva-module-lib.secretName" -}}
{{- printf "%s-credentials" (include "eva-module-lib.fullname" .) -}}
{{- end -}}

{{/* The tenant's capsule code: required, six uppercase letters. */}}
{{- define "eva-module-lib.tenantCode" -}}
{{- $code := required "tenant.code is required: set it to the tenant's six-letter capsule code (e.g. --set tenant.code=ABCDEF)" .Values.tenant.code -}}
{{- if not (regexMatch "^[A-Z]{6}$" (toString $code)) -}}
{{- fail (printf "tenant.code must be six uppercase letters (A-Z), got %q" (toString $code)) -}}
{{- end -}}
{{- $code -}}
{{- end -}}

{{/* The tenant's tier, one of Starter, Customer, Enterprise, Platform. */}}
{{- define "eva-module-lib.tenantTier" -}}
{{- $tier := .Values.tenant.tier | default "Starter" | toString -}}
{{- if not (has $tier (list "Starter" "Customer" "Enterprise" "Platform")) -}}
{{- fail (printf "tenant.tier must be one of Starter, Customer, Enterprise, Platform, got %q" $tier) -}}
{{- end -}}
{{- $tier -}}
{{- end -}}

{{/* OTEL_SERVICE_NAME: <module>.<tenant code>, e.g. orbit-crm.ABCDEF. */}}
{{- define "eva-module-lib.otelServiceName" -}}
{{- printf "%s.%s" (include "eva-module-lib.module" .) (include "eva-module-lib.tenantCode" .) -}}
{{- end -}}

{{/* The image reference: repository@digest when a digest is set (the tag is then ignored), else repository:tag. */}}
{{- define "eva-module-lib.image" -}}
{{- $repository := required "image.repository is required" .Values.image.repository -}}
{{- $digest := .Values.image.digest | default "" | toString -}}
{{- if $digest -}}
{{- if not (regexMatch "^sha256:[a-f0-9]{64}$" $digest) -}}
{{- fail (printf "image.digest must look like sha256:<64 hex digits>, got %q" $digest) -}}
{{- end -}}
{{- printf "%s@%s" $repository $digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{/* The version reported in labels and telemetry: the image tag, or the chart's appVersion. */}}
{{- define "eva-module-lib.version" -}}
{{- .Values.image.tag | default .Chart.AppVersion | toString | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the module's pods; never change them (a Deployment's selector is immutable). */}}
{{- define "eva-module-lib.selectorLabels" -}}
app.kubernetes.io/name: {{ include "eva-module-lib.module" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end -}}

{{/* Labels on every resource. */}}
{{- define "eva-module-lib.labels" -}}
{{ include "eva-module-lib.selectorLabels" . }}
app.kubernetes.io/part-of: eva
app.kubernetes.io/component: module
app.kubernetes.io/version: {{ include "eva-module-lib.version" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" | quote }}
eva.aidonow.com/capsule-code: {{ include "eva-module-lib.tenantCode" . | quote }}
eva.aidonow.com/module: {{ include "eva-module-lib.module" . | quote }}
{{- end -}}

{{/* A credential name turned into an environment variable name: database-password -> EVA_CREDENTIAL_DATABASE_PASSWORD. */}}
{{- define "eva-module-lib.credentialEnvName" -}}
{{- printf "EVA_CREDENTIAL_%s" (regexReplaceAll "[^A-Za-z0-9]" . "_" | upper) -}}
{{- end -}}

{{/* The tenant's NATS connection: Secret eva-nats (keys url and nats.creds), written by the operator. */}}
{{- define "eva-module-lib.natsSecretName" -}}
{{- (.Values.nats | default dict).secretName | default "eva-nats" -}}
{{- end -}}

{{- define "eva-module-lib.natsMountPath" -}}
/var/run/secrets/eva/nats
{{- end -}}

{{/* secretConfig's key in the Secret <release>-credentials, and where the pod finds it. */}}
{{- define "eva-module-lib.secretConfigKey" -}}
secret-config.yaml
{{- end -}}

{{- define "eva-module-lib.secretConfigMountPath" -}}
/var/run/secrets/eva/config
{{- end -}}

{{/* Hash of the secret values and the NATS credentials revision, so changed credentials or secretConfig roll the Deployment. */}}
{{- define "eva-module-lib.valuesChecksum" -}}
{{- dict "credentials" (.Values.credentials | default dict) "secretConfig" (.Values.secretConfig | default dict) "nats" (.Values.nats | default dict) | toJson | sha256sum -}}
{{- end -}}

{{/* The container environment: identity and telemetry as plain values, secrets only via secretKeyRef. */}}
{{- define "eva-module-lib.env" -}}
{{- $code := include "eva-module-lib.tenantCode" . -}}
{{- $tier := include "eva-module-lib.tenantTier" . -}}
{{- $module := include "eva-module-lib.module" . -}}
{{- $secret := include "eva-module-lib.secretName" . -}}
- name: EVA_MODULE
  value: {{ $module | quote }}
- name: EVA_TENANT_CODE
  value: {{ $code | quote }}
- name: EVA_TENANT_TIER
  value: {{ $tier | quote }}
- name: EVA_HTTP_PORT
  value: {{ .Values.service.port | toString | quote }}
- name: EVA_CONFIG_FILE
  value: /etc/eva/config.yaml
{{- if .Values.secretConfig }}
- name: EVA_SECRET_CONFIG_FILE
  value: {{ printf "%s/%s" (include "eva-module-lib.secretConfigMountPath" .) (include "eva-module-lib.secretConfigKey" .) | quote }}
{{- end }}
- name: EVA_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: OTEL_SERVICE_NAME
  value: {{ include "eva-module-lib.otelServiceName" . | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "service.namespace=eva,service.version=%s,eva.module=%s,eva.tenant.code=%s,eva.tenant.tier=%s" (include "eva-module-lib.version" .) $module $code $tier | quote }}
{{- with .Values.otel.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: NATS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "eva-module-lib.natsSecretName" . | quote }}
      key: url
- name: NATS_CREDS_FILE
  value: {{ printf "%s/nats.creds" (include "eva-module-lib.natsMountPath" .) | quote }}
- name: NATS_INBOX_PREFIX
  value: {{ printf "_INBOX_%s" $code | quote }}
{{- range $name := keys (.Values.credentials | default dict) | sortAlpha }}
- name: {{ include "eva-module-lib.credentialEnvName" $name | quote }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret | quote }}
      key: {{ $name | quote }}
{{- end }}
{{- end -}}

{{/* The mount of secretConfig (from the Secret <release>-credentials), in every container; none without it. */}}
{{- define "eva-module-lib.secretConfigMount" -}}
{{- if .Values.secretConfig -}}
- name: secret-config
  mountPath: {{ include "eva-module-lib.secretConfigMountPath" . | quote }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* Pod Security "restricted" for every container. */}}
{{- define "eva-module-lib.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Resources with both requests and limits; rendering fails when either is missing. */}}
{{- define "eva-module-lib.resources" -}}
{{- $resources := .Values.resources | default dict -}}
{{- if not (and $resources.requests $resources.limits) -}}
{{- fail "resources.requests and resources.limits must both be set" -}}
{{- end -}}
{{- toYaml $resources -}}
{{- end -}}
