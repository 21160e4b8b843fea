{{/*
The worker's Deployment, for (dict "root" $ "build" B): B nil renders the
one unversioned Deployment, B an entry of versioning.builds renders that
build's (templates/deployment.yaml).
*/}}
{{- define "memagent.deployment" -}}
{{- $root := .root -}}
{{- $b := .build -}}
{{- $v := $root.Values -}}
{{- $tls := $v.temporal.tls -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "memagent.workloadName" . }}
  labels:
    {{- include "memagent.labels" $root | nindent 4 }}
    {{- with $b }}
    memagent.io/build-id: {{ include "memagent.buildLabel" .buildId | quote }}
    {{- end }}
spec:
  {{- if not (or $v.autoscaling.enabled $v.keda.enabled) }}
  replicas: {{ if and $b (ne $b.replicas nil) }}{{ $b.replicas }}{{ else }}{{ $v.replicaCount }}{{ end }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "memagent.selectorLabels" $root | nindent 6 }}
      {{- with $b }}
      memagent.io/build-id: {{ include "memagent.buildLabel" .buildId | quote }}
      {{- end }}
  {{- with $v.strategy }}
  strategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  template:
    metadata:
      annotations:
        # A changed ConfigMap rolls the workers.
        checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      labels:
        {{- include "memagent.labels" $root | nindent 8 }}
        {{- with $b }}
        memagent.io/build-id: {{ include "memagent.buildLabel" .buildId | quote }}
        {{- end }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "memagent.serviceAccountName" $root }}
      automountServiceAccountToken: {{ $v.serviceAccount.automountServiceAccountToken }}
      {{- with $v.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      # The worker's stop timeout, the preStop sleep and a margin for
      # closing connections and flushing telemetry.
      terminationGracePeriodSeconds: {{ include "memagent.terminationGracePeriodSeconds" $root }}
      securityContext:
        {{- toYaml $v.podSecurityContext | nindent 8 }}
      containers:
        - name: worker
          image: {{ if $b }}{{ include "memagent.buildImage" . | quote }}{{ else }}{{ include "memagent.image" $root | quote }}{{ end }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          command: ["/worker"]
          {{- if or $v.worker.concurrency $v.worker.extraArgs }}
          args:
            {{- if $v.worker.concurrency }}
            - --concurrency={{ $v.worker.concurrency }}
            {{- end }}
            {{- range $v.worker.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          {{- end }}
          ports:
            - name: http
              containerPort: {{ $v.worker.httpPort }}
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ include "memagent.fullname" $root }}
            {{- with $v.extraEnvFrom }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          env:
            - name: POD_NAME
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            {{- with $b }}
            # This pod's build of the Worker Deployment (docs/DEPLOY.md,
            # Upgrading).
            - name: TEMPORAL_DEPLOYMENT_NAME
              value: {{ $v.versioning.deploymentName | quote }}
            - name: TEMPORAL_WORKER_BUILD_ID
              value: {{ .buildId | quote }}
            {{- end }}
            - name: OTEL_RESOURCE_ATTRIBUTES
              value: {{ printf "k8s.pod.name=$(POD_NAME),k8s.namespace.name=$(POD_NAMESPACE)%s" (ternary (printf ",%s" $v.otel.resourceAttributes) "" (ne $v.otel.resourceAttributes "")) | quote }}
            {{- with $v.model.apiKey.existingSecret }}
            - name: {{ ternary "AZURE_OPENAI_API_KEY" "OPENAI_API_KEY" (eq $v.model.api "azure") }}
              valueFrom:
                secretKeyRef:
                  name: {{ . }}
                  key: {{ $v.model.apiKey.key }}
            {{- end }}
            {{- with $v.s3.credentials.existingSecret }}
            - name: AWS_ACCESS_KEY_ID
              valueFrom:
                secretKeyRef:
                  name: {{ . }}
                  key: {{ $v.s3.credentials.accessKeyIdKey }}
            - name: AWS_SECRET_ACCESS_KEY
              valueFrom:
                secretKeyRef:
                  name: {{ . }}
                  key: {{ $v.s3.credentials.secretAccessKeyKey }}
            {{- end }}
            {{- with $v.temporal.apiKey.existingSecret }}
            - name: TEMPORAL_API_KEY
              valueFrom:
                secretKeyRef:
                  name: {{ . }}
                  key: {{ $v.temporal.apiKey.key }}
            {{- end }}
            {{- if $tls.existingSecret }}
            {{- if $tls.certKey }}
            - name: TEMPORAL_TLS_CLIENT_CERT_PATH
              value: /etc/memagent/temporal-tls/{{ $tls.certKey }}
            - name: TEMPORAL_TLS_CLIENT_KEY_PATH
              value: /etc/memagent/temporal-tls/{{ $tls.keyKey }}
            {{- end }}
            {{- if $tls.caKey }}
            - name: TEMPORAL_TLS_SERVER_CA_CERT_PATH
              value: /etc/memagent/temporal-tls/{{ $tls.caKey }}
            {{- end }}
            {{- end }}
            {{- with $v.codec.existingSecret }}
            - name: MEMAGENT_CODEC_KEYS_FILE
              value: /etc/memagent/codec/{{ $v.codec.keysKey }}
            - name: MEMAGENT_CODEC_TOKEN
              valueFrom:
                secretKeyRef:
                  name: {{ . }}
                  key: {{ $v.codec.tokenKey }}
            {{- end }}
            {{- with $v.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          startupProbe:
            httpGet:
              path: /healthz
              port: http
            {{- toYaml $v.startupProbe | nindent 12 }}
          livenessProbe:
            httpGet:
              path: /healthz
              port: http
            {{- toYaml $v.livenessProbe | nindent 12 }}
          readinessProbe:
            httpGet:
              path: /readyz
              port: http
            {{- toYaml $v.readinessProbe | nindent 12 }}
          {{- if gt (int $v.shutdown.preStopSleepSeconds) 0 }}
          lifecycle:
            preStop:
              exec:
                # The image's static busybox: distroless has no shell.
                command: ["/busybox", "sleep", "{{ $v.shutdown.preStopSleepSeconds }}"]
          {{- end }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $v.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if $tls.existingSecret }}
            - name: temporal-tls
              mountPath: /etc/memagent/temporal-tls
              readOnly: true
            {{- end }}
            {{- if $v.codec.existingSecret }}
            - name: codec-keys
              mountPath: /etc/memagent/codec
              readOnly: true
            {{- end }}
            {{- with $v.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            {{- with $v.tmpVolume.medium }}
            medium: {{ . }}
            {{- end }}
            {{- with $v.tmpVolume.sizeLimit }}
            sizeLimit: {{ . }}
            {{- end }}
        {{- if $tls.existingSecret }}
        - name: temporal-tls
          secret:
            secretName: {{ $tls.existingSecret }}
            defaultMode: 288  # 0440: owner and fsGroup read
            items:
              {{- if $tls.certKey }}
              - key: {{ $tls.certKey }}
                path: {{ $tls.certKey }}
              - key: {{ $tls.keyKey }}
                path: {{ $tls.keyKey }}
              {{- end }}
              {{- if $tls.caKey }}
              - key: {{ $tls.caKey }}
                path: {{ $tls.caKey }}
              {{- end }}
        {{- end }}
        {{- if $v.codec.existingSecret }}
        - name: codec-keys
          secret:
            secretName: {{ $v.codec.existingSecret }}
            defaultMode: 288  # 0440: owner and fsGroup read
            items:
              - key: {{ $v.codec.keysKey }}
                path: {{ $v.codec.keysKey }}
        {{- end }}
        {{- with $v.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if $v.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml $v.topologySpreadConstraints | nindent 8 }}
      {{- else }}
      # Spread workers over nodes when the scheduler can.
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "memagent.selectorLabels" $root | nindent 14 }}
              {{- with $b }}
              memagent.io/build-id: {{ include "memagent.buildLabel" .buildId | quote }}
              {{- end }}
      {{- end }}
{{- end -}}
