// Package v1beta1 holds the core.kubefed.io/v1beta1 API: the member clusters
// (KubeFedCluster), the control plane's configuration (KubeFedConfig) and the
// types it federates (FederatedTypeConfig), wire-compatible with KubeFed.
// +kubebuilder:object:generate=true
// +groupName=core.kubefed.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "core.kubefed.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
