package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scope says whether the control plane federates the whole cluster or only
// its own namespace.
// +kubebuilder:validation:Enum=Cluster;Namespaced
type Scope string

const (
	// ClusterScoped lets the control plane federate objects in every namespace.
	ClusterScoped Scope = "Cluster"
	// NamespaceScoped limits the control plane to its own namespace.
	NamespaceScoped Scope = "Namespaced"
)

// Mode switches a capability on or off.
// +kubebuilder:validation:Enum=Enabled;Disabled
type Mode string

const (
	// Enabled switches the capability on.
	Enabled Mode = "Enabled"
	// Disabled switches the capability off.
	Disabled Mode = "Disabled"
)

// ResourceLockType is the kind of object leader election locks on.
// KubeFed's configmaps and endpoints locks are gone from client-go; they are
// accepted as aliases of leases so that existing configurations keep working.
// +kubebuilder:validation:Enum=leases;configmaps;endpoints;configmapsleases;endpointsleases
type ResourceLockType string

const (
	// LeasesResourceLock locks on a coordination.k8s.io Lease.
	LeasesResourceLock ResourceLockType = "leases"
	// ConfigMapsResourceLock is KubeFed's default, served by a Lease here.
	ConfigMapsResourceLock ResourceLockType = "configmaps"
	// EndpointsResourceLock is served by a Lease here.
	EndpointsResourceLock ResourceLockType = "endpoints"
)

// FeatureGate names a switchable feature of the control plane.
// +kubebuilder:validation:Enum=PushReconciler;SchedulerPreferences;RawResourceStatusCollection;CrossClusterServiceDiscovery;FederatedIngress
type FeatureGate string

const (
	// PushReconciler propagates federated objects to members.
	PushReconciler FeatureGate = "PushReconciler"
	// SchedulerPreferences runs ReplicaSchedulingPreference scheduling.
	SchedulerPreferences FeatureGate = "SchedulerPreferences"
	// RawResourceStatusCollection copies member objects' status into federated status.
	RawResourceStatusCollection FeatureGate = "RawResourceStatusCollection"
	// CrossClusterServiceDiscovery runs the ServiceDNSRecord controller.
	CrossClusterServiceDiscovery FeatureGate = "CrossClusterServiceDiscovery"
	// FederatedIngress runs the IngressDNSRecord controller.
	FederatedIngress FeatureGate = "FederatedIngress"
)

// KubeFedConfigSpec configures the control plane.
// +kubebuilder:validation:XValidation:rule="self.scope == oldSelf.scope",message="scope is immutable"
type KubeFedConfigSpec struct {
	// Scope is Cluster (federate every namespace) or Namespaced (only the KubeFed namespace).
	Scope Scope `json:"scope"`

	// ControllerDuration sets how long the control plane waits on cluster changes.
	// +optional
	// +kubebuilder:default={}
	ControllerDuration *DurationConfig `json:"controllerDuration,omitempty"`

	// LeaderElect configures leader election among controller-manager replicas.
	// +optional
	// +kubebuilder:default={}
	LeaderElect *LeaderElectConfig `json:"leaderElect,omitempty"`

	// FeatureGates switch features on or off; a gate that is not listed keeps its default.
	// +optional
	// +listType=map
	// +listMapKey=name
	FeatureGates []FeatureGatesConfig `json:"featureGates,omitempty"`

	// ClusterHealthCheck configures how member health is probed.
	// +optional
	// +kubebuilder:default={}
	ClusterHealthCheck *ClusterHealthCheckConfig `json:"clusterHealthCheck,omitempty"`

	// SyncController configures propagation.
	// +optional
	// +kubebuilder:default={}
	SyncController *SyncControllerConfig `json:"syncController,omitempty"`

	// StatusController configures status collection.
	// +optional
	// +kubebuilder:default={}
	StatusController *StatusControllerConfig `json:"statusController,omitempty"`
}

// DurationConfig holds the delays applied after cluster health changes.
type DurationConfig struct {
	// AvailableDelay is how long to wait before reconciling onto a cluster that became healthy.
	// +optional
	// +kubebuilder:default="20s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration"
	AvailableDelay *metav1.Duration `json:"availableDelay,omitempty"`
	// UnavailableDelay is how long to wait before reacting to a cluster that became unhealthy.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration"
	UnavailableDelay *metav1.Duration `json:"unavailableDelay,omitempty"`
}

// LeaderElectConfig configures leader election.
// +kubebuilder:validation:XValidation:rule="!has(self.leaseDuration) || !has(self.renewDeadline) || duration(self.leaseDuration) > duration(self.renewDeadline)",message="leaseDuration must be greater than renewDeadline"
// +kubebuilder:validation:XValidation:rule="!has(self.renewDeadline) || !has(self.retryPeriod) || duration(self.renewDeadline).getMilliseconds() * 5 > duration(self.retryPeriod).getMilliseconds() * 6",message="renewDeadline must be greater than 1.2 × retryPeriod"
type LeaderElectConfig struct {
	// LeaseDuration is how long a non-leader waits after the last renewal before taking over.
	// +optional
	// +kubebuilder:default="15s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration"
	LeaseDuration *metav1.Duration `json:"leaseDuration,omitempty"`
	// RenewDeadline is how long the leader keeps retrying a renewal before giving up.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration"
	RenewDeadline *metav1.Duration `json:"renewDeadline,omitempty"`
	// RetryPeriod is the wait between acquisition and renewal attempts.
	// +optional
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration"
	RetryPeriod *metav1.Duration `json:"retryPeriod,omitempty"`
	// ResourceLock is the lock object kind; every value is served by a Lease.
	// +optional
	// +kubebuilder:default=leases
	ResourceLock ResourceLockType `json:"resourceLock,omitempty"`
}

// FeatureGatesConfig switches one feature.
type FeatureGatesConfig struct {
	// Name of the feature gate.
	Name FeatureGate `json:"name"`
	// Configuration is Enabled or Disabled.
	Configuration Mode `json:"configuration"`
}

// ClusterHealthCheckConfig configures member health probes.
type ClusterHealthCheckConfig struct {
	// Period is the interval between probes of a member.
	// +optional
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration"
	Period *metav1.Duration `json:"period,omitempty"`
	// FailureThreshold is the number of consecutive failures that make a healthy member unhealthy.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	FailureThreshold *int64 `json:"failureThreshold,omitempty"`
	// SuccessThreshold is the number of consecutive successes that make an unhealthy member healthy.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	SuccessThreshold *int64 `json:"successThreshold,omitempty"`
	// Timeout bounds one probe.
	// +optional
	// +kubebuilder:default="3s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// SyncControllerConfig configures propagation.
type SyncControllerConfig struct {
	// MaxConcurrentReconciles is the number of federated objects reconciled at once.
	// +optional
	// +kubebuilder:default=16
	// +kubebuilder:validation:Minimum=1
	MaxConcurrentReconciles *int64 `json:"maxConcurrentReconciles,omitempty"`
	// AdoptResources lets propagation take over a pre-existing member object of the same name.
	// +optional
	// +kubebuilder:default=Enabled
	AdoptResources Mode `json:"adoptResources,omitempty"`
	// NotReadyClusterDeletionTimeout bounds how long deleting a federated
	// object waits for member clusters that are not Ready. Past it the
	// federated object is released and its copies in those clusters are left
	// in place; they are unlabelled as orphans when the cluster returns.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="must be a positive duration"
	NotReadyClusterDeletionTimeout *metav1.Duration `json:"notReadyClusterDeletionTimeout,omitempty"`
}

// StatusControllerConfig configures status collection.
type StatusControllerConfig struct {
	// MaxConcurrentReconciles is the number of federated objects whose status is collected at once.
	// +optional
	// +kubebuilder:default=8
	// +kubebuilder:validation:Minimum=1
	MaxConcurrentReconciles *int64 `json:"maxConcurrentReconciles,omitempty"`
}

// KubeFedConfig configures the control plane; the one that counts is named
// `kubefed` in the KubeFed namespace.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kubefedconfigs
type KubeFedConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec KubeFedConfigSpec `json:"spec"`
}

// KubeFedConfigList is a list of KubeFedConfigs.
// +kubebuilder:object:root=true
type KubeFedConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KubeFedConfig `json:"items"`
}

func init() {
	SchemeBuilder.Register(&KubeFedConfig{}, &KubeFedConfigList{})
}
