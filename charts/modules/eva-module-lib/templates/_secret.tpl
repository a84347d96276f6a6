{{/*
The module's Secret <release>-credentials: every entry of .Values.credentials, and .Values.secretConfig
(the secret counterpart of config, only ever from a Secret through the tenant's valuesFrom) as one
YAML document under the key secret-config.yaml. The operator passes these values only through a tmpfs
values file. (The NATS connection is not here: it is the tenant's Secret eva-nats, mounted.)
Usage: {{ include "eva-module-lib.secret" . }}
*/}}
{{- define "eva-module-lib.secret" -}}
{{- $credentials := .Values.credentials | default dict -}}
{{- range $name := keys $credentials -}}
{{- if not (regexMatch "^[-._a-zA-Z0-9]{1,253}$" $name) -}}
{{- fail (printf "credentials key %q is not a valid Secret key (letters, digits, '-', '_', '.')" $name) -}}
{{- end -}}
{{- if eq $name (include "eva-module-lib.secretConfigKey" $) -}}
{{- fail (printf "credentials key %q is reserved for secretConfig" $name) -}}
{{- end -}}
{{- end -}}
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "eva-module-lib.secretName" . | quote }}
  labels:
    {{- include "eva-module-lib.labels" . | nindent 4 }}
type: Opaque
data:
  {{- range $name := keys $credentials | sortAlpha }}
  {{ $name | quote }}: {{ get $credentials $name | toString | b64enc | quote }}
  {{- end }}
  {{- with .Values.secretConfig }}
  {{- /* One YAML document built by toYaml, then encoded as one string: no value becomes structure. */}}
  {{ include "eva-module-lib.secretConfigKey" $ | quote }}: {{ toYaml . | b64enc | quote }}
  {{- end }}
{{- end -}}
