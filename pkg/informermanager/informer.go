package informermanager

import (
	"context"
	"errors"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// resourceInformer is the informer of one resource in one member cluster.
type resourceInformer struct {
	cluster  string
	gvr      schema.GroupVersionResource
	informer cache.SharedIndexInformer
	logger   logr.Logger
	cancel   context.CancelFunc
	// done is closed when every goroutine of the informer, including its
	// handlers' deliveries, has returned.
	done chan struct{}

	// deliveries holds one per subscription, by subscription ID; guarded
	// by Manager.mu.
	deliveries map[uint64]*delivery
}

// newResourceInformer builds, but does not start, the informer of gvr in a
// member reached through client, listing and watching only what selector
// matches, in namespace (all namespaces when empty).
func newResourceInformer(cluster string, gvr schema.GroupVersionResource, client dynamic.Interface, namespace, selector string, logger logr.Logger) *resourceInformer {
	res := resourceLabel(gvr)
	logger = logger.WithValues("cluster", cluster, "resource", res)
	informer := dynamicinformer.NewFilteredDynamicInformer(client, gvr, namespace,
		0, // Resyncs would only replay the cache to handlers that do not want it.
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) { o.LabelSelector = selector },
	).Informer()

	events := informerEvents.WithLabelValues(cluster, res)
	informerSynced.WithLabelValues(cluster, res).Set(0)
	// Neither setter can fail on an informer that has not started.
	_ = informer.SetTransform(func(obj any) (any, error) {
		events.Inc()
		return StripManagedFields(obj), nil
	})
	_ = informer.SetWatchErrorHandlerWithContext(watchErrorLogger(logger))

	return &resourceInformer{
		cluster:    cluster,
		gvr:        gvr,
		informer:   informer,
		logger:     logger,
		deliveries: map[uint64]*delivery{},
	}
}

// StripManagedFields drops metadata.managedFields, typically the largest
// part of a small object's metadata, which nothing in the control plane
// reads. It is idempotent, as client-go requires of a transform.
func StripManagedFields(obj any) any {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	}
	return obj
}

// watchErrorLogger replaces client-go's default, which reports every failed
// list of an unreachable member as an error, every 30 seconds, per resource.
// An unreachable member is the cluster controller's to report; only errors
// that retrying cannot fix (the resource is not served, access is denied)
// are logged without verbosity, and only when they change.
func watchErrorLogger(logger logr.Logger) cache.WatchErrorHandlerWithContext {
	var mu sync.Mutex
	var last string
	return func(_ context.Context, _ *cache.Reflector, err error) {
		if errors.Is(err, context.Canceled) {
			return
		}
		permanent := apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsMethodNotSupported(err)
		mu.Lock()
		repeated := err.Error() == last
		last = err.Error()
		mu.Unlock()
		if permanent && !repeated {
			logger.Error(err, "Cannot list or watch member objects; retrying with backoff")
			return
		}
		logger.V(1).Info("List or watch of member objects failed; retrying with backoff", "err", err.Error())
	}
}

// addDelivery subscribes sub, under id, to the informer. A running
// informer replays its cache to the new handler as Added events.
func (ri *resourceInformer) addDelivery(id uint64, sub *subscription) {
	d := &delivery{cluster: ri.cluster, sub: sub}
	logger := ri.logger
	reg, err := ri.informer.AddEventHandlerWithOptions(d, cache.HandlerOptions{Logger: &logger})
	if err != nil {
		// Only a stopped informer refuses handlers, and the manager drops
		// informers from its maps before stopping them.
		ri.logger.Error(err, "Cannot subscribe to member informer")
		return
	}
	d.registration = reg
	ri.deliveries[id] = d
}

// run starts the informer in the background; onSynced is called once when
// the initial list is in the cache, unless the informer stops first.
func (ri *resourceInformer) run(parent context.Context, onSynced func()) {
	ctx, cancel := context.WithCancel(klog.NewContext(parent, ri.logger))
	ri.cancel = cancel
	ri.done = make(chan struct{})
	go func() {
		defer close(ri.done)
		var wg sync.WaitGroup
		wg.Go(func() {
			select {
			case <-ctx.Done():
			case <-ri.informer.HasSyncedChecker().Done():
				onSynced()
			}
		})
		ri.informer.RunWithContext(ctx)
		wg.Wait()
	}()
}
