package v1beta1

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceScope is the scope of an API resource.
// +kubebuilder:validation:Enum=Cluster;Namespaced
type ResourceScope string

const (
	// ClusterScope is a cluster-scoped resource.
	ClusterScope ResourceScope = "Cluster"
	// NamespaceScope is a namespaced resource.
	NamespaceScope ResourceScope = "Namespaced"
)

// APIResource identifies an API resource for dynamic clients. Its rules
// are KubeFed's: a group is a DNS-1123 subdomain, a version and a plural
// name are DNS-1035 labels, and so is a kind once lower-cased.
type APIResource struct {
	// Group of the resource; empty for the core group.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="group must be a lowercase RFC 1123 subdomain, e.g. 'apps' or 'example.com'"
	Group string `json:"group,omitempty"`
	// Version of the resource.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="version must be a DNS-1035 label (lower case alphanumeric characters or '-', starting with a letter), e.g. 'v1' or 'v1beta1'"
	Version string `json:"version"`
	// Kind of the resource, e.g. ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.lowerAscii().matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="kind must be a DNS-1035 label once lower-cased (alphanumeric characters or '-', starting with a letter), e.g. 'ConfigMap'"
	Kind string `json:"kind"`
	// PluralName is the lower-case plural resource name, e.g. configmaps.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="pluralName must be a DNS-1035 label (lower case alphanumeric characters or '-', starting with a letter), e.g. 'configmaps'"
	PluralName string `json:"pluralName"`
	// Scope of the resource.
	Scope ResourceScope `json:"scope"`
}

// Namespaced reports whether the resource lives in namespaces.
func (a APIResource) Namespaced() bool { return a.Scope == NamespaceScope }

// GroupVersionString is the resource's apiVersion, e.g. apps/v1 or v1.
func (a APIResource) GroupVersionString() string {
	if a.Group == "" {
		return a.Version
	}
	return a.Group + "/" + a.Version
}

// FederatedTypeConfigSpec names a target type and the federated type that propagates it.
// The federated and status types live in a group of their own, as in KubeFed.
// +kubebuilder:validation:XValidation:rule="has(self.federatedType.group) && size(self.federatedType.group) > 0",message="federatedType.group is required: the group of the Federated<T> type, e.g. types.kubefed.io",fieldPath=".federatedType.group",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!has(self.federatedType.group) || size(self.federatedType.group) == 0 || self.federatedType.group.contains('.')",message="federatedType.group should be a domain with at least one dot, e.g. types.kubefed.io",fieldPath=".federatedType.group"
// +kubebuilder:validation:XValidation:rule="!has(self.statusType) || (has(self.statusType.group) && size(self.statusType.group) > 0)",message="statusType.group is required: the group of the status type, e.g. types.kubefed.io",fieldPath=".statusType.group",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!has(self.statusType) || !has(self.statusType.group) || size(self.statusType.group) == 0 || self.statusType.group.contains('.')",message="statusType.group should be a domain with at least one dot, e.g. types.kubefed.io",fieldPath=".statusType.group"
type FederatedTypeConfigSpec struct {
	// TargetType is the type created in member clusters.
	TargetType APIResource `json:"targetType"`
	// Propagation switches propagation of this type to members on or off.
	Propagation Mode `json:"propagation"`
	// FederatedType is the Federated<T> type holding template, placement and overrides.
	FederatedType APIResource `json:"federatedType"`
	// StatusType is a type that holds collected status, for KubeFed manifests that name one.
	// +optional
	StatusType *APIResource `json:"statusType,omitempty"`
	// StatusCollection switches collection of member objects' status on or off.
	// +optional
	StatusCollection *Mode `json:"statusCollection,omitempty"`
	// StatusAggregation names the counts of the member objects (such as
	// ready replicas) that the federated object's status sums over its
	// clusters, in status.counts and status.ready (the READY column), and
	// shows per cluster. Unset, apps/v1 Deployments, ReplicaSets,
	// StatefulSets and DaemonSets and batch/v1 Jobs get their built-in
	// counts and other types none. Not in KubeFed.
	// +optional
	StatusAggregation *StatusAggregation `json:"statusAggregation,omitempty"`
}

// StatusAggregation says what a federated type's status sums over clusters.
// +kubebuilder:validation:XValidation:rule="has(self.ready) == has(self.desired)",message="ready and desired go together: READY shows <ready>/<desired>"
// +kubebuilder:validation:XValidation:rule="!has(self.ready) || (has(self.fields) && self.fields.exists(f, f.name == self.ready))",message="ready must name one of fields",fieldPath=".ready"
// +kubebuilder:validation:XValidation:rule="!has(self.desired) || (has(self.fields) && self.fields.exists(f, f.name == self.desired))",message="desired must name one of fields",fieldPath=".desired"
type StatusAggregation struct {
	// Mode Disabled turns aggregation off, the built-in counts too;
	// Enabled (the default) sums fields, or the built-in counts when
	// fields is empty.
	// +optional
	Mode Mode `json:"mode,omitempty"`
	// Fields are the counts: each an integer in the member object, summed
	// over the clusters.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Fields []AggregatedField `json:"fields,omitempty"`
	// Ready and Desired name two of the fields: READY shows
	// <ready>/<desired>, such as 8/10.
	// +optional
	Ready string `json:"ready,omitempty"`
	// +optional
	Desired string `json:"desired,omitempty"`
}

// AggregatedField is one count of a member object.
type AggregatedField struct {
	// Name of the count in status.counts, such as readyReplicas.
	// +kubebuilder:validation:Pattern=`^[a-z][A-Za-z0-9]*$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Path is a JSON pointer to an integer of the member object, such as
	// /status/readyReplicas; a missing value counts 0.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="path must be a JSON pointer starting with '/', such as /status/readyReplicas"
	// +kubebuilder:validation:XValidation:rule="!self.matches('~([^01]|$)')",message="path has a '~' that is not ~0 (for '~') or ~1 (for '/')"
	Path string `json:"path"`
}

// ControllerStatus says whether a per-type controller runs.
// +kubebuilder:validation:Enum=Running;NotRunning
type ControllerStatus string

const (
	// ControllerStatusRunning means the controller runs.
	ControllerStatusRunning ControllerStatus = "Running"
	// ControllerStatusNotRunning means the controller does not run.
	ControllerStatusNotRunning ControllerStatus = "NotRunning"
)

// TargetTypeStatus says whether a member serves the target type.
// +kubebuilder:validation:Enum=Present;NotPresent
type TargetTypeStatus string

const (
	// TargetTypePresent means the member serves the target type.
	TargetTypePresent TargetTypeStatus = "Present"
	// TargetTypeNotPresent means the member does not serve the target type.
	TargetTypeNotPresent TargetTypeStatus = "NotPresent"
)

// TargetTypeOverallStatus says whether every member serves the target type.
// +kubebuilder:validation:Enum=PresentInAllClusters;NotPresentInAllClusters
type TargetTypeOverallStatus string

// TargetTypeClusterStatus says whether one member serves the target type.
type TargetTypeClusterStatus struct {
	// ClusterName is the KubeFedCluster's name.
	ClusterName string `json:"clusterName"`
	// Status is Present or NotPresent.
	Status TargetTypeStatus `json:"status"`
}

// FederatedTypeConfigStatus is what the type-config controller observed.
type FederatedTypeConfigStatus struct {
	// ObservedGeneration is the generation the controllers last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// PropagationController says whether propagation for this type runs.
	// +optional
	PropagationController ControllerStatus `json:"propagationController,omitempty"`
	// StatusController says whether status collection for this type runs.
	// +optional
	StatusController *ControllerStatus `json:"statusController,omitempty"`
	// TargetTypeOverallStatus says whether every member serves the target type.
	// +optional
	TargetTypeOverallStatus TargetTypeOverallStatus `json:"targetTypeOverallStatus,omitempty"`
	// TargetTypeClusterStatus says, per member, whether it serves the target type.
	// +optional
	TargetTypeClusterStatus []TargetTypeClusterStatus `json:"targetTypeClusterStatus,omitempty"`
	// Conditions report problems with the type, such as a target type the host does not serve.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FederatedTypeConfig makes one API type federatable: it names the target
// type and the Federated<T> type whose template, placement and overrides say
// how the target appears in each member.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=federatedtypeconfigs,shortName=ftc
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="self.metadata.name == (has(self.spec.targetType.group) && size(self.spec.targetType.group) > 0 ? self.spec.targetType.pluralName + '.' + self.spec.targetType.group : self.spec.targetType.pluralName)",message="metadata.name must be <spec.targetType.pluralName>[.<spec.targetType.group>]"
type FederatedTypeConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec FederatedTypeConfigSpec `json:"spec"`
	// +optional
	Status FederatedTypeConfigStatus `json:"status,omitempty"`
}

// FederatedTypeConfigList is a list of FederatedTypeConfigs.
// +kubebuilder:object:root=true
type FederatedTypeConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedTypeConfig `json:"items"`
}

// IsNamespace reports whether this is the `namespaces` type config, whose
// federated type is namespaced although its target is not.
func (f *FederatedTypeConfig) IsNamespace() bool { return f.Name == NamespacesTypeConfigName }

// PropagationEnabled reports whether propagation is switched on.
func (f *FederatedTypeConfig) PropagationEnabled() bool { return f.Spec.Propagation == Enabled }

// StatusCollectionEnabled reports whether status collection is switched on.
func (f *FederatedTypeConfig) StatusCollectionEnabled() bool {
	return f.Spec.StatusCollection != nil && *f.Spec.StatusCollection == Enabled
}

// TypeConfigName is the FederatedTypeConfig name KubeFed uses for a target
// type: `<plural>` for the core group, `<plural>.<group>` otherwise.
func TypeConfigName(plural, group string) string {
	if group == "" {
		return plural
	}
	return plural + "." + group
}

// SplitTypeConfigName is the inverse of TypeConfigName.
func SplitTypeConfigName(name string) (plural, group string) {
	plural, group, _ = strings.Cut(name, ".")
	return plural, group
}

func init() {
	SchemeBuilder.Register(&FederatedTypeConfig{}, &FederatedTypeConfigList{})
}
