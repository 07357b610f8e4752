package sync

import (
	"context"
	"fmt"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/placement"
)

// DefaultClusterTimeout bounds each write to one member cluster.
const DefaultClusterTimeout = 30 * time.Second

// Options configure an Engine.
type Options struct {
	// HostConfig reaches the host cluster, where federated objects live.
	HostConfig *rest.Config
	// Client reads KubeFedClusters, from the controller-manager's cache.
	Client client.Client
	// Cache delivers KubeFedCluster changes.
	Cache ctrlcache.Cache
	// Namespace is the KubeFed namespace.
	Namespace string
	// Scope is the control plane's scope: Namespaced propagates only the
	// federated objects of Namespace and needs no FederatedNamespace.
	Scope corev1beta1.Scope
	// Workers plan federated objects and write their status concurrently,
	// per type.
	Workers int
	// ClusterWorkers write to each member concurrently, for every type;
	// zero means Workers.
	ClusterWorkers int
	// AdoptResources lets propagation take over a pre-existing member object.
	AdoptResources bool
	// NotReadyClusterDeletionTimeout bounds how long a deletion waits for
	// members that are not Ready.
	NotReadyClusterDeletionTimeout time.Duration
	// UnavailableDelay is KubeFed's controllerDuration.unavailableDelay:
	// how long a member may be not Ready before the objects placed on it
	// are planned again without it (see unreadySpell). Zero reacts at once.
	UnavailableDelay time.Duration
	// StatusCollection is the RawResourceStatusCollection feature gate.
	StatusCollection bool
	// ClusterTimeout bounds each write to a member; zero means DefaultClusterTimeout.
	ClusterTimeout time.Duration
	// Registry holds every member's clients.
	Registry *clusterclient.Registry
	// Readiness tells which members are Ready.
	Readiness *cluster.ReadinessTracker
	// Members are the shared member caches.
	Members *MemberCaches
	// Shard, when set, is this replica's share of the members: it writes
	// to and reports only the members it holds the fence of. Nil serves
	// every member, as a single active replica does.
	Shard Shard
	// Pulled, when set, tells the members in Pull mode, whose agents
	// propagate to them: this engine neither writes to them nor writes
	// their status entries, and an entry its agent dropped means the
	// agent removed its copy.
	Pulled PullMembers
	// PullReportGrace is how long a deletion waits for a Ready Pull-mode
	// member, selected by the placement, whose agent never reported the
	// object: long enough for the health checks to find an agent that
	// died before it could report a copy it made (the member then is not
	// ready, and NotReadyClusterDeletionTimeout applies). Zero means
	// pullReportGrace.
	PullReportGrace time.Duration
	// Agent makes this engine a Pull-mode member's agent (Shard holds its
	// cluster alone): the finalizer of federated objects is the control
	// plane's, never added or removed here.
	Agent bool
	// StatusManager is the field manager under which a replica with a
	// Shard applies its members' status entries server-side, where the
	// type's CRD keys status.clusters by name and no member is in Pull
	// mode; empty, or otherwise, they are written as a merge patch guarded
	// by the object's resourceVersion.
	StatusManager string
	// Peers, with a Shard, reach the other replicas: the replica that
	// hashing names for an object writes its whole status and records its
	// events, from the entries and events the others send it
	// (peerstatus.go). Nil: each replica writes its own entries.
	Peers PeerChannel
	// Log receives the engine's logs.
	Log logr.Logger
}

// Shard says which member clusters this replica serves; *sharding.Shard
// implements it.
type Shard interface {
	// WriteDeadline is when writes to cluster must have ended, and whether
	// this replica may write to it at all.
	WriteDeadline(cluster string) (time.Time, bool)
	// Serving reports whether this replica holds cluster's fence, even
	// one whose renewal is overdue: the member's work is still its own
	// and waits for WriteDeadline rather than being dropped.
	Serving(cluster string) bool
	// Assigned reports whether this replica reports on a cluster name that
	// is not joined.
	Assigned(cluster string) bool
}

// PullMembers tells which members are in Pull mode.
type PullMembers interface {
	// Pulled reports whether cluster is a Pull-mode member.
	Pulled(cluster string) bool
	// Any reports whether some member is.
	Any() bool
}

// Engine propagates every enabled federated type; it implements
// typeconfig.TypeRunner. Stop it when its controller-manager stops.
type Engine struct {
	opts   Options
	host   dynamic.Interface
	kube   kubernetes.Interface
	events eventLanes

	ctx    context.Context
	cancel context.CancelFunc

	mu      gosync.RWMutex
	workers map[string]*typeWorker

	// fedNS is the engine's own FederatedNamespace cache, while the
	// namespaces type does not run (fednamespaces.go).
	fedNS fedNamespaces

	// outbox batches messages to the other replicas (with Peers).
	outbox *peerOutbox

	dispatchMu  gosync.Mutex
	dispatchers map[string]*clusterDispatcher

	// clusterEvents are members whose change is yet to be handed to the
	// types, off the goroutines of the health probes and informers.
	clusterEvents workqueue.TypedInterface[string]

	// clusters caches clusterSet between KubeFedCluster events, which
	// bump clustersGen; clustersWatched says those events are heard, and
	// without them every call lists the clusters.
	clusters        atomic.Pointer[cachedClusterSet]
	clustersGen     atomic.Uint64
	clustersWatched atomic.Bool

	watchOnce         gosync.Once
	removeReadiness   func()
	hostKubeSystemUID types.UID
	uidMu             gosync.Mutex
	memberUIDs        map[string]memberUID

	// bulk orders the host's status writes of bulk work behind prompt
	// work's, across types: see bulkGate and bulkStatusWrites.
	bulk *bulkGate

	// unreadyMu guards what the member fan-outs acted on: each member's
	// readiness as its objects were last planned for it, the members
	// whose next change re-plans everything, and the spells not Ready
	// whose fan-out waits for the unavailable delay.
	unreadyMu  gosync.Mutex
	actedReady map[string]bool
	fullFanOut map[string]bool
	spells     map[string]*unreadySpell
}

type memberUID struct {
	generation uint64
	uid        types.UID
}

// NewEngine returns an engine whose types run until ctx ends or Stop.
func NewEngine(ctx context.Context, o Options) (*Engine, error) {
	if o.Workers < 1 {
		o.Workers = 1
	}
	if o.ClusterWorkers < 1 {
		o.ClusterWorkers = o.Workers
	}
	if o.ClusterTimeout <= 0 {
		o.ClusterTimeout = DefaultClusterTimeout
	}
	host, err := dynamic.NewForConfig(o.HostConfig)
	if err != nil {
		return nil, fmt.Errorf("host dynamic client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(o.HostConfig)
	if err != nil {
		return nil, fmt.Errorf("host client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	events := newEventLanes(ctx, eventLaneCount, func() record.EventSink {
		return &typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")}
	})
	if o.Shard == nil || o.Agent {
		o.Peers = nil
	}
	e := &Engine{
		opts: o, host: host, kube: kube, events: events,
		ctx: ctx, cancel: cancel,
		workers:       map[string]*typeWorker{},
		dispatchers:   map[string]*clusterDispatcher{},
		clusterEvents: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "member-changes"}),
		memberUIDs:    map[string]memberUID{},
		bulk:          newBulkGate(bulkStatusWrites(o.Workers), bulkQuiet, bulkFloor),
		actedReady:    map[string]bool{},
		fullFanOut:    map[string]bool{},
		spells:        map[string]*unreadySpell{},
	}
	e.outbox = newPeerOutbox(e)
	return e, nil
}

// bulkStatusWrites is how many status writes of bulk work (the objects a
// member's readiness or a namespace change planned again, thousands at
// once) the engine has in flight to the host at a time: a quarter of a
// type's workers, and fewer while prompt work is on (bulkGate). The host
// answers every write in one line; without a bound, a fan-out's writes
// fill it and a new object's finalizer and status wait behind them.
// Prompt work is not bounded.
func bulkStatusWrites(workers int) int {
	return max(1, workers/4)
}

// Stop stops every type and the engine's event recording.
func (e *Engine) Stop() {
	e.mu.Lock()
	workers := e.workers
	e.workers = map[string]*typeWorker{}
	e.mu.Unlock()
	for _, w := range workers {
		w.stop()
	}
	if e.removeReadiness != nil {
		e.removeReadiness()
	}
	e.cancel()
	e.endSpells()
	e.clusterEvents.ShutDown()
	e.dispatchMu.Lock()
	dispatchers := e.dispatchers
	e.dispatchers = map[string]*clusterDispatcher{}
	e.dispatchMu.Unlock()
	for _, d := range dispatchers {
		d.stop()
	}
	e.events.Shutdown()
}

// StartType starts propagating the type of ftc, replacing a running one.
func (e *Engine) StartType(_ context.Context, ftc *corev1beta1.FederatedTypeConfig) error {
	if e.ctx.Err() != nil {
		return fmt.Errorf("the propagation engine is stopped")
	}
	e.watchOnce.Do(e.watchClusters)
	w, err := newTypeWorker(e, ftc)
	if err != nil {
		return err
	}
	e.mu.Lock()
	old := e.workers[ftc.Name]
	e.workers[ftc.Name] = w
	e.mu.Unlock()
	if old != nil {
		old.stop()
	}
	w.start(e.ctx)
	e.opts.Log.Info("propagating type", "federatedTypeConfig", ftc.Name, "workers", e.opts.Workers)
	return nil
}

// StopType stops propagating a type; member objects are left as they are.
func (e *Engine) StopType(name string) {
	e.mu.Lock()
	w := e.workers[name]
	delete(e.workers, name)
	e.mu.Unlock()
	if w != nil {
		w.stop()
		e.opts.Log.Info("stopped propagating type", "federatedTypeConfig", name)
	}
}

func (e *Engine) worker(name string) *typeWorker {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.workers[name]
}

func (e *Engine) allWorkers() []*typeWorker {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]*typeWorker, 0, len(e.workers))
	for _, w := range e.workers {
		out = append(out, w)
	}
	return out
}

// watchClusters re-enqueues the objects a member change affects: a member
// that became ready or unready, was joined or unjoined, or changed labels.
func (e *Engine) watchClusters() {
	go func() {
		for {
			name, shutdown := e.clusterEvents.Get()
			if shutdown {
				return
			}
			e.clusterChanged(name)
			e.clusterEvents.Done(name)
		}
	}()
	// The tracker calls listeners with the lock its probes take held.
	e.removeReadiness = e.opts.Readiness.AddListener(cluster.ReadinessListenerFunc(func(name string, _ bool) {
		e.clusterEvent(name, false)
	}))
	inf, err := e.opts.Cache.GetInformer(e.ctx, &corev1beta1.KubeFedCluster{})
	if err != nil {
		e.opts.Log.Error(err, "watch KubeFedClusters; label changes and joins re-enqueue nothing until objects change")
		return
	}

	name := func(obj any) string {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if c, ok := obj.(*corev1beta1.KubeFedCluster); ok && c.Namespace == e.opts.Namespace {
			return c.Name
		}
		return ""
	}
	// Any change of a KubeFedCluster may change the cluster set: the cached
	// one is computed again on next use (clusterSet). The informer's store
	// holds the change before its handlers hear of it, and the generation
	// is bumped here, in the handler that fans the change out, before the
	// fan-out: handlers of one informer run apart, so a bump in a handler of
	// its own could come after the re-plans it is meant for.
	bump := func() { e.clustersGen.Add(1) }
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			bump()
			if n := name(obj); n != "" {
				e.clusterEvent(n, true)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			bump()
			o, ok1 := oldObj.(*corev1beta1.KubeFedCluster)
			n, ok2 := newObj.(*corev1beta1.KubeFedCluster)
			if !ok1 || !ok2 || n.Namespace != e.opts.Namespace {
				return
			}
			// Of status updates only readiness matters; of the spec, a
			// change between Push and Pull moves who writes to it. The cache the
			// reconciles read readiness from is this informer's, so this
			// event, not the tracker's, is when they can see the change.
			sameSpec := labels.Equals(o.Labels, n.Labels) && n.DeletionTimestamp.Equal(o.DeletionTimestamp) && o.Spec.Mode == n.Spec.Mode
			if sameSpec && o.IsReady() == n.IsReady() {
				return
			}
			e.clusterEvent(n.Name, !sameSpec)
		},
		DeleteFunc: func(obj any) {
			bump()
			if n := name(obj); n != "" {
				e.letGo(n)
				e.clusterEvent(n, true)
			}
		},
	})
	if err == nil {
		e.clustersWatched.Store(true)
	}
}

// clusterChanged enqueues, in every type, the objects placed on the
// member or reporting it in their status, or of a member not Ready for
// less than the unavailable delay, none of them, or of one back within it,
// only those planned while it was not (fanOutScope).
func (e *Engine) clusterChanged(name string) {
	if e.pulled(name) && !e.opts.Agent {
		// Its agent serves it now (it moved from Push to Pull mode).
		e.letGo(name)
	}
	set := e.clusterSet()
	keys, full := e.fanOutScope(name, set, time.Now())
	if full {
		for _, w := range e.allWorkers() {
			w.enqueueForCluster(name, set)
		}
		return
	}
	for k := range keys {
		if w := e.worker(k.typeConfig); w != nil {
			enqueue(w.queue, k.key, bulkPriority, 0)
		}
	}
}

// letGo drops what this engine keeps for a member it no longer serves, as
// it left the federation or its agent serves it now: its informers (whose
// credentials were withdrawn), its dispatcher and the records of this
// engine's writes to it.
func (e *Engine) letGo(name string) {
	e.opts.Members.Remove(name)
	e.removeDispatcher(name)
	e.forgetWrites(name)
}

// cachedClusterSet is a cluster set and the clustersGen it was listed at.
type cachedClusterSet struct {
	gen uint64
	set placement.ClusterSet
}

// clusterSet is every joined member as placement sees it. A member is ready
// when its KubeFedCluster's Ready condition is True, the same source the
// readiness tracker reads, so that a restarted controller-manager sees the
// members ready at once rather than after the first probes.
//
// Every plan and status write asks for it, so it is listed once per change
// of the KubeFedClusters rather than on every call: a list deep-copies
// every KubeFedCluster, status and API list included, which made the
// re-plans of a member turning ready or not ready CPU- and lock-bound
// (docs/performance.md, "Readiness flip").
func (e *Engine) clusterSet() placement.ClusterSet {
	gen := e.clustersGen.Load()
	if c := e.clusters.Load(); c != nil && c.gen == gen && e.clustersWatched.Load() {
		return c.set
	}
	set, ok := e.listClusterSet()
	// A change heard meanwhile makes this set stale; its generation says so.
	if ok && e.clustersWatched.Load() {
		e.clusters.Store(&cachedClusterSet{gen: gen, set: set})
	}
	return set
}

// listClusterSet lists the cluster set from the cache; ok is false when
// the list failed, and the set is then empty.
func (e *Engine) listClusterSet() (placement.ClusterSet, bool) {
	list := &corev1beta1.KubeFedClusterList{}
	// Only names, labels, readiness and deletion are read, and the label
	// maps kept are never changed: no copy of the cached objects is needed.
	if err := e.opts.Client.List(e.ctx, list, client.InNamespace(e.opts.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return placement.NewClusterSet(nil), false
	}
	clusters := make([]placement.Cluster, 0, len(list.Items))
	for i := range list.Items {
		c := &list.Items[i]
		if !c.DeletionTimestamp.IsZero() {
			continue
		}
		clusters = append(clusters, placement.Cluster{Name: c.Name, Labels: c.Labels, Ready: c.IsReady()})
	}
	return placement.NewClusterSet(clusters), true
}

// isHostCluster reports whether a member is the host cluster itself, known
// by the UID of its kube-system namespace, as KubeFed tells them.
func (e *Engine) isHostCluster(ctx context.Context, name string) (bool, error) {
	clients, ok := e.opts.Registry.Get(name)
	if !ok {
		return false, fmt.Errorf("no clients for cluster %q", name)
	}
	e.uidMu.Lock()
	hostUID := e.hostKubeSystemUID
	known, seen := e.memberUIDs[name]
	e.uidMu.Unlock()
	if hostUID == "" {
		ns, err := e.kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("read the host's kube-system namespace: %w", err)
		}
		hostUID = ns.UID
		e.uidMu.Lock()
		e.hostKubeSystemUID = hostUID
		e.uidMu.Unlock()
	}
	if seen && known.generation == clients.Generation() {
		return known.uid == hostUID, nil
	}
	kube, err := clients.Kubernetes()
	if err != nil {
		return false, err
	}
	ns, err := kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("read kube-system of cluster %q: %w", name, err)
	}
	e.uidMu.Lock()
	e.memberUIDs[name] = memberUID{generation: clients.Generation(), uid: ns.UID}
	e.uidMu.Unlock()
	return ns.UID == hostUID, nil
}

// recorder returns the event recorder of a federated kind, whose component
// is KubeFed's `<lowercase federated kind>-controller`.
func (e *Engine) recorder(federatedKind string) record.EventRecorder {
	return e.events.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: strings.ToLower(federatedKind) + "-controller"})
}

// serves reports whether this replica writes to cluster.
func (e *Engine) serves(cluster string) bool {
	if e.pulled(cluster) {
		return false
	}
	return e.opts.Shard == nil || e.opts.Shard.Serving(cluster)
}

// ClusterChanged re-plans what a change of the named member affects, for
// changes the engine does not watch itself, such as its PullMembers
// learning of a member that moved between Push and Pull.
func (e *Engine) ClusterChanged(name string) {
	if e.ctx.Err() == nil {
		e.clusterEvent(name, true)
	}
}

// pulled reports whether cluster is a Pull-mode member, which its agent
// serves.
func (e *Engine) pulled(cluster string) bool {
	return e.opts.Pulled != nil && e.opts.Pulled.Pulled(cluster)
}

// standsIn reports whether the control plane writes a Pull-mode member's
// entries for it: while the member is not ready (its agent gone, or its
// heartbeat saying so), as ClusterNotReady, which is what a push member
// that is not ready shows. With scale-out, one replica by hashing does.
// An agent never stands in for its own cluster.
func (e *Engine) standsIn(cluster string, set placement.ClusterSet) bool {
	if e.opts.Agent || !e.pulled(cluster) {
		return false
	}
	if c, joined := set.Get(cluster); !joined || c.Ready {
		return false
	}
	return e.opts.Shard == nil || e.opts.Shard.Assigned(cluster)
}

// anyPulled reports whether some member is in Pull mode: its agent writes
// status entries too.
func (e *Engine) anyPulled() bool {
	return e.opts.Pulled != nil && e.opts.Pulled.Any()
}

// reports reports whether this replica writes cluster's entries in the
// status of federated objects: those of the members it serves, and of
// names no replica serves (not joined) that hashing gives it.
func (e *Engine) reports(cluster string, joined bool) bool {
	if joined && e.pulled(cluster) {
		return false
	}
	if e.opts.Shard == nil {
		return true
	}
	if joined {
		return e.opts.Shard.Serving(cluster)
	}
	return e.opts.Shard.Assigned(cluster)
}

// Acquired starts serving a member this replica now holds the fence of:
// its caches start and every object placed on it is planned again.
func (e *Engine) Acquired(cluster string) {
	e.opts.Members.Own(cluster)
	e.clusterEvent(cluster, true)
}

// Releasing stops serving a member: its dispatcher's writes end before it
// returns, then its caches stop and the objects placed on it are planned
// again without it.
func (e *Engine) Releasing(cluster string) {
	if d := e.takeDispatcher(cluster); d != nil {
		d.stop()
	}
	// Another replica writes to it from now on: were it handed back, a
	// record of this one's writes would take the other's for edits.
	e.forgetWrites(cluster)
	e.opts.Members.Disown(cluster)
	if e.ctx.Err() == nil {
		e.clusterEvent(cluster, true)
	}
}

// held are the joined members of set this replica serves, or nil when it
// serves every member.
func (e *Engine) held(set placement.ClusterSet) map[string]bool {
	if e.opts.Shard == nil && !e.anyPulled() {
		return nil
	}
	out := map[string]bool{}
	for _, c := range set.Names() {
		if e.serves(c) {
			out[c] = true
		}
	}
	return out
}
