package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IngressDNSRecordSpec asks for DNS names for the federated Ingress of the same namespace and name.
type IngressDNSRecordSpec struct {
	// Hosts are the fully qualified names to publish.
	// +kubebuilder:validation:MinItems=1
	Hosts []string `json:"hosts"`
	// RecordTTL is the TTL of the records; 180 when unset.
	// +optional
	RecordTTL TTL `json:"recordTTL,omitempty"`
}

// ClusterIngressDNS is what one member contributes to an Ingress's records.
type ClusterIngressDNS struct {
	// Cluster is the KubeFedCluster name.
	Cluster string `json:"cluster"`
	// LoadBalancer is the member Ingress's load-balancer status.
	// +optional
	LoadBalancer corev1.LoadBalancerStatus `json:"loadBalancer,omitempty"`
}

// IngressDNSRecordStatus holds the targets found in members.
type IngressDNSRecordStatus struct {
	// DNS lists each member's targets.
	// +optional
	DNS []ClusterIngressDNS `json:"dns,omitempty"`
	// Conditions say whether the records could be built, and why not.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// IngressDNSRecord publishes DNS names for a federated Ingress.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=ingressdnsrecords
// +kubebuilder:subresource:status
type IngressDNSRecord struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec IngressDNSRecordSpec `json:"spec"`
	// +optional
	Status IngressDNSRecordStatus `json:"status,omitempty"`
}

// IngressDNSRecordList is a list of IngressDNSRecords.
// +kubebuilder:object:root=true
type IngressDNSRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IngressDNSRecord `json:"items"`
}

func init() {
	SchemeBuilder.Register(&IngressDNSRecord{}, &IngressDNSRecordList{})
}
