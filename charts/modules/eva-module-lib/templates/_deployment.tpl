{{/* The module's Deployment. Usage in a module chart: {{ include "eva-module-lib.deployment" . }} */}}
{{- define "eva-module-lib.deployment" -}}
{{- $module := include "eva-module-lib.module" . -}}
{{- $image := include "eva-module-lib.image" . -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "eva-module-lib.fullname" . | quote }}
  labels:
    {{- include "eva-module-lib.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount | int }}
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      {{- include "eva-module-lib.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "eva-module-lib.labels" . | nindent 8 }}
      annotations:
        checksum/config: {{ include "eva-module-lib.configmap" . | sha256sum | quote }}
        checksum/values: {{ include "eva-module-lib.valuesChecksum" . | quote }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      automountServiceAccountToken: false
      enableServiceLinks: false
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        fsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      {{- if .Values.seed.enabled }}
      initContainers:
        - name: seed-loader
          image: {{ $image | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy | default "IfNotPresent" | quote }}
          args:
            - seed
            - --version
            - {{ .Values.seed.version | default .Chart.AppVersion | toString | quote }}
          env:
            {{- include "eva-module-lib.env" . | nindent 12 }}
          resources:
            {{- include "eva-module-lib.resources" . | nindent 12 }}
          securityContext:
            {{- include "eva-module-lib.containerSecurityContext" . | nindent 12 }}
          volumeMounts:
            - name: config
              mountPath: /etc/eva
              readOnly: true
            - name: tmp
              mountPath: /tmp
            - name: nats
              mountPath: {{ include "eva-module-lib.natsMountPath" . | quote }}
              readOnly: true
            {{- include "eva-module-lib.secretConfigMount" . | nindent 12 }}
      {{- end }}
      containers:
        - name: {{ $module | quote }}
          image: {{ $image | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy | default "IfNotPresent" | quote }}
          ports:
            - name: http
              containerPort: {{ .Values.service.port | int }}
              protocol: TCP
          env:
            {{- include "eva-module-lib.env" . | nindent 12 }}
          readinessProbe:
            httpGet:
              path: {{ dig "readinessPath" "/readyz" (.Values.probes | default dict) | toString | quote }}
              port: http
            initialDelaySeconds: 2
            periodSeconds: 5
            failureThreshold: 3
          livenessProbe:
            httpGet:
              path: {{ dig "livenessPath" "/livez" (.Values.probes | default dict) | toString | quote }}
              port: http
            initialDelaySeconds: 10
            periodSeconds: 10
            failureThreshold: 3
          resources:
            {{- include "eva-module-lib.resources" . | nindent 12 }}
          securityContext:
            {{- include "eva-module-lib.containerSecurityContext" . | nindent 12 }}
          volumeMounts:
            - name: config
              mountPath: /etc/eva
              readOnly: true
            - name: tmp
              mountPath: /tmp
            - name: nats
              mountPath: {{ include "eva-module-lib.natsMountPath" . | quote }}
              readOnly: true
            {{- include "eva-module-lib.secretConfigMount" . | nindent 12 }}
      volumes:
        - name: config
          configMap:
            name: {{ include "eva-module-lib.configMapName" . | quote }}
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        - name: nats
          secret:
            secretName: {{ include "eva-module-lib.natsSecretName" . | quote }}
            # 0440: readable by the pod's group (fsGroup 65532), written in decimal so no YAML reader mistakes it
            defaultMode: 288
        {{- if .Values.secretConfig }}
        - name: secret-config
          secret:
            secretName: {{ include "eva-module-lib.secretName" . | quote }}
            # Only secretConfig's file: the credentials reach the containers as env (secretKeyRef).
            items:
              - key: {{ include "eva-module-lib.secretConfigKey" . | quote }}
                path: {{ include "eva-module-lib.secretConfigKey" . | quote }}
            defaultMode: 288
        {{- end }}
{{- end -}}
