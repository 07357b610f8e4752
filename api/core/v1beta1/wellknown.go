package v1beta1

// Names KubeFed users and their manifests rely on.
const (
	// DefaultKubeFedNamespace is where the control plane and its objects live.
	DefaultKubeFedNamespace = "kube-federation-system"
	// KubeFedConfigName is the name of the KubeFedConfig that configures the control plane.
	KubeFedConfigName = "kubefed"
	// NamespacesTypeConfigName is the FederatedTypeConfig of namespaces.
	NamespacesTypeConfigName = "namespaces"
	// ControllerManagerLeaseName is the Lease the controller-manager
	// replicas elect their leader on, in the KubeFed namespace.
	ControllerManagerLeaseName = "kubefed-controller-manager"
	// AgentLeaderElectionLeaseName is the Lease a Pull-mode member's agents
	// elect their leader on, in the member's KubeFed namespace.
	AgentLeaderElectionLeaseName = "kubefed-agent"

	// ManagedByKubeFedLabelKey marks member objects the control plane manages.
	ManagedByKubeFedLabelKey = "kubefed.io/managed"
	// ManagedByKubeFedLabelValue is the value of ManagedByKubeFedLabelKey on managed objects.
	ManagedByKubeFedLabelValue = "true"
	// UnmanagedByKubeFedLabelValue on a member object forbids managing or adopting it.
	UnmanagedByKubeFedLabelValue = "false"

	// OrphanManagedResourcesAnnotation on a federated object leaves member objects behind on deletion.
	OrphanManagedResourcesAnnotation = "kubefed.io/orphan"
	// DeleteOptionAnnotation holds JSON DeleteOptions used to delete member objects.
	DeleteOptionAnnotation = "kubefed.io/deleteoption"

	// SyncControllerFinalizer holds a federated object until its member objects are gone.
	SyncControllerFinalizer = "kubefed.io/sync-controller"
	// FederatedTypeConfigFinalizer holds an FTC until its controllers stopped.
	FederatedTypeConfigFinalizer = "core.kubefed.io/federated-type-config"

	// PropagatingTypesConfigMap is the ConfigMap, in the control plane's
	// namespace, that lists the federated types whose FederatedTypeConfig
	// propagates and is reported Running, keyed "<pluralName>.<group>"
	// (the value is the FederatedTypeConfig's name). The controller-manager
	// keeps it; the sync-finalizer admission policy reads it as its params.
	PropagatingTypesConfigMap = "kubefed-propagating-types"
	// AdmissionProbeAnnotation marks the dry-run create by which the
	// controller-manager finds out whether the API server can apply the
	// sync-finalizer admission policy to a type yet: the policy matches
	// such a dry run whatever PropagatingTypesConfigMap lists.
	AdmissionProbeAnnotation = "kubefed.io/admission-probe"
)
