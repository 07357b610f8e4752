package sync

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/informermanager"
)

// ownNamespaces is the engine's own cache of FederatedNamespaces, which
// places namespaced types' objects while the namespaces type does not run.
// As in KubeFed, a namespaced type runs as long as the namespaces
// FederatedTypeConfig exists, Enabled or not: with its propagation
// Disabled, namespaces are not created in members, and the objects in a
// namespace still go where its FederatedNamespace's placement allows.
type ownNamespaces struct {
	informer toolscache.SharedIndexInformer
	cancel   context.CancelFunc
}

// fedNamespaces holds the engine's own FederatedNamespace cache, if any,
// and the last error met starting it (logged once).
type fedNamespaces struct {
	own     atomic.Pointer[ownNamespaces]
	lastErr atomic.Pointer[string]
}

// federatedNamespaces is where a namespaced object's FederatedNamespace is
// read: the namespaces type's cache while it runs, or else the engine's
// own, started on first need and stopped once the namespaces type's cache
// is complete again. Nil while neither is complete yet.
func (e *Engine) federatedNamespaces() toolscache.Indexer {
	nsWorker := e.worker(corev1beta1.NamespacesTypeConfigName)
	own := e.fedNS.own.Load()
	if nsWorker != nil && nsWorker.informer != nil && nsWorker.informer.HasSynced() {
		if own != nil && e.fedNS.own.CompareAndSwap(own, nil) {
			own.cancel()
			e.opts.Log.Info("FederatedNamespaces are read from the namespaces type's cache again")
		}
		return nsWorker.informer.GetIndexer()
	}
	if own != nil {
		if own.informer.HasSynced() {
			return own.informer.GetIndexer()
		}
		return nil
	}
	if nsWorker != nil {
		// The namespaces type's cache is being filled.
		return nil
	}
	e.startOwnNamespaces()
	return nil
}

// startOwnNamespaces starts the engine's own FederatedNamespace cache, of
// the federated type the namespaces FederatedTypeConfig names.
func (e *Engine) startOwnNamespaces() {
	ftc := &corev1beta1.FederatedTypeConfig{}
	err := e.opts.Client.Get(e.ctx, client.ObjectKey{Namespace: e.opts.Namespace, Name: corev1beta1.NamespacesTypeConfigName}, ftc)
	if err != nil {
		msg := err.Error()
		if last := e.fedNS.lastErr.Swap(&msg); last == nil || *last != msg {
			e.opts.Log.Error(err, "Cannot read the namespaces FederatedTypeConfig, which names the FederatedNamespace type that places namespaced objects; retrying")
		}
		return
	}
	e.fedNS.lastErr.Store(nil)
	ft := ftc.Spec.FederatedType
	gvr := schema.GroupVersionResource{Group: ft.Group, Version: ft.Version, Resource: ft.PluralName}
	// A Namespaced control plane reads its own namespace only: there, the
	// FederatedNamespace named after it limits where its objects go.
	namespace := metav1.NamespaceAll
	if e.opts.Scope == corev1beta1.NamespaceScoped {
		namespace = e.opts.Namespace
	}
	ctx, cancel := context.WithCancel(e.ctx)
	informer := dynamicinformer.NewFilteredDynamicInformer(e.host, gvr, namespace, 0, toolscache.Indexers{}, nil).Informer()
	_ = informer.SetTransform(func(obj any) (any, error) { return informermanager.StripManagedFields(obj), nil })
	_, _ = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    e.fedNamespaceChanged,
		UpdateFunc: func(_, n any) { e.fedNamespaceChanged(n) },
		DeleteFunc: e.fedNamespaceChanged,
	})
	own := &ownNamespaces{informer: informer, cancel: cancel}
	if !e.fedNS.own.CompareAndSwap(nil, own) {
		cancel() // another worker started one first
		return
	}
	go informer.RunWithContext(ctx)
	e.opts.Log.Info("The namespaces type does not run: FederatedNamespaces that place namespaced objects are read from a cache of the engine's own", "resource", gvr.String())
}
