{{/*
The module's configuration: .Values.config (module-specific, non-secret) as config.yaml, mounted at
/etc/eva/config.yaml. Secret values never go here. Usage: {{ include "eva-module-lib.configmap" . }}
*/}}
{{- define "eva-module-lib.configmap" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "eva-module-lib.configMapName" . | quote }}
  labels:
    {{- include "eva-module-lib.labels" . | nindent 4 }}
data:
  {{- $doc := dict "module" (include "eva-module-lib.module" .) "tenant" (dict "code" (include "eva-module-lib.tenantCode" .) "tier" (include "eva-module-lib.tenantTier" .)) "http" (dict "port" (.Values.service.port | int) "basePath" (.Values.ingress.path | default (printf "/%s" (include "eva-module-lib.module" .)) | toString)) }}
  {{- with .Values.config }}
  {{- $_ := set $doc "config" . }}
  {{- end }}
  {{- /* One YAML document built by toYaml, then quoted as one string: no value becomes structure. */}}
  config.yaml: {{ toYaml $doc | quote }}
{{- end -}}
