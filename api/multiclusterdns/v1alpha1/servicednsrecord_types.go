package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TTL is a DNS record time-to-live in seconds.
// +kubebuilder:validation:Minimum=0
type TTL int64

// DefaultRecordTTL is the TTL of records whose object sets none.
const DefaultRecordTTL TTL = 180

// ServiceDNSRecordSpec asks for DNS names for the federated Service of the same namespace and name.
type ServiceDNSRecordSpec struct {
	// DomainRef names the Domain, in the KubeFed namespace, the records go in.
	// +kubebuilder:validation:MinLength=1
	DomainRef string `json:"domainRef"`
	// RecordTTL is the TTL of the records; 180 when unset.
	// +optional
	RecordTTL TTL `json:"recordTTL,omitempty"`
	// DNSPrefix, when set, adds the name <dnsPrefix>.<domain> as a CNAME to
	// the record's global name.
	// +optional
	DNSPrefix string `json:"dnsPrefix,omitempty"`
	// ExternalName, when set, replaces the Service's name as the first label
	// of every record name.
	// +optional
	ExternalName string `json:"externalName,omitempty"`
	// AllowServiceWithoutEndpoints keeps a cluster's targets even when its
	// Service has no ready endpoints.
	// +optional
	AllowServiceWithoutEndpoints bool `json:"allowServiceWithoutEndpoints,omitempty"`
}

// ClusterDNS is what one member contributes to a Service's records.
type ClusterDNS struct {
	// Cluster is the KubeFedCluster name.
	Cluster string `json:"cluster"`
	// LoadBalancer is the member Service's load-balancer status.
	// +optional
	LoadBalancer corev1.LoadBalancerStatus `json:"loadBalancer,omitempty"`
	// Zones are the member's zones.
	// +optional
	Zones []string `json:"zones,omitempty"`
	// Region is the member's region.
	// +optional
	Region string `json:"region,omitempty"`
}

// ServiceDNSRecordStatus holds the targets found in members.
type ServiceDNSRecordStatus struct {
	// Domain is the resolved Domain's zone.
	// +optional
	Domain string `json:"domain,omitempty"`
	// DNS lists each member's targets.
	// +optional
	DNS []ClusterDNS `json:"dns,omitempty"`
	// Conditions say whether the records could be built, and why not.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ServiceDNSRecord publishes multi-cluster DNS names for a federated Service.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=servicednsrecords
// +kubebuilder:subresource:status
type ServiceDNSRecord struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ServiceDNSRecordSpec `json:"spec"`
	// +optional
	Status ServiceDNSRecordStatus `json:"status,omitempty"`
}

// ServiceDNSRecordList is a list of ServiceDNSRecords.
// +kubebuilder:object:root=true
type ServiceDNSRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceDNSRecord `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ServiceDNSRecord{}, &ServiceDNSRecordList{})
}
