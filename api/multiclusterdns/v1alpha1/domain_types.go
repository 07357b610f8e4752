package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Domain is the DNS zone a federation publishes records in; its name is the
// federation's name in record names. It has no spec, as in KubeFed.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=domains
// +kubebuilder:printcolumn:name=domain,type=string,JSONPath=`.domain`
// +kubebuilder:printcolumn:name=age,type=date,JSONPath=`.metadata.creationTimestamp`
type Domain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Domain is the DNS zone, e.g. example.com.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?\.?$`
	Domain string `json:"domain"`

	// NameServer is the authoritative name server of the zone.
	// +optional
	NameServer string `json:"nameServer,omitempty"`
}

// DomainList is a list of Domains.
// +kubebuilder:object:root=true
type DomainList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Domain `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Domain{}, &DomainList{})
}
