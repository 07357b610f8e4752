package federatedtype

// DefaultTargets are the types federated out of the box, as in KubeFed,
// except that ingresses come from networking.k8s.io/v1 since
// extensions/v1beta1 is gone. Their descriptions match what discovery of a
// Kubernetes 1.37 apiserver reports.
var DefaultTargets = []Target{
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Plural: "clusterroles"},
	{Version: "v1", Kind: "ConfigMap", Plural: "configmaps", ShortNames: []string{"cm"}, Namespaced: true},
	{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", ShortNames: []string{"deploy"}, Namespaced: true},
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Plural: "ingresses", ShortNames: []string{"ing"}, Namespaced: true},
	{Group: "batch", Version: "v1", Kind: "Job", Plural: "jobs", Namespaced: true},
	{Version: "v1", Kind: "Namespace", Plural: "namespaces", ShortNames: []string{"ns"}},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet", Plural: "replicasets", ShortNames: []string{"rs"}, Namespaced: true},
	{Version: "v1", Kind: "Secret", Plural: "secrets", Namespaced: true},
	{Version: "v1", Kind: "ServiceAccount", Plural: "serviceaccounts", ShortNames: []string{"sa"}, Namespaced: true},
	{Version: "v1", Kind: "Service", Plural: "services", ShortNames: []string{"svc"}, Namespaced: true},
}
