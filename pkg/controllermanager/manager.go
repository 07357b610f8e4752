package controllermanager

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	goruntime "runtime"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	dnsv1alpha1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
	schedulingv1alpha1 "github.com/kubefed-io/kubefed/api/scheduling/v1alpha1"
	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/controllers/dns"
	"github.com/kubefed-io/kubefed/controllers/scheduling"
	syncctl "github.com/kubefed-io/kubefed/controllers/sync"
	"github.com/kubefed-io/kubefed/controllers/typeconfig"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/kubefedconfig"
	"github.com/kubefed-io/kubefed/pkg/sharding"
	"github.com/kubefed-io/kubefed/pkg/version"
	kubefedwebhook "github.com/kubefed-io/kubefed/pkg/webhook"
)

// LeaderElectionID is the Lease the controller-manager replicas elect a leader on.
const LeaderElectionID = corev1beta1.ControllerManagerLeaseName

// configPollInterval is how often a running manager checks whether the
// KubeFedConfig changed; changes are rare and a restart is cheap.
const configPollInterval = 10 * time.Second

// NewScheme knows the built-in types and every kubefed API.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		corev1beta1.AddToScheme,
		schedulingv1alpha1.AddToScheme,
		dnsv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// RESTConfig loads the host cluster's client configuration.
func RESTConfig(o Options) (*rest.Config, error) {
	if o.Kubeconfig == "" && o.Context == "" {
		cfg, err := rest.InClusterConfig()
		if err == nil {
			return cfg, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load host cluster configuration: %w", err)
	}
	return cfg, nil
}

// Run starts the control plane and blocks until ctx ends. When the
// KubeFedConfig changes it stops the controllers and starts them again
// with the new settings.
func Run(ctx context.Context, o Options) error {
	log := ctrl.Log.WithName("controller-manager")
	if err := o.Validate(); err != nil {
		return err
	}
	cfg, err := RESTConfig(o)
	if err != nil {
		return err
	}
	if o.PprofAddr != "" && o.PprofAddr != "0" {
		// What waits, and on which lock, is what a profile of latency
		// needs; both samplers cost little and run only when profiling.
		goruntime.SetBlockProfileRate(int(time.Millisecond))
		goruntime.SetMutexProfileFraction(10)
	}
	if o.ScaleOut {
		// Every replica propagates; the singletons still need a leader.
		o.LeaderElect = true
		o.ReplicaID = o.replicaID()
	}
	cfg.UserAgent = "kubefed-controller-manager/" + version.Version
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("host cluster client: %w", err)
	}
	log.Info("starting", "version", version.Get().String(), "kubefedNamespace", o.KubeFedNamespace, "scaleOut", o.ScaleOut, "replica", o.ReplicaID)

	// Member clients and readiness outlive a restart for a new
	// KubeFedConfig: reconnecting to every member would be wasted work.
	shared := &sharedState{
		registry:  clusterclient.NewRegistry(clusterclient.ConfigOptions{}),
		readiness: cluster.NewReadinessTracker(o.KubeFedNamespace),
		agentPods: scheduling.NewAgentPods(),
	}
	if o.PeerBindAddress != "" {
		if shared.peers, err = sharding.NewPeers(o.ReplicaID, o.PeerBindAddress, o.PeerAdvertiseHost, ctrl.Log.WithName("peers")); err != nil {
			return err
		}
		go func() {
			if err := shared.peers.Start(ctx); err != nil {
				log.Error(err, "serving the other replicas")
			}
		}()
	}
	defer func() {
		if shared.members != nil {
			shared.members.Stop()
		}
		if shared.dnsMembers != nil && shared.dnsMembers != shared.members {
			shared.dnsMembers.Stop()
		}
	}()

	if o.InstallDefaultTypes {
		if err := installDefaultTypes(ctx, direct, o); err != nil {
			return err
		}
	}
	var firstScope corev1beta1.Scope
	for reload := false; ; reload = true {
		kfc, settings, err := loadConfig(ctx, reload, configPollInterval, log, func() (*corev1beta1.KubeFedConfig, *kubefedconfig.Settings, error) {
			return kubefedconfig.Load(ctx, direct, o.KubeFedNamespace, corev1beta1.Scope(o.Scope))
		})
		if err != nil || ctx.Err() != nil {
			return err
		}
		if settings.OriginalResourceLock != corev1beta1.LeasesResourceLock {
			log.Info("leader election uses a Lease; the configured lock type is an alias", "resourceLock", settings.OriginalResourceLock)
		}
		if err := sameScope(firstScope, settings.Scope); err != nil {
			return err
		}
		firstScope = settings.Scope
		if shared.members == nil {
			// The scope is immutable, so the member caches made for the
			// first configuration serve every later one.
			namespace := ""
			if settings.Scope == corev1beta1.NamespaceScoped {
				namespace = o.KubeFedNamespace
			}
			shared.members = syncctl.NewMemberCaches(shared.registry, shared.readiness, namespace, ctrl.Log.WithName("member-caches"))
			shared.dnsMembers = shared.members
			if o.ScaleOut {
				// A replica caches the objects of its own members only;
				// the DNS controllers, which run on the leader, read the
				// Services and Ingresses of every member.
				shared.members.ShareOnly()
				shared.dnsMembers = syncctl.NewMemberCaches(shared.registry, shared.readiness, namespace, ctrl.Log.WithName("dns-member-caches"))
			}
		}
		again, err := runManager(ctx, direct, o.KubeFedNamespace, kfc.Spec, func(runCtx context.Context) (manager.Manager, error) {
			mgr, err := newManager(cfg, scheme, o, settings)
			if err != nil {
				return nil, err
			}
			return mgr, setupControllers(runCtx, cfg, mgr, o, kfc, settings, shared)
		}, shared.stopTypes)
		if !again {
			return err
		}
		log.Info("KubeFedConfig changed; restarting the controllers with the new settings")
	}
}

// sameScope refuses a KubeFedConfig whose scope is not the one the
// process started with (first; empty at the start). The scope cannot be
// changed by an update, but the KubeFedConfig can be deleted and created
// again with another: the member caches, the host caches and the rights
// the controllers need all follow the scope, so the process ends and
// starts afresh with it (KubeFed, which read the KubeFedConfig once, took
// it up at its next start too).
func sameScope(first, now corev1beta1.Scope) error {
	if first == "" || first == now {
		return nil
	}
	return fmt.Errorf("the KubeFedConfig's scope changed from %s to %s (it was deleted and created again); exiting, to start afresh with the new scope", first, now)
}

// loadConfig loads the KubeFedConfig with load. At the start a failure is
// returned; on a reload, after the controllers stopped for a change, it is
// logged and load tried again every retry until it succeeds or ctx ends
// (nil results, nil error): one failed read (an API server restarting)
// must not end every replica at once, and a spec the controllers cannot
// run is said until it is fixed.
func loadConfig(ctx context.Context, reload bool, retry time.Duration, log logr.Logger,
	load func() (*corev1beta1.KubeFedConfig, *kubefedconfig.Settings, error)) (*corev1beta1.KubeFedConfig, *kubefedconfig.Settings, error) {
	for {
		kfc, settings, err := load()
		if err == nil || !reload {
			return kfc, settings, err
		}
		if ctx.Err() != nil {
			return nil, nil, nil
		}
		log.Error(err, "Reading the changed KubeFedConfig; the controllers start again once it can be read and resolved")
		select {
		case <-ctx.Done():
			return nil, nil, nil
		case <-time.After(retry):
		}
	}
}

var errConfigChanged = errors.New("KubeFedConfig changed")

// runManager builds a manager with build and runs it until ctx ends or the
// KubeFedConfig's spec differs from started; cleanup runs after it stopped.
// again says the configuration changed, and the caller starts over.
func runManager(ctx context.Context, c client.Client, namespace string, started corev1beta1.KubeFedConfigSpec,
	build func(context.Context) (manager.Manager, error), cleanup func()) (again bool, err error) {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	mgr, err := build(runCtx)
	if err != nil {
		cleanup()
		return false, err
	}
	go watchConfig(runCtx, cancel, c, namespace, started, configPollInterval, ctrl.Log.WithName("kubefedconfig"))
	err = mgr.Start(runCtx)
	cause := context.Cause(runCtx)
	cancel(nil)
	cleanup()
	switch {
	case ctx.Err() != nil:
		return false, nil
	case errors.Is(cause, errConfigChanged):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("manager stopped: %w", err)
	}
	return false, nil
}

// watchConfig cancels the run when the KubeFedConfig's spec changes, read
// every interval. A read that fails is logged when its error changes, and
// its end too: meanwhile a change is not picked up (the KubeFedConfig
// deleted, or the right to read it withdrawn).
func watchConfig(ctx context.Context, cancel context.CancelCauseFunc, c client.Client, namespace string, started corev1beta1.KubeFedConfigSpec,
	interval time.Duration, log logr.Logger) {
	key := client.ObjectKey{Namespace: namespace, Name: corev1beta1.KubeFedConfigName}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	failing := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		current := &corev1beta1.KubeFedConfig{}
		if err := c.Get(ctx, key, current); err != nil {
			if ctx.Err() == nil && err.Error() != failing {
				log.Error(err, "Reading the KubeFedConfig for changes; none is picked up until it can be read", "kubefedConfig", key.String())
			}
			failing = err.Error()
			continue
		}
		if failing != "" {
			log.Info("The KubeFedConfig can be read again", "kubefedConfig", key.String())
			failing = ""
		}
		if !reflect.DeepEqual(current.Spec, started) {
			cancel(errConfigChanged)
			return
		}
	}
}

func newManager(cfg *rest.Config, scheme *runtime.Scheme, o Options, s *kubefedconfig.Settings) (manager.Manager, error) {
	inNamespace := cache.ByObject{Namespaces: map[string]cache.Config{o.KubeFedNamespace: {}}}
	return withProbes(ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// The controllers are built anew when the KubeFedConfig changes;
		// controller-runtime otherwise refuses a name it saw before.
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Metrics:                metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress: o.HealthAddr,
		PprofBindAddress:       o.PprofAddr,
		WebhookServer:          o.webhookServer(),
		// Scale-out replicas elect the singletons' leader themselves.
		LeaderElection:                o.LeaderElect && !o.ScaleOut,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.KubeFedNamespace,
		LeaderElectionResourceLock:    "leases",
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &s.LeaseDuration,
		RenewDeadline:                 &s.RenewDeadline,
		RetryPeriod:                   &s.RetryPeriod,
		Cache: cache.Options{DefaultNamespaces: defaultNamespaces(o, s), ByObject: map[client.Object]cache.ByObject{
			// The control plane's own objects only count in its namespace;
			// caching Secrets cluster-wide would also hold every secret in memory.
			&corev1beta1.KubeFedCluster{}:      inNamespace,
			&corev1beta1.FederatedTypeConfig{}: inNamespace,
			&corev1beta1.KubeFedConfig{}:       inNamespace,
			&corev1.Secret{}:                   inNamespace,
			&dnsv1alpha1.Domain{}:              inNamespace,
		}},
	}))
}

// defaultNamespaces limits every cached namespaced object to the KubeFed
// namespace in a Namespaced-scope control plane, whose RBAC grants nothing
// beyond it; a Cluster-scope one caches federated objects of every namespace.
func defaultNamespaces(o Options, s *kubefedconfig.Settings) map[string]cache.Config {
	if s.Scope != corev1beta1.NamespaceScoped {
		return nil
	}
	return map[string]cache.Config{o.KubeFedNamespace: {}}
}

// sharedState is what the controllers share across manager restarts.
type sharedState struct {
	registry  *clusterclient.Registry
	readiness *cluster.ReadinessTracker
	// agentPods holds what Pull-mode members' agents report of their
	// unschedulable pods.
	agentPods *scheduling.AgentPods
	members   *syncctl.MemberCaches
	// dnsMembers are the caches the DNS controllers read: members, or
	// caches of every member when replicas scale out.
	dnsMembers *syncctl.MemberCaches
	// engine is the propagation engine of the running manager.
	engine *syncctl.Engine
	// peers is the channel to the other replicas (--peer-bind-address),
	// served for the life of the process.
	peers *sharding.Peers
}

// stopTypes stops the per-type machinery the last manager started, so the
// next one starts from a clean slate.
func (s *sharedState) stopTypes() {
	if s.engine == nil {
		return
	}
	s.engine.Stop()
	s.engine = nil
}

// setupControllers registers every controller with the manager.
func setupControllers(ctx context.Context, cfg *rest.Config, mgr manager.Manager, o Options, kfc *corev1beta1.KubeFedConfig, s *kubefedconfig.Settings, shared *sharedState) error {
	// With scale-out the controllers that every replica needs run on all
	// of them and write only on the leader; the others stay leader-only.
	var (
		leader func() bool
		single *singletons
	)
	if o.ScaleOut {
		var err error
		if single, err = newSingletons(cfg, mgr, o, s); err != nil {
			return err
		}
		leader = single.Leading
	}
	clusters := &cluster.Reconciler{
		Options:    cluster.OptionsFromConfig(o.KubeFedNamespace, kfc.Spec.ClusterHealthCheck),
		Registry:   shared.registry,
		Readiness:  shared.readiness,
		Leader:     leader,
		Heartbeats: shared.agentPods,
	}
	if err := clusters.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the KubeFedCluster controller: %w", err)
	}
	var shard *sharding.Shard
	if o.ScaleOut {
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("host client: %w", err)
		}
		reader := mgr.GetClient()
		var annotations map[string]string
		if shared.peers != nil {
			annotations = shared.peers.Annotations()
		}
		shard, err = sharding.New(sharding.Options{
			Client: kube, Namespace: o.KubeFedNamespace, Identity: o.ReplicaID, Annotations: annotations,
			LeaseDuration: s.LeaseDuration, RetryPeriod: s.RetryPeriod,
			Clusters: func() ([]string, error) { return joinedClusters(ctx, reader, o.KubeFedNamespace) },
			Log:      ctrl.Log.WithName("shard"),
		})
		if err != nil {
			return err
		}
	}
	pulled, err := newPullMembers(ctx, mgr.GetCache(), o.KubeFedNamespace)
	if err != nil {
		return err
	}
	engineOpts := engineOptions(cfg, mgr, o.KubeFedNamespace, s, shared.registry, shared.readiness, shared.members)
	engineOpts.Shard, engineOpts.Pulled = engineShard(shard), pulled
	engineOpts.StatusManager = statusManager(o.ReplicaID)
	if shard != nil && shared.peers != nil {
		shared.peers.SetShard(shard)
		engineOpts.Peers = shared.peers
	}
	engine, err := syncctl.NewEngine(ctx, engineOpts)
	if err != nil {
		return fmt.Errorf("set up the propagation engine: %w", err)
	}
	if engineOpts.Peers != nil {
		shared.peers.Handle(engine.PeerMessage)
	}
	shared.engine = engine
	pulled.onChange(engine.ClusterChanged)
	if shard != nil {
		shard.SetHandler(engine)
		if err := mgr.Add(shard); err != nil {
			return fmt.Errorf("add the shard: %w", err)
		}
	}
	types := &typeconfig.Reconciler{
		Runner:           engine,
		Namespace:        o.KubeFedNamespace,
		Scope:            s.Scope,
		PushReconciler:   s.FeatureGates[corev1beta1.PushReconciler],
		StatusCollection: s.FeatureGates[corev1beta1.RawResourceStatusCollection],
		Readiness:        shared.readiness,
		Registry:         shared.registry,
		Leader:           leader,
	}
	if err := types.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the FederatedTypeConfig controller: %w", err)
	}
	if single != nil {
		single.onLead = append(single.onLead, types.Lead)
	}
	singletonControllers := func(mgr manager.Manager) error {
		return setupSingletonControllers(mgr, o, s, shared, pulled)
	}
	if single != nil {
		// The singletons run in terms of leadership.
		single.setup = singletonControllers
		if err := mgr.Add(single); err != nil {
			return fmt.Errorf("add the singleton controllers: %w", err)
		}
	} else if err := singletonControllers(mgr); err != nil {
		return err
	}
	if o.WebhookPort != 0 {
		if err := kubefedwebhook.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up the admission webhooks: %w", err)
		}
	}
	return nil
}

// newSingletons prepares the terms of the singleton controllers of a
// scale-out replica, on the Lease the leader of classic replicas holds.
// The election has a client of its own, so that a renewal never waits
// behind the replica's other requests for the client's rate limit.
func newSingletons(cfg *rest.Config, mgr manager.Manager, o Options, s *kubefedconfig.Settings) (*singletons, error) {
	kube, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election"))
	if err != nil {
		return nil, fmt.Errorf("host client for the leader election: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.KubeFedNamespace, LeaderElectionID,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: o.ReplicaID,
			// "<replica> became leader", as the manager's own election says.
			EventRecorder: leaseEvents{mgr.GetEventRecorder(LeaderElectionID)}})
	if err != nil {
		return nil, err
	}
	return &singletons{mgr: mgr, lock: lock, identity: o.ReplicaID,
		lease: s.LeaseDuration, renew: s.RenewDeadline, retry: s.RetryPeriod,
		log: ctrl.Log.WithName("singletons")}, nil
}

// setupSingletonControllers registers the controllers only the leader
// runs: ReplicaSchedulingPreferences and the DNS records.
func setupSingletonControllers(mgr manager.Manager, o Options, s *kubefedconfig.Settings, shared *sharedState, pulled *pullMembers) error {
	if s.FeatureGates[corev1beta1.SchedulerPreferences] {
		rsp := &scheduling.Reconciler{
			Namespace:          o.KubeFedNamespace,
			Readiness:          shared.readiness,
			Registry:           shared.registry,
			AgentPods:          shared.agentPods,
			FailoverToleration: s.UnavailableDelay,

			UnschedulableThreshold: o.UnschedulableThreshold,
			CapacityHold:           o.CapacityHold,
		}
		if s.Scope == corev1beta1.NamespaceScoped {
			rsp.ObjectNamespace = o.KubeFedNamespace
		}
		if err := rsp.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up the ReplicaSchedulingPreference controller: %w", err)
		}
	}
	if s.FeatureGates[corev1beta1.CrossClusterServiceDiscovery] {
		if err := (&dns.ServiceDNSRecordReconciler{Namespace: o.KubeFedNamespace, Members: shared.dnsMembers, Readiness: shared.readiness, Pulled: pulled.Pulled}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up the ServiceDNSRecord controller: %w", err)
		}
	}
	if s.FeatureGates[corev1beta1.FederatedIngress] {
		if err := (&dns.IngressDNSRecordReconciler{Namespace: o.KubeFedNamespace, Members: shared.dnsMembers, Readiness: shared.readiness, Pulled: pulled.Pulled}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up the IngressDNSRecord controller: %w", err)
		}
	}
	if s.FeatureGates[corev1beta1.CrossClusterServiceDiscovery] || s.FeatureGates[corev1beta1.FederatedIngress] {
		endpoints := &dns.DNSEndpointReconciler{
			ServiceRecords: s.FeatureGates[corev1beta1.CrossClusterServiceDiscovery],
			IngressRecords: s.FeatureGates[corev1beta1.FederatedIngress],
		}
		if err := endpoints.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up the DNSEndpoint controllers: %w", err)
		}
	}
	return nil
}

// engineOptions are the propagation engine's options of a manager, its
// settings and its members, but for the shard.
func engineOptions(cfg *rest.Config, mgr manager.Manager, namespace string, s *kubefedconfig.Settings,
	registry *clusterclient.Registry, readiness *cluster.ReadinessTracker, members *syncctl.MemberCaches) syncctl.Options {
	return syncctl.Options{
		HostConfig:                     cfg,
		Client:                         mgr.GetClient(),
		Cache:                          mgr.GetCache(),
		Namespace:                      namespace,
		Scope:                          s.Scope,
		Workers:                        s.SyncWorkers,
		AdoptResources:                 s.AdoptResources,
		NotReadyClusterDeletionTimeout: s.NotReadyClusterDeletionTimeout,
		// A Pull-mode member's agent that died is Offline once its Lease
		// went unrenewed for a period and the timeout, and not ready after
		// failureThreshold such probes, a period apart.
		PullReportGrace:  s.HealthCheckTimeout + time.Duration(s.FailureThreshold+1)*s.HealthCheckPeriod,
		UnavailableDelay: s.UnavailableDelay,
		StatusCollection: s.FeatureGates[corev1beta1.RawResourceStatusCollection],
		Registry:         registry,
		Readiness:        readiness,
		Members:          members,
		Log:              ctrl.Log.WithName("propagation"),
	}
}

// withProbes adds the /healthz and /readyz pings to a new manager.
func withProbes(mgr manager.Manager, err error) (manager.Manager, error) {
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// statusManager is the field manager under which a replica (by its ID)
// applies its status entries, within the 128 characters a manager's name
// may have.
func statusManager(id string) string {
	name := "kubefed-status"
	if id != "" {
		name += "/" + id
	}
	if len(name) > 128 {
		name = name[:128]
	}
	return name
}

// engineShard is shard as the engine's option: nil, not a nil pointer in
// an interface, when replicas do not scale out.
func engineShard(shard *sharding.Shard) syncctl.Shard {
	if shard == nil {
		return nil
	}
	return shard
}

// joinedClusters are the KubeFedClusters not being deleted, from the cache.
func joinedClusters(ctx context.Context, c client.Reader, namespace string) ([]string, error) {
	list := &corev1beta1.KubeFedClusterList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, kc := range list.Items {
		if kc.DeletionTimestamp.IsZero() {
			out = append(out, kc.Name)
		}
	}
	return out, nil
}
