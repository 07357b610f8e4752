package sync

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	gosync "sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
	"github.com/kubefed-io/kubefed/pkg/informermanager"
	"github.com/kubefed-io/kubefed/pkg/placement"
)

// statusCoalesceDelay gathers the status-only changes of a member object
// (a rollout updates a Deployment's status many times a second) into one
// reconcile, so a busy member cannot flood the host with status writes.
const statusCoalesceDelay = time.Second

// Work priorities. A change of a federated object, or of one member's copy
// of it, is planned, dispatched and reported before work fanned out from
// one change to many objects: a member turning Ready or NotReady, joining,
// leaving or relabelled, a FederatedNamespace changed. A member with
// 10,000 objects flipping then re-plans them behind new objects, not in
// front of them. An item keeps the higher of its priorities.
const (
	promptPriority = 0
	bulkPriority   = -100
)

// enqueue adds item to q at priority, after a delay when after > 0.
func enqueue[T comparable](q priorityqueue.PriorityQueue[T], item T, priority int, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &priority, After: after}, item)
}

// retryLater adds item to q again after its backoff, at priority.
func retryLater[T comparable](q priorityqueue.PriorityQueue[T], item T, priority int) {
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &priority, RateLimited: true}, item)
}

// workQueue is a priority work queue that may be shut down more than once.
type workQueue[T comparable] struct {
	priorityqueue.PriorityQueue[T]
	shutdown gosync.Once
}

// ShutDown ends the queue; later calls do nothing.
func (q *workQueue[T]) ShutDown() { q.shutdown.Do(q.PriorityQueue.ShutDown) }

// ShutDownWithDrain is ShutDown, as in controller-runtime's queue.
func (q *workQueue[T]) ShutDownWithDrain() { q.ShutDown() }

// newQueue is a priority work queue with the engine's backoff.
func newQueue[T comparable](name string) *workQueue[T] {
	return &workQueue[T]{PriorityQueue: priorityqueue.New(name, func(o *priorityqueue.Opts[T]) {
		o.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[T](100*time.Millisecond, time.Minute)
	})}
}

// typeWorker propagates the federated objects of one FederatedTypeConfig.
type typeWorker struct {
	e        *Engine
	name     string
	ftc      *corev1beta1.FederatedTypeConfig
	fedGVR   schema.GroupVersionResource
	target   targetType
	gvr      schema.GroupVersionResource
	recorder record.EventRecorder
	// events records the per-member Normal events, one per burst.
	events *memberEvents
	log    logr.Logger

	collectStatus bool
	// applyStatus: the type's CRD keys status.clusters by name, so the
	// entries of members this engine serves, where others write entries
	// too, are applied server-side (see writeStatus).
	applyStatus bool
	// aggregation sums counts of the copies into the status; nil when the
	// type has none.
	aggregation *federatedtype.Aggregation

	informer toolscache.SharedIndexInformer
	// queue holds the objects to plan; statusQueue the objects whose
	// members' outcomes changed, to write their status. Both hand out
	// prompt work before bulk work.
	queue       *workQueue[string]
	statusQueue *workQueue[string]

	// states are the plans and outcomes of every object, per member.
	stateMu gosync.RWMutex
	states  map[string]*objectState

	statusMu      gosync.Mutex
	statusWritten map[string]statusRecord

	// peerMu guards what was sent to other replicas of objects they own
	// and what they sent of objects this replica owns (peerstatus.go).
	peerMu   gosync.Mutex
	peerSent map[string]peerSent
	peerIn   map[string]*peerHeld
	peerSeq  uint64
	// peerSwept is when the two tables were last swept of objects gone.
	peerSwept time.Time
	// released is the UID of each object whose finalizer this engine
	// removed, until the cache shows the object gone: events the cache
	// delivers meanwhile must not release it again.
	released map[string]types.UID

	// pullSeen are, by object key, the Pull-mode members seen reporting
	// on the object (pullMayHold reads them when it is deleted); dropped
	// with what forgetGone drops.
	pullSeenMu gosync.Mutex
	pullSeen   map[string]pullEntriesSeen

	cancel      context.CancelFunc
	done        gosync.WaitGroup
	unsubscribe func()

	// written remembers, per member and object, the hash last written and
	// the resourceVersion the write produced: a copy still at that version
	// is up to date even where the apiserver normalized a field in a way
	// the comparison does not know.
	writtenMu gosync.RWMutex
	written   map[writeKey]writeRecord

	// unsynced is when each member's cache of the target type was first
	// seen unsynced, so that a member that never syncs is reported rather
	// than waited for forever.
	unsyncedMu gosync.Mutex
	unsynced   map[string]time.Time

	// changed is when each federated object's current generation was first
	// seen, for propagationLatency; dropped once every member is current.
	changedMu gosync.Mutex
	changed   map[string]changeSeen
}

type changeSeen struct {
	generation int64
	at         time.Time
}

type writeKey struct{ cluster, key string }

type writeRecord struct {
	hash, resourceVersion string
	// generation is the copy's metadata.generation as written; 0 for a
	// kind without one.
	generation int64
}

func newTypeWorker(e *Engine, ftc *corev1beta1.FederatedTypeConfig) (*typeWorker, error) {
	ft, tt := ftc.Spec.FederatedType, ftc.Spec.TargetType
	if ft.PluralName == "" || tt.PluralName == "" || tt.Version == "" || ft.Version == "" {
		return nil, fmt.Errorf("FederatedTypeConfig %s: federatedType and targetType need a version and a pluralName", ftc.Name)
	}
	aggregation, err := federatedtype.AggregationFor(ftc)
	if err != nil {
		// The schema refuses what it can; a mistake it lets through costs
		// the counts, never the type's propagation.
		e.opts.Log.Error(err, "Status aggregation is off for this type", "federatedTypeConfig", ftc.Name)
		aggregation = nil
	}
	w := &typeWorker{
		aggregation: aggregation,
		e:           e,
		name:        ftc.Name,
		ftc:         ftc,
		fedGVR:      schema.GroupVersionResource{Group: ft.Group, Version: ft.Version, Resource: ft.PluralName},
		gvr:         schema.GroupVersionResource{Group: tt.Group, Version: tt.Version, Resource: tt.PluralName},
		target: targetType{
			apiVersion: tt.GroupVersionString(),
			kind:       tt.Kind,
			gk:         schema.GroupKind{Group: tt.Group, Kind: tt.Kind},
			namespaced: tt.Namespaced(),
		},
		recorder:      e.recorder(ft.Kind),
		log:           e.opts.Log.WithValues("federatedTypeConfig", ftc.Name),
		collectStatus: ftc.StatusCollectionEnabled() && e.opts.StatusCollection,
		written:       map[writeKey]writeRecord{},
		unsynced:      map[string]time.Time{},
		changed:       map[string]changeSeen{},
		states:        map[string]*objectState{},
		statusWritten: map[string]statusRecord{},
		released:      map[string]types.UID{},
		peerSent:      map[string]peerSent{},
		peerIn:        map[string]*peerHeld{},
	}
	if e.opts.StatusManager != "" && e.opts.Shard != nil && !e.opts.Agent {
		w.applyStatus = e.statusClustersKeyed(w.fedGVR)
	}
	// The informer and queue exist before the worker is published, so
	// that other types' workers may read them without synchronization.
	namespace := metav1.NamespaceAll
	if w.e.opts.Scope == corev1beta1.NamespaceScoped {
		namespace = w.e.opts.Namespace
	}
	w.events = newMemberEvents(w.recorder, eventWindow, eventStatusWait)
	w.informer = dynamicinformer.NewFilteredDynamicInformer(w.e.host, w.fedGVR, namespace, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}, nil).Informer()
	_ = w.informer.SetTransform(compactHostObject)
	w.queue = newQueue[string](w.name)
	w.statusQueue = newQueue[string](w.name + "-status")
	_, _ = w.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			w.noteChange(obj)
			w.enqueueObject(obj)
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := objectMeta(oldObj)
			n, ok2 := objectMeta(newObj)
			if ok2 {
				w.statusSeen(n)
			}
			if ok2 && w.e.anyPulled() && !w.e.opts.Agent {
				w.notePullEntries(newObj)
			}
			if ok1 && ok2 && (w.e.opts.Shard != nil || w.e.anyPulled()) && !sameCachedStatus(oldObj, newObj) {
				// Another replica, or a Pull-mode member's agent, wrote
				// its members' entries: the Propagation condition adds
				// up every member's.
				w.statusQueue.Add(objectKey(n))
			}
			// Status writes, ours included, do not change what is desired;
			// nor does adding our finalizer, which the reconcile that added
			// it goes on from. Reconciling again on a copy that does not
			// show that reconcile's status write yet would only lose a
			// status write to a conflict.
			if ok1 && ok2 && o.GetGeneration() == n.GetGeneration() && o.GetGeneration() != 0 &&
				reflect.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) &&
				(reflect.DeepEqual(o.GetFinalizers(), n.GetFinalizers()) ||
					// With a shard, the finalizer may be another replica's
					// doing, which this one waits for to plan.
					(onlyOurFinalizerAdded(o.GetFinalizers(), n.GetFinalizers()) && (w.e.opts.Shard == nil || w.hasState(objectKey(n))))) &&
				n.GetDeletionTimestamp().Equal(o.GetDeletionTimestamp()) {
				return
			}
			w.noteChange(newObj)
			w.enqueueObject(newObj)
		},
		DeleteFunc: w.enqueueObject,
	})
	return w, nil
}

// onlyOurFinalizerAdded reports whether after is before plus the sync
// controller's finalizer.
func onlyOurFinalizerAdded(before, after []string) bool {
	if slices.Contains(before, corev1beta1.SyncControllerFinalizer) || !slices.Contains(after, corev1beta1.SyncControllerFinalizer) {
		return false
	}
	rest := slices.DeleteFunc(slices.Clone(after), func(f string) bool { return f == corev1beta1.SyncControllerFinalizer })
	return slices.Equal(before, rest)
}

// noteChange remembers when a generation of a federated object was first seen.
func (w *typeWorker) noteChange(obj any) {
	u, ok := objectMeta(obj)
	if !ok {
		return
	}
	key, err := toolscache.MetaNamespaceKeyFunc(u)
	if err != nil {
		return
	}
	w.changedMu.Lock()
	if c, ok := w.changed[key]; !ok || c.generation != u.GetGeneration() {
		w.changed[key] = changeSeen{generation: u.GetGeneration(), at: time.Now()}
	}
	w.changedMu.Unlock()
}

// observeWrite records the latency of a member write made for fed's
// current generation.
func (w *typeWorker) observeWrite(fed *unstructured.Unstructured) {
	w.changedMu.Lock()
	c, ok := w.changed[objectKey(fed)]
	w.changedMu.Unlock()
	if ok && c.generation == fed.GetGeneration() {
		propagationLatency.Observe(time.Since(c.at).Seconds())
	}
}

// settled forgets an object's change once every member is current.
func (w *typeWorker) settled(fed *unstructured.Unstructured) {
	w.changedMu.Lock()
	delete(w.changed, objectKey(fed))
	w.changedMu.Unlock()
}

func (w *typeWorker) isNamespaces() bool { return w.name == corev1beta1.NamespacesTypeConfigName }

// start runs the type's host informer, member subscription and workers.
// Workers begin once the host informer synced, so that a missing federated
// object always means one that does not exist.
func (w *typeWorker) start(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	w.cancel = cancel
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		w.informer.RunWithContext(ctx)
	}()
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		if !toolscache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
			return
		}
		// Members known ready now get their caches, before the
		// subscription asks for informers in them.
		for _, name := range w.e.opts.Readiness.ReadyClusters() {
			w.e.opts.Members.Ensure(name)
		}
		w.unsubscribe = w.e.opts.Members.Subscribe(w.gvr, w.memberEvent)
		for range w.e.opts.Workers {
			w.done.Go(func() {
				for w.processNext(ctx) {
				}
			})
			w.done.Go(func() {
				for w.processStatus(ctx) {
				}
			})
		}
	}()
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
		w.statusQueue.ShutDown()
	}()
}

// stop ends the type's informer, subscription and workers and waits for them.
func (w *typeWorker) stop() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	w.queue.ShutDown()
	w.statusQueue.ShutDown()
	w.done.Wait()
	w.events.stop()
	if w.unsubscribe != nil {
		w.unsubscribe()
	}
	if w.isNamespaces() {
		// Namespaced types lose their namespace placement: re-evaluate.
		for _, other := range w.e.allWorkers() {
			if other.target.namespaced {
				other.enqueueAll()
			}
		}
	}
}

func (w *typeWorker) enqueueObject(obj any) {
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	w.queue.Add(key)
	if w.isNamespaces() {
		w.e.fedNamespaceChanged(obj)
	}
}

// fedNamespaceChanged enqueues the objects of the namespace of a
// FederatedNamespace that changed (an informer's object, or the last
// state of one deleted), from whichever cache saw it.
func (e *Engine) fedNamespaceChanged(obj any) {
	if m, ok := objectMeta(obj); ok {
		e.namespaceChanged(m.GetNamespace())
	}
}

// namespaceChanged enqueues the objects of every namespaced type in a
// namespace whose FederatedNamespace changed.
func (e *Engine) namespaceChanged(namespace string) {
	for _, w := range e.allWorkers() {
		if !w.target.namespaced || w.informer == nil {
			continue
		}
		objs, err := w.informer.GetIndexer().ByIndex(toolscache.NamespaceIndex, namespace)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if key, err := toolscache.MetaNamespaceKeyFunc(o); err == nil {
				enqueue(w.queue, key, bulkPriority, 0)
			}
		}
	}
}

func (w *typeWorker) enqueueAll() {
	for _, key := range w.informer.GetIndexer().ListKeys() {
		enqueue(w.queue, key, bulkPriority, 0)
	}
}

// memberKey is the key of the federated object a member object belongs
// to: the same namespace and name, and for a Namespace the
// FederatedNamespace `<name>/<name>`.
func (w *typeWorker) memberKey(obj *unstructured.Unstructured) string {
	if w.isNamespaces() {
		return obj.GetName() + "/" + obj.GetName()
	}
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// memberEvent hands a change of a member's copy to that member's
// dispatcher, which checks the copy against the plan it already has; only
// a copy without a plan (an orphan, or one seen before its object was
// planned) has its federated object planned. A change of status alone is
// coalesced, and ignored when status is not collected.
func (w *typeWorker) memberEvent(ev informermanager.Event) {
	key := w.memberKey(ev.Object)
	statusOnly := false
	if ev.Type == informermanager.Updated && ev.OldObject != nil {
		o, n := ev.OldObject, ev.Object
		if o.GetResourceVersion() == n.GetResourceVersion() {
			// A relist replaying what the cache held (a member's apiserver
			// restarted): nothing changed. Acting on it would plan every
			// object of the member again.
			return
		}
		statusOnly = o.GetGeneration() != 0 && o.GetGeneration() == n.GetGeneration() &&
			reflect.DeepEqual(o.GetLabels(), n.GetLabels()) &&
			reflect.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) &&
			n.GetDeletionTimestamp().Equal(o.GetDeletionTimestamp())
		if statusOnly && !w.collectStatus && w.aggregation == nil {
			return
		}
	}
	if !w.e.serves(ev.Cluster) {
		// A member handed over a moment ago; its new owner has it.
		return
	}
	p, held := w.planAndHold(key, ev.Cluster)
	if p == nil {
		if statusOnly {
			w.queue.AddAfter(key, statusCoalesceDelay)
		} else {
			w.queue.Add(key)
		}
		return
	}
	d := w.e.dispatcher(ev.Cluster)
	if d == nil {
		return
	}
	switch {
	case ev.Type == informermanager.Updated && !held.IsZero():
		// A copy written a moment ago that the member has not reported on
		// yet, and the object's status write waits for that report: the
		// member's controllers change a new copy several times within a
		// moment (a new Deployment is annotated with its revision, then
		// reports its ReplicaSet created, then available), and the changes
		// are taken together, within what is left of the write's hold, so
		// that the write carries the last of them.
		d.add(w.name, key, promptPriority, firstReportDelay(held, time.Now()))
	case statusOnly:
		// A status change is coalesced.
		d.add(w.name, key, promptPriority, statusCoalesceDelay)
	default:
		d.add(w.name, key, promptPriority, 0)
	}
}

// firstReportDelay is how long a change of a copy not yet reported on by
// the member, whose status write has held since held, waits for the
// changes that follow it: the coalescing second, but no later than shortly
// before the status write's hold ends, so that the write still carries the
// report.
func firstReportDelay(held, now time.Time) time.Duration {
	const margin = 200 * time.Millisecond
	left := reportHold - now.Sub(held) - margin
	return max(0, min(statusCoalesceDelay, left))
}

// enqueueForCluster enqueues the objects a change of the named member
// affects: those placed on it, by name or by a selector, and those whose
// status reports it. The rest are left alone however many there are.
func (w *typeWorker) enqueueForCluster(name string, set placement.ClusterSet) {
	if w.informer == nil {
		return
	}
	only := placement.NewClusterSet(nil)
	if c, ok := set.Get(name); ok {
		only = placement.NewClusterSet([]placement.Cluster{c})
	}
	for _, obj := range w.informer.GetStore().List() {
		u, ok := decoded(obj)
		if !ok {
			continue
		}
		if affectsObject(u.Object, name, only) {
			key, err := toolscache.MetaNamespaceKeyFunc(u)
			if err == nil {
				enqueue(w.queue, key, bulkPriority, 0)
			}
		}
	}
	// Copies whose federated object went away while the member was out
	// of reach are orphans now; nothing else would bring them up, as the
	// member's watch resumes without replaying them.
	lister, synced := w.e.opts.Members.Lister(name, w.gvr)
	if lister == nil || !synced {
		return
	}
	copies, err := lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, c := range copies {
		key := w.memberKey(c)
		if _, exists, _ := w.informer.GetIndexer().GetByKey(key); !exists {
			enqueue(w.queue, key, bulkPriority, 0)
		}
	}
}

// affectsObject reports whether a change of cluster name matters to a
// federated object: its placement selects it in only (the set of just that
// cluster, empty when it is gone), or its status lists it.
func affectsObject(obj map[string]any, name string, only placement.ClusterSet) bool {
	if listsCluster(obj, name) {
		return true
	}
	p, err := placement.FromUnstructured(obj)
	if err != nil {
		return true
	}
	if p.HasClusters {
		for _, c := range p.Clusters {
			if c == name {
				return true
			}
		}
		return false
	}
	return len(only.Select(p).Clusters) > 0
}

func (w *typeWorker) processNext(ctx context.Context) bool {
	key, priority, shutdown := w.queue.GetWithPriority()
	if shutdown {
		return false
	}
	defer w.queue.Done(key)
	if priority >= promptPriority {
		// A new or changed object: bulk status writes make way.
		w.e.bulk.prompt()
	}
	start := time.Now()
	requeue, err := w.reconcile(ctx, key, priority)
	reconcileDuration.Observe(time.Since(start).Seconds())
	w.settle(w.queue, key, priority, requeue, err, "reconcile")
	return true
}

func (w *typeWorker) processStatus(ctx context.Context) bool {
	key, priority, shutdown := w.statusQueue.GetWithPriority()
	if shutdown {
		return false
	}
	defer w.statusQueue.Done(key)
	requeue, err := w.syncStatus(ctx, key, priority < promptPriority)
	w.settle(w.statusQueue, key, priority, requeue, err, "status")
	return true
}

// settle requeues key, at its priority, after a reconcile or status
// write: with backoff after an error, after requeue when asked to.
func (w *typeWorker) settle(q *workQueue[string], key string, priority int, requeue time.Duration, err error, what string) {
	switch {
	case err != nil:
		if !errors.Is(err, context.Canceled) {
			w.log.V(1).Info(what+" failed; retrying", "federatedObject", key, "error", err.Error())
		}
		retryLater(q, key, priority)
	case requeue > 0:
		q.Forget(key)
		enqueue(q, key, priority, requeue)
	default:
		q.Forget(key)
	}
}
