package controllermanager

import (
	"github.com/spf13/pflag"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// Options are the controller-manager's command-line settings; everything
// else comes from the KubeFedConfig.
type Options struct {
	// Kubeconfig is the host cluster's kubeconfig; empty means in-cluster.
	Kubeconfig string
	// Context is the kubeconfig context to use; empty means the current one.
	Context string
	// KubeFedNamespace is where KubeFedClusters, FederatedTypeConfigs and the KubeFedConfig live.
	KubeFedNamespace string
	// MetricsAddr serves Prometheus metrics; "0" disables it.
	MetricsAddr string
	// HealthAddr serves /healthz and /readyz; "0" disables it.
	HealthAddr string
	// LeaderElect makes replicas elect one active leader.
	LeaderElect bool
	// Scope is written into a KubeFedConfig created because none exists.
	Scope string
}

// DefaultOptions are the flag defaults.
func DefaultOptions() Options {
	return Options{
		KubeFedNamespace: corev1beta1.DefaultKubeFedNamespace,
		MetricsAddr:      ":8080",
		HealthAddr:       ":8081",
		LeaderElect:      true,
		Scope:            string(corev1beta1.ClusterScoped),
	}
}

// AddFlags registers the options as flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to the host cluster's kubeconfig; in-cluster configuration when empty.")
	fs.StringVar(&o.Context, "context", o.Context, "Kubeconfig context of the host cluster; the current context when empty.")
	fs.StringVar(&o.KubeFedNamespace, "kubefed-namespace", o.KubeFedNamespace, "Namespace of the KubeFed control plane objects.")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "Address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&o.HealthAddr, "health-addr", o.HealthAddr, "Address the /healthz and /readyz endpoints bind to; 0 disables them.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader among replicas on the Lease kubefed-controller-manager.")
	fs.StringVar(&o.Scope, "scope", o.Scope, "Scope (Cluster or Namespaced) of the KubeFedConfig created when none exists.")
}
