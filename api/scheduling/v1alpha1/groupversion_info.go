// Package v1alpha1 holds the scheduling.kubefed.io/v1alpha1 API:
// ReplicaSchedulingPreference, which spreads a federated workload's replicas
// over member clusters.
// +kubebuilder:object:generate=true
// +groupName=scheduling.kubefed.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "scheduling.kubefed.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
