package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// hostName is the cluster of observations of federated objects.
const hostName = "host"

// goneMarker is the state of an object that was deleted.
const goneMarker = "\x00gone"

// stateAnnotation carries an object's state in the bench's watch caches,
// which hold nothing else of it.
const stateAnnotation = "bench.kubefed.io/state"

// plannedAnnotation marks, in the bench's host cache, a federated object
// that carries the engine's finalizer: the engine has taken it up.
const plannedAnnotation = "bench.kubefed.io/planned"

// obsKey names one object in one cluster. The cluster is empty in the send
// time of a federated object, which counts for every member.
type obsKey struct {
	cluster  string
	resource string
	name     string
}

// wave is the set of states a scenario waits for, with the time each was
// first seen by a watch.
type wave struct {
	mu   sync.Mutex
	want map[obsKey]string
	got  map[obsKey]time.Time
	sent map[obsKey]time.Time
	// planned is when the host watch first showed a federated object with
	// the engine's finalizer, having seen it without or created with it
	// (the admission policy adds it), keys without a cluster: objects
	// created in the wave.
	planned   map[obsKey]time.Time
	bare      map[obsKey]bool
	remaining int
	done      chan struct{}
}

func newWave(want map[obsKey]string) *wave {
	w := &wave{want: want, got: make(map[obsKey]time.Time, len(want)),
		sent: map[obsKey]time.Time{}, planned: map[obsKey]time.Time{}, bare: map[obsKey]bool{}, remaining: len(want), done: make(chan struct{})}
	if w.remaining == 0 {
		close(w.done)
	}
	return w
}

func (w *wave) observe(k obsKey, state string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if want, ok := w.want[k]; !ok || want != state {
		return
	}
	if _, seen := w.got[k]; seen {
		return
	}
	w.got[k] = at
	w.remaining--
	if w.remaining == 0 {
		close(w.done)
	}
}

// sentAt records when the write of an object was sent.
func (w *wave) sentAt(k obsKey, at time.Time) {
	w.mu.Lock()
	w.sent[k] = at
	w.mu.Unlock()
}

// plannedAt records when the engine's finalizer was first seen on a
// federated object: created says the watch saw the object's creation.
func (w *wave) plannedAt(k obsKey, planned, created bool, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !planned {
		w.bare[k] = true
		return
	}
	if _, ok := w.planned[k]; !ok && (w.bare[k] || created) {
		w.planned[k] = at
	}
}

// drop stops waiting for the states of an object whose write failed.
func (w *wave) drop(match func(obsKey) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.want {
		if _, seen := w.got[k]; seen || !match(k) {
			continue
		}
		delete(w.want, k)
		w.remaining--
		if w.remaining == 0 {
			close(w.done)
		}
	}
}

// wait blocks until every wanted state was seen or timeout; it returns how
// many were not.
func (w *wave) wait(ctx context.Context, timeout time.Duration) int {
	select {
	case <-w.done:
	case <-time.After(timeout):
	case <-ctx.Done():
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.remaining
}

// observer holds watches on objects in every cluster and reports what they
// see to the current wave.
type observer struct {
	stop chan struct{}
	mu   sync.Mutex
	cur  *wave
	// versions are the latest resourceVersion seen of each object, as the
	// engine's caches know them.
	versions map[obsKey]string
}

func newObserver() *observer {
	return &observer{stop: make(chan struct{}), versions: map[obsKey]string{}}
}

// resourceVersion is the latest resourceVersion a watch saw of an object.
func (o *observer) resourceVersion(k obsKey) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.versions[k]
}

func (o *observer) begin(w *wave) {
	o.mu.Lock()
	o.cur = w
	o.mu.Unlock()
}

func (o *observer) end() {
	o.mu.Lock()
	o.cur = nil
	o.mu.Unlock()
}

func (o *observer) record(k obsKey, state, resourceVersion string) {
	at := time.Now()
	o.mu.Lock()
	w := o.cur
	if state == goneMarker {
		delete(o.versions, k)
	} else {
		o.versions[k] = resourceVersion
	}
	o.mu.Unlock()
	if w != nil {
		w.observe(k, state, at)
	}
}

// planned reports a federated object seen with or without the engine's
// finalizer; created says the watch saw it created.
func (o *observer) planned(k obsKey, planned, created bool) {
	at := time.Now()
	o.mu.Lock()
	w := o.cur
	o.mu.Unlock()
	if w != nil {
		w.plannedAt(obsKey{resource: k.resource, name: k.name}, planned, created, at)
	}
}

func (o *observer) close() { close(o.stop) }

// watch starts an informer on one resource of one cluster and waits until
// it has listed.
func (o *observer) watch(ctx context.Context, clusterName string, dyn dynamic.Interface, gvr schema.GroupVersionResource, resource, namespace, selector string) error {
	inf := dynamicinformer.NewFilteredDynamicInformer(dyn, gvr, namespace, 0, toolscache.Indexers{},
		func(lo *metav1.ListOptions) { lo.LabelSelector = selector }).Informer()
	// The cache keeps only what the waves match on, so that watching
	// hundreds of thousands of copies costs the bench little memory.
	_ = inf.SetTransform(func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		slim := &unstructured.Unstructured{Object: map[string]any{}}
		slim.SetName(u.GetName())
		slim.SetNamespace(u.GetNamespace())
		slim.SetResourceVersion(u.GetResourceVersion())
		ann := map[string]string{stateAnnotation: stateOf(resource, u)}
		if clusterName == hostName && slices.Contains(u.GetFinalizers(), corev1beta1.SyncControllerFinalizer) {
			ann[plannedAnnotation] = "true"
		}
		slim.SetAnnotations(ann)
		return slim, nil
	})
	key := func(obj any) (obsKey, *unstructured.Unstructured, bool) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obsKey{}, nil, false
		}
		return obsKey{cluster: clusterName, resource: resource, name: u.GetName()}, u, true
	}
	seen := func(obj any, created bool) {
		if k, u, ok := key(obj); ok {
			if clusterName == hostName {
				o.planned(k, u.GetAnnotations()[plannedAnnotation] != "", created)
			}
			o.record(k, u.GetAnnotations()[stateAnnotation], u.GetResourceVersion())
		}
	}
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { seen(obj, true) },
		UpdateFunc: func(_, obj any) { seen(obj, false) },
		DeleteFunc: func(obj any) {
			if k, _, ok := key(obj); ok {
				o.record(k, goneMarker, "")
			}
		},
	})
	if err != nil {
		return err
	}
	go inf.Run(o.stop)
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !toolscache.WaitForCacheSync(sctx.Done(), inf.HasSynced) {
		return fmt.Errorf("watch of %s in %s did not sync", gvr.Resource, clusterName)
	}
	return nil
}
