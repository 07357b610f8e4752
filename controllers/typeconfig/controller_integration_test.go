//go:build integration

package typeconfig

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
	"github.com/kubefed-io/kubefed/test/framework"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

const ns = corev1beta1.DefaultKubeFedNamespace

func target(plural string) federatedtype.Target {
	for _, t := range federatedtype.DefaultTargets {
		if t.Plural == plural {
			return t
		}
	}
	panic(plural)
}

func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; last state: %s", what, last)
}

func TestTypeConfigLifecycle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fed, err := localcluster.Start(ctx, localcluster.Options{WorkDir: t.TempDir(), Clusters: []string{"host"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fed.Stop() }()
	cfg := fed.Host().RESTConfig()
	scheme := framework.Scheme()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The core CRDs and only two federated CRDs: FederatedConfigMap is
	// installed later, to prove a type starts once its CRD appears.
	crds, err := framework.ReadCRDs(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	for _, plural := range []string{"namespaces", "deployments"} {
		crd, err := federatedtype.CRD(target(plural), federatedtype.Options{})
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, crd)
	}
	if err := framework.InstallCRDs(ctx, c, crds); err != nil {
		t.Fatal(err)
	}
	if err := framework.EnsureNamespace(ctx, c, ns); err != nil {
		t.Fatal(err)
	}

	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	runner := &RecordingRunner{Log: ctrl.Log.WithName("runner")}
	r := &Reconciler{Runner: runner, Namespace: ns, PushReconciler: true, StatusCollection: true}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	get := func(name string) *corev1beta1.FederatedTypeConfig {
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ftc); err != nil {
			return nil
		}
		return ftc
	}
	state := func(name string) (string, string) {
		ftc := get(name)
		if ftc == nil {
			return "missing", ""
		}
		cond := meta.FindStatusCondition(ftc.Status.Conditions, ConditionReady)
		if cond == nil {
			return string(ftc.Status.PropagationController), ""
		}
		return string(ftc.Status.PropagationController), cond.Reason
	}
	expectState := func(name, controller, reason string) {
		t.Helper()
		waitFor(t, name+" "+controller+"/"+reason, func() (bool, string) {
			c, r := state(name)
			return c == controller && r == reason, c + "/" + r
		})
	}
	create := func(plural string) {
		t.Helper()
		if err := c.Create(ctx, federatedtype.TypeConfig(target(plural), federatedtype.Options{})); err != nil {
			t.Fatal(err)
		}
	}

	// A namespaced type waits for the namespaces type.
	create("deployments")
	expectState("deployments.apps", "NotRunning", ReasonNamespacesNotEnabled)
	if slices.Contains(runner.Running(), "deployments.apps") {
		t.Fatal("deployments.apps runs without the namespaces type")
	}
	create("namespaces")
	expectState("namespaces", "Running", ReasonRunning)
	expectState("deployments.apps", "Running", ReasonRunning)
	if got := runner.Running(); !slices.Equal(got, []string{"deployments.apps", "namespaces"}) {
		t.Fatalf("running types %v", got)
	}
	ftc := get("deployments.apps")
	if !slices.Contains(ftc.Finalizers, corev1beta1.FederatedTypeConfigFinalizer) {
		t.Fatalf("finalizer missing: %v", ftc.Finalizers)
	}
	if ftc.Status.ObservedGeneration != ftc.Generation || ptr.Deref(ftc.Status.StatusController, "") != corev1beta1.ControllerStatusRunning {
		t.Fatalf("status %+v", ftc.Status)
	}

	// A type whose federated CRD is missing is reported and starts once it exists.
	create("configmaps")
	expectState("configmaps", "NotRunning", ReasonFederatedTypeNotFound)
	cmCRD, _ := federatedtype.CRD(target("configmaps"), federatedtype.Options{})
	if err := framework.InstallCRDs(ctx, c, []*apiextensionsv1.CustomResourceDefinition{cmCRD}); err != nil {
		t.Fatal(err)
	}
	expectState("configmaps", "Running", ReasonRunning)

	// A target type the host does not serve is reported with an event, and blocks nothing else.
	widget := federatedtype.TypeConfig(federatedtype.Target{Group: "example.com", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true}, federatedtype.Options{})
	if err := c.Create(ctx, widget); err != nil {
		t.Fatal(err)
	}
	expectState("widgets.example.com", "NotRunning", ReasonTargetTypeNotFound)
	ftc = get("widgets.example.com")
	if msg := meta.FindStatusCondition(ftc.Status.Conditions, ConditionReady).Message; !strings.Contains(msg, "example.com/v1, Kind=Widget") {
		t.Fatalf("message does not name the type: %q", msg)
	}

	// Disabling stops the type, enabling starts it again; a spec change restarts it.
	ftc = get("deployments.apps")
	ftc.Spec.Propagation = corev1beta1.Disabled
	if err := c.Update(ctx, ftc); err != nil {
		t.Fatal(err)
	}
	expectState("deployments.apps", "NotRunning", ReasonPropagationDisabled)
	if slices.Contains(runner.Running(), "deployments.apps") {
		t.Fatal("disabled type still runs")
	}
	ftc = get("deployments.apps")
	ftc.Spec.Propagation = corev1beta1.Enabled
	if err := c.Update(ctx, ftc); err != nil {
		t.Fatal(err)
	}
	expectState("deployments.apps", "Running", ReasonRunning)
	if n := runner.Starts("deployments.apps"); n != 2 {
		t.Fatalf("deployments.apps started %d times, want 2", n)
	}
	ftc = get("deployments.apps")
	disabled := corev1beta1.Disabled
	ftc.Spec.StatusCollection = &disabled
	if err := c.Update(ctx, ftc); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "restart with the new spec", func() (bool, string) {
		spec, ok := runner.Spec("deployments.apps")
		return ok && spec.StatusCollection != nil && *spec.StatusCollection == corev1beta1.Disabled, ""
	})
	waitFor(t, "statusController NotRunning", func() (bool, string) {
		ftc := get("deployments.apps")
		return ftc != nil && ptr.Deref(ftc.Status.StatusController, "") == corev1beta1.ControllerStatusNotRunning, ""
	})

	// Deleting stops the type and releases the finalizer.
	if err := c.Delete(ctx, get("deployments.apps")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "deployments.apps deleted", func() (bool, string) { return get("deployments.apps") == nil, "" })
	if slices.Contains(runner.Running(), "deployments.apps") {
		t.Fatal("deleted type still runs")
	}
	// Deleting the namespaces type stops the namespaced types that need it.
	if err := c.Delete(ctx, get("namespaces")); err != nil {
		t.Fatal(err)
	}
	expectState("configmaps", "NotRunning", ReasonNamespacesNotEnabled)
	if got := runner.Running(); len(got) != 0 {
		t.Fatalf("still running: %v", got)
	}
}
