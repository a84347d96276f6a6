{{/*
The module's configuration: .Values.config (module-specific, non-secret) as config.yaml, mounted at
/etc/eva/config.yaml. Secret values never go here. Usage: {{ include "eva-module-lib.configmap" . }}
*/}}
{{- define "eva-module-lib.configmap" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "eva-module-lib.configMapName" . }}
  labels:
    {{- include "eva-module-lib.labels" . | nindent 4 }}
data:
  config.yaml: |
    module: {{ include "eva-module-lib.module" . }}
    tenant:
      code: {{ include "eva-module-lib.tenantCode" . }}
      tier: {{ include "eva-module-lib.tenantTier" . }}
    http:
      port: {{ .Values.service.port | int }}
      basePath: {{ .Values.ingress.path | default (printf "/%s" (include "eva-module-lib.module" .)) | quote }}
    {{- with .Values.config }}
    config:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end -}}
