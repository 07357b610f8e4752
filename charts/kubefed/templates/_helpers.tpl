{{/* The chart name, overridable. */}}
{{- define "kubefed.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: the release name, suffixed with the chart name unless it contains it. */}}
{{- define "kubefed.fullname" -}}
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

{{/* The controller-manager's object names. */}}
{{- define "kubefed.controllerManager" -}}
{{- printf "%s-controller-manager" (include "kubefed.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Cluster-wide RBAC names carry the namespace: two releases of the same name may live in different namespaces. */}}
{{- define "kubefed.clusterRBACName" -}}
{{- printf "%s:%s" (include "kubefed.controllerManager" .) .Release.Namespace -}}
{{- end -}}

{{- define "kubefed.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kubefed.controllerManager" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kubefed.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kubefed.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kubefed
{{- end -}}

{{- define "kubefed.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubefed.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kubefed.controllerManager.selectorLabels" -}}
{{ include "kubefed.selectorLabels" . }}
app.kubernetes.io/component: controller-manager
{{- end -}}

{{- define "kubefed.controllerManager.labels" -}}
{{ include "kubefed.labels" . }}
app.kubernetes.io/component: controller-manager
{{- end -}}

{{- define "kubefed.image" -}}
{{- $image := .Values.controllerManager.image -}}
{{- printf "%s:%s" $image.repository (default (printf "v%s" .Chart.AppVersion) $image.tag) -}}
{{- end -}}

{{/* Federated API groups the controller-manager reconciles objects of. */}}
{{- define "kubefed.federatedGroups" -}}
{{- toJson (concat (list "types.kubefed.io") .Values.rbac.extraFederatedGroups | uniq) -}}
{{- end -}}

{{/* The Service the API server calls the webhooks through. */}}
{{- define "kubefed.webhookService" -}}
{{- printf "%s-webhook" (include "kubefed.controllerManager" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The kubernetes.io/tls Secret with the webhooks' serving certificate. */}}
{{- define "kubefed.webhookCertSecret" -}}
{{- default (printf "%s-webhook-tls" (include "kubefed.controllerManager" .)) .Values.webhook.certSecret -}}
{{- end -}}
