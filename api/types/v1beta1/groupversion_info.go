// Package v1beta1 holds the shape every Federated<T> type of
// types.kubefed.io/v1beta1 shares — template, placement, overrides,
// retainReplicas and status — as Go types that controllers and kubefedctl
// decode federated objects into, and from which the per-type CRD schema is
// generated.
// +kubebuilder:object:generate=true
// +groupName=types.kubefed.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DefaultFederatedGroup is the API group of generated Federated<T> types.
const DefaultFederatedGroup = "types.kubefed.io"

// DefaultFederatedVersion is the API version of generated Federated<T> types.
const DefaultFederatedVersion = "v1beta1"

// GroupVersion is the default group and version of Federated<T> types.
var GroupVersion = schema.GroupVersion{Group: DefaultFederatedGroup, Version: DefaultFederatedVersion}
