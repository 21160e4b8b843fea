{{/* Names, labels and the checks every render makes. */}}

{{- define "memagent.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "memagent.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "memagent.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "memagent.instanceLabels" -}}
app.kubernetes.io/name: {{ include "memagent.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Selects the worker pods (not the setup Job's). */}}
{{- define "memagent.selectorLabels" -}}
{{ include "memagent.instanceLabels" . }}
app.kubernetes.io/component: worker
{{- end -}}

{{/* Labels of every object, without the component. */}}
{{- define "memagent.commonLabels" -}}
helm.sh/chart: {{ include "memagent.chart" . }}
{{ include "memagent.instanceLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: memagent
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "memagent.labels" -}}
{{ include "memagent.commonLabels" . }}
app.kubernetes.io/component: worker
{{- end -}}

{{- define "memagent.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "memagent.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "memagent.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The image of one build (versioning.builds): its digest or tag, else image's. Takes (dict "root" $ "build" $b). */}}
{{- define "memagent.buildImage" -}}
{{- $b := .build -}}
{{- $i := .root.Values.image -}}
{{- if $b.digest -}}
{{- printf "%s@%s" $i.repository $b.digest -}}
{{- else if $b.tag -}}
{{- printf "%s:%s" $i.repository $b.tag -}}
{{- else -}}
{{- include "memagent.image" .root -}}
{{- end -}}
{{- end -}}

{{/* A build id as a label value and a name suffix: [a-z0-9.-], at most 40 characters. */}}
{{- define "memagent.buildLabel" -}}
{{- regexReplaceAll "[^a-z0-9.-]+" (lower .) "-" | trunc 40 | trimAll "-." -}}
{{- end -}}

{{/* A worker Deployment's name, for (dict "root" $ "build" B): the release's full name, or with a build (versioning.builds) a shortened one and the build's label. */}}
{{- define "memagent.workloadName" -}}
{{- if .build -}}
{{- printf "%s-%s" (include "memagent.fullname" .root | trunc 22 | trimSuffix "-") (include "memagent.buildLabel" .build.buildId) -}}
{{- else -}}
{{- include "memagent.fullname" .root -}}
{{- end -}}
{{- end -}}

{{/* The CLI image the setup Job runs. */}}
{{- define "memagent.setupImage" -}}
{{- $i := .Values.setup.image -}}
{{- if $i.digest -}}
{{- printf "%s@%s" $i.repository $i.digest -}}
{{- else -}}
{{- printf "%s:%s" $i.repository (default .Chart.AppVersion $i.tag) -}}
{{- end -}}
{{- end -}}

{{/* Seconds the kubelet waits between preStop+SIGTERM and SIGKILL. */}}
{{- define "memagent.terminationGracePeriodSeconds" -}}
{{- $s := .Values.shutdown -}}
{{- if not $s.terminationGracePeriodSeconds -}}
{{- add $s.preStopSleepSeconds $s.stopTimeoutSeconds $s.shutdownMarginSeconds -}}
{{- else -}}
{{- $s.terminationGracePeriodSeconds -}}
{{- end -}}
{{- end -}}

{{/* Whether Temporal is reached over TLS (as the worker decides it). */}}
{{- define "memagent.temporalTLS" -}}
{{- $t := .Values.temporal -}}
{{- if or $t.tls.enabled $t.tls.existingSecret $t.tls.serverName $t.apiKey.existingSecret -}}true{{- end -}}
{{- end -}}

{{/*
Checks of combinations the schema cannot express. Every template that
matters includes it, so a bad combination fails the whole render.
*/}}
{{- define "memagent.validate" -}}
{{- $v := .Values -}}
{{- if and $v.autoscaling.enabled $v.keda.enabled -}}
{{- fail "autoscaling.enabled and keda.enabled are both true: KEDA makes its own HorizontalPodAutoscaler, and two autoscalers on one Deployment fight; turn one off" -}}
{{- end -}}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) -}}
{{- fail (printf "autoscaling.minReplicas (%d) is above autoscaling.maxReplicas (%d)" (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) -}}
{{- end -}}
{{- if and $v.keda.enabled (gt (int $v.keda.minReplicaCount) (int $v.keda.maxReplicaCount)) -}}
{{- fail (printf "keda.minReplicaCount (%d) is above keda.maxReplicaCount (%d)" (int $v.keda.minReplicaCount) (int $v.keda.maxReplicaCount)) -}}
{{- end -}}
{{- $s := $v.shutdown -}}
{{- if $s.terminationGracePeriodSeconds -}}
{{- if le (int $s.terminationGracePeriodSeconds) (int (add $s.preStopSleepSeconds $s.stopTimeoutSeconds)) -}}
{{- fail (printf "shutdown.terminationGracePeriodSeconds (%d) must exceed shutdown.preStopSleepSeconds + shutdown.stopTimeoutSeconds (%d): the worker would be killed before in-flight activities finish" (int $s.terminationGracePeriodSeconds) (int (add $s.preStopSleepSeconds $s.stopTimeoutSeconds))) -}}
{{- end -}}
{{- end -}}
{{- if and $v.codec.existingSecret (not $v.codec.tokenKey) -}}
{{- fail "codec.tokenKey is empty: the worker serves /codec on all interfaces in a pod, so it needs a bearer token (MEMAGENT_CODEC_TOKEN) from codec.existingSecret" -}}
{{- end -}}
{{- if and $v.temporal.tls.existingSecret (ne (empty $v.temporal.tls.certKey) (empty $v.temporal.tls.keyKey)) -}}
{{- fail "temporal.tls.certKey and temporal.tls.keyKey go together (mTLS): set both or neither" -}}
{{- end -}}
{{- if and $v.temporal.tls.existingSecret (not (or $v.temporal.tls.caKey (and $v.temporal.tls.certKey $v.temporal.tls.keyKey))) -}}
{{- fail "temporal.tls.existingSecret is set but names no files: set temporal.tls.certKey and keyKey (mTLS), caKey, or both" -}}
{{- end -}}
{{- if and (eq $v.model.api "azure") (not $v.model.name) -}}
{{- fail "model.api is azure but model.name is empty: set it to the Azure OpenAI deployment's name" -}}
{{- end -}}
{{- if and (eq $v.model.api "azure") (not $v.model.apiKey.existingSecret) -}}
{{- fail "model.api is azure but model.apiKey.existingSecret is empty: Azure OpenAI needs the resource's key (AZURE_OPENAI_API_KEY) from a Secret" -}}
{{- end -}}
{{- $ver := $v.versioning -}}
{{- if and $ver.deploymentName (not $ver.builds) -}}
{{- fail "versioning.deploymentName is set but versioning.builds is empty: list the builds to run (buildId, and tag or digest), each its own Deployment, e.g. builds: [{buildId: \"0.5.0\", tag: \"0.5.0\"}]" -}}
{{- end -}}
{{- if and $ver.builds (not $ver.deploymentName) -}}
{{- fail "versioning.builds is set but versioning.deploymentName is empty: name the Temporal Worker Deployment the builds belong to" -}}
{{- end -}}
{{- if and $ver.builds $v.keda.enabled -}}
{{- fail "keda.enabled with versioning.builds: the task queue's backlog is every build's, so one ScaledObject per build would scale them all alike; scale builds by their replicas, or let the Temporal Worker Controller run them (docs/DEPLOY.md, Upgrading)" -}}
{{- end -}}
{{- $seen := dict -}}
{{- range $ver.builds -}}
{{- $l := include "memagent.buildLabel" .buildId -}}
{{- if hasKey $seen $l -}}
{{- fail (printf "versioning.builds: build ids %q and %q name the same Deployment (%s): make them differ in letters or digits" (get $seen $l) .buildId $l) -}}
{{- end -}}
{{- $_ := set $seen $l .buildId -}}
{{- end -}}
{{- $credentialVars := list "OPENAI_API_KEY" "AZURE_OPENAI_API_KEY" "AWS_ACCESS_KEY_ID" "AWS_SECRET_ACCESS_KEY" "AWS_SESSION_TOKEN" "TEMPORAL_API_KEY" "MEMAGENT_CODEC_KEYS" "MEMAGENT_CODEC_TOKEN" -}}
{{- range $v.extraEnv -}}
{{- if and (has .name $credentialVars) (hasKey . "value") -}}
{{- fail (printf "extraEnv: %s is a credential: take it from a Secret (valueFrom.secretKeyRef, or the chart's existingSecret settings), not a plain value" .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
