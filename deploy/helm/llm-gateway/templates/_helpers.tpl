{{/*
The chart's name, cut to 63 characters (a DNS label).
*/}}
{{- define "llm-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of every object: the release's name, with the chart's unless it already holds it.
*/}}
{{- define "llm-gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "llm-gateway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The labels that select the gateway's pods: never change them in an upgrade (a Deployment's
selector is immutable).
*/}}
{{- define "llm-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "llm-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "llm-gateway.labels" -}}
helm.sh/chart: {{ include "llm-gateway.chart" . }}
{{ include "llm-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: gateway
{{- end }}

{{- define "llm-gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "llm-gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: the ServiceAccount to use when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "llm-gateway.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
Where the pod mounts the gateway's configuration file and keys file.
*/}}
{{- define "llm-gateway.configDir" -}}/etc/llm-gateway/config{{- end }}
{{- define "llm-gateway.configFile" -}}{{ include "llm-gateway.configDir" . }}/gateway.yaml{{- end }}
{{- define "llm-gateway.keysDir" -}}/etc/llm-gateway/keys{{- end }}

{{/*
The Secret holding the keys file, and its entry: the release's own or apiKeys.existingSecret;
empty when no key is configured (authentication off).
*/}}
{{- define "llm-gateway.keysSecret" -}}
{{- if .Values.apiKeys.existingSecret }}
{{- .Values.apiKeys.existingSecret }}
{{- else if .Values.apiKeys.keys }}
{{- printf "%s-keys" (include "llm-gateway.fullname" .) }}
{{- end }}
{{- end }}

{{- define "llm-gateway.keysSecretKey" -}}
{{- if .Values.apiKeys.existingSecret }}
{{- required "apiKeys.existingSecretKey: the entry of apiKeys.existingSecret holding the keys" .Values.apiKeys.existingSecretKey }}
{{- else }}keys{{- end }}
{{- end }}

{{/*
The gateway's configuration file, after refusing the keys the chart sets itself: set in
both places, the flag would silently win over the file.
*/}}
{{- define "llm-gateway.configYAML" -}}
{{- $owned := dict
  "http_addr" "the chart sets it to :8080, where the probes, the Service and the ServiceMonitor point (service.httpPort sets the Service's port)"
  "grpc_addr" "the chart sets it to :9090, where the Service points (service.grpcPort sets the Service's port)"
  "drain_timeout" "set drainTimeoutSeconds, which also sets the pod's terminationGracePeriodSeconds"
  "api_keys" "keys do not belong in a ConfigMap; set apiKeys.keys or apiKeys.existingSecret"
  "api_keys_file" "set apiKeys.keys or apiKeys.existingSecret; the chart mounts the file"
  "sim" "set simulator.enabled"
  "config" "the chart passes --config itself"
}}
{{- $config := .Values.config | default dict }}
{{- range $key, $why := $owned }}
{{- if hasKey $config $key }}
{{- fail (printf "config.%s: %s" $key $why) }}
{{- end }}
{{- end }}
{{- if $config }}
{{- toYaml $config }}
{{- else }}
{{- "{}" }}
{{- end }}
{{- end }}

{{/*
The seconds the pod gets between the start of its termination and SIGKILL: the preStop
sleep, the drain, up to 5 s for the gateway to close its servers, and 5 s of margin.
*/}}
{{- define "llm-gateway.terminationGracePeriodSeconds" -}}
{{- add .Values.preStopSleepSeconds .Values.drainTimeoutSeconds 10 }}
{{- end }}

{{/*
The keys file of the release's own Secret: one key a line, as --api-keys-file reads it.
*/}}
{{- define "llm-gateway.keysFile" -}}
{{- range .Values.apiKeys.keys }}
{{ . }}
{{- end }}
{{ end }}
