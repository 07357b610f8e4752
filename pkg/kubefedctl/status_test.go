package kubefedctl

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

// goldenNow is the clock of the golden tests; fixture objects are created
// at fixed times before it.
var goldenNow = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// fixClock makes the AGE columns count from goldenNow.
func fixClock(t testing.TB) {
	t.Helper()
	clock = func() time.Time { return goldenNow }
	t.Cleanup(func() { clock = time.Now })
}

// checkGolden compares got with testdata/<name>.golden, or rewrites the
// file with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

var (
	fedConfigMapGVR   = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"}
	fedClusterRoleGVR = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedclusterroles"}
)

func kubeFedClusterFixture(name string, created time.Duration, ready *corev1.ConditionStatus, reason string, status corev1beta1.KubeFedClusterStatus) *corev1beta1.KubeFedCluster {
	c := &corev1beta1.KubeFedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, CreationTimestamp: metav1.NewTime(goldenNow.Add(-created))},
		Spec:       corev1beta1.KubeFedClusterSpec{APIEndpoint: "https://" + name + ".example:6443", SecretRef: corev1beta1.LocalSecretReference{Name: name + "-abcde"}},
		Status:     status,
	}
	if ready != nil {
		msg := map[string]string{
			corev1beta1.ReasonClusterReady:        "/healthz responded with ok",
			corev1beta1.ReasonClusterNotReachable: "dial tcp 10.0.0.2:6443: connect: connection refused",
		}[reason]
		c.Status.Conditions = append(c.Status.Conditions, corev1beta1.ClusterCondition{
			Type: corev1beta1.ClusterReady, Status: *ready, Reason: ptr.To(reason), Message: ptr.To(msg),
			LastProbeTime: metav1.NewTime(goldenNow),
		})
	}
	return c
}

// pullMode makes a fixture a Pull-mode member, which has no Secret.
func pullMode(c *corev1beta1.KubeFedCluster) *corev1beta1.KubeFedCluster {
	c.Spec.Mode, c.Spec.SecretRef = corev1beta1.ClusterModePull, corev1beta1.LocalSecretReference{}
	return c
}

// newStatusHost is a host with four federated types enabled, three joined
// members (ready, offline, and member3 in Pull mode that has not reported)
// and federated objects in every
// state status reports:
//
//	demo/web       FederatedDeployment   OK in member1, ClusterNotReady in member2
//	demo/fresh     FederatedDeployment   never reconciled
//	demo/stale     FederatedDeployment   changed since the last report
//	demo/settings  FederatedConfigMap    OK in member1, CreationFailed in member3
//	demo/orphan    FederatedConfigMap    NamespaceNotFederated
//	demo/demo      FederatedNamespace    OK everywhere
//	other/api      FederatedDeployment   OK in member1 (other namespace)
//	reader         FederatedClusterRole  OK in member1, placed in unjoined member9
func newStatusHost(t *testing.T) *typesHost {
	t.Helper()
	h := newTypesHost(t)
	ctx := context.Background()
	for _, plural := range []string{"deployments", "configmaps", "namespaces", "clusterroles"} {
		var target federatedtype.Target
		for _, d := range federatedtype.DefaultTargets {
			if d.Plural == plural {
				target = d
			}
		}
		crd, err := federatedtype.CRD(target, federatedtype.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h.serve(crd)
		if err := h.fed.Create(ctx, federatedtype.TypeConfig(target, federatedtype.Options{})); err != nil {
			t.Fatal(err)
		}
	}

	isTrue, isFalse := corev1.ConditionTrue, corev1.ConditionFalse
	region := "us-east-1"
	for _, c := range []*corev1beta1.KubeFedCluster{
		kubeFedClusterFixture("member1", 3*24*time.Hour, &isTrue, corev1beta1.ReasonClusterReady, corev1beta1.KubeFedClusterStatus{
			KubernetesVersion: "v1.37.2", NodeSummary: &corev1beta1.NodeSummary{TotalNum: 3, ReadyNum: 3},
			Zones: []string{"us-east-1a", "us-east-1b"}, Region: &region,
		}),
		kubeFedClusterFixture("member2", 26*time.Hour, &isFalse, corev1beta1.ReasonClusterNotReachable, corev1beta1.KubeFedClusterStatus{
			KubernetesVersion: "v1.36.4", NodeSummary: &corev1beta1.NodeSummary{TotalNum: 5, ReadyNum: 4},
		}),
		pullMode(kubeFedClusterFixture("member3", 90*time.Second, nil, "", corev1beta1.KubeFedClusterStatus{})),
	} {
		if err := h.fed.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}

	fed := func(gvr schema.GroupVersionResource, kind, namespace, name string, generation int64, status map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "types.kubefed.io/v1beta1",
			"kind":       kind,
			"spec":       map[string]any{"placement": map[string]any{"clusterSelector": map[string]any{}}},
		}}
		u.SetName(name)
		u.SetNamespace(namespace)
		u.SetGeneration(generation)
		u.SetCreationTimestamp(metav1.NewTime(goldenNow.Add(-2 * time.Hour)))
		if status != nil {
			u.Object["status"] = status
		}
		if err := h.dyn.Tracker().Create(gvr, u, namespace); err != nil {
			t.Fatal(err)
		}
	}
	cond := func(status metav1.ConditionStatus, reason, message string) []any {
		return []any{map[string]any{
			"type": typesv1beta1.ConditionPropagation, "status": string(status), "reason": reason, "message": message,
			"lastUpdateTime": "2026-07-01T11:00:00Z", "lastTransitionTime": "2026-07-01T11:00:00Z",
		}}
	}
	clusters := func(pairs ...string) []any {
		var out []any
		for i := 0; i < len(pairs); i += 2 {
			c := map[string]any{"name": pairs[i]}
			if pairs[i+1] != "" {
				c["status"] = pairs[i+1]
			}
			out = append(out, c)
		}
		return out
	}
	ok := cond(metav1.ConditionTrue, "", "")
	fed(fedDeployGVR, "FederatedDeployment", "demo", "web", 4, map[string]any{
		"observedGeneration": int64(4),
		"conditions":         cond(metav1.ConditionFalse, typesv1beta1.ReasonCheckClusters, "propagation failed in 1 of 2 clusters"),
		// Aggregated: member1 counts, member2 (not ready) has no copy read.
		"clusters": []any{
			map[string]any{"name": "member1", "ready": "2/3", "counts": map[string]any{"readyReplicas": int64(2), "desiredReplicas": int64(3)}},
			map[string]any{"name": "member2", "status": string(typesv1beta1.ClusterNotReady)},
		},
		"ready":  "2/3",
		"counts": map[string]any{"readyReplicas": int64(2), "desiredReplicas": int64(3)},
	})
	fed(fedDeployGVR, "FederatedDeployment", "demo", "fresh", 1, nil)
	fed(fedDeployGVR, "FederatedDeployment", "demo", "stale", 3, map[string]any{
		"observedGeneration": int64(2), "conditions": ok, "clusters": clusters("member1", ""),
	})
	fed(fedConfigMapGVR, "FederatedConfigMap", "demo", "settings", 1, map[string]any{
		"observedGeneration": int64(1),
		"conditions":         cond(metav1.ConditionFalse, typesv1beta1.ReasonCheckClusters, "propagation failed in 1 of 2 clusters"),
		"clusters": []any{
			map[string]any{"name": "member1", "remoteStatus": map[string]any{"phase": "ok"}},
			map[string]any{"name": "member3", "status": string(typesv1beta1.CreationFailed)},
		},
	})
	fed(fedConfigMapGVR, "FederatedConfigMap", "demo", "orphan", 1, map[string]any{
		"observedGeneration": int64(1),
		"conditions": cond(metav1.ConditionFalse, typesv1beta1.ReasonNamespaceNotFederated,
			`the namespace "demo" has no FederatedNamespace demo/demo, so nothing is placed`),
	})
	fed(fedNamespaceGVR, "FederatedNamespace", "demo", "demo", 1, map[string]any{
		"observedGeneration": int64(1), "conditions": ok, "clusters": clusters("member1", "", "member2", "", "member3", ""),
	})
	fed(fedDeployGVR, "FederatedDeployment", "other", "api", 1, map[string]any{
		"observedGeneration": int64(1), "conditions": ok, "clusters": clusters("member1", ""),
	})
	fed(fedClusterRoleGVR, "FederatedClusterRole", "", "reader", 1, map[string]any{
		"observedGeneration": int64(1),
		"conditions":         cond(metav1.ConditionFalse, typesv1beta1.ReasonCheckClusters, "cluster member9 is not joined"),
		"clusters":           clusters("member1", "", "member9", string(typesv1beta1.ClusterNotFound)),
	})
	return h
}

// TestStatusGolden covers the table, wide, JSON and YAML output of status
// over objects that are OK, failed, not placed, pending and not propagated.
func TestStatusGolden(t *testing.T) {
	fixClock(t)
	h := newStatusHost(t)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		// Namespace demo: cluster-scoped types are left out; member3 has
		// no status yet; demo/stale is Pending although its condition is True.
		{"status_namespace", []string{"status", "-n", "demo"}},
		// All namespaces: other/api and the cluster-scoped reader, whose
		// placement names the unjoined member9, join the table.
		{"status_all_wide", []string{"status", "-A", "-o", "wide"}},
		// One type by its short name, in the kubeconfig's default namespace.
		{"status_type", []string{"status", "cm", "-n", "demo"}},
		// A cluster-scoped type named: its objects are shown without -A.
		{"status_cluster_scoped_type", []string{"status", "federatedclusterroles"}},
		{"status_object_json", []string{"status", "fdeploy", "web", "-n", "demo", "-o", "json"}},
		{"status_type_yaml", []string{"status", "configmaps", "-n", "demo", "-o", "yaml"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			out, errOut, err := h.run(t, "", tc.args...)
			if err != nil {
				t.Fatalf("kubefedctl %s: %v\n%s", strings.Join(tc.args, " "), err, errOut)
			}
			if errOut != "" {
				t.Errorf("stderr: %q", errOut)
			}
			checkGolden(t, tc.golden, out)
		})
	}
}

func TestStatusMessagesAndErrors(t *testing.T) {
	h := newStatusHost(t)
	out, errOut, err := h.run(t, "", "status", "-n", "empty")
	if err != nil || out != "" || errOut != "No federated objects found in namespace empty.\n" {
		t.Errorf("empty namespace: out %q, stderr %q, err %v", out, errOut, err)
	}
	// A FederatedNamespace is found in the namespace it federates.
	if out := h.mustRun(t, "status", "namespaces", "demo"); !strings.Contains(out, "FederatedNamespace   demo   OK") {
		t.Errorf("FederatedNamespace by name:\n%s", out)
	}
	for args, want := range map[string]string{
		"status deployments nope -n demo":   "FederatedDeployment demo/nope not found in host",
		"status services":                   "services is not enabled",
		"status deployments web -A":         "--all-namespaces cannot be used with NAME",
		"status -o name":                    `invalid --output "name"`,
		"status deployments web extra -n x": "accepts at most 2 arg(s)",
	} {
		if _, _, err := h.run(t, "", strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", args, err, want)
		}
	}
}

// TestStatusSkipsUnlistableTypes proves that one type whose CRD is gone
// does not hide the others, and that naming it is an error.
func TestStatusSkipsUnlistableTypes(t *testing.T) {
	h := newStatusHost(t)
	// The FederatedTypeConfig of jobs exists, its CRD does not.
	h.dyn.PrependReactor("*", "federatedjobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), "")
	})
	for _, target := range federatedtype.DefaultTargets {
		if target.Plural == "jobs" {
			if err := h.fed.Create(context.Background(), federatedtype.TypeConfig(target, federatedtype.Options{})); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, errOut, err := h.run(t, "", "status", "-n", "demo")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "Warning: list FederatedJob (federatedjobs.types.kubefed.io/v1beta1) in host") {
		t.Errorf("stderr: %q", errOut)
	}
	if !strings.Contains(out, "FederatedDeployment") {
		t.Errorf("the other types are missing:\n%s", out)
	}
	if _, _, err := h.run(t, "", "status", "jobs.batch", "-n", "demo"); err == nil {
		t.Error("a named type that cannot be listed is no error")
	}
}

func TestPropagationOf(t *testing.T) {
	deleted := metav1.NewTime(goldenNow)
	for name, tc := range map[string]struct {
		generation int64
		deleting   bool
		status     typesv1beta1.FederatedObjectStatus
		want       propagationState
	}{
		"no status": {generation: 1, want: propagationState{State: PropagationPending, Message: "the control plane has not reported on this object yet"}},
		"true": {generation: 2, status: typesv1beta1.FederatedObjectStatus{ObservedGeneration: 2,
			Conditions: []typesv1beta1.GenericCondition{{Type: "Propagation", Status: metav1.ConditionTrue}}},
			want: propagationState{State: PropagationOK}},
		"false": {generation: 2, status: typesv1beta1.FederatedObjectStatus{ObservedGeneration: 2,
			Conditions: []typesv1beta1.GenericCondition{{Type: "Propagation", Status: metav1.ConditionFalse, Reason: "CheckClusters", Message: "m"}}},
			want: propagationState{State: PropagationFailed, Reason: "CheckClusters", Message: "m"}},
		"unknown": {generation: 1, status: typesv1beta1.FederatedObjectStatus{
			Conditions: []typesv1beta1.GenericCondition{{Type: "Propagation", Status: metav1.ConditionUnknown}}},
			want: propagationState{State: PropagationUnknown}},
		// KubeFed wrote no observedGeneration: its status is taken as current.
		"no observedGeneration": {generation: 5, status: typesv1beta1.FederatedObjectStatus{
			Conditions: []typesv1beta1.GenericCondition{{Type: "Propagation", Status: metav1.ConditionTrue}}},
			want: propagationState{State: PropagationOK}},
		"stale": {generation: 3, status: typesv1beta1.FederatedObjectStatus{ObservedGeneration: 2,
			Conditions: []typesv1beta1.GenericCondition{{Type: "Propagation", Status: metav1.ConditionFalse, Reason: "CheckClusters"}}},
			want: propagationState{State: PropagationPending, Reason: "CheckClusters", Message: "the status is of generation 2, the object is at 3"}},
		"deleting": {generation: 1, deleting: true, status: typesv1beta1.FederatedObjectStatus{
			Conditions: []typesv1beta1.GenericCondition{{Type: "Propagation", Status: metav1.ConditionTrue}}},
			want: propagationState{State: PropagationDeleting}},
		"other condition types are ignored": {generation: 1, status: typesv1beta1.FederatedObjectStatus{
			Conditions: []typesv1beta1.GenericCondition{{Type: "Ready", Status: metav1.ConditionTrue}}},
			want: propagationState{State: PropagationPending, Message: "the control plane has not reported on this object yet"}},
	} {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetGeneration(tc.generation)
			if tc.deleting {
				u.SetDeletionTimestamp(&deleted)
			}
			if got := propagationOf(u, &tc.status); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
