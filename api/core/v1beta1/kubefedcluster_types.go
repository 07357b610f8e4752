package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TLSValidation names a TLS check that a KubeFedCluster may switch off.
// +kubebuilder:validation:Enum="*";SubjectName;ValidityPeriod
type TLSValidation string

const (
	// TLSAll disables every TLS verification.
	TLSAll TLSValidation = "*"
	// TLSSubjectName disables the check of the server's name against its certificate.
	TLSSubjectName TLSValidation = "SubjectName"
	// TLSValidityPeriod disables the check of the certificate's validity period.
	TLSValidityPeriod TLSValidation = "ValidityPeriod"
)

// ClusterMode says which side of the federation connects to the other.
// +kubebuilder:validation:Enum=Push;Pull
type ClusterMode string

const (
	// ClusterModePush is KubeFed's: the control plane reaches the member
	// with the token of spec.secretRef and writes to it.
	ClusterModePush ClusterMode = "Push"
	// ClusterModePull: an agent in the member (`controller-manager agent`)
	// reaches the host, outbound only, and propagates to its own cluster;
	// the host holds no credential for the member and never connects to it.
	ClusterModePull ClusterMode = "Pull"
)

// KubeFedClusterSpec says how to reach a member cluster.
// +kubebuilder:validation:XValidation:rule="(has(self.mode) && self.mode == 'Pull') || (has(self.secretRef) && size(self.secretRef.name) > 0)",message="secretRef.name is required: the Secret with the member's token (only a Pull-mode cluster has none)",fieldPath=".secretRef.name",reason=FieldValueRequired
type KubeFedClusterSpec struct {
	// Mode is Push (the default, KubeFed's) or Pull, for a member behind NAT
	// or a firewall whose agent connects to the host. Not in KubeFed.
	// +optional
	Mode ClusterMode `json:"mode,omitempty"`
	// APIEndpoint is the member's kube-apiserver: a host, host:port, or https:// URL.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="!self.contains('://') || self.startsWith('https://')",message="apiEndpoint must be a host, host:port or an https:// URL"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(https://)?([[][^]]*[]]|[^:/]+):[0-9]+(/.*)?$') || self.matches('^(https://)?([[][^]]*[]]|[^:/]+):0*([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])(/.*)?$')",message="apiEndpoint's port must be between 1 and 65535"
	APIEndpoint string `json:"apiEndpoint"`

	// CABundle is the PEM bundle that signs the member's serving certificate.
	// A `ca.crt` key in the Secret is used when this is empty.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`

	// SecretRef names a Secret in the KubeFed namespace whose `token` key
	// authenticates the control plane to the member; required but in Pull
	// mode, where apiEndpoint is only informational.
	// +optional
	SecretRef LocalSecretReference `json:"secretRef"`

	// DisabledTLSValidations lists TLS checks to skip; `*` (alone) skips all.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!('*' in self) || size(self) == 1",message="'*' disables every validation and must be the only entry"
	DisabledTLSValidations []TLSValidation `json:"disabledTLSValidations,omitempty"`

	// ProxyURL is an http, https or socks5 proxy to reach the member through.
	// +optional
	// An empty value means no proxy: KubeFed's Go types always send the field.
	// +kubebuilder:validation:XValidation:rule="self == '' || (isURL(self) && url(self).getScheme() in ['http', 'https', 'socks5'])",message="proxyURL must be an http, https or socks5 URL"
	ProxyURL string `json:"proxyURL,omitempty"`
}

// LocalSecretReference names a Secret in the KubeFed namespace.
type LocalSecretReference struct {
	// Name of the Secret; empty only for a Pull-mode cluster.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	Name string `json:"name"`
}

// ClusterConditionType is the type of a KubeFedCluster condition.
type ClusterConditionType string

const (
	// ClusterReady means the member's health endpoint answers ok.
	ClusterReady ClusterConditionType = "Ready"
	// ClusterOffline means the member cannot be reached at all.
	ClusterOffline ClusterConditionType = "Offline"
)

// Condition reasons written by the cluster controller, as KubeFed wrote them.
const (
	ReasonClusterReady        = "ClusterReady"
	ReasonClusterNotReady     = "ClusterNotReady"
	ReasonClusterReachable    = "ClusterReachable"
	ReasonClusterNotReachable = "ClusterNotReachable"
)

// ClusterCondition describes one aspect of a member's health.
type ClusterCondition struct {
	// Type is Ready or Offline.
	// +kubebuilder:validation:Enum=Ready;Offline
	Type ClusterConditionType `json:"type"`
	// Status is True, False or Unknown.
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status corev1.ConditionStatus `json:"status"`
	// LastProbeTime is when the condition was last checked.
	LastProbeTime metav1.Time `json:"lastProbeTime"`
	// LastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word CamelCase reason for the status.
	// +optional
	Reason *string `json:"reason,omitempty"`
	// Message says in words what the status means.
	// +optional
	Message *string `json:"message,omitempty"`
}

// NodeSummary counts a member's nodes.
type NodeSummary struct {
	// TotalNum is the number of Node objects.
	TotalNum int32 `json:"totalNum"`
	// ReadyNum is the number of Nodes whose Ready condition is True.
	ReadyNum int32 `json:"readyNum"`
}

// ResourceSummary sums the resources of a member's nodes and pods.
type ResourceSummary struct {
	// Allocatable is the sum of the Nodes' allocatable resources.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Allocated is the sum of the requests of scheduled, non-terminated Pods.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
}

// APIEnablement lists the resources one group/version serves in a member.
type APIEnablement struct {
	// GroupVersion is the API group and version, e.g. apps/v1.
	GroupVersion string `json:"groupVersion"`
	// Resources are the resources served under GroupVersion.
	// +optional
	Resources []APIResourceName `json:"resources,omitempty"`
}

// APIResourceName names one served resource.
type APIResourceName struct {
	// Name is the plural resource name, e.g. deployments.
	Name string `json:"name"`
	// Kind is the resource's kind, e.g. Deployment.
	Kind string `json:"kind"`
}

// KubeFedClusterStatus is what the cluster controller last observed of a member.
type KubeFedClusterStatus struct {
	// Conditions are the member's Ready and Offline conditions.
	// +optional
	Conditions []ClusterCondition `json:"conditions,omitempty"`
	// Zones are the topology zones of the member's nodes.
	// +optional
	Zones []string `json:"zones,omitempty"`
	// Region is the topology region of the member's nodes.
	// +optional
	Region *string `json:"region,omitempty"`
	// KubernetesVersion is the member's kube-apiserver version.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// NodeSummary counts the member's nodes.
	// +optional
	NodeSummary *NodeSummary `json:"nodeSummary,omitempty"`
	// ResourceSummary sums the member's allocatable and allocated resources.
	// +optional
	ResourceSummary *ResourceSummary `json:"resourceSummary,omitempty"`
	// APIEnablements lists the APIs the member serves.
	// +optional
	APIEnablements []APIEnablement `json:"apiEnablements,omitempty"`
}

// KubeFedCluster is a member cluster the control plane propagates to.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kubefedclusters
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=age,type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name=ready,type=string,JSONPath=`.status.conditions[?(@.type=='Ready')].status`
// +kubebuilder:printcolumn:name=kubernetes-version,type=string,JSONPath=`.status.kubernetesVersion`,priority=1
// +kubebuilder:printcolumn:name=region,type=string,JSONPath=`.status.region`,priority=1
type KubeFedCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec KubeFedClusterSpec `json:"spec"`
	// +optional
	Status KubeFedClusterStatus `json:"status,omitempty"`
}

// KubeFedClusterList is a list of KubeFedClusters.
// +kubebuilder:object:root=true
type KubeFedClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KubeFedCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&KubeFedCluster{}, &KubeFedClusterList{})
}

// ReadyCondition returns the cluster's Ready condition, nil before the
// first health check.
func (c *KubeFedCluster) ReadyCondition() *ClusterCondition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == ClusterReady {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}

// IsReady reports whether the cluster's Ready condition is True.
func (c *KubeFedCluster) IsReady() bool {
	cond := c.ReadyCondition()
	return cond != nil && cond.Status == corev1.ConditionTrue
}

// PullMode reports whether an agent in the member propagates to it.
func (c *KubeFedCluster) PullMode() bool { return c.Spec.Mode == ClusterModePull }

// AgentLeaseName is the Lease in the KubeFed namespace whose renewals are
// the heartbeat of a Pull-mode member's agent.
func AgentLeaseName(cluster string) string { return "kubefed-agent-" + cluster }
