{{/*
The module's Secret <release>-credentials: every entry of .Values.credentials plus the NATS
connection (nats-url, nats-user, nats-password). The operator passes these values only through a
tmpfs values file. Usage: {{ include "eva-module-lib.secret" . }}
*/}}
{{- define "eva-module-lib.secret" -}}
{{- $credentials := .Values.credentials | default dict -}}
{{- $nats := .Values.nats | default dict -}}
{{- $reserved := list "nats-url" "nats-user" "nats-password" -}}
{{- range $name := keys $credentials -}}
{{- if not (regexMatch "^[-._a-zA-Z0-9]{1,253}$" $name) -}}
{{- fail (printf "credentials key %q is not a valid Secret key (letters, digits, '-', '_', '.')" $name) -}}
{{- end -}}
{{- if has $name $reserved -}}
{{- fail (printf "credentials key %q is reserved for the NATS connection; set nats.* instead" $name) -}}
{{- end -}}
{{- end -}}
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "eva-module-lib.secretName" . }}
  labels:
    {{- include "eva-module-lib.labels" . | nindent 4 }}
type: Opaque
data:
  nats-url: {{ $nats.url | default "" | toString | b64enc | quote }}
  nats-user: {{ $nats.user | default "" | toString | b64enc | quote }}
  nats-password: {{ $nats.password | default "" | toString | b64enc | quote }}
  {{- range $name := keys $credentials | sortAlpha }}
  {{ $name | quote }}: {{ get $credentials $name | toString | b64enc | quote }}
  {{- end }}
{{- end -}}
