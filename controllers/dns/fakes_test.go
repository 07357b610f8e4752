package dns

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamiclister"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	dnsv1a1 "github.com/kubefed-io/kubefed/api/multiclusterdns/v1alpha1"
	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/informermanager"
)

const fedNS = "kube-federation-system"

// fakeMembers is MemberCaches over in-memory indexers, one per (cluster,
// resource) that a test declares synced or not.
type fakeMembers struct {
	t      *testing.T
	caches map[string]map[schema.GroupVersionResource]*fakeCache
}

type fakeCache struct {
	indexer cache.Indexer
	synced  bool
}

func newFakeMembers(t *testing.T) *fakeMembers {
	return &fakeMembers{t: t, caches: map[string]map[schema.GroupVersionResource]*fakeCache{}}
}

func (f *fakeMembers) cache(cluster string, gvr schema.GroupVersionResource) *fakeCache {
	if f.caches[cluster] == nil {
		f.caches[cluster] = map[schema.GroupVersionResource]*fakeCache{}
	}
	c := f.caches[cluster][gvr]
	if c == nil {
		c = &fakeCache{indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}), synced: true}
		f.caches[cluster][gvr] = c
	}
	return c
}

// synced declares the caches of gvr in the clusters synced and empty.
func (f *fakeMembers) synced(gvr schema.GroupVersionResource, clusters ...string) {
	for _, c := range clusters {
		f.cache(c, gvr)
	}
}

func (f *fakeMembers) add(cluster string, gvr schema.GroupVersionResource, obj runtime.Object) {
	f.t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.cache(cluster, gvr).indexer.Add(&unstructured.Unstructured{Object: content}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeMembers) remove(cluster string, gvr schema.GroupVersionResource, namespace, name string) {
	f.t.Helper()
	c := f.cache(cluster, gvr)
	obj, ok, err := c.indexer.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		f.t.Fatalf("%s/%s is not in %s's cache", namespace, name, cluster)
	}
	if err := c.indexer.Delete(obj); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeMembers) Subscribe(schema.GroupVersionResource, informermanager.Handler) func() {
	return func() {}
}

func (f *fakeMembers) Lister(cluster string, gvr schema.GroupVersionResource) (dynamiclister.Lister, bool) {
	c := f.caches[cluster][gvr]
	if c == nil {
		return nil, false
	}
	return dynamiclister.New(c.indexer, gvr), c.synced
}

type fakeReadiness map[string]bool

func (r fakeReadiness) IsReady(name string) bool { return r[name] }

func (r fakeReadiness) AddListener(cluster.ReadinessListener) func() { return func() {} }

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, fedv1b1.AddToScheme, dnsv1a1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func newClient(t *testing.T, objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).
		WithStatusSubresource(&dnsv1a1.ServiceDNSRecord{}, &dnsv1a1.IngressDNSRecord{}, &fedv1b1.KubeFedCluster{}).
		Build()
}

func kubeFedCluster(name, region string, zones ...string) *fedv1b1.KubeFedCluster {
	c := &fedv1b1.KubeFedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fedNS}}
	c.Status.Zones = zones
	if region != "" {
		c.Status.Region = ptr.To(region)
	}
	return c
}

func domain(name, zone string) *dnsv1a1.Domain {
	return &dnsv1a1.Domain{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fedNS}, Domain: zone}
}

func service(ns, name string, ips ...string) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{fedv1b1.ManagedByKubeFedLabelKey: fedv1b1.ManagedByKubeFedLabelValue}}}
	for _, ip := range ips {
		svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	return svc
}

func endpointSlice(ns, svc string, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		Endpoints:  []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
	}
}

func ingress(ns, name string, ips ...string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, ip := range ips {
		ing.Status.LoadBalancer.Ingress = append(ing.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{IP: ip})
	}
	return ing
}
