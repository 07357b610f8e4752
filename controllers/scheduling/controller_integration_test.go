//go:build integration

package scheduling

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	schedulingv1alpha1 "github.com/kubefed-io/kubefed/api/scheduling/v1alpha1"
	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
	"github.com/kubefed-io/kubefed/test/framework"
	"github.com/kubefed-io/kubefed/test/localcluster"
)

const (
	kubefedNS = corev1beta1.DefaultKubeFedNamespace
	appNS     = "apps"
	// narrowNS is federated, late, to one cluster only.
	narrowNS = "narrow"
)

// fakeReadiness is member readiness the test sets by hand.
type fakeReadiness struct {
	mu        sync.Mutex
	ready     map[string]bool
	listeners map[int]cluster.ReadinessListener
	next      int
}

func (f *fakeReadiness) IsReady(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ready[name]
}

func (f *fakeReadiness) AddListener(l cluster.ReadinessListener) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.listeners[id] = l
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.listeners, id)
	}
}

func (f *fakeReadiness) set(name string, ready bool) {
	f.mu.Lock()
	f.ready[name] = ready
	listeners := slices.Collect(maps.Values(f.listeners))
	f.mu.Unlock()
	for _, l := range listeners {
		l.ClusterReadinessChanged(name, ready)
	}
}

// fakePod is an unschedulable pod as fakeCapacity knows it.
type fakePod struct {
	labels labels.Set
	since  time.Time
}

// fakeCapacity reports the unschedulable pods the test sets.
type fakeCapacity struct {
	mu          sync.Mutex
	pods        map[string][]fakePod // by cluster/namespace
	subscribers []func(cluster, namespace string)
}

func (f *fakeCapacity) UnschedulableSince(clusterName, namespace string, selector labels.Selector) ([]time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Time
	for _, p := range f.pods[clusterName+"/"+namespace] {
		if selector.Matches(p.labels) {
			out = append(out, p.since)
		}
	}
	return out, true
}

func (f *fakeCapacity) Subscribe(notify func(cluster, namespace string)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subscribers = append(f.subscribers, notify)
	return func() {}
}

func (f *fakeCapacity) set(clusterName, namespace string, pods ...fakePod) {
	f.mu.Lock()
	f.pods[clusterName+"/"+namespace] = pods
	subscribers := slices.Clone(f.subscribers)
	f.mu.Unlock()
	for _, notify := range subscribers {
		notify(clusterName, namespace)
	}
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; last state: %s", what, last)
}

func target(plural string) federatedtype.Target {
	for _, t := range federatedtype.DefaultTargets {
		if t.Plural == plural {
			return t
		}
	}
	panic(plural)
}

// federatedDeployment is a FederatedDeployment of pods labelled app=name,
// placed on the clusters selector matches.
func federatedDeployment(name string, selector map[string]any, overrides ...any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "FederatedDeployment",
		"metadata":   map[string]any{"name": name, "namespace": appNS},
		"spec": map[string]any{
			"template": map[string]any{"spec": map[string]any{
				"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": name}},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "main", "image": "registry.k8s.io/pause:3.10"}}},
				},
			}},
			"placement": map[string]any{"clusterSelector": selector},
		},
	}}
	if len(overrides) > 0 {
		u.Object["spec"].(map[string]any)["overrides"] = overrides
	}
	return u
}

// federatedNamespace is the FederatedNamespace of ns with placement.
func federatedNamespace(ns string, placement map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "FederatedNamespace",
		"metadata":   map[string]any{"name": ns, "namespace": ns},
		"spec":       map[string]any{"placement": placement},
	}}
}

func matchLabels(kv ...string) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return map[string]any{"matchLabels": m}
}

func TestReplicaScheduling(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fed, err := localcluster.Start(ctx, localcluster.Options{WorkDir: t.TempDir(), Clusters: []string{"host"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fed.Stop() }()
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
	for _, plural := range []string{"deployments", "configmaps", "namespaces"} {
		crd, err := federatedtype.CRD(target(plural), federatedtype.Options{})
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, crd)
	}
	if err := framework.InstallCRDs(ctx, c, crds); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{kubefedNS, appNS, narrowNS} {
		if err := framework.EnsureNamespace(ctx, c, ns); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("controller", func(t *testing.T) { testController(ctx, t, c, cfg) })
	t.Run("pending pods", func(t *testing.T) { testPendingPods(ctx, t, c, fed.Host()) })
}

func testController(ctx context.Context, t *testing.T, c client.Client, cfg *rest.Config) {
	for _, plural := range []string{"deployments", "configmaps", "namespaces"} {
		if err := c.Create(ctx, federatedtype.TypeConfig(target(plural), federatedtype.Options{Namespace: kubefedNS})); err != nil {
			t.Fatal(err)
		}
	}
	// The preferences that intersect with their object's clusterSelector
	// intersect with their namespace's placement too: appNS is placed on
	// every cluster.
	if err := c.Create(ctx, federatedNamespace(appNS, map[string]any{"clusterSelector": map[string]any{}})); err != nil {
		t.Fatal(err)
	}
	// Clusters in groups, one group per scenario, picked by each
	// preference's intersection with its object's clusterSelector.
	members := map[string]map[string]string{
		"ap-northeast": {"group": "seed", "tier": "gold"},
		"us-east":      {"group": "seed"},
		"us-west":      {"group": "seed"},
		"m1":           {"group": "failover"},
		"m2":           {"group": "failover"},
		"c1":           {"group": "capacity"},
		"c2":           {"group": "capacity"},
	}
	readiness := &fakeReadiness{ready: map[string]bool{}, listeners: map[int]cluster.ReadinessListener{}}
	for name, l := range members {
		kfc := &corev1beta1.KubeFedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: kubefedNS, Labels: l},
			Spec:       corev1beta1.KubeFedClusterSpec{APIEndpoint: "https://127.0.0.1:1", SecretRef: corev1beta1.LocalSecretReference{Name: name}},
		}
		if err := c.Create(ctx, kfc); err != nil {
			t.Fatal(err)
		}
		readiness.ready[name] = true
	}
	capacity := &fakeCapacity{pods: map[string][]fakePod{}}

	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: framework.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	// The first write of a schedule into "contended" meets a change made
	// since the cache showed the object: a label a user adds meanwhile.
	var contendedWrites, contendedConflicts, apiConflicts atomic.Int32
	// contendNextAPIWrite makes the next write into "api" meet such a
	// change too.
	var contendNextAPIWrite atomic.Bool
	r := &Reconciler{
		Client: contendingClient{Client: mgr.GetClient(), before: func(obj client.Object) {
			if obj.GetObjectKind().GroupVersionKind().Kind != "FederatedDeployment" {
				return
			}
			switch {
			case obj.GetName() == "contended" && contendedWrites.Add(1) == 1:
			case obj.GetName() == "api" && contendNextAPIWrite.CompareAndSwap(true, false):
			default:
				return
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), u); err != nil {
				t.Error(err)
				return
			}
			u.SetLabels(map[string]string{"edited": "meanwhile"})
			if err := c.Update(ctx, u); err != nil {
				t.Error(err)
			}
		}, after: func(obj client.Object, err error) {
			if obj.GetObjectKind().GroupVersionKind().Kind == "FederatedDeployment" && apierrors.IsConflict(err) {
				switch obj.GetName() {
				case "contended":
					contendedConflicts.Add(1)
				case "api":
					apiConflicts.Add(1)
				}
			}
		}},
		Namespace:              kubefedNS,
		Readiness:              readiness,
		Capacity:               capacity,
		FailoverToleration:     time.Hour, // preferences that test failover set their own
		UnschedulableThreshold: time.Second,
		CapacityHold:           time.Hour,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	defer stopMgr()
	go func() { _ = mgr.Start(mgrCtx) }()

	getObject := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("types.kubefed.io/v1beta1")
		u.SetKind("FederatedDeployment")
		if err := c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: name}, u); err != nil {
			return nil
		}
		return u
	}
	// schedule reads the placement and /spec/replicas overrides of an object.
	schedule := func(name string) (placement []string, replicas map[string]int64, state string) {
		u := getObject(name)
		if u == nil {
			return nil, nil, "no object"
		}
		list, _, _ := unstructured.NestedSlice(u.Object, "spec", "placement", "clusters")
		for _, e := range list {
			placement = append(placement, e.(map[string]any)["name"].(string))
		}
		fo, err := readFederatedObject(u.Object, true)
		if err != nil {
			return nil, nil, err.Error()
		}
		return placement, fo.current, fmt.Sprintf("placement %v, replicas %v", placement, fo.current)
	}
	expectSchedule := func(name string, placement []string, replicas map[string]int64) {
		t.Helper()
		eventually(t, fmt.Sprintf("%s scheduled as %v", name, replicas), func() (bool, string) {
			p, r, state := schedule(name)
			return slices.Equal(p, placement) && maps.Equal(r, replicas), state
		})
	}
	getRSP := func(name string) *schedulingv1alpha1.ReplicaSchedulingPreference {
		rsp := &schedulingv1alpha1.ReplicaSchedulingPreference{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: appNS, Name: name}, rsp); err != nil {
			return nil
		}
		return rsp
	}
	statusOf := func(rsp *schedulingv1alpha1.ReplicaSchedulingPreference) string {
		if rsp == nil {
			return "no preference"
		}
		cond := meta.FindStatusCondition(rsp.Status.Conditions, ConditionScheduled)
		if cond == nil {
			return "no condition"
		}
		return fmt.Sprintf("%s/%s %q, clusters %+v", cond.Status, cond.Reason, cond.Message, rsp.Status.Clusters)
	}
	expectStatus := func(name, reason string, check func(*schedulingv1alpha1.ReplicaSchedulingPreference) bool) {
		t.Helper()
		eventually(t, name+" status "+reason, func() (bool, string) {
			rsp := getRSP(name)
			if rsp == nil {
				return false, "no preference"
			}
			cond := meta.FindStatusCondition(rsp.Status.Conditions, ConditionScheduled)
			ok := cond != nil && cond.Reason == reason && cond.ObservedGeneration == rsp.Generation &&
				rsp.Status.ObservedGeneration == rsp.Generation && (check == nil || check(rsp))
			return ok, statusOf(rsp)
		})
	}
	statusReplicas := func(rsp *schedulingv1alpha1.ReplicaSchedulingPreference) map[string]int64 {
		out := map[string]int64{}
		for _, cr := range rsp.Status.Clusters {
			out[cr.Name] = cr.Replicas
		}
		return out
	}
	createRSP := func(name, kind string, total int32, spec func(*schedulingv1alpha1.ReplicaSchedulingPreferenceSpec)) {
		t.Helper()
		rsp := &schedulingv1alpha1.ReplicaSchedulingPreference{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appNS},
			Spec:       schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TargetKind: kind, TotalReplicas: total, IntersectWithClusterSelector: true},
		}
		if spec != nil {
			spec(&rsp.Spec)
		}
		if err := c.Create(ctx, rsp); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("seed example, other overrides kept, no needless writes, scaling", func(t *testing.T) {
		obj := federatedDeployment("web", matchLabels("group", "seed"),
			map[string]any{"clusterName": "us-east", "clusterOverrides": []any{map[string]any{"path": "/metadata/labels/region", "value": "east"}}},
			map[string]any{"clusterName": "gone", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(7)}}},
		)
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		createRSP("web", "FederatedDeployment", 15, func(s *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec) {
			s.Clusters = map[string]schedulingv1alpha1.ClusterPreferences{
				"*":            {Weight: 2, MaxReplicas: ptr.To[int64](12)},
				"ap-northeast": {MinReplicas: 1, MaxReplicas: ptr.To[int64](3), Weight: 1},
			}
		})
		seed := []string{"ap-northeast", "us-east", "us-west"}
		expectSchedule("web", seed, map[string]int64{"ap-northeast": 3, "us-east": 6, "us-west": 6})
		expectStatus("web", ReasonScheduled, func(rsp *schedulingv1alpha1.ReplicaSchedulingPreference) bool {
			return maps.Equal(statusReplicas(rsp), map[string]int64{"ap-northeast": 3, "us-east": 6, "us-west": 6})
		})
		u := getObject("web")
		overrides, _, _ := unstructured.NestedSlice(u.Object, "spec", "overrides")
		var east map[string]any
		for _, o := range overrides {
			entry := o.(map[string]any)
			if entry["clusterName"] == "gone" {
				t.Errorf("the replicas override of a cluster that does not exist was kept: %v", overrides)
			}
			if entry["clusterName"] == "us-east" {
				east = entry
			}
		}
		items, _ := east["clusterOverrides"].([]any)
		if len(items) != 2 || items[0].(map[string]any)["path"] != "/metadata/labels/region" {
			t.Errorf("us-east overrides %v: the label override must stay first, with the replicas after it", items)
		}

		// A reconcile with nothing new writes nothing.
		version := u.GetResourceVersion()
		rspVersion := getRSP("web").ResourceVersion
		afterReconcile(t, func() { readiness.set("not-a-member", false) })
		if v := getObject("web").GetResourceVersion(); v != version {
			t.Errorf("the object was written although nothing changed: resourceVersion %s -> %s", version, v)
		}
		if v := getRSP("web").ResourceVersion; v != rspVersion {
			t.Errorf("the status was written although nothing changed: resourceVersion %s -> %s", rspVersion, v)
		}

		// Scaling re-plans; keep-existing adds only.
		rsp := getRSP("web")
		rsp.Spec.TotalReplicas = 21
		if err := c.Update(ctx, rsp); err != nil {
			t.Fatal(err)
		}
		expectSchedule("web", seed, map[string]int64{"ap-northeast": 3, "us-east": 9, "us-west": 9})
		expectStatus("web", ReasonScheduled, func(rsp *schedulingv1alpha1.ReplicaSchedulingPreference) bool {
			return maps.Equal(statusReplicas(rsp), map[string]int64{"ap-northeast": 3, "us-east": 9, "us-west": 9})
		})
	})

	t.Run("intersect with the clusterSelector", func(t *testing.T) {
		if err := c.Create(ctx, federatedDeployment("db", matchLabels("tier", "gold"))); err != nil {
			t.Fatal(err)
		}
		createRSP("db", "FederatedDeployment", 4, nil)
		expectSchedule("db", []string{"ap-northeast"}, map[string]int64{"ap-northeast": 4})
	})

	t.Run("intersect without a clusterSelector leaves the object alone, as in KubeFed", func(t *testing.T) {
		obj := federatedDeployment("listed", nil)
		_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"name": "us-east"}}, "spec", "placement", "clusters")
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		version := getObject("listed").GetResourceVersion()
		createRSP("listed", "FederatedDeployment", 4, nil)
		expectStatus("listed", ReasonNoClusterSelector, nil)
		if got := getObject("listed"); got.GetResourceVersion() != version {
			t.Errorf("the object of a preference without a selector to intersect with was written: %v", got.Object["spec"])
		}
	})

	t.Run("intersect with the namespace's placement", func(t *testing.T) {
		obj := federatedDeployment("narrowed", matchLabels("group", "seed"))
		obj.SetNamespace(narrowNS)
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		rsp := &schedulingv1alpha1.ReplicaSchedulingPreference{
			ObjectMeta: metav1.ObjectMeta{Name: "narrowed", Namespace: narrowNS},
			Spec:       schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{TargetKind: "FederatedDeployment", TotalReplicas: 5, IntersectWithClusterSelector: true},
		}
		if err := c.Create(ctx, rsp); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(rsp)
		reason := func() (bool, string) {
			got := &schedulingv1alpha1.ReplicaSchedulingPreference{}
			if err := c.Get(ctx, key, got); err != nil {
				return false, err.Error()
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, ConditionScheduled)
			if cond == nil {
				return false, "no condition"
			}
			return cond.Reason == ReasonNamespaceNotFederated, cond.Reason + ": " + cond.Message
		}
		eventually(t, "NamespaceNotFederated before the namespace is federated", reason)

		// Federating the namespace on one of the seed clusters schedules
		// every replica there.
		if err := c.Create(ctx, federatedNamespace(narrowNS, map[string]any{"clusters": []any{map[string]any{"name": "us-west"}}})); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the replicas on the namespace's one cluster", func() (bool, string) {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(obj.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), u); err != nil {
				return false, err.Error()
			}
			clusters, _, _ := unstructured.NestedSlice(u.Object, "spec", "placement", "clusters")
			overrides, _, _ := unstructured.NestedSlice(u.Object, "spec", "overrides")
			ok := len(clusters) == 1 && clusters[0].(map[string]any)["name"] == "us-west" && len(overrides) == 1 &&
				overrides[0].(map[string]any)["clusterName"] == "us-west"
			return ok, fmt.Sprintf("clusters %v, overrides %v", clusters, overrides)
		})
	})

	t.Run("without intersection every cluster is a candidate", func(t *testing.T) {
		if err := c.Create(ctx, federatedDeployment("spread", matchLabels("group", "seed"))); err != nil {
			t.Fatal(err)
		}
		createRSP("spread", "FederatedDeployment", 7, func(s *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec) {
			s.IntersectWithClusterSelector = false
		})
		all := slices.Sorted(maps.Keys(members))
		want := map[string]int64{}
		for _, name := range all {
			want[name] = 1
		}
		expectSchedule("spread", all, want)
	})

	t.Run("failover and return", func(t *testing.T) {
		if err := c.Create(ctx, federatedDeployment("api", matchLabels("group", "failover"))); err != nil {
			t.Fatal(err)
		}
		createRSP("api", "FederatedDeployment", 10, func(s *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec) {
			s.FailoverTolerationSeconds = ptr.To[int64](3)
		})
		both := []string{"m1", "m2"}
		expectSchedule("api", both, map[string]int64{"m1": 5, "m2": 5})

		down := time.Now()
		readiness.set("m1", false)
		// Within the toleration nothing moves; the status says m1 is not ready.
		expectStatus("api", ReasonScheduled, func(rsp *schedulingv1alpha1.ReplicaSchedulingPreference) bool {
			for _, cr := range rsp.Status.Clusters {
				if cr.Name == "m1" {
					return cr.NotReadySince != nil && !cr.FailedOver && cr.Replicas == 5
				}
			}
			return false
		})
		if _, r, _ := schedule("api"); !maps.Equal(r, map[string]int64{"m1": 5, "m2": 5}) && time.Since(down) < 3*time.Second {
			t.Fatalf("replicas moved within the toleration: %v", r)
		}
		// Past it, m2 takes m1's replicas; m1 stays placed and its
		// override keeps what it ran.
		expectSchedule("api", both, map[string]int64{"m1": 5, "m2": 10})
		if elapsed := time.Since(down); elapsed < 3*time.Second {
			t.Errorf("failed over after %v, before the toleration of 3s", elapsed)
		}
		expectStatus("api", ReasonScheduled, func(rsp *schedulingv1alpha1.ReplicaSchedulingPreference) bool {
			for _, cr := range rsp.Status.Clusters {
				if cr.Name == "m1" {
					return cr.FailedOver && cr.Replicas == 0
				}
			}
			return false
		})

		// When m1 is back, m2 gives back what it took over, even when
		// the first write of that meets a change made meanwhile: m1 is
		// failed over in the status until the object is written.
		contendNextAPIWrite.Store(true)
		readiness.set("m1", true)
		expectSchedule("api", both, map[string]int64{"m1": 5, "m2": 5})
		if n := apiConflicts.Load(); n != 1 {
			t.Errorf("%d writes of the restored schedule refused as conflicting, want 1", n)
		}
		expectStatus("api", ReasonScheduled, func(rsp *schedulingv1alpha1.ReplicaSchedulingPreference) bool {
			return maps.Equal(statusReplicas(rsp), map[string]int64{"m1": 5, "m2": 5}) &&
				!slices.ContainsFunc(rsp.Status.Clusters, func(cr schedulingv1alpha1.ClusterReplicas) bool {
					return cr.FailedOver || cr.NotReadySince != nil
				})
		})
	})

	t.Run("unschedulable pods shift replicas away", func(t *testing.T) {
		if err := c.Create(ctx, federatedDeployment("queue", matchLabels("group", "capacity"))); err != nil {
			t.Fatal(err)
		}
		createRSP("queue", "FederatedDeployment", 10, nil)
		both := []string{"c1", "c2"}
		expectSchedule("queue", both, map[string]int64{"c1": 5, "c2": 5})
		long := time.Now().Add(-time.Hour)
		capacity.set("c1", appNS,
			fakePod{labels: labels.Set{"app": "queue"}, since: long},
			fakePod{labels: labels.Set{"app": "queue"}, since: long},
			fakePod{labels: labels.Set{"app": "queue"}, since: long},
			// Another workload's pod does not count.
			fakePod{labels: labels.Set{"app": "other"}, since: long},
		)
		expectSchedule("queue", both, map[string]int64{"c1": 2, "c2": 8})
		expectStatus("queue", ReasonScheduled, func(rsp *schedulingv1alpha1.ReplicaSchedulingPreference) bool {
			for _, cr := range rsp.Status.Clusters {
				if cr.Name == "c1" {
					return cr.EstimatedCapacity != nil && *cr.EstimatedCapacity == 2 && cr.Replicas == 2
				}
			}
			return false
		})
		// The pods going away (the member scaled down) does not bring the
		// replicas back while the estimate is held.
		afterReconcile(t, func() { capacity.set("c1", appNS) })
		if _, r, _ := schedule("queue"); !maps.Equal(r, map[string]int64{"c1": 2, "c2": 8}) {
			t.Errorf("replicas moved back while the capacity estimate is held: %v", r)
		}
	})

	t.Run("a missing object is reported and scheduled once it exists", func(t *testing.T) {
		createRSP("ghost", "FederatedDeployment", 2, nil)
		expectStatus("ghost", ReasonFederatedObjectNotFound, func(rsp *schedulingv1alpha1.ReplicaSchedulingPreference) bool {
			return len(rsp.Status.Clusters) == 0
		})
		if err := c.Create(ctx, federatedDeployment("ghost", matchLabels("tier", "gold"))); err != nil {
			t.Fatal(err)
		}
		expectSchedule("ghost", []string{"ap-northeast"}, map[string]int64{"ap-northeast": 2})
		expectStatus("ghost", ReasonScheduled, nil)
	})

	t.Run("a schedule that meets a change made meanwhile is written again, without an error", func(t *testing.T) {
		errorsBefore := reconcileErrors(t)
		if err := c.Create(ctx, federatedDeployment("contended", matchLabels("tier", "gold"))); err != nil {
			t.Fatal(err)
		}
		createRSP("contended", "FederatedDeployment", 3, nil)
		expectSchedule("contended", []string{"ap-northeast"}, map[string]int64{"ap-northeast": 3})
		if n := contendedConflicts.Load(); n < 1 {
			t.Fatalf("no write of the schedule refused as conflicting (of %d): the test's change came too late", contendedWrites.Load())
		}
		if got := getObject("contended").GetLabels()["edited"]; got != "meanwhile" {
			t.Errorf("the change made meanwhile is gone: label %q", got)
		}
		if d := reconcileErrors(t) - errorsBefore; d != 0 {
			t.Errorf("%v reconcile errors, want the conflict scheduled again as no error", d)
		}
	})

	t.Run("a clusterSelector that matches no cluster any more leaves the object alone, as in KubeFed", func(t *testing.T) {
		lone := &corev1beta1.KubeFedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "l1", Namespace: kubefedNS, Labels: map[string]string{"group": "lonely"}},
			Spec:       corev1beta1.KubeFedClusterSpec{APIEndpoint: "https://127.0.0.1:1", SecretRef: corev1beta1.LocalSecretReference{Name: "l1"}},
		}
		if err := c.Create(ctx, lone); err != nil {
			t.Fatal(err)
		}
		readiness.set("l1", true)
		if err := c.Create(ctx, federatedDeployment("lonely", matchLabels("group", "lonely"))); err != nil {
			t.Fatal(err)
		}
		createRSP("lonely", "FederatedDeployment", 4, nil)
		expectSchedule("lonely", []string{"l1"}, map[string]int64{"l1": 4})
		version := getObject("lonely").GetResourceVersion()

		// Joined again without its labels, say.
		lone.Labels = map[string]string{"group": "relabeled"}
		if err := c.Update(ctx, lone); err != nil {
			t.Fatal(err)
		}
		expectStatus("lonely", ReasonNoClusters, nil)
		if got := getObject("lonely"); got.GetResourceVersion() != version {
			t.Errorf("the object was written with no candidate cluster: %v", got.Object["spec"])
		}
	})

	t.Run("a type that does not propagate leaves its objects alone, as in KubeFed", func(t *testing.T) {
		setPropagation := func(mode corev1beta1.Mode) {
			t.Helper()
			ftc := &corev1beta1.FederatedTypeConfig{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: kubefedNS, Name: "deployments.apps"}, ftc); err != nil {
				t.Fatal(err)
			}
			ftc.Spec.Propagation = mode
			if err := c.Update(ctx, ftc); err != nil {
				t.Fatal(err)
			}
		}
		setPropagation(corev1beta1.Disabled)
		expectStatus("db", ReasonTypeNotPropagated, nil)
		rsp := getRSP("db")
		rsp.Spec.TotalReplicas = 6
		if err := c.Update(ctx, rsp); err != nil {
			t.Fatal(err)
		}
		expectStatus("db", ReasonTypeNotPropagated, nil)
		if _, r, _ := schedule("db"); !maps.Equal(r, map[string]int64{"ap-northeast": 4}) {
			t.Errorf("scheduled while the type does not propagate: %v", r)
		}
		setPropagation(corev1beta1.Enabled)
		expectSchedule("db", []string{"ap-northeast"}, map[string]int64{"ap-northeast": 6})
	})

	t.Run("types that cannot be scheduled", func(t *testing.T) {
		createRSP("settings", "FederatedConfigMap", 2, nil)
		expectStatus("settings", ReasonTargetTypeWithoutReplicas, nil)
		createRSP("widget", "FederatedWidget", 2, nil)
		expectStatus("widget", ReasonFederatedTypeConfigNotFound, nil)
	})
}

// contendingClient calls before and after around each Patch.
type contendingClient struct {
	client.Client
	before func(client.Object)
	after  func(client.Object, error)
}

func (c contendingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.before(obj)
	err := c.Client.Patch(ctx, obj, patch, opts...)
	c.after(obj, err)
	return err
}

// reconcileErrors are the reconciles of the preference controller that
// returned an error, in this process.
func reconcileErrors(t *testing.T) float64 {
	t.Helper()
	v, err := framework.MetricValue("controller_runtime_reconcile_errors_total", "controller", "replicaschedulingpreference")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// afterReconcile runs trigger and returns once the preference controller
// finished a reconcile since and has nothing queued or under way: a
// positive signal to check that nothing moved.
func afterReconcile(t *testing.T, trigger func()) {
	t.Helper()
	metric := func(name, label string) float64 {
		v, err := framework.MetricValue(name, label, "replicaschedulingpreference")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := metric("controller_runtime_reconcile_total", "controller")
	trigger()
	eventually(t, "a reconcile after the change, and nothing more to do", func() (bool, string) {
		done := metric("controller_runtime_reconcile_total", "controller") - before
		queued := metric("workqueue_depth", "name")
		working := metric("controller_runtime_active_workers", "controller")
		return done >= 1 && queued == 0 && working == 0, fmt.Sprintf("%v reconciles since, %v queued, %v under way", done, queued, working)
	})
}

// testPendingPods runs the PendingPods estimator against the host cluster
// joined as a member of itself.
func testPendingPods(ctx context.Context, t *testing.T, c client.Client, host *localcluster.Cluster) {
	const podNS = "pending"
	if err := framework.EnsureNamespace(ctx, c, podNS); err != nil {
		t.Fatal(err)
	}
	registry := clusterclient.NewRegistry(clusterclient.ConfigOptions{})
	kfc := &corev1beta1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "self", Namespace: kubefedNS},
		Spec:       corev1beta1.KubeFedClusterSpec{APIEndpoint: host.Server, CABundle: host.CAData, SecretRef: corev1beta1.LocalSecretReference{Name: "self"}},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "self", Namespace: kubefedNS}, Data: map[string][]byte{clusterclient.TokenKey: []byte(host.Token)}}
	if _, err := registry.Ensure(kfc, secret); err != nil {
		t.Fatal(err)
	}
	pods := NewPendingPods(registry, "", ctrl.Log.WithName("pending-pods"))
	var mu sync.Mutex
	notified := map[string]int{}
	pods.Subscribe(func(cluster, namespace string) {
		mu.Lock()
		defer mu.Unlock()
		notified[cluster+"/"+namespace]++
	})
	podsCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = pods.Start(podsCtx) }()

	selector := labels.SelectorFromSet(labels.Set{"app": "queue"})
	if _, ok := pods.UnschedulableSince("unknown", podNS, selector); ok {
		t.Error("an unknown cluster's pods are reported as known")
	}
	eventually(t, "the informer to sync", func() (bool, string) {
		since, ok := pods.UnschedulableSince("self", podNS, selector)
		return ok && len(since) == 0, fmt.Sprintf("%v %v", since, ok)
	})

	// No scheduler runs in the local cluster: pods stay Pending, and the
	// test writes the condition a scheduler would.
	since := metav1.NewTime(time.Now().Add(-10 * time.Minute).Truncate(time.Second))
	unschedulable := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: since}
	create := func(name, app string, phase corev1.PodPhase, conds ...corev1.PodCondition) {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: podNS, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
		}
		// The namespace's default ServiceAccount may not exist yet.
		eventually(t, "pod "+name+" created", func() (bool, string) {
			err := c.Create(ctx, pod)
			return err == nil, fmt.Sprint(err)
		})
		pod.Status = corev1.PodStatus{Phase: phase, Conditions: conds}
		if err := c.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	create("queue-unschedulable", "queue", corev1.PodPending, unschedulable)
	create("queue-waiting", "queue", corev1.PodPending)
	create("other-unschedulable", "other", corev1.PodPending, unschedulable)
	create("queue-running", "queue", corev1.PodRunning, unschedulable)

	eventually(t, "one unschedulable queue pod", func() (bool, string) {
		got, ok := pods.UnschedulableSince("self", podNS, selector)
		return ok && len(got) == 1 && got[0].Equal(since.Time), fmt.Sprintf("%v %v", got, ok)
	})
	eventually(t, "subscribers notified", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return notified["self/"+podNS] > 0, fmt.Sprint(notified)
	})

	// A pod that leaves Pending leaves the cache.
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: podNS, Name: "queue-unschedulable"}, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no unschedulable queue pod", func() (bool, string) {
		got, ok := pods.UnschedulableSince("self", podNS, selector)
		return ok && len(got) == 0, fmt.Sprintf("%v %v", got, ok)
	})

	// Removing the cluster's clients stops its informer.
	registry.Remove("self")
	if _, ok := pods.UnschedulableSince("self", podNS, selector); ok {
		t.Error("a removed cluster's pods are reported as known")
	}
}
