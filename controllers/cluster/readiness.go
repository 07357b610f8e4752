package cluster

import (
	"context"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// ReadinessListener is told when a member cluster becomes ready or stops
// being ready, including when it is deleted. Calls are serialized and made
// synchronously from the cluster controller, so a listener must return
// quickly, typically after enqueueing work, and may query the tracker but
// must not call other methods of the Reconciler.
type ReadinessListener interface {
	ClusterReadinessChanged(name string, ready bool)
}

// ReadinessListenerFunc adapts a function to a ReadinessListener.
type ReadinessListenerFunc func(name string, ready bool)

// ClusterReadinessChanged calls f.
func (f ReadinessListenerFunc) ClusterReadinessChanged(name string, ready bool) { f(name, ready) }

// ReadinessTracker knows which member clusters are ready, as reported by
// their Ready condition, and tells listeners about changes. It is safe for
// concurrent use; the controller-manager shares one between the cluster
// controller, which writes it, and the controllers that gate work on it.
type ReadinessTracker struct {
	namespace string

	// notifyMu serializes changes with their notifications, so listeners
	// see the changes of one cluster in order.
	notifyMu sync.Mutex

	mu        sync.RWMutex
	ready     map[string]bool
	listeners map[int]ReadinessListener
	nextID    int
}

// NewReadinessTracker returns a tracker for the KubeFedClusters of namespace,
// with no cluster ready.
func NewReadinessTracker(namespace string) *ReadinessTracker {
	return &ReadinessTracker{namespace: namespace, ready: map[string]bool{}, listeners: map[int]ReadinessListener{}}
}

// IsReady says whether the named cluster is ready.
func (t *ReadinessTracker) IsReady(name string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.ready[name]
}

// ReadyClusters returns the names of the ready clusters, sorted.
func (t *ReadinessTracker) ReadyClusters() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]string, 0, len(t.ready))
	for name := range t.ready {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// AddListener registers l for every later change and returns the function
// that unregisters it.
func (t *ReadinessTracker) AddListener(l ReadinessListener) (remove func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.nextID
	t.nextID++
	t.listeners[id] = l
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.listeners, id)
	}
}

// set records the readiness of a cluster and notifies listeners if it changed.
func (t *ReadinessTracker) set(name string, ready bool) {
	t.notifyMu.Lock()
	defer t.notifyMu.Unlock()
	t.mu.Lock()
	if t.ready[name] == ready {
		t.mu.Unlock()
		return
	}
	if ready {
		t.ready[name] = true
	} else {
		delete(t.ready, name)
	}
	listeners := make([]ReadinessListener, 0, len(t.listeners))
	for _, l := range t.listeners {
		listeners = append(listeners, l)
	}
	t.mu.Unlock()
	for _, l := range listeners {
		l.ClusterReadinessChanged(name, ready)
	}
}

// Set records the readiness of a cluster that no probe worker watches: a
// Pull-mode member's agent says whether its own cluster is ready.
func (t *ReadinessTracker) Set(name string, ready bool) { t.set(name, ready) }

// forget drops a deleted cluster, which is no longer ready.
func (t *ReadinessTracker) forget(name string) { t.set(name, false) }

// object is the stand-in KubeFedCluster of a readiness event: it carries the
// name and namespace only; IsReady has the readiness.
func (t *ReadinessTracker) object(name string) *fedv1b1.KubeFedCluster {
	return &fedv1b1.KubeFedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.namespace}}
}

// ReadinessSource is a controller-runtime source that emits a generic event
// for a KubeFedCluster whenever its readiness changes, for controllers that
// must re-enqueue work when a member comes or goes:
//
//	builder.WatchesRawSource(cluster.ReadinessSource(tracker, handler.EnqueueRequestsFromMapFunc(objectsPlacedOn)))
//
// The event's object has only the name and namespace set.
func ReadinessSource[request comparable](t *ReadinessTracker, h handler.TypedEventHandler[client.Object, request]) source.TypedSource[request] {
	return source.TypedFunc[request](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[request]) error {
		remove := t.AddListener(ReadinessListenerFunc(func(name string, _ bool) {
			h.Generic(ctx, event.TypedGenericEvent[client.Object]{Object: t.object(name)}, q)
		}))
		go func() {
			<-ctx.Done()
			remove()
		}()
		return nil
	})
}
