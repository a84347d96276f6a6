{{/* Helpers of the eva-operator chart. */}}

{{- define "eva-operator.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The base name of every object: the release name, or <release>-<chart> when it does not hold the chart name. */}}
{{- define "eva-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "eva-operator.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "eva-operator.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The quick-start NATS server's name (its StatefulSet and Service). */}}
{{- define "eva-operator.natsName" -}}
{{- printf "%s-nats" (include "eva-operator.fullname" . | trunc 58 | trimSuffix "-") -}}
{{- end -}}

{{- define "eva-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "eva-operator.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/*
The operator version: OPERATOR_VERSION and the pod annotation eva.aidonow.com/operator-version both
come from here, so they cannot disagree. Must be semver (the operator refuses to start otherwise).
*/}}
{{- define "eva-operator.version" -}}
{{- $version := .Values.operatorVersion | default .Chart.AppVersion | toString -}}
{{- if not (regexMatch "^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?(\\+[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?$" $version) -}}
{{- fail (printf "operatorVersion must be a semantic version like 1.2.3, got %q" $version) -}}
{{- end -}}
{{- $version -}}
{{- end -}}

{{/* The version as a label value (a label cannot hold "+"). */}}
{{- define "eva-operator.labelVersion" -}}
{{- include "eva-operator.version" . | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* An image reference from {repository, tag, digest}: repository@digest when a digest is set (the tag is then ignored), else repository:tag. Call with (list <image values> <default tag> <values path for messages>). */}}
{{- define "eva-operator.imageRef" -}}
{{- $image := index . 0 -}}
{{- $defaultTag := index . 1 -}}
{{- $path := index . 2 -}}
{{- $repository := required (printf "%s.repository is required" $path) $image.repository -}}
{{- $digest := $image.digest | default "" | toString -}}
{{- if $digest -}}
{{- if not (regexMatch "^sha256:[a-f0-9]{64}$" $digest) -}}
{{- fail (printf "%s.digest must look like sha256:<64 hex digits>, got %q" $path $digest) -}}
{{- end -}}
{{- printf "%s@%s" $repository $digest -}}
{{- else -}}
{{- printf "%s:%s" $repository ($image.tag | default $defaultTag | toString) -}}
{{- end -}}
{{- end -}}

{{/* The operator's image; with airGapRegistry, from the mirror (<registry>/<path>, the path as scripts/mirror-images.sh and the operator name it: the repository without its registry host) unless image.repository already points there. */}}
{{- define "eva-operator.image" -}}
{{- $image := deepCopy .Values.image -}}
{{- with .Values.airGapRegistry -}}
{{- $mirror := trimSuffix "/" . -}}
{{- if not (hasPrefix (printf "%s/" $mirror) $image.repository) -}}
{{- $_ := set $image "repository" (printf "%s/%s" $mirror (regexReplaceAll "^([^/]*[.:][^/]*|localhost)/" $image.repository "")) -}}
{{- end -}}
{{- end -}}
{{- include "eva-operator.imageRef" (list $image .Chart.AppVersion "image") -}}
{{- end -}}

{{/* The ConfigMap the operator reads images.txt from: imagesConfigMap, else the chart's own when a release packaged one (scripts/release.sh), else none (the image's /etc/eva-operator/images.txt). */}}
{{- define "eva-operator.imagesConfigMap" -}}
{{- if .Values.imagesConfigMap -}}
{{- .Values.imagesConfigMap -}}
{{- else if .Files.Get "images.txt" -}}
{{- printf "%s-images" (include "eva-operator.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "eva-operator.natsImage" -}}
{{- include "eva-operator.imageRef" (list .Values.nats.image "" "nats.image") -}}
{{- end -}}

{{/*
NATS_URL: the quick-start server's Service when nats.enabled, else nats.url. Exactly one of them:
rendering fails with a message saying what to set.
*/}}
{{- define "eva-operator.natsUrl" -}}
{{- $url := .Values.nats.url | default "" | toString -}}
{{- if .Values.nats.enabled -}}
{{- if $url -}}
{{- fail (printf "nats.url (%s) and nats.enabled=true both set: choose one (nats.enabled runs a quick-start NATS in the release namespace; nats.url points at your own)" $url) -}}
{{- end -}}
{{- printf "nats://%s.%s.svc:%d" (include "eva-operator.natsName" .) .Release.Namespace (.Values.nats.port | int) -}}
{{- else -}}
{{- if not $url -}}
{{- fail "NATS is not configured: set nats.url to your NATS with JetStream (e.g. --set nats.url=nats://nats.eva-system:4222), or --set nats.enabled=true for a quick-start NATS in the release namespace" -}}
{{- else if not (regexMatch "^(nats|tls|wss?)://[^\\s/@]+/?$" $url) -}}
{{- fail (printf "nats.url must be a nats://, tls:// or ws(s):// URL without credentials (use nats.auth.existingSecret), got %q" $url) -}}
{{- end -}}
{{- $url -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the operator's pods; never change them (a Deployment's selector is immutable). */}}
{{- define "eva-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "eva-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* Labels on every object. */}}
{{- define "eva-operator.labels" -}}
app.kubernetes.io/name: {{ include "eva-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: eva
app.kubernetes.io/version: {{ include "eva-operator.labelVersion" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "eva-operator.natsSelectorLabels" -}}
app.kubernetes.io/name: nats
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: nats
{{- end -}}

{{/* Pod Security "restricted" for every container of this chart. */}}
{{- define "eva-operator.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "eva-operator.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
The operator's environment, one list for the two pods that run with it: the Deployment's container and
the `helm test` preflight pod (templates/tests/preflight.yaml), so the preflight checks exactly the
settings the operator uses.
*/}}
{{- define "eva-operator.env" -}}
{{- $version := include "eva-operator.version" . -}}
{{- $natsUrl := include "eva-operator.natsUrl" . -}}
- name: OPERATOR_VERSION
  value: {{ $version | quote }}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: NATS_URL
  value: {{ $natsUrl | quote }}
{{- with .Values.nats.moduleUrl }}
- name: MODULE_NATS_URL
  value: {{ . | quote }}
{{- end }}
# The system user and the operator signing key: files of a mounted Secret, never values.
- name: NATS_SYSTEM_CREDS_FILE
  value: /etc/eva-operator/nats/system.creds
- name: NATS_OPERATOR_SIGNING_KEY_FILE
  value: /etc/eva-operator/nats/operator-signing-key.nk
{{ include "eva-operator.networkPolicyEnv" . }}
# Secret values files for helm: a tmpfs (the Deployment's volume helm-secrets); the operator refuses anything else.
- name: HELM_SECRETS_DIR
  value: /run/helm-secrets
# The root filesystem is read-only: helm's folders, HOME (kube discovery cache) and TMPDIR are emptyDirs.
- name: HELM_CACHE_HOME
  value: /var/lib/helm/cache
- name: HELM_CONFIG_HOME
  value: /var/lib/helm/config
- name: HELM_DATA_HOME
  value: /var/lib/helm/data
- name: HOME
  value: /tmp
- name: TMPDIR
  value: /tmp
- name: EVA_BASE_DOMAIN
  value: {{ .Values.baseDomain | quote }}
{{- with .Values.ingressClass }}
- name: INGRESS_CLASS
  value: {{ . | quote }}
{{- end }}
- name: INGRESS_READY_ON_CREATE
  value: {{ .Values.ingressReadyOnCreate | toString | quote }}
{{- with .Values.ingressTls.clusterIssuer }}
- name: INGRESS_TLS_ISSUER
  value: {{ . | quote }}
{{- end }}
{{- with .Values.ingressTls.secret }}
- name: INGRESS_TLS_SECRET
  value: {{ . | quote }}
{{- end }}
{{- with .Values.ingressAnnotations }}
- name: INGRESS_ANNOTATIONS
  value: {{ toJson . | quote }}
{{- end }}
{{- with .Values.moduleOtelEndpoint }}
- name: MODULE_OTEL_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- if include "eva-operator.imagesConfigMap" . }}
- name: IMAGES_FILE
  value: /etc/eva-operator/images/images.txt
{{- end }}
{{- with .Values.airGapRegistry }}
- name: AIRGAP_REGISTRY
  value: {{ . | quote }}
{{- end }}
- name: METRICS_PORT
  value: {{ .Values.metrics.port | int | toString | quote }}
- name: METRICS_BIND_ADDRESS
  value: "0.0.0.0"
- name: RECONCILE_CONCURRENCY
  value: {{ .Values.concurrency | int | toString | quote }}
- name: HELM_CONCURRENCY
  value: {{ .Values.helmConcurrency | int | toString | quote }}
- name: DRIFT_INTERVAL_SECONDS
  value: {{ .Values.driftIntervalSeconds | int | toString | quote }}
- name: KUBE_API_QPS
  value: {{ .Values.kubeApi.qps | int | toString | quote }}
- name: KUBE_API_BURST
  value: {{ .Values.kubeApi.burst | int | toString | quote }}
- name: MAX_WAVE
  value: {{ .Values.maxWave | int | toString | quote }}
{{- with .Values.shard }}
- name: SHARD
  value: {{ . | quote }}
{{- end }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* NETWORK_POLICY_* from networkPolicy.*; NATS is the quick-start server's pods unless told otherwise. */}}
{{- define "eva-operator.networkPolicyEnv" -}}
{{- $np := .Values.networkPolicy -}}
- name: NETWORK_POLICY
  value: {{ $np.enabled | toString | quote }}
- name: NETWORK_POLICY_INGRESS_NAMESPACES
  value: {{ $np.ingressNamespaces | quote }}
- name: NETWORK_POLICY_DNS_NAMESPACES
  value: {{ $np.dnsNamespaces | quote }}
- name: NETWORK_POLICY_DNS_PODS
  value: {{ $np.dnsPods | quote }}
- name: NETWORK_POLICY_REMOVE_FOREIGN
  value: {{ $np.removeForeign | default false | toString | quote }}
{{- if $np.natsCidr }}
- name: NETWORK_POLICY_NATS_CIDR
  value: {{ $np.natsCidr | quote }}
{{- else }}
- name: NETWORK_POLICY_NATS_NAMESPACES
  value: {{ $np.natsNamespaces | default (printf "kubernetes.io/metadata.name=%s" .Release.Namespace) | quote }}
- name: NETWORK_POLICY_NATS_PODS
  value: {{ $np.natsPods | default "app.kubernetes.io/component=nats" | quote }}
{{- end }}
{{- end -}}

{{/*
Whether this release renders a cluster-wide policy (one per cluster, not per release): when nobody
installed it yet, or this release did. One installed by another (the dev cluster, another shard's
release) stays theirs, untouched. Call with (list $ "<policy name>"); prints "true" or nothing.
*/}}
{{- define "eva-operator.ownsClusterPolicy" -}}
{{- $root := index . 0 -}}
{{- $existing := lookup "admissionregistration.k8s.io/v1" "ValidatingAdmissionPolicy" "" (index . 1) -}}
{{- $owner := dig "metadata" "annotations" "meta.helm.sh/release-name" "" $existing -}}
{{- $ownerNamespace := dig "metadata" "annotations" "meta.helm.sh/release-namespace" "" $existing -}}
{{- if or (not $existing) (and (eq $owner $root.Release.Name) (eq $ownerNamespace $root.Release.Namespace)) -}}true{{- end -}}
{{- end -}}
