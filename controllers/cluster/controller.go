package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/metrics"
)

const (
	// ControllerName names the controller in logs and metrics, and is the
	// reporting controller of its events.
	ControllerName = "kubefedcluster-controller"
	// secretRefIndex indexes KubeFedClusters by the Secret they reference.
	secretRefIndex = "spec.secretRef.name"
)

// errWorkerStopped ends the probe of a worker whose cluster was deleted
// meanwhile, so that it does not resurrect clients or metrics.
var errWorkerStopped = errors.New("probe worker stopped")

// Reconciler runs one probe worker per KubeFedCluster of Options.Namespace.
// Reconcile only starts, pokes and stops workers; each worker probes its
// member every Period in its own goroutine, so a member that hangs delays
// nobody else, and writes the member's status.
type Reconciler struct {
	// Options configure probing; the manager fills them from KubeFedConfig.
	Options Options
	// Registry receives the clients of every member; other controllers
	// read it. SetupWithManager creates one when nil.
	Registry *clusterclient.Registry
	// Readiness publishes which members are ready; other controllers gate
	// work on it. SetupWithManager creates one when nil.
	Readiness *ReadinessTracker
	// Leader, when set, makes every replica probe the members (each needs
	// their clients and readiness) while only the one it reports as the
	// leader writes their status and events. Nil: only the leader runs.
	Leader func() bool
	// Heartbeats, when set, hears every fresh heartbeat of a Pull-mode
	// member's agent, for what else the agent sends with it.
	Heartbeats HeartbeatListener

	opts      Options
	reader    client.Reader // the manager's cache
	apiReader client.Reader // uncached, for conflict retries
	writer    client.Client
	recorder  events.EventRecorder
	log       logr.Logger
	now       func() time.Time

	started chan struct{}
	mu      sync.Mutex
	base    context.Context
	// stopping is set once base is done, after which no worker starts.
	stopping bool
	workers  map[string]*worker
	wg       sync.WaitGroup
}

// SetupWithManager registers the controller and its probe workers with mgr.
// KubeFedClusters and Secrets are read from the manager's cache, which
// should hold them for Options.Namespace only, as Secrets elsewhere are none
// of the control plane's business; events from other namespaces are
// filtered out regardless.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	opts, err := r.Options.withDefaults()
	if err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &fedv1b1.KubeFedCluster{}, secretRefIndex, indexSecretRef); err != nil {
		return fmt.Errorf("indexing KubeFedClusters by Secret: %w", err)
	}
	r.setup(opts, mgr.GetCache(), mgr.GetAPIReader(), mgr.GetClient(), mgr.GetEventRecorder(ControllerName), mgr.GetLogger().WithName("kubefedcluster"))
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("adding the probe workers: %w", err)
	}
	inNamespace := func(o client.Object) bool { return o.GetNamespace() == opts.Namespace }
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(r.NeedLeaderElection())}).
		// Status writes bump no generation, so the workers' own writes do
		// not come back as work; spec changes, creations and deletions do.
		WatchesRawSource(source.Kind(mgr.GetCache(), &fedv1b1.KubeFedCluster{},
			&handler.TypedEnqueueRequestForObject[*fedv1b1.KubeFedCluster]{},
			predicate.NewTypedPredicateFuncs(func(c *fedv1b1.KubeFedCluster) bool { return inNamespace(c) }),
			predicate.TypedGenerationChangedPredicate[*fedv1b1.KubeFedCluster]{})).
		WatchesRawSource(source.Kind(mgr.GetCache(), &corev1.Secret{},
			handler.TypedEnqueueRequestsFromMapFunc(r.clustersForSecret),
			predicate.NewTypedPredicateFuncs(func(s *corev1.Secret) bool { return inNamespace(s) }))).
		Complete(r)
}

// setup wires the dependencies SetupWithManager takes from the manager;
// tests call it directly.
func (r *Reconciler) setup(opts Options, reader, apiReader client.Reader, writer client.Client, recorder events.EventRecorder, log logr.Logger) {
	if r.Registry == nil {
		r.Registry = clusterclient.NewRegistry(clusterclient.ConfigOptions{})
	}
	if r.Readiness == nil {
		r.Readiness = NewReadinessTracker(opts.Namespace)
	}
	r.opts = opts
	r.reader, r.apiReader, r.writer = reader, apiReader, writer
	r.recorder, r.log = recorder, log
	if r.now == nil {
		r.now = time.Now
	}
	r.started = make(chan struct{})
	r.stopping = false
	r.workers = map[string]*worker{}
}

func indexSecretRef(o client.Object) []string {
	c, ok := o.(*fedv1b1.KubeFedCluster)
	if !ok || c.Spec.SecretRef.Name == "" {
		return nil
	}
	return []string{c.Spec.SecretRef.Name}
}

// clustersForSecret maps a Secret to the KubeFedClusters referencing it, so
// that a fixed token heals a member at once instead of at its next probe.
func (r *Reconciler) clustersForSecret(ctx context.Context, s *corev1.Secret) []reconcile.Request {
	var list fedv1b1.KubeFedClusterList
	if err := r.reader.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{secretRefIndex: s.Name}); err != nil {
		r.log.Error(err, "listing KubeFedClusters of a Secret", "secret", client.ObjectKeyFromObject(s).String())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}})
	}
	return reqs
}

// Start runs until ctx ends and then waits for the probe workers, which
// live in ctx, to finish. It implements manager.Runnable.
func (r *Reconciler) Start(ctx context.Context) error {
	r.mu.Lock()
	r.base = ctx
	r.mu.Unlock()
	close(r.started)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.forgetVanished(ctx)
	}()
	<-ctx.Done()
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	r.wg.Wait()
	return nil
}

// forgetVanished cleans up after clusters that were deleted while no manager
// ran (the controller-manager restarts its manager when the KubeFedConfig
// changes, keeping Registry and ReadinessTracker), since no Reconcile will
// ever come for them.
func (r *Reconciler) forgetVanished(ctx context.Context) {
	var list fedv1b1.KubeFedClusterList
	if err := r.reader.List(ctx, &list, client.InNamespace(r.opts.Namespace)); err != nil {
		if ctx.Err() == nil {
			r.log.Error(err, "Listing KubeFedClusters to forget deleted ones")
		}
		return
	}
	present := map[string]bool{}
	for _, c := range list.Items {
		present[c.Name] = true
	}
	known := r.Registry.Names()
	known = append(known, r.Readiness.ReadyClusters()...)
	known = append(known, metrics.Clusters()...)
	for _, name := range known {
		if !present[name] {
			r.forgetIfUnprobed(name)
		}
	}
}

// NeedLeaderElection makes only the leader probe and write status, unless
// every replica probes (Leader set).
func (r *Reconciler) NeedLeaderElection() bool { return r.Leader == nil }

// writes reports whether this replica writes status and events.
func (r *Reconciler) writes() bool { return r.Leader == nil || r.Leader() }

// Reconcile starts a worker for a new KubeFedCluster, makes an existing
// one probe now after a change of its spec or Secret, and stops the worker
// of a deleted one.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Namespace != r.opts.Namespace {
		return ctrl.Result{}, nil
	}
	var c fedv1b1.KubeFedCluster
	if err := r.reader.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading KubeFedCluster %s: %w", req.NamespacedName, err)
	}
	select {
	case <-r.started:
	case <-ctx.Done():
		return ctrl.Result{}, ctx.Err()
	}
	if w, created := r.ensureWorker(req.Name); w != nil && !created {
		w.probeNow()
	}
	return ctrl.Result{}, nil
}

// ensureWorker returns the worker of the named cluster, starting it if
// there is none; a new worker probes at once by itself. It returns nil
// once the Reconciler is stopping.
func (r *Reconciler) ensureWorker(name string) (w *worker, created bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.workers[name]; ok {
		return w, false
	}
	if r.stopping {
		return nil, false
	}
	ctx, cancel := context.WithCancel(r.base)
	w = newWorker(r, name, cancel)
	r.workers[name] = w
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		w.run(ctx)
	}()
	r.log.Info("Started probing member cluster", "cluster", name)
	return w, true
}

// forget stops the worker of a deleted cluster and drops everything kept
// about it. It does not wait for the worker: one stuck in a probe must not
// hold up the reconciles of other clusters; the ownership checks keep it
// from publishing anything afterwards.
func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	w := r.workers[name]
	r.forgetLocked(name)
	r.mu.Unlock()
	if w != nil {
		w.cancel()
		r.log.Info("Stopped probing deleted member cluster", "cluster", name)
	}
}

// forgetIfUnprobed forgets a cluster no worker probes. A cluster created
// after forgetVanished listed has a worker by the time it is published, and
// its deletion is Reconcile's to handle.
func (r *Reconciler) forgetIfUnprobed(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, probed := r.workers[name]; !probed {
		r.forgetLocked(name)
	}
}

func (r *Reconciler) forgetLocked(name string) {
	delete(r.workers, name)
	r.Registry.Remove(name)
	if r.Heartbeats != nil {
		r.Heartbeats.Forget(name)
	}
	metrics.DeleteCluster(name)
	r.Readiness.forget(name)
}

// asOwner runs f, which changes what is kept about a worker's cluster,
// unless the worker has been stopped, and says whether it ran. A stopped
// worker may still be finishing a probe of a cluster that was deleted, and
// perhaps created again with a worker of its own, whose state it must not
// touch; forget drops the worker under the same lock.
func (r *Reconciler) asOwner(w *worker, f func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.workers[w.name] != w {
		return false
	}
	f()
	return true
}

// ensureClients returns the clients of a worker's cluster unless the worker
// has been stopped.
func (r *Reconciler) ensureClients(w *worker, c *fedv1b1.KubeFedCluster, s *corev1.Secret) (clients *clusterclient.Clients, err error) {
	if !r.asOwner(w, func() { clients, err = r.Registry.Ensure(c, s) }) {
		return nil, errWorkerStopped
	}
	return clients, err
}

// publish makes a worker's reported health visible in metrics and to
// readiness listeners unless the worker has been stopped.
func (r *Reconciler) publish(w *worker, h Health) {
	r.asOwner(w, func() {
		metrics.SetClusterState(w.name, metricState(h))
		r.Readiness.set(w.name, h == HealthReady)
	})
}

// heartbeat hands a fresh heartbeat of a worker's cluster to the listener
// unless the worker has been stopped.
func (r *Reconciler) heartbeat(w *worker, lease *coordinationv1.Lease) {
	if r.Heartbeats != nil {
		r.asOwner(w, func() { r.Heartbeats.Heartbeat(w.name, lease) })
	}
}

// IsReady says whether the named cluster is ready; see ReadinessTracker.
func (r *Reconciler) IsReady(name string) bool { return r.Readiness.IsReady(name) }

// ReadyClusters returns the ready clusters, sorted; see ReadinessTracker.
func (r *Reconciler) ReadyClusters() []string { return r.Readiness.ReadyClusters() }
