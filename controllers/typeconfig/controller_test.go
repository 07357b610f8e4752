package typeconfig

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
	"github.com/kubefed-io/kubefed/test/framework"
)

// target is the default target type of that plural name.
func target(plural string) federatedtype.Target {
	for _, t := range federatedtype.DefaultTargets {
		if t.Plural == plural {
			return t
		}
	}
	panic(plural)
}

// servedTypes is a host's RESTMapper serving the target types of plurals,
// with their federated types, as the default FederatedTypeConfigs declare
// them.
func servedTypes(plurals ...string) *meta.DefaultRESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, plural := range plurals {
		ftc := federatedtype.TypeConfig(target(plural), federatedtype.Options{})
		serve(m, ftc.Spec.TargetType)
		serve(m, ftc.Spec.FederatedType)
	}
	return m
}

// serve makes m serve a as declared.
func serve(m *meta.DefaultRESTMapper, a corev1beta1.APIResource) {
	scope := meta.RESTScopeRoot
	if a.Namespaced() {
		scope = meta.RESTScopeNamespace
	}
	gv := schema.GroupVersion{Group: a.Group, Version: a.Version}
	m.AddSpecific(gv.WithKind(a.Kind), gv.WithResource(a.PluralName), gv.WithResource(strings.ToLower(a.Kind)), scope)
}

// typeConfigHost is a fake host holding the default FederatedTypeConfigs
// of plurals and a Reconciler of them.
type typeConfigHost struct {
	t      *testing.T
	c      client.Client
	r      *Reconciler
	runner *RecordingRunner
}

func newTypeConfigHost(t *testing.T, mapper meta.RESTMapper, scope corev1beta1.Scope, plurals ...string) *typeConfigHost {
	t.Helper()
	const ns = corev1beta1.DefaultKubeFedNamespace
	var objs []client.Object
	for _, plural := range plurals {
		ftc := federatedtype.TypeConfig(target(plural), federatedtype.Options{Namespace: ns})
		ftc.Generation = 1
		objs = append(objs, ftc)
	}
	c := fake.NewClientBuilder().WithScheme(framework.Scheme()).WithObjects(objs...).
		WithStatusSubresource(&corev1beta1.FederatedTypeConfig{}).Build()
	runner := &RecordingRunner{Log: log.Log}
	r := &Reconciler{Client: c, APIReader: c, Mapper: mapper, Recorder: events.NewFakeRecorder(100), Runner: runner,
		Namespace: ns, Scope: scope, PushReconciler: true, running: map[string]corev1beta1.FederatedTypeConfigSpec{}}
	return &typeConfigHost{t: t, c: c, r: r, runner: runner}
}

// reconcile reconciles the FederatedTypeConfig name and returns its Ready
// condition.
func (h *typeConfigHost) reconcile(name string) (*corev1beta1.FederatedTypeConfig, *metav1.Condition) {
	h.t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: h.r.Namespace, Name: name}
	if _, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		h.t.Fatalf("reconcile %s: %v", name, err)
	}
	ftc := &corev1beta1.FederatedTypeConfig{}
	if err := h.c.Get(ctx, key, ftc); err != nil {
		h.t.Fatal(err)
	}
	cond := meta.FindStatusCondition(ftc.Status.Conditions, ConditionReady)
	if cond == nil {
		h.t.Fatalf("%s has no Ready condition: %+v", name, ftc.Status)
	}
	return ftc, cond
}

// expect checks a reconciled type's status and whether it runs.
func (h *typeConfigHost) expect(name string, running bool, reason, message string) {
	h.t.Helper()
	ftc, cond := h.reconcile(name)
	want := corev1beta1.ControllerStatusNotRunning
	if running {
		want = corev1beta1.ControllerStatusRunning
	}
	if ftc.Status.PropagationController != want || ftc.Status.ObservedGeneration != ftc.Generation {
		h.t.Errorf("%s: propagationController %s for generation %d of %d, want %s", name,
			ftc.Status.PropagationController, ftc.Status.ObservedGeneration, ftc.Generation, want)
	}
	if cond.Reason != reason || cond.Message != message {
		h.t.Errorf("%s: Ready %s %q\nwant %s %q", name, cond.Reason, cond.Message, reason, message)
	}
	if got := slices.Contains(h.runner.Running(), name); got != running {
		h.t.Errorf("%s: started %v, want %v (running: %v)", name, got, running, h.runner.Running())
	}
}

// TestNamespacedTypeWaitsForTheNamespacesTypeToRun: the namespaces type
// enabled but not running (its federated type is not served) holds the
// namespaced types back, naming why; once it runs, they start.
func TestNamespacedTypeWaitsForTheNamespacesTypeToRun(t *testing.T) {
	mapper := servedTypes("deployments")
	namespaces := federatedtype.TypeConfig(target("namespaces"), federatedtype.Options{})
	serve(mapper, namespaces.Spec.TargetType) // FederatedNamespace is not served
	h := newTypeConfigHost(t, mapper, corev1beta1.ClusterScoped, "namespaces", "deployments")

	// Reconciled before the namespaces type ever was: it waits.
	h.expect("deployments.apps", false, ReasonNamespacesNotEnabled,
		`namespaced type deployments.apps waits for the FederatedTypeConfig "namespaces" to run; its generation 1 is not reconciled yet`)

	h.expect("namespaces", false, ReasonFederatedTypeNotFound,
		"the host cluster does not serve the federated type (install its CRD, e.g. with kubefedctl enable): "+
			`types.kubefed.io/v1beta1, Kind=FederatedNamespace: no matches for kind "FederatedNamespace" in version "types.kubefed.io/v1beta1"`)
	h.expect("deployments.apps", false, ReasonNamespacesNotEnabled,
		`namespaced type deployments.apps waits for the FederatedTypeConfig "namespaces" to run; it does not: `+
			"FederatedTypeNotFound: the host cluster does not serve the federated type (install its CRD, e.g. with kubefedctl enable): "+
			`types.kubefed.io/v1beta1, Kind=FederatedNamespace: no matches for kind "FederatedNamespace" in version "types.kubefed.io/v1beta1"`)

	serve(mapper, namespaces.Spec.FederatedType)
	h.expect("namespaces", true, ReasonRunning, "propagation controller running")
	h.expect("deployments.apps", true, ReasonRunning, "propagation controller running")
}

// TestNamespacedTypeKeepsRunningWhileTheNamespacesTypeChanges: an edit of
// the namespaces type, not reconciled yet, does not restart the namespaced
// types; its outcome decides.
func TestNamespacedTypeKeepsRunningWhileTheNamespacesTypeChanges(t *testing.T) {
	h := newTypeConfigHost(t, servedTypes("namespaces", "deployments"), corev1beta1.ClusterScoped, "namespaces", "deployments")
	h.expect("namespaces", true, ReasonRunning, "propagation controller running")
	h.expect("deployments.apps", true, ReasonRunning, "propagation controller running")

	ctx := context.Background()
	namespaces := &corev1beta1.FederatedTypeConfig{}
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.r.Namespace, Name: "namespaces"}, namespaces); err != nil {
		t.Fatal(err)
	}
	namespaces.Generation++ // the fake client does not count generations
	namespaces.Spec.FederatedType.Version = "v1"
	if err := h.c.Update(ctx, namespaces); err != nil {
		t.Fatal(err)
	}
	h.expect("deployments.apps", true, ReasonRunning, "propagation controller running")
	if n := h.runner.Starts("deployments.apps"); n != 1 {
		t.Errorf("deployments.apps started %d times, want 1", n)
	}

	h.expect("namespaces", false, ReasonFederatedTypeNotFound,
		"the host cluster does not serve the federated type (install its CRD, e.g. with kubefedctl enable): "+
			`types.kubefed.io/v1, Kind=FederatedNamespace: no matches for kind "FederatedNamespace" in version "types.kubefed.io/v1"`)
	_, cond := h.reconcile("deployments.apps")
	if cond.Reason != ReasonNamespacesNotEnabled || !strings.Contains(cond.Message, "FederatedTypeNotFound") {
		t.Errorf("deployments.apps: Ready %s %q, want %s naming FederatedTypeNotFound", cond.Reason, cond.Message, ReasonNamespacesNotEnabled)
	}
	if slices.Contains(h.runner.Running(), "deployments.apps") {
		t.Error("deployments.apps runs without the namespaces type")
	}
}

// TestNamespacedTypeRunsWhileTheNamespacesTypeIsDisabled: as in KubeFed,
// namespaced types run while the namespaces FederatedTypeConfig exists
// with its propagation Disabled (their objects still placed by
// FederatedNamespace, whose type must be served); they stop once it is
// deleted.
func TestNamespacedTypeRunsWhileTheNamespacesTypeIsDisabled(t *testing.T) {
	mapper := servedTypes("deployments")
	namespaces := federatedtype.TypeConfig(target("namespaces"), federatedtype.Options{})
	serve(mapper, namespaces.Spec.TargetType) // FederatedNamespace is not served
	h := newTypeConfigHost(t, mapper, corev1beta1.ClusterScoped, "namespaces", "deployments")
	ctx := context.Background()
	ns := &corev1beta1.FederatedTypeConfig{}
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.r.Namespace, Name: "namespaces"}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Spec.Propagation = corev1beta1.Disabled
	if err := h.c.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}

	h.expect("namespaces", false, ReasonPropagationDisabled, "spec.propagation is Disabled")
	h.expect("deployments.apps", false, ReasonNamespacesNotEnabled,
		`namespaced type deployments.apps places its objects by FederatedNamespace, the federated type of the FederatedTypeConfig "namespaces", which the host does not serve: `+
			`types.kubefed.io/v1beta1, Kind=FederatedNamespace: no matches for kind "FederatedNamespace" in version "types.kubefed.io/v1beta1"`)

	serve(mapper, namespaces.Spec.FederatedType)
	h.expect("deployments.apps", true, ReasonRunning, "propagation controller running")
	h.expect("namespaces", false, ReasonPropagationDisabled, "spec.propagation is Disabled")
	if slices.Contains(h.runner.Running(), "namespaces") {
		t.Error("the namespaces type runs while Disabled")
	}

	if err := h.c.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	h.expect("deployments.apps", false, ReasonNamespacesNotEnabled,
		`namespaced type deployments.apps waits for the FederatedTypeConfig "namespaces"`)
}

// TestNamespacedScope: a Namespaced control plane runs no cluster-scoped
// type, as KubeFed did not, but runs the namespaces type (whose target is
// cluster-scoped, but which writes nothing there). Its namespaced types
// need the FederatedNamespace type served, as in KubeFed: the one of the
// control plane's namespace, when there is one, limits their placement.
func TestNamespacedScope(t *testing.T) {
	mapper := servedTypes("deployments", "clusterroles")
	namespaces := federatedtype.TypeConfig(target("namespaces"), federatedtype.Options{})
	serve(mapper, namespaces.Spec.TargetType) // FederatedNamespace is not served
	h := newTypeConfigHost(t, mapper, corev1beta1.NamespaceScoped, "namespaces", "deployments", "clusterroles")

	h.expect("clusterroles.rbac.authorization.k8s.io", false, ReasonClusterScopedType,
		"the target type rbac.authorization.k8s.io/v1, Kind=ClusterRole and the federated type types.kubefed.io/v1beta1, Kind=FederatedClusterRole "+
			`are cluster-scoped, and a Namespaced control plane (KubeFedConfig spec.scope) propagates only namespaced types, within namespace "kube-federation-system"`)
	h.expect("namespaces", false, ReasonFederatedTypeNotFound,
		"the host cluster does not serve the federated type (install its CRD, e.g. with kubefedctl enable): "+
			`types.kubefed.io/v1beta1, Kind=FederatedNamespace: no matches for kind "FederatedNamespace" in version "types.kubefed.io/v1beta1"`)
	h.expect("deployments.apps", false, ReasonNamespacesNotEnabled,
		`namespaced type deployments.apps places its objects by FederatedNamespace, the federated type of the FederatedTypeConfig "namespaces", which the host does not serve: `+
			`types.kubefed.io/v1beta1, Kind=FederatedNamespace: no matches for kind "FederatedNamespace" in version "types.kubefed.io/v1beta1"`)

	serve(mapper, namespaces.Spec.FederatedType)
	h.expect("namespaces", true, ReasonRunning, "propagation controller running")
	h.expect("deployments.apps", true, ReasonRunning, "propagation controller running")
}

// TestTypeServedInAnotherScope: a type the host serves in another scope
// than declared is reported, naming both scopes, and not retried: only an
// edit of the FederatedTypeConfig corrects it.
func TestTypeServedInAnotherScope(t *testing.T) {
	h := newTypeConfigHost(t, servedTypes("namespaces", "deployments", "clusterroles"), corev1beta1.ClusterScoped,
		"namespaces", "deployments", "clusterroles")
	h.expect("namespaces", true, ReasonRunning, "propagation controller running")
	ctx := context.Background()
	edit := func(name string, change func(*corev1beta1.FederatedTypeConfig)) {
		t.Helper()
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.r.Namespace, Name: name}, ftc); err != nil {
			t.Fatal(err)
		}
		change(ftc)
		if err := h.c.Update(ctx, ftc); err != nil {
			t.Fatal(err)
		}
	}
	edit("deployments.apps", func(f *corev1beta1.FederatedTypeConfig) { f.Spec.TargetType.Scope = corev1beta1.ClusterScope })
	edit("clusterroles.rbac.authorization.k8s.io", func(f *corev1beta1.FederatedTypeConfig) {
		f.Spec.FederatedType.Scope = corev1beta1.NamespaceScope
	})
	for _, tc := range []struct{ name, reason, message string }{
		{"deployments.apps", ReasonTargetTypeNotFound,
			"spec.targetType: declared in the wrong scope: scope is Cluster, but the host serves apps/v1, Kind=Deployment as Namespaced"},
		{"clusterroles.rbac.authorization.k8s.io", ReasonFederatedTypeNotFound,
			"spec.federatedType: declared in the wrong scope: scope is Namespaced, but the host serves types.kubefed.io/v1beta1, Kind=FederatedClusterRole as Cluster"},
	} {
		res, err := h.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.r.Namespace, Name: tc.name}})
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != 0 {
			t.Errorf("%s: retried after %v", tc.name, res.RequeueAfter)
		}
		h.expect(tc.name, false, tc.reason, tc.message)
	}
}
