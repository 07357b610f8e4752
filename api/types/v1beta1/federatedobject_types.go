package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FederatedObjectSpec is the spec of every Federated<T>.
type FederatedObjectSpec struct {
	// Template is the target object without name and namespace, which come
	// from the federated object.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Template runtime.RawExtension `json:"template,omitempty"`

	// Placement selects the member clusters.
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// Overrides change the template per cluster. A list keyed by clusterName
	// (and each cluster's by path), so that appliers own entries rather than
	// the whole list: a GitOps tool's overrides and those of a
	// ReplicaSchedulingPreference live side by side (docs/gitops.md).
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +listType=map
	// +listMapKey=clusterName
	Overrides []ClusterOverride `json:"overrides,omitempty"`

	// RetainReplicas keeps the member's spec.replicas (for example set by an
	// HPA there) instead of the template's.
	// +optional
	RetainReplicas *bool `json:"retainReplicas,omitempty"`
}

// Placement selects member clusters. When clusters is present, even empty,
// it wins over clusterSelector; a null clusterSelector selects nothing and an
// empty one selects every cluster.
type Placement struct {
	// Clusters names the clusters to place in.
	// +optional
	// +kubebuilder:validation:MaxItems=10000
	Clusters []ClusterReference `json:"clusters,omitempty"`

	// ClusterSelector selects clusters by their KubeFedCluster labels.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
}

// ClusterReference names a KubeFedCluster.
type ClusterReference struct {
	// Name of the KubeFedCluster.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ClusterOverride lists the changes made to the template for one cluster.
type ClusterOverride struct {
	// ClusterName is the KubeFedCluster the changes apply to.
	// +kubebuilder:validation:MinLength=1
	ClusterName string `json:"clusterName"`

	// ClusterOverrides are JSON-patch-like operations applied in order, one
	// per path, as KubeFed required.
	// +optional
	// +kubebuilder:validation:MaxItems=200
	// +listType=map
	// +listMapKey=path
	ClusterOverrides []OverrideItem `json:"clusterOverrides,omitempty"`
}

// OverrideOp is a JSON-patch operation; empty means replace, and is
// admitted, as KubeFed's pattern ^(add|remove|replace)?$ admitted it.
// +kubebuilder:validation:Enum=add;remove;replace;""
type OverrideOp string

const (
	// OverrideAdd adds a value, inserting into a list at an index.
	OverrideAdd OverrideOp = "add"
	// OverrideRemove removes the value at the path.
	OverrideRemove OverrideOp = "remove"
	// OverrideReplace sets the value at the path, adding a missing object key.
	OverrideReplace OverrideOp = "replace"
)

// OverrideItem is one change to the template.
type OverrideItem struct {
	// Op is add, remove or replace; replace when empty.
	// +optional
	Op OverrideOp `json:"op,omitempty"`

	// Path is a JSON pointer into the target object, e.g. /spec/replicas.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// The message cannot name the pointer for the path at hand: a CEL message
	// expression over paths of up to 1,024 characters in 1,000 × 200 overrides
	// exceeds the API server's cost budget. The invalid value is printed
	// beside it, and pkg/overrides suggests the exact pointer.
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="path must be a JSON pointer starting with '/', such as /spec/replicas for spec.replicas: each '.' becomes '/' and [0] becomes /0"
	// +kubebuilder:validation:XValidation:rule="!(self in ['/metadata/name', '/metadata/namespace', '/metadata/generateName', '/kind'])",message="path must not override the object's identity (/metadata/name, /metadata/namespace, /metadata/generateName, /kind)"
	Path string `json:"path"`

	// Value is the value to set; any JSON value.
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}

// Propagation condition reasons, as KubeFed wrote them.
const (
	ConditionPropagation         = "Propagation"
	ReasonCheckClusters          = "CheckClusters"
	ReasonClusterRetrievalFailed = "ClusterRetrievalFailed"
	ReasonComputePlacementFailed = "ComputePlacementFailed"
	ReasonNamespaceNotFederated  = "NamespaceNotFederated"
)

// PropagationStatusValue is the per-cluster outcome of propagation; empty means ok.
type PropagationStatusValue string

// Per-cluster status values, as KubeFed wrote them.
const (
	WaitingForRemoval      PropagationStatusValue = "WaitingForRemoval"
	ClusterNotReady        PropagationStatusValue = "ClusterNotReady"
	CachedRetrievalFailed  PropagationStatusValue = "CachedRetrievalFailed"
	ComputeResourceFailed  PropagationStatusValue = "ComputeResourceFailed"
	ApplyOverridesFailed   PropagationStatusValue = "ApplyOverridesFailed"
	CreationFailed         PropagationStatusValue = "CreationFailed"
	UpdateFailed           PropagationStatusValue = "UpdateFailed"
	DeletionFailed         PropagationStatusValue = "DeletionFailed"
	LabelRemovalFailed     PropagationStatusValue = "LabelRemovalFailed"
	RetrievalFailed        PropagationStatusValue = "RetrievalFailed"
	AlreadyExists          PropagationStatusValue = "AlreadyExists"
	FieldRetentionFailed   PropagationStatusValue = "FieldRetentionFailed"
	VersionRetrievalFailed PropagationStatusValue = "VersionRetrievalFailed"
	ClientRetrievalFailed  PropagationStatusValue = "ClientRetrievalFailed"
	ManagedLabelFalse      PropagationStatusValue = "ManagedLabelFalse"
	CreationTimedOut       PropagationStatusValue = "CreationTimedOut"
	UpdateTimedOut         PropagationStatusValue = "UpdateTimedOut"
	DeletionTimedOut       PropagationStatusValue = "DeletionTimedOut"
	LabelRemovalTimedOut   PropagationStatusValue = "LabelRemovalTimedOut"

	// ClusterNotFound is ours, not KubeFed's: spec.placement.clusters names
	// a cluster that is not joined. KubeFed ignored such names silently.
	ClusterNotFound PropagationStatusValue = "ClusterNotFound"
)

// ClusterStatus is the propagation outcome in one cluster.
type ClusterStatus struct {
	// Name of the cluster.
	Name string `json:"name"`
	// Status is empty when propagation succeeded, else what went wrong.
	// +optional
	Status PropagationStatusValue `json:"status,omitempty"`
	// RemoteStatus is the member object's .status, when status collection is on.
	// +optional
	RemoteStatus *apiextensionsv1.JSON `json:"remoteStatus,omitempty"`
	// Ready is the copy's <ready>/<desired> count, such as 3/3, when the
	// type's status is aggregated (FederatedTypeConfig statusAggregation).
	// +optional
	Ready string `json:"ready,omitempty"`
	// Counts are the copy's counts that status aggregation sums, such as
	// readyReplicas.
	// +optional
	Counts map[string]int64 `json:"counts,omitempty"`
}

// GenericCondition is a condition of a federated object.
type GenericCondition struct {
	// Type of the condition; Propagation.
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status metav1.ConditionStatus `json:"status"`
	// LastUpdateTime is when the condition was last written.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// LastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// Reason is a one-word CamelCase reason.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says in words what went wrong.
	// +optional
	Message string `json:"message,omitempty"`
}

// FederatedObjectStatus is the status of every Federated<T>.
type FederatedObjectStatus struct {
	// ObservedGeneration is the generation propagation last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds the Propagation condition.
	// +optional
	Conditions []GenericCondition `json:"conditions,omitempty"`
	// Clusters lists the outcome in each placed cluster, one entry per name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []ClusterStatus `json:"clusters,omitempty"`
	// Ready is <ready>/<desired> summed over the clusters, such as 8/10:
	// the READY column. Only for types whose status is aggregated.
	// +optional
	Ready string `json:"ready,omitempty"`
	// Counts are the clusters' counts summed, such as readyReplicas.
	// +optional
	Counts map[string]int64 `json:"counts,omitempty"`
}

// FederatedObject is the shape shared by every Federated<T> kind; it is not
// served itself. Its generated schema is the source of each Federated<T> CRD.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type FederatedObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec FederatedObjectSpec `json:"spec,omitempty"`
	// +optional
	Status FederatedObjectStatus `json:"status,omitempty"`
}

// FederatedObjectList is a list of FederatedObjects.
// +kubebuilder:object:root=true
type FederatedObjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedObject `json:"items"`
}
