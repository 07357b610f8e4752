package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicaSchedulingPreferenceSpec says how many replicas a federated workload
// has and how they are spread over clusters.
type ReplicaSchedulingPreferenceSpec struct {
	// TargetKind is the kind of the federated workload of the same namespace and
	// name, e.g. FederatedDeployment; any Federated kind whose target has an
	// integer spec.replicas is accepted.
	// +kubebuilder:validation:Pattern=`^Federated[A-Z][A-Za-z0-9]*$`
	TargetKind string `json:"targetKind"`

	// TotalReplicas is the number of replicas spread over all clusters.
	// +kubebuilder:validation:Minimum=0
	TotalReplicas int32 `json:"totalReplicas"`

	// Clusters maps a cluster name, or "*" for every other cluster, to its
	// preferences. Empty means {"*": {weight: 1}}.
	// +optional
	Clusters map[string]ClusterPreferences `json:"clusters,omitempty"`

	// Rebalance allows moving replicas that already run somewhere to reach the
	// preferred distribution.
	// +optional
	Rebalance bool `json:"rebalance,omitempty"`

	// IntersectWithClusterSelector limits candidates to the clusters matched by
	// the federated object's placement clusterSelector.
	// +optional
	IntersectWithClusterSelector bool `json:"intersectWithClusterSelector,omitempty"`

	// AvoidDisruption makes every change move only the replicas it has to:
	// scaling up only adds replicas and scaling down only removes them, a
	// cluster that leaves hands over only its own replicas, and a cluster
	// that joins receives its preferred share from the clusters that run
	// more than theirs. It takes precedence over Rebalance. Not in KubeFed.
	// +optional
	AvoidDisruption bool `json:"avoidDisruption,omitempty"`

	// FailoverTolerationSeconds is how long a cluster may stay not ready
	// before its replicas are planned on the other clusters; unset means the
	// controller's default. Not in KubeFed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	FailoverTolerationSeconds *int64 `json:"failoverTolerationSeconds,omitempty"`
}

// ClusterPreferences bounds and weighs one cluster's share of replicas.
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || self.maxReplicas >= (has(self.minReplicas) ? self.minReplicas : 0)",message="maxReplicas must not be less than minReplicas"
type ClusterPreferences struct {
	// MinReplicas is placed in the cluster before any weighted share.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReplicas int64 `json:"minReplicas,omitempty"`

	// MaxReplicas caps the cluster's replicas; unset means unbounded.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxReplicas *int64 `json:"maxReplicas,omitempty"`

	// Weight is the cluster's relative share of the replicas left after minimums.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Weight int64 `json:"weight,omitempty"`
}

// ClusterReplicas is the number of replicas scheduled to one cluster.
type ClusterReplicas struct {
	// Name of the cluster.
	Name string `json:"name"`
	// Replicas scheduled to it.
	Replicas int64 `json:"replicas"`
	// EstimatedCapacity is the most replicas the cluster is trusted to run,
	// set while pods of the workload that stayed unschedulable there limit
	// it. Not in KubeFed.
	// +optional
	EstimatedCapacity *int64 `json:"estimatedCapacity,omitempty"`
	// NotReadySince is when the scheduler saw the cluster stop being ready;
	// set while it is not ready. Not in KubeFed.
	// +optional
	NotReadySince *metav1.Time `json:"notReadySince,omitempty"`
	// FailedOver is true while the cluster, not ready for longer than the
	// failover toleration, gets no replicas; its /spec/replicas override
	// keeps what it ran, which it gets back when it is ready again. Not in
	// KubeFed.
	// +optional
	FailedOver bool `json:"failedOver,omitempty"`
}

// ReplicaSchedulingPreferenceStatus is what the scheduler last decided.
type ReplicaSchedulingPreferenceStatus struct {
	// ObservedGeneration is the generation the scheduler last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Clusters lists the replicas scheduled to each cluster.
	// +optional
	Clusters []ClusterReplicas `json:"clusters,omitempty"`
	// Conditions say whether the preference could be applied, and why not.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ReplicaSchedulingPreference spreads the replicas of the federated workload
// with the same namespace and name over member clusters.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=replicaschedulingpreferences,shortName=rsp
// +kubebuilder:subresource:status
type ReplicaSchedulingPreference struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ReplicaSchedulingPreferenceSpec `json:"spec"`
	// +optional
	Status ReplicaSchedulingPreferenceStatus `json:"status,omitempty"`
}

// ReplicaSchedulingPreferenceList is a list of ReplicaSchedulingPreferences.
// +kubebuilder:object:root=true
type ReplicaSchedulingPreferenceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReplicaSchedulingPreference `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ReplicaSchedulingPreference{}, &ReplicaSchedulingPreferenceList{})
}
