package kubefedctl

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

var (
	allVerbs      = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	readOnlyVerbs = []string{"get", "list"}
)

// hostAPI is what the fake host's discovery serves: a Kubernetes 1.37
// apiserver's built-in types that matter here, KubeFed's API, and custom
// types for the name resolution cases. Within a group the first version
// listed is the preferred one.
func hostAPI() []*metav1.APIResourceList {
	r := func(name, singular, kind string, namespaced bool, verbs []string, short ...string) metav1.APIResource {
		return metav1.APIResource{Name: name, SingularName: singular, Kind: kind, Namespaced: namespaced, Verbs: verbs, ShortNames: short}
	}
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			r("bindings", "binding", "Binding", true, []string{"create"}),
			r("componentstatuses", "componentstatus", "ComponentStatus", false, readOnlyVerbs, "cs"),
			r("configmaps", "configmap", "ConfigMap", true, allVerbs, "cm"),
			r("endpoints", "endpoints", "Endpoints", true, allVerbs, "ep"),
			r("events", "event", "Event", true, allVerbs, "ev"),
			r("namespaces", "namespace", "Namespace", false, []string{"create", "delete", "get", "list", "patch", "update", "watch"}, "ns"),
			r("nodes", "node", "Node", false, allVerbs, "no"),
			r("pods", "pod", "Pod", true, allVerbs, "po"),
			r("pods/status", "", "Pod", true, []string{"get", "patch", "update"}),
			r("secrets", "secret", "Secret", true, allVerbs),
			r("serviceaccounts", "serviceaccount", "ServiceAccount", true, allVerbs, "sa"),
			r("services", "service", "Service", true, allVerbs, "svc"),
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			r("controllerrevisions", "controllerrevision", "ControllerRevision", true, allVerbs),
			r("deployments", "deployment", "Deployment", true, allVerbs, "deploy"),
			r("replicasets", "replicaset", "ReplicaSet", true, allVerbs, "rs"),
			r("statefulsets", "statefulset", "StatefulSet", true, allVerbs, "sts"),
		}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{
			r("cronjobs", "cronjob", "CronJob", true, allVerbs, "cj"),
			r("jobs", "job", "Job", true, allVerbs),
		}},
		{GroupVersion: "networking.k8s.io/v1", APIResources: []metav1.APIResource{
			r("ingresses", "ingress", "Ingress", true, allVerbs, "ing"),
			r("networkpolicies", "networkpolicy", "NetworkPolicy", true, allVerbs, "netpol"),
		}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			r("clusterroles", "clusterrole", "ClusterRole", false, allVerbs),
			r("roles", "role", "Role", true, allVerbs),
		}},
		{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{
			r("events", "event", "Event", true, allVerbs, "ev"),
		}},
		{GroupVersion: "discovery.k8s.io/v1", APIResources: []metav1.APIResource{
			r("endpointslices", "endpointslice", "EndpointSlice", true, allVerbs),
		}},
		{GroupVersion: "coordination.k8s.io/v1", APIResources: []metav1.APIResource{
			r("leases", "lease", "Lease", true, allVerbs),
		}},
		{GroupVersion: "authentication.k8s.io/v1", APIResources: []metav1.APIResource{
			r("tokenreviews", "tokenreview", "TokenReview", false, []string{"create"}),
		}},
		{GroupVersion: "apiextensions.k8s.io/v1", APIResources: []metav1.APIResource{
			r("customresourcedefinitions", "customresourcedefinition", "CustomResourceDefinition", false, allVerbs, "crd", "crds"),
		}},
		{GroupVersion: "core.kubefed.io/v1beta1", APIResources: []metav1.APIResource{
			r("federatedtypeconfigs", "federatedtypeconfig", "FederatedTypeConfig", true, allVerbs, "ftc"),
			r("kubefedclusters", "kubefedcluster", "KubeFedCluster", true, allVerbs),
		}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			r("widgets", "widget", "Widget", true, allVerbs, "wd"),
		}},
		{GroupVersion: "example.com/v1beta1", APIResources: []metav1.APIResource{
			r("widgets", "widget", "Widget", true, allVerbs, "wd"),
		}},
		{GroupVersion: "other.example.org/v1", APIResources: []metav1.APIResource{
			r("widgets", "widget", "Widget", false, allVerbs),
		}},
		// gadgets are missing from the group's preferred version.
		{GroupVersion: "legacy.example.com/v2", APIResources: []metav1.APIResource{
			r("sprockets", "sprocket", "Sprocket", true, allVerbs),
		}},
		{GroupVersion: "legacy.example.com/v1", APIResources: []metav1.APIResource{
			r("gadgets", "gadget", "Gadget", true, allVerbs),
			r("sprockets", "sprocket", "Sprocket", true, allVerbs),
		}},
	}
}

// typesHost is a fake host cluster for the type verbs: discovery that
// serves the federated types once their CRDs are created, CRDs that become
// Established, a dynamic client for arbitrary objects, and optionally a
// controller-manager that reports propagation controllers stopped.
type typesHost struct {
	*fakeCluster
	disc *fakediscovery.FakeDiscovery
	dyn  *dynamicfake.FakeDynamicClient

	// controller makes the fake answer a disabled FTC with
	// status.propagationController NotRunning, as the controller-manager does.
	controller bool
	// notEstablished keeps created CRDs from becoming Established.
	notEstablished bool
}

func newTypesHost(t *testing.T) *typesHost {
	t.Helper()
	h := &typesHost{fakeCluster: newFakeCluster(t, "host", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}})}
	h.disc = h.kube.Discovery().(*fakediscovery.FakeDiscovery)
	h.disc.Resources = hostAPI()

	listKinds := map[schema.GroupVersionResource]string{}
	for _, list := range h.disc.Resources {
		gv, _ := schema.ParseGroupVersion(list.GroupVersion)
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") {
				listKinds[gv.WithResource(r.Name)] = r.Kind + "List"
				for _, fg := range []string{"types.kubefed.io", "fed.example.com"} {
					listKinds[schema.GroupVersionResource{Group: fg, Version: "v1beta1", Resource: "federated" + r.Name}] = "Federated" + r.Kind + "List"
				}
			}
		}
	}
	h.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	h.cluster.dynamic = h.dyn

	h.fed = fakeclient.NewClientBuilder().WithScheme(newScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
				if !h.notEstablished {
					crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
						{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue},
						{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
					}
				}
				h.serve(crd)
			}
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if ftc, ok := obj.(*corev1beta1.FederatedTypeConfig); ok && h.controller && !ftc.PropagationEnabled() {
				ftc.Status.ObservedGeneration = ftc.Generation
				ftc.Status.PropagationController = corev1beta1.ControllerStatusNotRunning
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
				h.unserve(crd.Name)
			}
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	h.cluster.fed = h.fed
	return h
}

// serve adds a CRD's resources to discovery, as the API server does.
func (h *typesHost) serve(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}.String()
		res := metav1.APIResource{
			Name: crd.Spec.Names.Plural, SingularName: crd.Spec.Names.Singular, Kind: crd.Spec.Names.Kind,
			Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, ShortNames: crd.Spec.Names.ShortNames, Verbs: allVerbs,
		}
		added := false
		for _, list := range h.disc.Resources {
			if list.GroupVersion == gv {
				list.APIResources = append(list.APIResources, res)
				added = true
			}
		}
		if !added {
			h.disc.Resources = append(h.disc.Resources, &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{res}})
		}
	}
}

func (h *typesHost) unserve(crdName string) {
	plural, group, _ := strings.Cut(crdName, ".")
	for _, list := range h.disc.Resources {
		gv, _ := schema.ParseGroupVersion(list.GroupVersion)
		if gv.Group != group {
			continue
		}
		kept := list.APIResources[:0]
		for _, r := range list.APIResources {
			if r.Name != plural {
				kept = append(kept, r)
			}
		}
		list.APIResources = kept
	}
}

// run runs kubefedctl against the fake host with stdin as standard input.
func (h *typesHost) run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand(IOStreams{Out: &out, ErrOut: &errOut}, func(*globalOptions, IOStreams) clusterConnector {
		return fakeConnector{"host": h.fakeCluster}
	})
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func (h *typesHost) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := h.run(t, "", args...)
	if err != nil {
		t.Fatalf("kubefedctl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// object adds an object to the dynamic client's store.
func (h *typesHost) object(t *testing.T, gvr schema.GroupVersionResource, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := mustUnstructured(t, manifest)
	if err := h.dyn.Tracker().Create(gvr, u, u.GetNamespace()); err != nil {
		t.Fatal(err)
	}
	return u
}

// get reads an object from the dynamic client's store, nil if missing.
func (h *typesHost) get(t *testing.T, gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := h.dyn.Resource(gvr).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// ftc reads a FederatedTypeConfig, nil if missing.
func (h *typesHost) ftc(t *testing.T, name string) *corev1beta1.FederatedTypeConfig {
	t.Helper()
	ftc := &corev1beta1.FederatedTypeConfig{}
	err := h.fed.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: name}, ftc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return ftc
}

// crd reads a CustomResourceDefinition, nil if missing.
func (h *typesHost) crd(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := h.fed.Get(context.Background(), client.ObjectKey{Name: name}, crd)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

func mustUnstructured(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	docs, err := splitDocuments([]byte(manifest))
	if err != nil || len(docs) != 1 {
		t.Fatalf("want one document (%v): %s", err, manifest)
	}
	u := &unstructured.Unstructured{}
	data, err := yaml.YAMLToJSON(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

var (
	deploymentsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	fedDeployGVR    = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federateddeployments"}
	widgetsGVR      = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	fedWidgetsGVR   = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedwidgets"}
	fedNamespaceGVR = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatednamespaces"}
)
