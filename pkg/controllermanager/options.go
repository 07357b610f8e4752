package controllermanager

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/controllers/scheduling"
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
	// InstallDefaultTypes creates the default FederatedTypeConfigs on the
	// control plane's first start (no KubeFedConfig yet), but for
	// ExcludeDefaultTypes.
	InstallDefaultTypes bool
	ExcludeDefaultTypes []string
	// PprofAddr serves Go's /debug/pprof profiles; empty or "0" disables it.
	PprofAddr string
	// LeaderElect makes replicas elect one active leader.
	LeaderElect bool
	// Scope is written into a KubeFedConfig created because none exists.
	Scope string
	// WebhookPort serves the validating admission webhooks over TLS; 0
	// disables them.
	WebhookPort int
	// WebhookCertDir holds the webhooks' serving certificate, tls.crt and
	// tls.key; a renewed certificate is picked up without a restart.
	WebhookCertDir string
	// KubeAPIQPS and KubeAPIBurst rate-limit the host clients. Every
	// propagated object costs at least two host writes (finalizer and
	// status), so client-go's default of 5 QPS would cap propagation at
	// about 2.5 objects/s; see docs/performance.md.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// ScaleOut makes every replica active, each serving a share of the
	// member clusters; the controllers that must be singletons stay
	// leader-elected. Off, one elected replica does everything.
	ScaleOut bool
	// ReplicaID names this replica among those scaling out; it must be
	// unique among the live ones, such as the Pod's name.
	ReplicaID string
	// PeerBindAddress, with ScaleOut, is where this replica serves the
	// others (host:port): the replica that owns an object then writes its
	// whole status and records its events, from the entries and events the
	// others send it. Empty: each replica writes its own entries.
	PeerBindAddress string
	// PeerAdvertiseHost is the host the other replicas reach this one at
	// when PeerBindAddress listens on every interface, such as the Pod's IP.
	PeerAdvertiseHost string
	// UnschedulableThreshold is how long a workload's pods must stay
	// unschedulable in a member, and its replicas there unchanged, before
	// the ReplicaSchedulingPreference controller lowers that member's
	// capacity estimate.
	UnschedulableThreshold time.Duration
	// CapacityHold is how long a capacity estimate is kept after it was
	// last confirmed.
	CapacityHold time.Duration
}

// DefaultOptions are the flag defaults.
func DefaultOptions() Options {
	return Options{
		KubeFedNamespace: corev1beta1.DefaultKubeFedNamespace,
		MetricsAddr:      ":8080",
		HealthAddr:       ":8081",
		LeaderElect:      true,
		Scope:            string(corev1beta1.ClusterScoped),
		WebhookCertDir:   "/tmp/k8s-webhook-server/serving-certs",
		KubeAPIQPS:       200,
		KubeAPIBurst:     400,

		UnschedulableThreshold: scheduling.DefaultUnschedulableThreshold,
		CapacityHold:           scheduling.DefaultCapacityHold,
	}
}

// AddFlags registers the options as flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to the host cluster's kubeconfig; in-cluster configuration when empty.")
	fs.StringVar(&o.Context, "context", o.Context, "Kubeconfig context of the host cluster; the current context when empty.")
	fs.StringVar(&o.KubeFedNamespace, "kubefed-namespace", o.KubeFedNamespace, "Namespace of the KubeFed control plane objects.")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "Address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&o.HealthAddr, "health-addr", o.HealthAddr, "Address the /healthz and /readyz endpoints bind to; 0 disables them.")
	fs.BoolVar(&o.InstallDefaultTypes, "install-default-types", o.InstallDefaultTypes, "On the first start (no KubeFedConfig yet), create the FederatedTypeConfigs of the default types, as the Helm chart's defaultTypes.install does; for installs without Helm.")
	fs.StringSliceVar(&o.ExcludeDefaultTypes, "exclude-default-types", o.ExcludeDefaultTypes, "FederatedTypeConfig names --install-default-types leaves out, such as jobs.batch.")
	fs.StringVar(&o.PprofAddr, "pprof-addr", o.PprofAddr, "Address Go's /debug/pprof profiles bind to, such as 127.0.0.1:6060; off when empty or 0. With it the block and mutex profiles are sampled too. They are unauthenticated: bind it to loopback.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader among replicas on the Lease kubefed-controller-manager.")
	fs.StringVar(&o.Scope, "scope", o.Scope, "Scope (Cluster or Namespaced) of the KubeFedConfig created when none exists.")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "Port the validating admission webhooks are served on over TLS; 0 disables them.")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", o.WebhookCertDir, "Directory holding the webhooks' serving certificate and key, tls.crt and tls.key.")
	fs.BoolVar(&o.ScaleOut, "scale-out", o.ScaleOut, "Make every replica active, each propagating to a share of the member clusters (split over the live replicas through Leases); implies --leader-elect for the controllers that must run once.")
	fs.StringVar(&o.ReplicaID, "replica-id", o.ReplicaID, "Name of this replica with --scale-out, unique among the replicas, such as the Pod's name; the host name and a random suffix when empty.")
	fs.StringVar(&o.PeerBindAddress, "peer-bind-address", o.PeerBindAddress, "With --scale-out, the host:port this replica serves the other replicas on (mutual TLS with keys made at start, each certificate published on its replica's membership Lease): the replica that hashing names for a federated object then writes its whole status and records its events, the others sending it theirs, instead of every replica writing its own. Empty: each replica writes its own status entries and events.")
	fs.StringVar(&o.PeerAdvertiseHost, "peer-advertise-host", o.PeerAdvertiseHost, "The host or IP the other replicas reach this one at, when --peer-bind-address listens on every interface (such as the Pod's IP).")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Requests per second the controller-manager may send to the host cluster's API server.")
	fs.DurationVar(&o.UnschedulableThreshold, "unschedulable-threshold", o.UnschedulableThreshold, "How long a workload's pods must stay unschedulable in a member cluster, and the replicas asked of it unchanged, before a ReplicaSchedulingPreference moves its excess replicas elsewhere (KubeFed: 1m).")
	fs.DurationVar(&o.CapacityHold, "capacity-hold", o.CapacityHold, "How long a member cluster's capacity estimate from unschedulable pods is kept after it was last confirmed, before the cluster is offered its preferred share again.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Requests the controller-manager may send to the host cluster's API server in a burst above --kube-api-qps.")
}

// Validate reports flag values that cannot work.
func (o Options) Validate() error {
	var errs []error
	if !(o.KubeAPIQPS > 0) {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be greater than 0, got %v", o.KubeAPIQPS))
	}
	if o.KubeAPIBurst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must be at least 1, got %d", o.KubeAPIBurst))
	}
	if o.UnschedulableThreshold <= 0 {
		errs = append(errs, fmt.Errorf("--unschedulable-threshold must be greater than 0, got %v", o.UnschedulableThreshold))
	}
	if o.CapacityHold <= 0 {
		errs = append(errs, fmt.Errorf("--capacity-hold must be greater than 0, got %v", o.CapacityHold))
	}
	if o.WebhookPort < 0 || o.WebhookPort > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port must be between 0 and 65535, got %d", o.WebhookPort))
	}
	if o.ReplicaID != "" && len(validation.IsDNS1123Subdomain(o.ReplicaID)) > 0 {
		errs = append(errs, fmt.Errorf("--replica-id must be a lowercase DNS subdomain such as a Pod name, got %q", o.ReplicaID))
	}
	if o.PeerBindAddress != "" && !o.ScaleOut {
		errs = append(errs, fmt.Errorf("--peer-bind-address needs --scale-out"))
	}
	if o.Scope != string(corev1beta1.ClusterScoped) && o.Scope != string(corev1beta1.NamespaceScoped) {
		errs = append(errs, fmt.Errorf("--scope must be %s or %s, got %q", corev1beta1.ClusterScoped, corev1beta1.NamespaceScoped, o.Scope))
	}
	if _, err := defaultTypeConfigs(o.KubeFedNamespace, corev1beta1.Scope(o.Scope), o.ExcludeDefaultTypes); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// webhookServer is the manager's server for the admission webhooks, or nil
// when they are disabled, in which case the manager starts none.
func (o Options) webhookServer() webhook.Server {
	if o.WebhookPort == 0 {
		return nil
	}
	return webhook.NewServer(webhook.Options{
		Port:    o.WebhookPort,
		CertDir: o.WebhookCertDir,
		// HTTP/1.1 only: HTTP/2 stream resets (CVE-2023-44487) could starve
		// the server, and the API server needs nothing more.
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	})
}

// replicaID is this replica's name among those scaling out.
func (o Options) replicaID() string {
	if o.ReplicaID != "" {
		return o.ReplicaID
	}
	host, err := os.Hostname()
	if err != nil || len(validation.IsDNS1123Subdomain(strings.ToLower(host))) > 0 {
		host = "kubefed"
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	return fmt.Sprintf("%s-%s", strings.ToLower(host), hex.EncodeToString(suffix))
}
