{{/* The module's ClusterIP Service. Usage in a module chart: {{ include "eva-module-lib.service" . }} */}}
{{- define "eva-module-lib.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "eva-module-lib.fullname" . | quote }}
  labels:
    {{- include "eva-module-lib.labels" . | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "eva-module-lib.selectorLabels" . | nindent 4 }}
  ports:
    - name: http
      port: {{ .Values.service.port | int }}
      targetPort: http
      protocol: TCP
{{- end -}}
