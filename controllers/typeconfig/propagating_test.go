package typeconfig

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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

// TestTypesListedOnceAdmissible: the ConfigMap of propagating types lists
// a type only once its group-version is admissible: a type of it has been
// seen propagating for admissionSettle (longer than any API server's poll
// of its schema) and then a dry-run probe was not refused with 503 (a
// server whose poll fell behind). One probe stands for a group-version, a
// namespaced type's where there is one; a refused probe is tried again
// after admissionProbeRetry, not on every reconcile; a probe this
// controller may not make, or that the policy did not act on, leaves it to
// the wait. A type of a group-version listed already is listed at once,
// and a new leader keeps the list it finds.
func TestTypesListedOnceAdmissible(t *testing.T) {
	const ns = corev1beta1.DefaultKubeFedNamespace
	namespaces := runningType("namespaces", "types.kubefed.io", "v1beta1", "FederatedNamespace", "federatednamespaces", corev1beta1.NamespaceScope)
	clusterroles := runningType("clusterroles.rbac.authorization.k8s.io", "types.kubefed.io", "v1beta1", "FederatedClusterRole", "federatedclusterroles", corev1beta1.ClusterScope)
	widgets := runningType("widgets.example.com", "fed.example.com", "v1", "FederatedWidget", "federatedwidgets", corev1beta1.ClusterScope)
	configmaps := runningType("configmaps", "types.kubefed.io", "v1beta1", "FederatedConfigMap", "federatedconfigmaps", corev1beta1.NamespaceScope)

	var mu sync.Mutex
	answer := map[string]error{} // by federated group-version
	var probes []string
	c := probedClient(&mu, func(obj client.Object, create *client.CreateOptions) error {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if _, probe := obj.GetAnnotations()[corev1beta1.AdmissionProbeAnnotation]; !probe ||
			!slices.Equal(create.DryRun, []string{metav1.DryRunAll}) || obj.GetGenerateName() == "" {
			t.Errorf("a create of %s that is not a dry-run probe: dry run %v, annotations %v", gvk.Kind, create.DryRun, obj.GetAnnotations())
		}
		probes = append(probes, gvk.Kind+" in "+obj.GetNamespace())
		return answer[gvk.GroupVersion().String()]
	}, namespaces, clusterroles, widgets)
	r := &Reconciler{Client: c, APIReader: c, Namespace: ns}
	ctx := context.Background()
	publish := func(current *corev1beta1.FederatedTypeConfig) (time.Duration, []string, []string) {
		t.Helper()
		mu.Lock()
		probes = nil
		mu.Unlock()
		wait, err := r.publishPropagating(ctx, current.Name, current)
		if err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, cm); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return wait, slices.Sorted(maps.Keys(cm.Data)), slices.Sorted(slices.Values(probes))
	}
	expect := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	// settled makes the group-versions seen for admissionSettle, and any
	// refusal older than admissionProbeRetry.
	settled := func() {
		for _, a := range r.admission {
			a.since = a.since.Add(-admissionSettle)
			a.refusedAt = a.refusedAt.Add(-admissionProbeRetry)
		}
	}
	all := []string{"federatedclusterroles.types.kubefed.io", "federatednamespaces.types.kubefed.io"}

	// Just seen: nothing listed, nothing probed, and the type's reconcile
	// comes back when the wait is over.
	wait, listed, probed := publish(namespaces)
	expect("listed at first", listed, nil)
	expect("probes at first", probed, nil)
	if wait <= admissionSettle-time.Second || wait > admissionSettle {
		t.Errorf("at first: come back after %v, want about %v", wait, admissionSettle)
	}

	// Waited; types.kubefed.io's schema is not loaded yet, and the policy
	// does not act on fed.example.com (or this controller may not probe
	// it): one probe of each group-version, a namespaced type's where
	// there is one.
	answer["types.kubefed.io/v1beta1"] = apierrors.NewServiceUnavailable("Resource kind types.kubefed.io/v1beta1, Kind=FederatedNamespace not found")
	answer["fed.example.com/v1"] = apierrors.NewForbidden(schema.GroupResource{Group: "fed.example.com", Resource: "federatedwidgets"}, "", nil)
	settled()
	wait, listed, probed = publish(clusterroles)
	expect("listed while types.kubefed.io is refused", listed, []string{"federatedwidgets.fed.example.com"})
	expect("probes", probed, []string{"FederatedNamespace in " + ns, "FederatedWidget in "})
	if wait != admissionProbeRetry {
		t.Errorf("refused: come back after %v, want %v", wait, admissionProbeRetry)
	}
	// Another reconcile at once probes nothing.
	_, listed, probed = publish(namespaces)
	expect("listed at once again", listed, []string{"federatedwidgets.fed.example.com"})
	expect("probes at once again", probed, nil)

	// Loaded: the probe lists every type of the group-version, each with
	// its FederatedTypeConfig's name.
	answer["types.kubefed.io/v1beta1"] = nil
	settled()
	wait, listed, probed = publish(namespaces)
	expect("listed once loaded", listed, append(slices.Clone(all), "federatedwidgets.fed.example.com"))
	expect("probes once loaded", probed, []string{"FederatedNamespace in " + ns})
	if wait != 0 {
		t.Errorf("listed: come back after %v, want 0", wait)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["federatedclusterroles.types.kubefed.io"] != "clusterroles.rbac.authorization.k8s.io" {
		t.Errorf("a type is listed with its FederatedTypeConfig's name: %v", cm.Data)
	}

	// Another type of an admissible group-version (kubefedctl enable) is
	// listed at once.
	if err := c.Create(ctx, configmaps); err != nil {
		t.Fatal(err)
	}
	wait, listed, probed = publish(configmaps)
	expect("listed with a new type", listed, []string{"federatedclusterroles.types.kubefed.io", "federatedconfigmaps.types.kubefed.io",
		"federatednamespaces.types.kubefed.io", "federatedwidgets.fed.example.com"})
	expect("probes for a new type", probed, nil)
	if wait != 0 {
		t.Errorf("a new type: come back after %v, want 0", wait)
	}

	// A new leader keeps the list it finds, probing nothing.
	r.Lead()
	_, listed2, probed := publish(namespaces)
	expect("a new leader's list", listed2, listed)
	expect("a new leader's probes", probed, nil)
}

// TestTypeServedLongAgoListedAtOnce: a type whose CustomResourceDefinition
// has been Established for longer than admissionSettle (a controller
// restarted with its ConfigMap gone, a new KubeFedConfig) is listed on its
// first reconcile, after one probe; one Established a moment ago waits.
func TestTypeServedLongAgoListedAtOnce(t *testing.T) {
	const ns = corev1beta1.DefaultKubeFedNamespace
	old := runningType("olds.example.com", "old.example.com", "v1", "FederatedOld", "federatedolds", corev1beta1.NamespaceScope)
	fresh := runningType("freshes.example.com", "fresh.example.com", "v1", "FederatedFresh", "federatedfreshes", corev1beta1.NamespaceScope)
	var mu sync.Mutex
	var probes []string
	c := probedClient(&mu, func(obj client.Object, _ *client.CreateOptions) error {
		probes = append(probes, obj.GetObjectKind().GroupVersionKind().Kind)
		return nil
	}, old, fresh, establishedCRD("federatedolds.old.example.com", time.Now().Add(-time.Hour)), establishedCRD("federatedfreshes.fresh.example.com", time.Now()))
	r := &Reconciler{Client: c, APIReader: c, Namespace: ns}
	ctx := context.Background()
	wait, err := r.publishPropagating(ctx, old.Name, old)
	if err != nil {
		t.Fatal(err)
	}
	if wait != 0 {
		t.Errorf("a type served for an hour: come back after %v, want 0", wait)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, cm); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(cm.Data)); !slices.Equal(got, []string{"federatedolds.old.example.com"}) {
		t.Errorf("listed %v, want only the type served for an hour", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(probes, []string{"FederatedOld"}) {
		t.Errorf("probes %v, want one of FederatedOld", probes)
	}
	if a := r.admission["fresh.example.com/v1"]; a == nil || time.Since(a.since) > time.Minute {
		t.Errorf("the fresh type's group-version: %+v, want it served from about now", a)
	}
}

// TestWaitRunsByTheAPIServersClock: a controller whose clock runs ahead of
// the API server's does not list a type before the server has served it
// for admissionSettle by its own clock, which the probe's answer gives.
func TestWaitRunsByTheAPIServersClock(t *testing.T) {
	const ns = corev1beta1.DefaultKubeFedNamespace
	const skew = 20 * time.Second
	ahead := runningType("aheads.example.com", "ahead.example.com", "v1", "FederatedAhead", "federatedaheads", corev1beta1.NamespaceScope)
	// Established now by the server's clock, skew ago by this controller's.
	established := time.Now().Add(-skew).Truncate(time.Second)
	var mu sync.Mutex
	serverNow := established.Add(3 * time.Second)
	probes := 0
	c := probedClient(&mu, func(obj client.Object, _ *client.CreateOptions) error {
		probes++
		// The API server stamps a dry run as it would the object.
		obj.SetCreationTimestamp(metav1.NewTime(serverNow))
		return nil
	}, ahead, establishedCRD("federatedaheads.ahead.example.com", established))
	r := &Reconciler{Client: c, APIReader: c, Namespace: ns}
	ctx := context.Background()
	listed := func() []string {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, cm); err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(cm.Data))
	}

	// By this controller's clock the type has been served for 20 s; the
	// probe's answer says 3 s: not listed, and the reconcile comes back
	// when the server's 10 s are up (one more for the stamps' resolution).
	wait, err := r.publishPropagating(ctx, ahead.Name, ahead)
	if err != nil {
		t.Fatal(err)
	}
	if got := listed(); len(got) != 0 {
		t.Errorf("listed %v after 3 s by the server's clock", got)
	}
	if wait < admissionSettle-3*time.Second || wait > admissionSettle-time.Second {
		t.Errorf("come back after %v, want 7–9 s", wait)
	}
	// No probe before then.
	if _, err := r.publishPropagating(ctx, ahead.Name, ahead); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if probes != 1 {
		t.Errorf("%d probes before the server's wait is up, want 1", probes)
	}
	// The server's 10 s are up.
	serverNow = established.Add(admissionSettle + time.Second)
	mu.Unlock()
	r.admission["ahead.example.com/v1"].since = time.Now().Add(-admissionSettle)
	if wait, err = r.publishPropagating(ctx, ahead.Name, ahead); err != nil {
		t.Fatal(err)
	}
	if got := listed(); !slices.Equal(got, []string{"federatedaheads.ahead.example.com"}) || wait != 0 {
		t.Errorf("once served 11 s by the server's clock: listed %v, come back after %v; want the type, 0", got, wait)
	}
}

// probedClient is a fake host holding objs, where a create of a federated
// object, a probe, is answered by probe, with mu held, and not made.
func probedClient(mu *sync.Mutex, probe func(obj client.Object, create *client.CreateOptions) error, objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithScheme(framework.Scheme()).
		WithObjects(objs...).
		WithStatusSubresource(&corev1beta1.FederatedTypeConfig{}, &apiextensionsv1.CustomResourceDefinition{}).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetObjectKind().GroupVersionKind().Group == "" {
				return c.Create(ctx, obj, opts...)
			}
			create := &client.CreateOptions{}
			create.ApplyOptions(opts)
			mu.Lock()
			defer mu.Unlock()
			return probe(obj, create)
		}}).Build()
}

// establishedCRD is a CustomResourceDefinition Established at at.
func establishedCRD(name string, at time.Time) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)},
	}
	return crd
}

// TestRefusedGroupVersionProbedLessOften: a group-version whose probes the
// API server keeps refusing is probed after 1, 2, 4, 8, 16 and then every
// 30 s, and its reconcile comes back for each probe; it stays unlisted.
func TestRefusedGroupVersionProbedLessOften(t *testing.T) {
	const ns = corev1beta1.DefaultKubeFedNamespace
	refused := runningType("refuseds.example.com", "refused.example.com", "v1", "FederatedRefused", "federatedrefuseds", corev1beta1.NamespaceScope)
	var mu sync.Mutex
	probes := 0
	c := probedClient(&mu, func(client.Object, *client.CreateOptions) error {
		probes++
		return apierrors.NewServiceUnavailable("Resource kind refused.example.com/v1, Kind=FederatedRefused not found")
	}, refused, establishedCRD("federatedrefuseds.refused.example.com", time.Now().Add(-time.Hour)))
	r := &Reconciler{Client: c, APIReader: c, Namespace: ns}
	ctx := context.Background()
	publish := func() time.Duration {
		t.Helper()
		wait, err := r.publishPropagating(ctx, refused.Name, refused)
		if err != nil {
			t.Fatal(err)
		}
		return wait
	}
	probed := func() int {
		mu.Lock()
		defer mu.Unlock()
		return probes
	}
	for i, want := range []time.Duration{1, 2, 4, 8, 16, 30, 30} {
		want *= time.Second
		if wait := publish(); wait != want {
			t.Errorf("refusal %d: come back after %v, want %v", i+1, wait, want)
		}
		if got := probed(); got != i+1 {
			t.Fatalf("refusal %d: %d probes, want %d", i+1, got, i+1)
		}
		// Not probed again just before that.
		a := r.admission["refused.example.com/v1"]
		a.refusedAt = a.refusedAt.Add(-want + 200*time.Millisecond)
		publish()
		if got := probed(); got != i+1 {
			t.Fatalf("%v after refusal %d: probed again", want-200*time.Millisecond, i+1)
		}
		a.refusedAt = a.refusedAt.Add(-200 * time.Millisecond)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, cm); err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) != 0 {
		t.Errorf("listed %v while refused", cm.Data)
	}
}
