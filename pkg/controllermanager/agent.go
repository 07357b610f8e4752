package controllermanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	dnsv1alpha1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/controllers/dns"
	"github.com/kubefed-io/kubefed/controllers/scheduling"
	syncctl "github.com/kubefed-io/kubefed/controllers/sync"
	"github.com/kubefed-io/kubefed/controllers/typeconfig"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/kubefedconfig"
	"github.com/kubefed-io/kubefed/pkg/version"
)

// AgentOptions are the settings of `controller-manager agent`, which runs
// in a Pull-mode member: it reaches the host outbound only, with a token
// that reads federated objects and writes their status, and propagates to
// its own cluster exactly as the control plane does to a push member.
type AgentOptions struct {
	// ClusterName is this member's KubeFedCluster.
	ClusterName string
	// HostKubeconfig reaches the host cluster; HostContext picks a context.
	HostKubeconfig string
	HostContext    string
	// Kubeconfig and Context reach this member; in-cluster when empty.
	Kubeconfig string
	Context    string
	// KubeFedNamespace is the control plane's namespace on the host.
	KubeFedNamespace string
	// MetricsAddr and HealthAddr serve metrics and probes; "0" disables.
	MetricsAddr string
	HealthAddr  string
	// Identity names this agent in its heartbeat Lease and, with
	// LeaderElect, in the member's election Lease.
	Identity string
	// LeaderElect makes the agents of one member elect a leader on the
	// Lease AgentLeaderElectionID in LeaderElectionNamespace of the member
	// (the KubeFed namespace when empty): only the leader propagates and
	// renews the heartbeat, so a rolling update or a second replica never
	// has two agents write one cluster.
	LeaderElect             bool
	LeaderElectionNamespace string
}

// AgentLeaderElectionID is the member Lease a Pull-mode member's agents
// elect their leader on.
const AgentLeaderElectionID = corev1beta1.AgentLeaderElectionLeaseName

// DefaultAgentOptions are the agent's flag defaults.
func DefaultAgentOptions() AgentOptions {
	return AgentOptions{KubeFedNamespace: corev1beta1.DefaultKubeFedNamespace, MetricsAddr: ":8080", HealthAddr: ":8081", LeaderElect: true}
}

// AddFlags registers the options as flags.
func (o *AgentOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClusterName, "cluster-name", o.ClusterName, "Name of this member's KubeFedCluster on the host (required).")
	fs.StringVar(&o.HostKubeconfig, "host-kubeconfig", o.HostKubeconfig, "Kubeconfig that reaches the host cluster with the agent's token (required; kubefedctl join --mode pull writes it into the Secret kubefed-agent-host).")
	fs.StringVar(&o.HostContext, "host-context", o.HostContext, "Context of --host-kubeconfig; its current context when empty.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of this member; in-cluster configuration when empty.")
	fs.StringVar(&o.Context, "context", o.Context, "Context of --kubeconfig; its current context when empty.")
	fs.StringVar(&o.KubeFedNamespace, "kubefed-namespace", o.KubeFedNamespace, "Namespace of the KubeFed control plane on the host.")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "Address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&o.HealthAddr, "health-addr", o.HealthAddr, "Address the /healthz and /readyz endpoints bind to; 0 disables them.")
	fs.StringVar(&o.Identity, "identity", o.Identity, "Holder identity in the heartbeat and election Leases, such as the Pod's name; the host name when empty.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader among this member's agents on the member's Lease "+AgentLeaderElectionID+"; only the leader propagates.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Member namespace of the election Lease; --kubefed-namespace when empty.")
}

// Validate reports options that cannot work.
func (o AgentOptions) Validate() error {
	var errs []error
	if ns := o.LeaderElectionNamespace; ns != "" {
		if errs1 := validation.IsDNS1123Label(ns); len(errs1) > 0 {
			errs = append(errs, fmt.Errorf("--leader-election-namespace %q is not a namespace name: %s", ns, strings.Join(errs1, "; ")))
		}
	}
	if errs1 := validation.IsDNS1123Subdomain(o.ClusterName); o.ClusterName == "" || len(errs1) > 0 {
		errs = append(errs, fmt.Errorf("--cluster-name must name this member's KubeFedCluster, a DNS subdomain; got %q", o.ClusterName))
	}
	if o.HostKubeconfig == "" {
		errs = append(errs, errors.New("--host-kubeconfig is required: the agent reaches the host, never the reverse"))
	}
	return errors.Join(errs...)
}

// agentConfig loads a kubeconfig, or the in-cluster configuration when
// path and context are both empty and inCluster is allowed.
func agentConfig(path, context string, inCluster bool) (*rest.Config, error) {
	if path == "" && context == "" && inCluster {
		return rest.InClusterConfig()
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
}

// RunAgent propagates to this member until ctx ends, starting again with
// new settings when the host's KubeFedConfig changes.
func RunAgent(ctx context.Context, o AgentOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	log := ctrl.Log.WithName("agent")
	hostCfg, err := agentConfig(o.HostKubeconfig, o.HostContext, false)
	if err != nil {
		return fmt.Errorf("load the host kubeconfig: %w", err)
	}
	memberCfg, err := agentConfig(o.Kubeconfig, o.Context, true)
	if err != nil {
		return fmt.Errorf("load this member's configuration: %w", err)
	}
	hostCfg.UserAgent = "kubefed-agent/" + version.Version
	hostCfg.QPS, hostCfg.Burst = 100, 200
	refused := &hostRefusal{now: time.Now}
	hostCfg.Wrap(refused.wrap)
	if o.Identity == "" {
		o.Identity, _ = os.Hostname()
	}
	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	direct, err := client.New(hostCfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("host cluster client: %w", err)
	}
	hostKube, err := kubernetes.NewForConfig(hostCfg)
	if err != nil {
		return fmt.Errorf("host cluster client: %w", err)
	}
	log.Info("starting", "version", version.Get().String(), "cluster", o.ClusterName, "kubefedNamespace", o.KubeFedNamespace)
	if err := serveHealth(ctx, o.HealthAddr, refused.check); err != nil {
		return err
	}
	run := func(ctx context.Context) error { return runAgent(ctx, o, hostCfg, memberCfg, scheme, direct, hostKube) }
	if !o.LeaderElect {
		return run(ctx)
	}
	memberKube, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(memberCfg), "kubefed-agent-leader-election"))
	if err != nil {
		return fmt.Errorf("member cluster client: %w", err)
	}
	return leadAgent(ctx, o, memberKube, run)
}

// leadAgent runs run while this agent leads its member's agents. A lost
// lease ends the process's work with an error, as the control plane's
// manager does, so that its Pod starts again as a candidate. The Lease is
// released by hand, once run has returned and only on a clean stop:
// client-go's ReleaseOnCancel would release it when a renewal fails, while
// this agent's writes may still be under way, and a lost lease is never
// released.
func leadAgent(ctx context.Context, o AgentOptions, memberKube kubernetes.Interface, run func(context.Context) error) error {
	namespace := o.LeaderElectionNamespace
	if namespace == "" {
		namespace = o.KubeFedNamespace
	}
	inner, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, AgentLeaderElectionID,
		memberKube.CoreV1(), memberKube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: o.Identity})
	if err != nil {
		return err
	}
	lock := &acquiredLock{Interface: inner, identity: o.Identity}
	log := ctrl.Log.WithName("agent")
	// The election outlives ctx until run has stopped.
	electCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElection()
	var (
		runErr error
		lost   atomic.Bool
		done   = make(chan struct{})
	)
	stopWaiting := context.AfterFunc(ctx, func() {
		if !lock.acquired.Load() {
			stopElection()
		}
	})
	defer stopWaiting()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		Name:          AgentLeaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				defer close(done)
				defer stopElection()
				runCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				// A lost lease stops the work at once.
				defer context.AfterFunc(leading, func() {
					if electCtx.Err() == nil {
						lost.Store(true)
					}
					cancel()
				})()
				log.Info("leading this member's agents", "lease", namespace+"/"+AgentLeaderElectionID, "identity", o.Identity)
				runErr = run(runCtx)
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != o.Identity {
					log.Info("another agent leads this member; standing by", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	log.Info("waiting to lead this member's agents", "lease", namespace+"/"+AgentLeaderElectionID, "identity", o.Identity)
	elector.Run(electCtx)
	if !lock.acquired.Load() {
		return nil
	}
	// Acquired: client-go runs OnStartedLeading; its work ends first.
	<-done
	if lost.Load() {
		return errors.Join(runErr, fmt.Errorf("lost the lease %s/%s", namespace, AgentLeaderElectionID))
	}
	if ctx.Err() != nil {
		releaseLease(context.WithoutCancel(ctx), inner, o.Identity)
	}
	return runErr
}

// acquiredLock notes when this agent first wrote itself into the Lease,
// which client-go follows with OnStartedLeading.
type acquiredLock struct {
	resourcelock.Interface
	identity string
	acquired atomic.Bool
}

func (l *acquiredLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	if err == nil && r.HolderIdentity == l.identity {
		l.acquired.Store(true)
	}
	return err
}

func (l *acquiredLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	if err == nil && r.HolderIdentity == l.identity {
		l.acquired.Store(true)
	}
	return err
}

// releaseLease gives the Lease up if this agent still holds it, as
// client-go's release does: no holder, a one-second duration, so that a
// standby takes over at its next try.
func releaseLease(ctx context.Context, lock resourcelock.Interface, identity string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	record, _, err := lock.Get(ctx)
	if err != nil || record == nil || record.HolderIdentity != identity {
		return
	}
	now := metav1.NewTime(time.Now())
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: record.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	}); err != nil {
		ctrl.Log.WithName("agent").Error(err, "Releasing the lease", "lease", lock.Describe())
	}
}

// serveHealth answers /healthz and /readyz for as long as the process
// runs, leading or standing by: a standby's Pod must not be restarted for
// waiting, and a rolling update needs the new Pod ready while the old one
// still leads. The manager, built only while leading, serves none. live,
// when not nil, fails /healthz with its error.
func serveHealth(ctx context.Context, addr string, live func() error) error {
	if addr == "" || addr == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for health probes on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if live != nil {
			if err := live(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		ok(w, r)
	})
	mux.HandleFunc("/readyz", ok)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return nil
}

// Thresholds of hostRefusal: a token refused this long, this many times
// in a row, is taken for one the host no longer accepts, not for an
// authenticator's hiccup.
const (
	hostRefusalPeriod   = 2 * time.Minute
	hostRefusalRequests = 3
)

// hostRefusal notes how long the host has answered the agent's requests
// with 401 Unauthorized and nothing else. The agent reads its host
// kubeconfig once, at start; a join that issued another token (the
// ServiceAccount or its token Secret recreated) leaves it refused until it
// starts again and reads the Secret anew. join rolls its own Deployment
// when it rewrites the Secret; check fails the liveness probe too, so that
// the kubelet restarts an agent the chart installed, or one whose token
// was revoked by other means.
type hostRefusal struct {
	now func() time.Time

	mu sync.Mutex
	// since is the first 401 of the current run of them, zero when the
	// last answer was another; count counts them.
	since time.Time
	count int
}

// wrap notes each answer of the host; a request that got none (the host
// unreachable) says nothing of the token.
func (h *hostRefusal) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if resp.StatusCode != http.StatusUnauthorized {
			h.since, h.count = time.Time{}, 0
			return resp, nil
		}
		if h.count == 0 {
			h.since = h.now()
		}
		h.count++
		return resp, nil
	})
}

// check fails once the host has refused every request for
// hostRefusalPeriod, at least hostRefusalRequests of them.
func (h *hostRefusal) check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count < hostRefusalRequests {
		return nil
	}
	if d := h.now().Sub(h.since); d >= hostRefusalPeriod {
		return fmt.Errorf("the host has answered the agent's last %d requests, for %s, with 401 Unauthorized: "+
			"it no longer accepts the token of the agent's host kubeconfig, which a restart reads anew", h.count, d.Round(time.Second))
	}
	return nil
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// runAgent is RunAgent's work, for as long as ctx lasts.
func runAgent(ctx context.Context, o AgentOptions, hostCfg, memberCfg *rest.Config, scheme *runtime.Scheme,
	direct client.Client, hostKube kubernetes.Interface) error {
	log := ctrl.Log.WithName("agent")
	registry := clusterclient.NewRegistry(clusterclient.ConfigOptions{})
	clients, err := registry.SetLocal(o.ClusterName, memberCfg)
	if err != nil {
		return err
	}
	readiness := cluster.NewReadinessTracker(o.KubeFedNamespace)
	var members *syncctl.MemberCaches
	defer func() {
		if members != nil {
			members.Stop()
		}
	}()
	for {
		kfc, settings, err := readConfig(ctx, direct, o.KubeFedNamespace)
		if err != nil {
			return err
		}
		if members == nil {
			namespace := ""
			if settings.Scope == corev1beta1.NamespaceScoped {
				namespace = o.KubeFedNamespace
			}
			members = syncctl.NewMemberCaches(registry, readiness, namespace, ctrl.Log.WithName("member-caches"))
		}
		var engine *syncctl.Engine
		again, err := runManager(ctx, direct, o.KubeFedNamespace, kfc.Spec, func(runCtx context.Context) (manager.Manager, error) {
			mgr, err := newAgentManager(hostCfg, scheme, o, settings)
			if err != nil {
				return nil, err
			}
			// Its cluster's unschedulable pods, which the host cannot
			// read, go with the heartbeat for the RSP's capacity estimate.
			podNamespace := ""
			if settings.Scope == corev1beta1.NamespaceScoped {
				// Its member grants the KubeFed namespace alone.
				podNamespace = o.KubeFedNamespace
			}
			pods := scheduling.NewPendingPods(registry, podNamespace, ctrl.Log.WithName("pending-pods"))
			if err := mgr.Add(pods); err != nil {
				return nil, err
			}
			hb := &heartbeat{kube: hostKube, member: clients, readiness: readiness, pods: pods, o: o, period: settings.HealthCheckPeriod, timeout: settings.HealthCheckTimeout}
			if err := mgr.Add(hb); err != nil {
				return nil, err
			}
			engine, err = setupAgent(runCtx, hostCfg, mgr, o, settings, registry, readiness, members)
			return mgr, err
		}, func() {
			if engine != nil {
				engine.Stop()
			}
		})
		if !again {
			return err
		}
		log.Info("KubeFedConfig changed; restarting with the new settings")
	}
}

// readConfig reads the host's KubeFedConfig, which the control plane
// creates; the agent may not, and waits for it.
func readConfig(ctx context.Context, c client.Client, namespace string) (*corev1beta1.KubeFedConfig, *kubefedconfig.Settings, error) {
	key := client.ObjectKey{Namespace: namespace, Name: corev1beta1.KubeFedConfigName}
	for {
		cfg := &corev1beta1.KubeFedConfig{}
		err := c.Get(ctx, key, cfg)
		if err == nil {
			settings, err := kubefedconfig.Resolve(cfg.Spec)
			if err != nil {
				return nil, nil, fmt.Errorf("KubeFedConfig %s: %w", key, err)
			}
			return cfg, settings, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("read KubeFedConfig %s: %w", key, err)
		}
		ctrl.Log.WithName("agent").Info("Waiting for the control plane to create its KubeFedConfig", "kubeFedConfig", key.String())
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
}

func newAgentManager(cfg *rest.Config, scheme *runtime.Scheme, o AgentOptions, s *kubefedconfig.Settings) (manager.Manager, error) {
	inNamespace := cache.ByObject{Namespaces: map[string]cache.Config{o.KubeFedNamespace: {}}}
	return withProbes(ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     scheme,
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Metrics:    metricsserver.Options{BindAddress: o.MetricsAddr},
		// The process serves the probes (serveHealth), leading or not.
		HealthProbeBindAddress: "0",
		// One agent per member; its writes are its cluster's alone.
		LeaderElection: false,
		Cache: cache.Options{DefaultNamespaces: defaultNamespaces(Options{KubeFedNamespace: o.KubeFedNamespace}, s), ByObject: map[client.Object]cache.ByObject{
			// Only its own KubeFedCluster: the agent's token may not read
			// the others.
			&corev1beta1.KubeFedCluster{}: {
				Namespaces: map[string]cache.Config{o.KubeFedNamespace: {}},
				Field:      fields.OneTermEqualSelector("metadata.name", o.ClusterName),
			},
			&corev1beta1.FederatedTypeConfig{}: inNamespace,
			&corev1beta1.KubeFedConfig{}:       inNamespace,
		}},
	}))
}

// setupAgent registers the agent's type and propagation machinery: the
// control plane's own, with a shard of this member alone.
func setupAgent(ctx context.Context, cfg *rest.Config, mgr manager.Manager, o AgentOptions, s *kubefedconfig.Settings,
	registry *clusterclient.Registry, readiness *cluster.ReadinessTracker, members *syncctl.MemberCaches) (*syncctl.Engine, error) {
	pulled, err := newPullMembers(ctx, mgr.GetCache(), o.KubeFedNamespace)
	if err != nil {
		return nil, err
	}
	opts := engineOptions(cfg, mgr, o.KubeFedNamespace, s, registry, readiness, members)
	opts.Shard, opts.Agent = agentShard{cluster: o.ClusterName, pulled: pulled}, true
	engine, err := syncctl.NewEngine(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("set up the propagation engine: %w", err)
	}
	pulled.onChange(engine.ClusterChanged)
	types := &typeconfig.Reconciler{
		Runner:           engine,
		Namespace:        o.KubeFedNamespace,
		Scope:            s.Scope,
		PushReconciler:   s.FeatureGates[corev1beta1.PushReconciler],
		StatusCollection: s.FeatureGates[corev1beta1.RawResourceStatusCollection],
		// The type configs' status and finalizers are the control plane's.
		Leader: func() bool { return false },
	}
	if err := types.SetupWithManager(mgr); err != nil {
		engine.Stop()
		return nil, fmt.Errorf("set up the FederatedTypeConfig controller: %w", err)
	}
	if err := setupAgentDNS(ctx, cfg, mgr, o, s, readiness, members); err != nil {
		engine.Stop()
		return nil, err
	}
	return engine, nil
}

// setupAgentDNS runs this member's part of the DNS records: its entries of
// ServiceDNSRecords and IngressDNSRecords, from its own Services and
// Ingresses, which the control plane cannot read. A host token that may not
// write the records (an agent joined before join granted it) turns them
// off with a message, not the agent.
func setupAgentDNS(ctx context.Context, cfg *rest.Config, mgr manager.Manager, o AgentOptions, s *kubefedconfig.Settings,
	readiness *cluster.ReadinessTracker, members *syncctl.MemberCaches) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("host client: %w", err)
	}
	log := ctrl.Log.WithName("agent")
	records := []struct {
		gate     corev1beta1.FeatureGate
		resource string
		setup    func() error
	}{
		{corev1beta1.CrossClusterServiceDiscovery, "servicednsrecords", func() error {
			return (&dns.ServiceDNSRecordReconciler{Namespace: o.KubeFedNamespace, Members: members, Readiness: readiness, Agent: o.ClusterName}).SetupWithManager(mgr)
		}},
		{corev1beta1.FederatedIngress, "ingressdnsrecords", func() error {
			return (&dns.IngressDNSRecordReconciler{Namespace: o.KubeFedNamespace, Members: members, Readiness: readiness, Agent: o.ClusterName}).SetupWithManager(mgr)
		}},
	}
	for _, r := range records {
		if !s.FeatureGates[r.gate] {
			continue
		}
		// With Namespaced scope the records are read in the KubeFed
		// namespace alone, and granted there.
		namespace := ""
		if s.Scope == corev1beta1.NamespaceScoped {
			namespace = o.KubeFedNamespace
		}
		denied, err := deniedOnHost(ctx, kube, namespace, dnsv1alpha1.GroupVersion.Group, r.resource)
		if err != nil {
			return fmt.Errorf("check the agent's access to %s: %w", r.resource, err)
		}
		if denied != "" {
			log.Info("This member's DNS record entries are off: the agent's host token may not "+denied+
				"; run `kubefedctl join "+o.ClusterName+" --mode pull` again to grant it", "resource", r.resource)
			continue
		}
		if err := r.setup(); err != nil {
			return fmt.Errorf("set up this member's %s: %w", r.resource, err)
		}
	}
	return nil
}

// deniedOnHost says what of reading resource in namespace (every
// namespace when empty) and writing its status the host denies this agent,
// or "" when it may do all of it.
func deniedOnHost(ctx context.Context, kube kubernetes.Interface, namespace, group, resource string) (string, error) {
	for _, a := range []authorizationv1.ResourceAttributes{
		{Namespace: namespace, Group: group, Resource: resource, Verb: "list"},
		{Namespace: namespace, Group: group, Resource: resource, Verb: "watch"},
		{Namespace: namespace, Group: group, Resource: resource, Subresource: "status", Verb: "patch"},
	} {
		review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		if !review.Status.Allowed {
			what := a.Verb + " " + resource
			if a.Subresource != "" {
				what += "/" + a.Subresource
			}
			return what, nil
		}
	}
	return "", nil
}

// agentShard is an agent's share of the members: its own cluster while
// its KubeFedCluster is in Pull mode (joined again in push mode, the
// control plane writes to it and the agent stands back), written to
// without a fence; and nothing else: cluster names that are not joined,
// and finalizers, are the control plane's.
type agentShard struct {
	cluster string
	pulled  *pullMembers
}

func (a agentShard) WriteDeadline(c string) (time.Time, bool) {
	if !a.Holds(c) {
		return time.Time{}, false
	}
	return time.Now().Add(24 * time.Hour), true
}

func (a agentShard) Holds(c string) bool { return c == a.cluster && a.pulled.Pulled(c) }

// Serving is Holds: an agent has no fence to renew.
func (a agentShard) Serving(c string) bool { return a.Holds(c) }

func (agentShard) Assigned(string) bool { return false }

// heartbeat probes this member's /readyz every period and renews the
// Lease kubefed-agent-<cluster> on the host with the answer: the host's
// cluster controller reads a member's health from it, and the agent
// propagates only while its own cluster is ready. With it go the member's
// summary (version, nodes, resources, APIs) and its unschedulable pods.
type heartbeat struct {
	kube      kubernetes.Interface
	member    *clusterclient.Clients
	readiness *cluster.ReadinessTracker
	pods      *scheduling.PendingPods
	o         AgentOptions
	period    time.Duration
	timeout   time.Duration

	// mu guards summary, the last summary of this member (JSON), which
	// summarizeLoop writes and every renewal sends.
	mu      sync.Mutex
	summary string
	// summarized is when the summary was read, enablements its APIs; only
	// summarizeLoop uses them.
	summarized  time.Time
	enablements []corev1beta1.APIEnablement
}

// Start implements manager.Runnable.
func (h *heartbeat) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("heartbeat")
	// The summary lists every node and pod of the member, up to
	// DefaultSummaryTimeout on a large one: it is read beside the
	// renewals, which carry the last one, so that none comes late and has
	// the host take the member for Offline.
	summarize := make(chan struct{}, 1)
	summarizing := make(chan struct{})
	go func() {
		defer close(summarizing)
		h.summarizeLoop(ctx, summarize)
	}()
	defer func() { <-summarizing }()
	ticker := time.NewTicker(h.period)
	defer ticker.Stop()
	for {
		health := h.probe(ctx)
		h.readiness.Set(h.o.ClusterName, health == "ok")
		if health == "ok" {
			// One request waits at most; one under way is not waited for.
			select {
			case summarize <- struct{}{}:
			default:
			}
		}
		if err := h.renew(ctx, health); err != nil && ctx.Err() == nil {
			log.Error(err, "Renewing the heartbeat Lease on the host")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// summarizeLoop summarizes this member when asked, once a
// DefaultSummaryPeriod at most, until ctx ends. The heartbeat asks while
// its cluster is ready.
func (h *heartbeat) summarizeLoop(ctx context.Context, asked <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-asked:
		}
		if time.Since(h.summarized) >= cluster.DefaultSummaryPeriod {
			h.summarize(ctx)
		}
	}
}

// probe asks this member's /readyz (or /healthz) as the cluster controller
// asks a push member's: "ok", or what went wrong.
func (h *heartbeat) probe(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	if ready, message := cluster.ProbeHealth(ctx, h.member.HTTPClient(), h.member.Host(), h.timeout); !ready {
		return message
	}
	return "ok"
}

// summarize reads this member's version, nodes and resources as the
// control plane reads a push member's, for the heartbeat to carry: the
// host cannot read them. What cannot be read keeps its last value there.
func (h *heartbeat) summarize(ctx context.Context) {
	log := ctrl.Log.WithName("heartbeat")
	kube, err := h.member.Kubernetes()
	if err != nil {
		log.Error(err, "Building the member's clientset")
		return
	}
	disc, err := h.member.Discovery()
	if err != nil {
		log.Error(err, "Building the member's discovery client")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cluster.DefaultSummaryTimeout)
	defer cancel()
	s, err := cluster.CollectAgentSummary(ctx, kube, disc, h.enablements)
	if err != nil {
		log.V(1).Info("Summarizing the member partly failed", "err", err.Error())
	}
	if s.APIEnablements != nil {
		h.enablements = s.APIEnablements
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return
	}
	if len(raw) > maxSummaryBytes {
		// A Lease's annotations hold 256 KiB in all; a member serving
		// very many APIs sends the rest without them.
		log.Info("The member's API list is too large for the heartbeat; status.apiEnablements keeps its last value", "bytes", len(raw))
		s.APIEnablements = nil
		if raw, err = json.Marshal(s); err != nil {
			return
		}
	}
	h.mu.Lock()
	h.summary = string(raw)
	h.mu.Unlock()
	h.summarized = time.Now()
}

// maxSummaryBytes bounds the heartbeat's summary annotation, so that it,
// the unschedulable pods (scheduling's 64 KiB) and the health fit in a
// Lease's 256 KiB of annotations.
const maxSummaryBytes = 160 << 10

// pendingReport is this member's unschedulable pods, once they are known.
func (h *heartbeat) pendingReport() (string, bool) {
	if h.pods == nil {
		return "", false
	}
	report, ok := h.pods.Report(h.o.ClusterName)
	if !ok {
		return "", false
	}
	return scheduling.EncodePendingReport(report), true
}

// renew creates or renews the heartbeat Lease.
func (h *heartbeat) renew(ctx context.Context, health string) error {
	ctx, cancel := context.WithTimeout(ctx, h.period)
	defer cancel()
	leases := h.kube.CoordinationV1().Leases(h.o.KubeFedNamespace)
	name := corev1beta1.AgentLeaseName(h.o.ClusterName)
	now := metav1.NewMicroTime(time.Now())
	seconds := int32(max(1, (h.period + h.timeout).Seconds()))
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.o.KubeFedNamespace,
				Labels:      map[string]string{"kubefed.io/agent-of": h.o.ClusterName},
				Annotations: map[string]string{cluster.AgentHealthAnnotation: health}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &h.o.Identity, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[cluster.AgentHealthAnnotation] = health
	h.mu.Lock()
	summary := h.summary
	h.mu.Unlock()
	if summary != "" {
		lease.Annotations[cluster.AgentSummaryAnnotation] = summary
	}
	if report, ok := h.pendingReport(); ok {
		lease.Annotations[scheduling.AgentPendingAnnotation] = report
	} else {
		delete(lease.Annotations, scheduling.AgentPendingAnnotation)
	}
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &h.o.Identity, &seconds, &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}
