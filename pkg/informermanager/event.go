package informermanager

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// EventType says what happened to a member object.
type EventType string

// The event types a Handler receives.
const (
	// Added is sent for every object in a cache when a subscriber joins or
	// an informer starts, and for each object created later.
	Added EventType = "Added"
	// Updated is sent when an object's resourceVersion changed.
	Updated EventType = "Updated"
	// Deleted is sent when an object is deleted or stops matching the
	// manager's label selector.
	Deleted EventType = "Deleted"
)

// Event is one change to an object in a member cluster's cache.
type Event struct {
	// Cluster is the name the cluster was added with.
	Cluster string
	// Type says what happened.
	Type EventType
	// Object is the object after the change; for Deleted it is the last
	// state the cache knew, which may miss changes made shortly before
	// the deletion if the watch was interrupted meanwhile.
	//
	// It is shared with the cache and with every other subscriber: it must
	// not be modified. DeepCopy it first.
	Object *unstructured.Unstructured
	// OldObject is the previous state for Updated and nil otherwise; it is
	// shared as well.
	OldObject *unstructured.Unstructured
}

// Handler receives the events of one subscription. Events of one (cluster,
// resource) arrive in order, one at a time; different clusters and
// different subscriptions are called concurrently. A Handler should return
// quickly, typically after enqueueing a key, because its events queue up
// behind it (without delaying other subscribers). It must not call
// Unsubscribe, AddCluster, RemoveCluster or Stop, which wait for running
// handlers to return; the other methods of Manager are fine.
type Handler func(Event)

// subscription is one Subscribe call's handler behind a gate that every
// delivery of the subscription passes. Closing it makes unsubscribing final
// even for deliveries that a concurrent RemoveCluster or AddCluster has
// already taken out of the Manager's maps and not yet closed: unsubscribe
// cannot reach those, but it can wait here for their running calls.
type subscription struct {
	handler Handler

	mu     sync.RWMutex
	closed bool
}

func (s *subscription) call(e Event) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.closed {
		s.handler(e)
	}
}

// close returns once no handler call of s is running and none will follow.
func (s *subscription) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// delivery connects one subscription to one informer. The gate makes
// unsubscribing and removing clusters final: client-go's RemoveEventHandler
// does not wait for a notification already being delivered, but closing the
// gate does, and nothing passes it afterwards.
type delivery struct {
	cluster      string
	sub          *subscription
	registration cache.ResourceEventHandlerRegistration

	mu     sync.Mutex
	closed bool
}

func (d *delivery) deliver(e Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	e.Cluster = d.cluster
	d.sub.call(e)
}

// close returns once no handler call of d is running and none will follow.
func (d *delivery) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

// OnAdd implements cache.ResourceEventHandler.
func (d *delivery) OnAdd(obj any, _ bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		d.deliver(Event{Type: Added, Object: u})
	}
}

// OnUpdate implements cache.ResourceEventHandler.
func (d *delivery) OnUpdate(oldObj, newObj any) {
	newU, ok := newObj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	oldU, _ := oldObj.(*unstructured.Unstructured)
	// A relist after an interrupted watch reports every object as updated.
	// With an unchanged resourceVersion nothing changed, and passing on
	// thousands of such events per member would only make every
	// subscriber redo its work.
	if oldU != nil && newU.GetResourceVersion() != "" && oldU.GetResourceVersion() == newU.GetResourceVersion() {
		return
	}
	d.deliver(Event{Type: Updated, Object: newU, OldObject: oldU})
}

// OnDelete implements cache.ResourceEventHandler.
func (d *delivery) OnDelete(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		d.deliver(Event{Type: Deleted, Object: u})
	}
}
