package dns

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamiclister"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/informermanager"
)

// The member resources the records are built from.
var (
	servicesGVR       = corev1.SchemeGroupVersion.WithResource("services")
	endpointSlicesGVR = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
	ingressesGVR      = networkingv1.SchemeGroupVersion.WithResource("ingresses")
)

// MemberCaches reads member objects from the control plane's shared caches,
// one per (member cluster, resource), which hold the objects labelled
// kubefed.io/managed=true; *informermanager.Manager implements it.
type MemberCaches interface {
	Subscribe(gvr schema.GroupVersionResource, handler informermanager.Handler) (unsubscribe func())
	Lister(cluster string, gvr schema.GroupVersionResource) (lister dynamiclister.Lister, synced bool)
}

// Readiness says which member clusters are ready and tells listeners when
// that changes; *cluster.ReadinessTracker implements it.
type Readiness interface {
	IsReady(cluster string) bool
	AddListener(l cluster.ReadinessListener) (remove func())
}

var (
	_ MemberCaches = (*informermanager.Manager)(nil)
	_ Readiness    = (*cluster.ReadinessTracker)(nil)
)

// errNotSynced says a ready member's cache has not listed its objects yet,
// so that an object missing from it may still exist.
var errNotSynced = errors.New("member cache not synced")

// memberObject reads namespace/name of gvr from the cluster's cache into out.
// It returns found=false for an object the cache does not hold and
// errNotSynced while the cache is incomplete.
func memberObject(m MemberCaches, cluster string, gvr schema.GroupVersionResource, key types.NamespacedName, out any) (found bool, err error) {
	lister, synced := m.Lister(cluster, gvr)
	if lister == nil || !synced {
		return false, errNotSynced
	}
	obj, err := lister.Namespace(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.UnstructuredContent(), out); err != nil {
		return false, err
	}
	return true, nil
}

// memberEndpointSlices returns the cached EndpointSlices of a Service. They
// are in the cache because the EndpointSlice controller copies the Service's
// labels, kubefed.io/managed among them, to its slices.
func memberEndpointSlices(m MemberCaches, cluster string, svc types.NamespacedName) ([]*discoveryv1.EndpointSlice, error) {
	lister, synced := m.Lister(cluster, endpointSlicesGVR)
	if lister == nil || !synced {
		return nil, errNotSynced
	}
	selector := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc.Name})
	objs, err := lister.Namespace(svc.Namespace).List(selector)
	if err != nil {
		return nil, err
	}
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, obj := range objs {
		s := &discoveryv1.EndpointSlice{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.UnstructuredContent(), s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// memberSource enqueues the key that keyOf derives from each member object
// of gvr that changes in any cluster: records share the namespace and name of
// the Service or Ingress they publish.
func memberSource(m MemberCaches, gvr schema.GroupVersionResource, keyOf func(*unstructured.Unstructured) (types.NamespacedName, bool)) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		unsubscribe := m.Subscribe(gvr, func(e informermanager.Event) {
			for _, obj := range []*unstructured.Unstructured{e.Object, e.OldObject} {
				if obj == nil {
					continue
				}
				if key, ok := keyOf(obj); ok {
					q.Add(reconcile.Request{NamespacedName: key})
				}
			}
		})
		go func() {
			<-ctx.Done()
			unsubscribe()
		}()
		return nil
	})
}

// sameName keys a member object by its own namespace and name.
func sameName(obj *unstructured.Unstructured) (types.NamespacedName, bool) {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, true
}

// serviceOfSlice keys an EndpointSlice by the Service it belongs to.
func serviceOfSlice(obj *unstructured.Unstructured) (types.NamespacedName, bool) {
	name := obj.GetLabels()[discoveryv1.LabelServiceName]
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}, name != ""
}

// readinessSource enqueues every record that all returns whenever a member
// becomes ready or stops being ready, since any record may have targets there.
func readinessSource(r Readiness, all func(context.Context) []reconcile.Request) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		remove := r.AddListener(cluster.ReadinessListenerFunc(func(string, bool) {
			for _, req := range all(ctx) {
				q.Add(req)
			}
		}))
		go func() {
			<-ctx.Done()
			remove()
		}()
		return nil
	})
}
