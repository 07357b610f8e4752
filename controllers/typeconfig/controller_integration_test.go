//go:build integration

package typeconfig

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
	"github.com/kubefed-io/kubefed/test/framework"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

const ns = corev1beta1.DefaultKubeFedNamespace

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

// startHost starts a host cluster, stopped when the test ends, with the
// core CRDs, the federated CRDs of the targets named by plurals and the
// KubeFed namespace.
func startHost(ctx context.Context, t *testing.T, plurals ...string) (*rest.Config, client.Client) {
	t.Helper()
	fed, err := localcluster.Start(ctx, localcluster.Options{WorkDir: t.TempDir(), Clusters: []string{"host"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fed.Stop() })
	cfg := fed.Host().RESTConfig()
	c, err := client.New(cfg, client.Options{Scheme: framework.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := framework.ReadCRDs(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	for _, plural := range plurals {
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
	return cfg, c
}

func TestTypeConfigLifecycle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The core CRDs and only two federated CRDs: FederatedConfigMap is
	// installed later, to prove a type starts once its CRD appears.
	cfg, c := startHost(ctx, t, "namespaces", "deployments")
	scheme := c.Scheme()

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
	// expectListed waits until the ConfigMap the sync-finalizer admission
	// policy reads lists exactly these types, keyed as the API server
	// names them, with their FederatedTypeConfigs.
	expectListed := func(want map[string]string) {
		t.Helper()
		waitFor(t, fmt.Sprintf("propagating types %v", want), func() (bool, string) {
			return propagatingTypes(ctx, c, want)
		})
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
	expectListed(map[string]string{"federatednamespaces.types.kubefed.io": "namespaces",
		"federateddeployments.types.kubefed.io": "deployments.apps"})
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
	expectListed(map[string]string{"federatednamespaces.types.kubefed.io": "namespaces",
		"federateddeployments.types.kubefed.io": "deployments.apps", "federatedconfigmaps.types.kubefed.io": "configmaps"})

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
	expectListed(map[string]string{"federatednamespaces.types.kubefed.io": "namespaces", "federatedconfigmaps.types.kubefed.io": "configmaps"})
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
	expectListed(map[string]string{"federatednamespaces.types.kubefed.io": "namespaces", "federatedconfigmaps.types.kubefed.io": "configmaps"})
	// Deleting the namespaces type stops the namespaced types that need it.
	if err := c.Delete(ctx, get("namespaces")); err != nil {
		t.Fatal(err)
	}
	expectState("configmaps", "NotRunning", ReasonNamespacesNotEnabled)
	if got := runner.Running(); len(got) != 0 {
		t.Fatalf("still running: %v", got)
	}
	expectListed(map[string]string{})
}

// propagatingTypes reports whether the ConfigMap of propagating types
// holds want, and what it holds.
func propagatingTypes(ctx context.Context, c client.Client, want map[string]string) (bool, string) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, cm); err != nil {
		return false, err.Error()
	}
	return maps.Equal(cm.Data, want), fmt.Sprint(cm.Data)
}

// gizmoCRD defines a cluster-scoped custom type, the target type of the
// presence test, which the host serves and the member at first does not.
func gizmoCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.presence.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "presence.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// TestTypeConfigMemberPresence runs the FederatedTypeConfig controller
// beside the real KubeFedCluster controller, sharing its client registry
// and readiness tracker as the controller-manager does, against a host and
// one member.
func TestTypeConfigMemberPresence(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fed, err := localcluster.Start(ctx, localcluster.Options{WorkDir: t.TempDir(), Clusters: []string{"host", "member1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fed.Stop() }()
	host, member := fed.Host(), fed.Cluster("member1")
	scheme := framework.Scheme()
	hostClient, err := client.New(host.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	memberClient, err := client.New(member.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := framework.ReadCRDs(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	gizmo := federatedtype.Target{Group: "presence.example.com", Version: "v1", Kind: "Gizmo", Plural: "gizmos"}
	federatedGizmo, err := federatedtype.CRD(gizmo, federatedtype.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.InstallCRDs(ctx, hostClient, append(crds, gizmoCRD(), federatedGizmo)); err != nil {
		t.Fatal(err)
	}
	if err := framework.EnsureNamespace(ctx, hostClient, ns); err != nil {
		t.Fatal(err)
	}

	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	inNamespace := cache.ByObject{Namespaces: map[string]cache.Config{ns: {}}}
	mgr, err := ctrl.NewManager(host.RESTConfig(), ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1beta1.KubeFedCluster{}:      inNamespace,
			&corev1beta1.FederatedTypeConfig{}: inNamespace,
			&corev1.Secret{}:                   inNamespace,
		}},
		// The lifecycle test registered the controller's name in this process.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	registry := clusterclient.NewRegistry(clusterclient.ConfigOptions{})
	readiness := cluster.NewReadinessTracker(ns)
	clusters := &cluster.Reconciler{
		Options:  cluster.Options{Namespace: ns, Period: time.Second, Timeout: time.Second, FailureThreshold: 2, SuccessThreshold: 1},
		Registry: registry, Readiness: readiness,
	}
	if err := clusters.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	// Short discovery TTL and recheck, so that a CRD installed in the
	// member is noticed within seconds.
	r := &Reconciler{
		Runner: &RecordingRunner{Log: ctrl.Log.WithName("runner")}, Namespace: ns, PushReconciler: true,
		Readiness: readiness, Registry: registry,
		RecheckInterval: 2 * time.Second, MemberDiscoveryTTL: time.Second,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	defer func() {
		stopMgr()
		if err := <-mgrDone; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	// Join member1 as kubefedctl join would leave it in the host.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "member1-secret", Namespace: ns},
		Data:       map[string][]byte{clusterclient.TokenKey: []byte(member.Token), clusterclient.CAKey: member.CAData},
	}
	kfc := &corev1beta1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "member1", Namespace: ns},
		Spec:       corev1beta1.KubeFedClusterSpec{APIEndpoint: member.Server, SecretRef: corev1beta1.LocalSecretReference{Name: secret.Name}},
	}
	for _, o := range []client.Object{secret, kfc} {
		if err := hostClient.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "member1 ready", func() (bool, string) { return readiness.IsReady("member1"), "" })

	gizmos := federatedtype.TypeConfig(gizmo, federatedtype.Options{})
	for _, ftc := range []*corev1beta1.FederatedTypeConfig{gizmos, federatedtype.TypeConfig(target("namespaces"), federatedtype.Options{})} {
		if err := hostClient.Create(ctx, ftc); err != nil {
			t.Fatal(err)
		}
	}
	presence := func(name string) string {
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := hostClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ftc); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%v %s", ftc.Status.TargetTypeClusterStatus, ftc.Status.TargetTypeOverallStatus)
	}
	expectPresence := func(name, want string) {
		t.Helper()
		waitFor(t, name+": "+want, func() (bool, string) {
			got := presence(name)
			return got == want, got
		})
	}
	expectGauge := func(name string, want map[string]float64) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%s gauge %v", name, want), func() (bool, string) {
			got := seriesOf(t, name)
			return reflect.DeepEqual(got, want), fmt.Sprint(got)
		})
	}

	// The member serves namespaces but not gizmos: reported, with a warning
	// naming the member, and gizmos is reported missing there by the metric.
	expectPresence("namespaces", "[{member1 Present}] PresentInAllClusters")
	expectPresence(gizmos.Name, "[{member1 NotPresent}] NotPresentInAllClusters")
	expectGauge(gizmos.Name, map[string]float64{"member1": 1})
	expectGauge("namespaces", map[string]float64{"member1": 0})
	waitFor(t, "a TargetTypeNotPresent warning naming member1", func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := hostClient.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == gizmos.Name && e.Reason == ReasonTargetTypeNotPresent && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Note, "presence.example.com/v1 Gizmo (gizmos) is not served by member cluster member1") {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
		return false, strings.Join(seen, "\n")
	})
	// Missing in a member does not stop the type: propagation reports
	// that member, while the others get its objects.
	if controller, reason := stateOf(ctx, hostClient, gizmos.Name); controller != "Running" || reason != ReasonRunning {
		t.Errorf("gizmos %s/%s, want Running/%s", controller, reason, ReasonRunning)
	}

	// The ConfigMap of propagating types, deleted by hand, is put back by
	// the types' periodic evaluation (a recheck interval of 2 s here).
	published := &corev1.ConfigMap{}
	waitFor(t, "the ConfigMap of propagating types listing gizmos", func() (bool, string) {
		err := hostClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, published)
		return err == nil && slices.Contains(slices.Collect(maps.Values(published.Data)), gizmos.Name), fmt.Sprint(published.Data, err)
	})
	if err := hostClient.Delete(ctx, published); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ConfigMap of propagating types put back", func() (bool, string) {
		return propagatingTypes(ctx, hostClient, published.Data)
	})

	// Owned by the control plane's KubeFedConfig, it goes with it (helm
	// uninstall deletes the chart's): the garbage collector deletes it.
	config := &corev1beta1.KubeFedConfig{
		ObjectMeta: metav1.ObjectMeta{Name: corev1beta1.KubeFedConfigName, Namespace: ns},
		Spec:       corev1beta1.KubeFedConfigSpec{Scope: corev1beta1.ClusterScoped},
	}
	if err := hostClient.Create(ctx, config); err != nil {
		t.Fatal(err)
	}
	owned := &corev1.ConfigMap{}
	waitFor(t, "the ConfigMap owned by the KubeFedConfig", func() (bool, string) {
		err := hostClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, owned)
		refs := owned.GetOwnerReferences()
		return err == nil && len(refs) == 1 && refs[0].UID == config.UID && refs[0].Kind == "KubeFedConfig", fmt.Sprint(refs, err)
	})
	if err := hostClient.Delete(ctx, config); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the owned ConfigMap deleted with the KubeFedConfig", func() (bool, string) {
		cm := &corev1.ConfigMap{}
		err := hostClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, cm)
		return apierrors.IsNotFound(err), fmt.Sprint(cm.UID, err)
	})

	// Installing the CRD in the member is noticed without any change in the host.
	if err := framework.InstallCRDs(ctx, memberClient, []*apiextensionsv1.CustomResourceDefinition{gizmoCRD()}); err != nil {
		t.Fatal(err)
	}
	expectPresence(gizmos.Name, "[{member1 Present}] PresentInAllClusters")
	expectGauge(gizmos.Name, map[string]float64{"member1": 0})

	// A member that stops being ready leaves the report, and its series the
	// metric; back, it is asked again.
	if err := member.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	expectPresence(gizmos.Name, "[] ")
	expectGauge(gizmos.Name, map[string]float64{})
	if err := member.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	expectPresence(gizmos.Name, "[{member1 Present}] PresentInAllClusters")

	// A deleted type leaves no series behind.
	if err := hostClient.Delete(ctx, gizmos); err != nil {
		t.Fatal(err)
	}
	expectGauge(gizmos.Name, map[string]float64{})

	// The ConfigMap is not made again without the KubeFedConfig to own it
	// (a control plane being uninstalled would leave it behind): the
	// deleted type's finalizer goes only after the types were published.
	waitFor(t, "the deleted type gone", func() (bool, string) {
		err := hostClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: gizmos.Name}, &corev1beta1.FederatedTypeConfig{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if err := hostClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap of propagating types made again after its owner, the KubeFedConfig, was deleted (get: %v)", err)
	}
}

// stateOf is a type's propagation controller status and Ready reason.
func stateOf(ctx context.Context, c client.Client, name string) (string, string) {
	ftc := &corev1beta1.FederatedTypeConfig{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ftc); err != nil {
		return err.Error(), ""
	}
	cond := meta.FindStatusCondition(ftc.Status.Conditions, ConditionReady)
	if cond == nil {
		return string(ftc.Status.PropagationController), ""
	}
	return string(ftc.Status.PropagationController), cond.Reason
}

// TestTypeConfigWritesOnceItLeads runs the controller as a scale-out
// replica does: every replica starts the types, only the leader writes. A
// replica that starts leading writes the finalizer and status it skipped,
// though the FederatedTypeConfig did not change.
func TestTypeConfigWritesOnceItLeads(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, c := startHost(ctx, t, "namespaces")
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: c.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	runner := &RecordingRunner{Log: ctrl.Log.WithName("runner")}
	var leading atomic.Bool
	r := &Reconciler{Runner: runner, Namespace: ns, PushReconciler: true, StatusCollection: true, Leader: leading.Load}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	if err := c.Create(ctx, federatedtype.TypeConfig(target("namespaces"), federatedtype.Options{})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the type to run on a replica that does not lead", func() (bool, string) {
		return slices.Contains(runner.Running(), "namespaces"), fmt.Sprint(runner.Running())
	})
	ftc := &corev1beta1.FederatedTypeConfig{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "namespaces"}, ftc); err != nil {
		t.Fatal(err)
	}
	if len(ftc.Finalizers) != 0 || ftc.Status.ObservedGeneration != 0 {
		t.Fatalf("a replica that does not lead wrote finalizers %v, status %+v", ftc.Finalizers, ftc.Status)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: corev1beta1.PropagatingTypesConfigMap}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a replica that does not lead wrote the ConfigMap of propagating types (get: %v)", err)
	}

	leading.Store(true)
	r.Lead()
	waitFor(t, "the finalizer and status once it leads", func() (bool, string) {
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "namespaces"}, ftc); err != nil {
			return false, err.Error()
		}
		ok := slices.Contains(ftc.Finalizers, corev1beta1.FederatedTypeConfigFinalizer) && ftc.Status.ObservedGeneration == ftc.Generation &&
			ftc.Status.PropagationController == corev1beta1.ControllerStatusRunning
		return ok, fmt.Sprintf("finalizers %v, status %+v", ftc.Finalizers, ftc.Status)
	})
	waitFor(t, "the type listed once it leads", func() (bool, string) {
		return propagatingTypes(ctx, c, map[string]string{"federatednamespaces.types.kubefed.io": "namespaces"})
	})
}

// TestTypeListedOnceThePolicyCanApplyToIt: in the seconds after a
// group-version is first served the API server has no schema of it, and
// refuses with 503 every create that a mutating admission policy matches.
// The sync-finalizer policy matches the types the ConfigMap of propagating
// types lists, so a type listed in those seconds (after `helm install`, the
// federated CRDs and the controller-manager come up together) has its
// users' creates refused. The controller lists a type only once its
// group-version has been served longer than the API server takes to load
// its schema and a dry-run probe is not refused: creates sent from the
// moment the federated CRD is served are never refused, and get the
// finalizer from the policy once the type is listed.
func TestTypeListedOnceThePolicyCanApplyToIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// No federated CRD yet: types.kubefed.io is not served.
	cfg, c := startHost(ctx, t)
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	policies, err := framework.ReadObjects(
		filepath.Join(root, "config", "admission", "sync-finalizer.yaml"),
		filepath.Join(root, "config", "admission", "kubefedconfig-defaults.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range policies {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// The API server loads policies asynchronously, in order: once the
	// second one fills a KubeFedConfig's gates, the first is loaded too.
	waitFor(t, "the admission policies loaded", func() (bool, string) {
		probe := &corev1beta1.KubeFedConfig{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
			Spec: corev1beta1.KubeFedConfigSpec{Scope: corev1beta1.ClusterScoped}}
		err := c.Create(ctx, probe, client.DryRunAll)
		return err == nil && len(probe.Spec.FeatureGates) > 0, fmt.Sprint(err)
	})

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: c.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Runner: &RecordingRunner{Log: ctrl.Log.WithName("runner")}, Namespace: ns, PushReconciler: true, StatusCollection: true}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	crd, err := federatedtype.CRD(target("namespaces"), federatedtype.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.InstallCRDs(ctx, c, []*apiextensionsv1.CustomResourceDefinition{crd}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, federatedtype.TypeConfig(target("namespaces"), federatedtype.Options{})); err != nil {
		t.Fatal(err)
	}
	// A user creating FederatedNamespaces from the moment the type is
	// served, as fast as kubectl would (dry runs: the same admission).
	var creates, refused, finalized int
	var lastRefusal error
	deadline := time.Now().Add(time.Minute)
	for finalized < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d creates, %d with the finalizer: the policy never applied to the type (ConfigMap: %s)",
				creates, finalized, listedTypes(ctx, c))
		}
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("types.kubefed.io/v1beta1")
		obj.SetKind("FederatedNamespace")
		obj.SetNamespace(ns)
		obj.SetName(ns)
		err := c.Create(ctx, obj, client.DryRunAll)
		creates++
		switch {
		case apierrors.IsServiceUnavailable(err):
			refused++
			lastRefusal = err
		case err != nil:
			t.Fatalf("create %d: %v", creates, err)
		case slices.Contains(obj.GetFinalizers(), corev1beta1.SyncControllerFinalizer):
			finalized++
		}
		time.Sleep(20 * time.Millisecond)
	}
	if refused > 0 {
		t.Fatalf("%d of %d creates refused by the API server, the last: %v", refused, creates, lastRefusal)
	}
	if ok, got := propagatingTypes(ctx, c, map[string]string{"federatednamespaces.types.kubefed.io": "namespaces"}); !ok {
		t.Errorf("propagating types %s, want the namespaces type alone", got)
	}
	t.Logf("%d creates, none refused; the finalizer from the policy on the last %d", creates, finalized)
}

// listedTypes is what the ConfigMap of propagating types holds.
func listedTypes(ctx context.Context, c client.Client) string {
	_, got := propagatingTypes(ctx, c, nil)
	return got
}
