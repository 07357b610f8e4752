package typeconfig

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/test/framework"
)

// runningType is a FederatedTypeConfig that propagates and runs.
func runningType(name, group, version, kind, plural string, scope corev1beta1.ResourceScope) *corev1beta1.FederatedTypeConfig {
	ftc := &corev1beta1.FederatedTypeConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1beta1.DefaultKubeFedNamespace}}
	ftc.Spec.FederatedType = corev1beta1.APIResource{Group: group, Version: version, Kind: kind, PluralName: plural, Scope: scope}
	ftc.Spec.Propagation = corev1beta1.Enabled
	ftc.Status.PropagationController = corev1beta1.ControllerStatusRunning
	return ftc
}

// TestTypesListedOnceProbed: the ConfigMap of propagating types lists a
// type only once a dry-run create of it is not refused with 503; the API
// server's schema being one per group-version, one probe of a namespaced
// type stands for its group-version, and a cluster-scoped type is probed
// itself only when its group-version has no namespaced type. A refused
// probe is tried again after admissionProbeRetry, not on every reconcile;
// a probe this controller may not make does not hold the type back.
func TestTypesListedOnceProbed(t *testing.T) {
	const ns = corev1beta1.DefaultKubeFedNamespace
	namespaces := runningType("namespaces", "types.kubefed.io", "v1beta1", "FederatedNamespace", "federatednamespaces", corev1beta1.NamespaceScope)
	configmaps := runningType("configmaps", "types.kubefed.io", "v1beta1", "FederatedConfigMap", "federatedconfigmaps", corev1beta1.NamespaceScope)
	clusterroles := runningType("clusterroles.rbac.authorization.k8s.io", "types.kubefed.io", "v1beta1", "FederatedClusterRole", "federatedclusterroles", corev1beta1.ClusterScope)
	widgets := runningType("widgets.example.com", "fed.example.com", "v1", "FederatedWidget", "federatedwidgets", corev1beta1.ClusterScope)

	var mu sync.Mutex
	answer := map[string]error{} // by federated group-version; nil: applied
	var probes []string
	c := fake.NewClientBuilder().WithScheme(framework.Scheme()).
		WithObjects(namespaces, configmaps, clusterroles, widgets).
		WithStatusSubresource(&corev1beta1.FederatedTypeConfig{}).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			gvk := obj.GetObjectKind().GroupVersionKind()
			if gvk.Group == "" {
				return c.Create(ctx, obj, opts...)
			}
			create := &client.CreateOptions{}
			create.ApplyOptions(opts)
			if _, probe := obj.GetAnnotations()[corev1beta1.AdmissionProbeAnnotation]; !probe ||
				!slices.Equal(create.DryRun, []string{metav1.DryRunAll}) || obj.GetGenerateName() == "" {
				t.Errorf("a create of %s that is not a dry-run probe: dry run %v, annotations %v", gvk.Kind, create.DryRun, obj.GetAnnotations())
			}
			mu.Lock()
			defer mu.Unlock()
			probes = append(probes, gvk.Kind+" in "+obj.GetNamespace())
			return answer[gvk.GroupVersion().String()]
		}}).Build()
	r := &Reconciler{Client: c, APIReader: c, Namespace: ns}
	ctx := context.Background()
	unavailable := apierrors.NewServiceUnavailable("Resource kind not found")
	publish := func(current *corev1beta1.FederatedTypeConfig) (bool, map[string]string, []string) {
		t.Helper()
		mu.Lock()
		probes = nil
		mu.Unlock()
		pending, err := r.publishPropagating(ctx, current.Name, current)
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, cm); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return pending, cm.Data, slices.Sorted(slices.Values(probes))
	}
	expect := func(what string, pending, wantPending bool, data map[string]string, wantKeys []string, probes, wantProbes []string) {
		t.Helper()
		if pending != wantPending {
			t.Errorf("%s: pending %v, want %v", what, pending, wantPending)
		}
		if got := slices.Sorted(maps.Keys(data)); !slices.Equal(got, wantKeys) {
			t.Errorf("%s: listed %v, want %v", what, got, wantKeys)
		}
		if !slices.Equal(probes, wantProbes) {
			t.Errorf("%s: probes %v, want %v", what, probes, wantProbes)
		}
	}

	// Neither group-version's schema is loaded yet.
	answer["types.kubefed.io/v1beta1"], answer["fed.example.com/v1"] = unavailable, unavailable
	pending, data, probed := publish(clusterroles)
	expect("first", pending, true, data, nil, probed,
		[]string{"FederatedConfigMap in " + ns, "FederatedNamespace in " + ns, "FederatedWidget in "})
	// Another type's reconcile right after probes nothing again.
	pending, data, probed = publish(configmaps)
	expect("at once again", pending, true, data, nil, probed, nil)

	// types.kubefed.io/v1beta1 loaded: one probe lists all three of it.
	answer["types.kubefed.io/v1beta1"] = nil
	// (as if admissionProbeRetry had passed)
	for key := range r.refusedAt {
		r.refusedAt[key] = time.Now().Add(-admissionProbeRetry)
	}
	pending, data, probed = publish(namespaces)
	expect("types.kubefed.io loaded", pending, false, data,
		[]string{"federatedclusterroles.types.kubefed.io", "federatedconfigmaps.types.kubefed.io", "federatednamespaces.types.kubefed.io"},
		probed, []string{"FederatedConfigMap in " + ns, "FederatedWidget in "})
	if data["federatedclusterroles.types.kubefed.io"] != "clusterroles.rbac.authorization.k8s.io" {
		t.Errorf("a type is listed with its FederatedTypeConfig's name: %v", data)
	}

	// A probe this controller may not make lists the type.
	answer["fed.example.com/v1"] = apierrors.NewForbidden(schema.GroupResource{Group: "fed.example.com", Resource: "federatedwidgets"}, "", nil)
	r.refusedAt["federatedwidgets.fed.example.com"] = time.Now().Add(-admissionProbeRetry)
	pending, data, probed = publish(widgets)
	expect("forbidden", pending, false, data,
		[]string{"federatedclusterroles.types.kubefed.io", "federatedconfigmaps.types.kubefed.io", "federatednamespaces.types.kubefed.io", "federatedwidgets.fed.example.com"},
		probed, []string{"FederatedWidget in "})

	// A new leader takes the list as it finds it, probing nothing.
	r.Lead()
	pending, data, probed = publish(namespaces)
	expect("a new leader", pending, false, data,
		[]string{"federatedclusterroles.types.kubefed.io", "federatedconfigmaps.types.kubefed.io", "federatednamespaces.types.kubefed.io", "federatedwidgets.fed.example.com"},
		probed, nil)
}
