package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Record types the DNS controllers write.
const (
	RecordTypeA     = "A"
	RecordTypeAAAA  = "AAAA"
	RecordTypeCNAME = "CNAME"
)

// ProviderSpecificProperty is a provider-specific setting of an endpoint.
type ProviderSpecificProperty struct {
	// Name of the setting.
	Name string `json:"name"`
	// Value of the setting.
	Value string `json:"value"`
}

// Endpoint is one DNS record set, in the shape ExternalDNS's CRD source reads.
type Endpoint struct {
	// DNSName is the record's fully qualified name.
	DNSName string `json:"dnsName"`
	// Targets are the record's values.
	// +optional
	Targets []string `json:"targets,omitempty"`
	// RecordType is A, AAAA, CNAME, TXT, ...
	// +optional
	RecordType string `json:"recordType,omitempty"`
	// RecordTTL is the record's TTL in seconds.
	// +optional
	RecordTTL TTL `json:"recordTTL,omitempty"`
	// SetIdentifier tells apart records of the same name and type.
	// +optional
	SetIdentifier string `json:"setIdentifier,omitempty"`
	// Labels are stored with the record.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// ProviderSpecific holds provider-specific settings.
	// +optional
	ProviderSpecific []ProviderSpecificProperty `json:"providerSpecific,omitempty"`
}

// DNSEndpointSpec lists the records to publish.
type DNSEndpointSpec struct {
	// Endpoints are the records.
	// +optional
	Endpoints []Endpoint `json:"endpoints,omitempty"`
}

// DNSEndpointStatus is written by ExternalDNS.
type DNSEndpointStatus struct {
	// ObservedGeneration is the generation ExternalDNS last published.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// DNSEndpoint is a set of DNS records for ExternalDNS to publish.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=dnsendpoints
// +kubebuilder:subresource:status
type DNSEndpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec DNSEndpointSpec `json:"spec,omitempty"`
	// +optional
	Status DNSEndpointStatus `json:"status,omitempty"`
}

// DNSEndpointList is a list of DNSEndpoints.
// +kubebuilder:object:root=true
type DNSEndpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSEndpoint `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DNSEndpoint{}, &DNSEndpointList{})
}
