{{/* Helpers of the eva-hub chart. */}}

{{- define "eva-hub.labels" -}}
app.kubernetes.io/name: eva-hub
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
A policy's match condition: the request comes from the portal role (the marker verb tenant-portal on
the resource) and not from the platform's (platform-control). Arguments: list group resource.
*/}}
{{- define "eva-hub.portalNotPlatform" -}}
{{- $on := printf "authorizer.group('%s').resource('%s').namespace(request.namespace).name(has(request.name) ? request.name : '')" (index . 0) (index . 1) -}}
{{ $on }}.check('tenant-portal').allowed() && !{{ $on }}.check('platform-control').allowed()
{{- end -}}
