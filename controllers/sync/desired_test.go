package sync

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
	"github.com/kubefed-io/kubefed/pkg/overrides"
)

var deploymentType = targetType{apiVersion: "apps/v1", kind: "Deployment", gk: schema.GroupKind{Group: "apps", Kind: "Deployment"}, namespaced: true}

func fedDeployment() map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": "web", "namespace": "demo"},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{
					"labels":      map[string]any{"app": "web"},
					"annotations": map[string]any{"dropped": "yes"},
					"name":        "ignored",
				},
				"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{
					"containers": []any{map[string]any{"name": "c", "image": "nginx", "resources": map[string]any{"limits": map[string]any{"cpu": "0.5"}}}},
				}}},
			},
		},
	}
}

func mustOps(t *testing.T, fed map[string]any, cluster string) []overrides.Operation {
	t.Helper()
	byCluster, err := overrides.FromUnstructured(fed)
	if err != nil {
		t.Fatal(err)
	}
	return byCluster[cluster]
}

func TestDesiredObject(t *testing.T) {
	fed := fedDeployment()
	fed["spec"].(map[string]any)["overrides"] = []any{map[string]any{
		"clusterName": "c2",
		"clusterOverrides": []any{
			map[string]any{"path": "/spec/replicas", "value": int64(5)},
			map[string]any{"path": "/metadata/labels/kubefed.io~1managed", "value": "false"},
			map[string]any{"path": "/metadata/annotations", "op": "add", "value": map[string]any{"team": "a"}},
		},
	}}
	d1, h1, err := desiredObject(fed, "web", "demo", deploymentType, mustOps(t, fed, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	d2, h2, err := desiredObject(fed, "web", "demo", deploymentType, mustOps(t, fed, "c2"))
	if err != nil {
		t.Fatal(err)
	}
	if h1 == h2 {
		t.Fatal("different overrides gave the same hash")
	}
	md := d1["metadata"].(map[string]any)
	if md["name"] != "web" || md["namespace"] != "demo" || d1["apiVersion"] != "apps/v1" || d1["kind"] != "Deployment" {
		t.Fatalf("identity: %v", d1)
	}
	if _, ok := md["annotations"].(map[string]any)["dropped"]; ok {
		t.Fatal("template annotations must not be propagated")
	}
	if md["labels"].(map[string]any)["kubefed.io/managed"] != "true" || md["labels"].(map[string]any)["app"] != "web" {
		t.Fatalf("labels: %v", md["labels"])
	}
	if md["annotations"].(map[string]any)[HashAnnotation] != h1 {
		t.Fatal("hash annotation missing")
	}
	md2 := d2["metadata"].(map[string]any)
	if d2["spec"].(map[string]any)["replicas"] != int64(5) || md2["labels"].(map[string]any)["kubefed.io/managed"] != "true" {
		t.Fatalf("overrides: %v", d2)
	}
	if md2["annotations"].(map[string]any)["team"] != "a" {
		t.Fatal("an override may add annotations")
	}
	// The template is not modified.
	if fed["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["replicas"] != int64(3) {
		t.Fatal("template changed")
	}
	again, h1b, _ := desiredObject(fed, "web", "demo", deploymentType, mustOps(t, fed, "c1"))
	if h1b != h1 || !upToDate(again, d1, h1) {
		t.Fatal("the hash is not stable")
	}
}

func TestDesiredObjectErrors(t *testing.T) {
	fed := fedDeployment()
	fed["spec"].(map[string]any)["template"] = "nope"
	if _, _, err := desiredObject(fed, "web", "demo", deploymentType, nil); err == nil || !strings.Contains(err.Error(), "spec.template") {
		t.Fatalf("want a spec.template error, got %v", err)
	}
	fed = fedDeployment()
	fed["spec"].(map[string]any)["overrides"] = []any{map[string]any{"clusterName": "c1", "clusterOverrides": []any{
		map[string]any{"op": "remove", "path": "/spec/missing"}}}}
	if _, _, err := desiredObject(fed, "web", "demo", deploymentType, mustOps(t, fed, "c1")); err == nil {
		t.Fatal("removing a missing field must fail")
	}
}

func TestSecretStringDataIsFolded(t *testing.T) {
	fed := map[string]any{"spec": map[string]any{"template": map[string]any{
		"data": map[string]any{"a": "eA=="}, "stringData": map[string]any{"b": "hello"}}}}
	secret := targetType{apiVersion: "v1", kind: "Secret", gk: schema.GroupKind{Kind: "Secret"}, namespaced: true}
	d, _, err := desiredObject(fed, "s", "ns", secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d["stringData"]; ok {
		t.Fatal("stringData kept")
	}
	if d["data"].(map[string]any)["b"] != "aGVsbG8=" || d["data"].(map[string]any)["a"] != "eA==" {
		t.Fatalf("data: %v", d["data"])
	}
}

func TestUpToDate(t *testing.T) {
	fed := fedDeployment()
	desired, hash, err := desiredObject(fed, "web", "demo", deploymentType, nil)
	if err != nil {
		t.Fatal(err)
	}
	// What the apiserver stores: defaults added, quantities canonical,
	// numbers decoded as int64, extra labels and annotations of its own.
	stored := func() map[string]any {
		return map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{
				"name": "web", "namespace": "demo", "resourceVersion": "7", "generation": int64(1),
				"labels":      map[string]any{"app": "web", "kubefed.io/managed": "true", "extra": "x"},
				"annotations": map[string]any{HashAnnotation: hash, "deployment.kubernetes.io/revision": "1"},
			},
			"spec": map[string]any{"replicas": int64(3), "strategy": map[string]any{"type": "RollingUpdate"}, "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
					"resources": map[string]any{"limits": map[string]any{"cpu": "500m"}}}},
				"restartPolicy": "Always",
			}}},
			"status": map[string]any{"replicas": int64(0)},
		}
	}
	if !upToDate(desired, stored(), hash) {
		t.Fatal("a defaulted, canonicalized copy must be up to date")
	}
	// The apiserver drops empty lists and maps a template sets
	// (tolerations: [], nodeSelector: {}); they are no difference.
	withEmpty := jsonvalue.Copy(desired).(map[string]any)
	podSpec := withEmpty["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	podSpec["tolerations"], podSpec["nodeSelector"] = []any{}, map[string]any{}
	podSpec["hostNetwork"], podSpec["activeDeadlineSeconds"], podSpec["hostname"] = false, int64(0), ""
	if !upToDate(withEmpty, stored(), hash) {
		t.Error("empty lists and maps, false, 0 and \"\" of the template, absent in the copy, made it stale")
	}
	podSpec["hostNetwork"] = true
	if upToDate(withEmpty, stored(), hash) {
		t.Error("hostNetwork: true, absent in the copy, is up to date")
	}
	cases := map[string]func(m map[string]any){
		"replicas changed by hand": func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(7) },
		"container removed": func(m map[string]any) {
			m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"] = []any{}
		},
		"label removed": func(m map[string]any) { delete(m["metadata"].(map[string]any)["labels"].(map[string]any), "app") },
		"hash differs": func(m map[string]any) {
			m["metadata"].(map[string]any)["annotations"].(map[string]any)[HashAnnotation] = "old"
		},
		"no annotations": func(m map[string]any) { delete(m["metadata"].(map[string]any), "annotations") },
		"image changed":  func(m map[string]any) { containerOf(m)["image"] = "httpd" },
		"cpu changed": func(m map[string]any) {
			containerOf(m)["resources"].(map[string]any)["limits"].(map[string]any)["cpu"] = "1"
		},
		"spec is missing": func(m map[string]any) { delete(m, "spec") },
	}
	for name, mutate := range cases {
		m := stored()
		mutate(m)
		if upToDate(desired, m, hash) {
			t.Errorf("%s: must not be up to date", name)
		}
	}
}

func containerOf(m map[string]any) map[string]any {
	return m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}

func TestBuildStatus(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	outcomes := []outcome{
		{cluster: "c2", listed: true, status: typesv1beta1.ApplyOverridesFailed, message: "bad path"},
		{cluster: "c1", listed: true, remote: map[string]any{"replicas": int64(1)}},
		{cluster: "c3"},
	}
	s := buildStatus(nil, 4, outcomes, "", "", now, nil)
	if s["observedGeneration"] != int64(4) {
		t.Fatal(s)
	}
	clusters := s["clusters"].([]any)
	if len(clusters) != 2 || clusters[0].(map[string]any)["name"] != "c1" || clusters[1].(map[string]any)["status"] != "ApplyOverridesFailed" {
		t.Fatalf("clusters: %v", clusters)
	}
	if clusters[0].(map[string]any)["remoteStatus"] == nil {
		t.Fatal("remote status missing")
	}
	cond := s["conditions"].([]any)[0].(map[string]any)
	if cond["status"] != "False" || cond["reason"] != "CheckClusters" || !strings.Contains(cond["message"].(string), "c2: ApplyOverridesFailed: bad path") {
		t.Fatalf("condition: %v", cond)
	}

	// The same outcomes later give an identical status: nothing to write.
	again := buildStatus(s, 4, outcomes, "", "", now.Add(time.Hour), nil)
	if !sameJSON(s, again) {
		t.Fatalf("unchanged status differs:\n%v\n%v", s, again)
	}
	// Recovery flips the condition with a new transition time.
	ok := buildStatus(s, 4, []outcome{{cluster: "c1", listed: true}, {cluster: "c2", listed: true}}, "", "", now.Add(time.Hour), nil)
	okCond := ok["conditions"].([]any)[0].(map[string]any)
	if okCond["status"] != "True" || okCond["lastTransitionTime"] == cond["lastTransitionTime"] {
		t.Fatalf("recovered condition: %v", okCond)
	}
	// A placement failure lists no clusters.
	nf := buildStatus(nil, 1, nil, typesv1beta1.ReasonNamespaceNotFederated, "no FederatedNamespace", now, nil)
	if _, ok := nf["clusters"]; ok || nf["conditions"].([]any)[0].(map[string]any)["reason"] != "NamespaceNotFederated" {
		t.Fatalf("not federated: %v", nf)
	}
	// Where Pull-mode members' agents hold copies, their entries stand
	// beside the reason, which stays the condition's.
	agents := buildStatus(nil, 1, []outcome{{cluster: "edge", listed: true, status: typesv1beta1.UpdateFailed}},
		typesv1beta1.ReasonNamespaceNotFederated, "no FederatedNamespace", now, nil)
	if entries, _ := agents["clusters"].([]any); len(entries) != 1 || agents["conditions"].([]any)[0].(map[string]any)["reason"] != "NamespaceNotFederated" {
		t.Fatalf("not federated, with an agent's entry: %v", agents)
	}
}

func TestDeleteOptions(t *testing.T) {
	fed := fedDeployment()
	u := unstructuredOf(fed)
	u.SetAnnotations(map[string]string{"kubefed.io/deleteoption": `{"propagationPolicy":"Orphan","gracePeriodSeconds":5}`})
	opts, err := deleteOptions(u)
	if err != nil || opts.PropagationPolicy == nil || *opts.PropagationPolicy != "Orphan" || *opts.GracePeriodSeconds != 5 {
		t.Fatalf("opts %v err %v", opts, err)
	}
	u.SetAnnotations(map[string]string{"kubefed.io/deleteoption": `{"propagationPolicy":`})
	if _, err := deleteOptions(u); err == nil || !strings.Contains(err.Error(), "kubefed.io/deleteoption") {
		t.Fatalf("want an error naming the annotation, got %v", err)
	}
}

func unstructuredOf(m map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: m}
}

func TestRetriable(t *testing.T) {
	for _, s := range []typesv1beta1.PropagationStatusValue{typesv1beta1.CreationFailed, typesv1beta1.UpdateTimedOut,
		typesv1beta1.RetrievalFailed, typesv1beta1.AlreadyExists, typesv1beta1.DeletionFailed, typesv1beta1.CachedRetrievalFailed} {
		if !retriable(s) {
			t.Errorf("%s must be retried", s)
		}
	}
	for _, s := range []typesv1beta1.PropagationStatusValue{"", typesv1beta1.ApplyOverridesFailed, typesv1beta1.ComputeResourceFailed,
		typesv1beta1.ClusterNotFound, typesv1beta1.ClusterNotReady} {
		if retriable(s) {
			t.Errorf("%s must wait for a change, not be retried", s)
		}
	}
}

func TestTemplateErrorsAreNotOverrideErrors(t *testing.T) {
	fed := fedDeployment()
	fed["spec"].(map[string]any)["overrides"] = []any{map[string]any{"clusterName": "c1", "clusterOverrides": []any{
		map[string]any{"op": "remove", "path": "/spec/missing"}}}}
	_, _, err := desiredObject(fed, "web", "demo", deploymentType, mustOps(t, fed, "c1"))
	var oe *overridesError
	if !errors.As(err, &oe) {
		t.Fatalf("an override failure must be an overridesError: %v", err)
	}
	fed["spec"].(map[string]any)["template"] = map[string]any{"kind": "x", "stringData": "bad"}
	secret := targetType{apiVersion: "v1", kind: "Secret", gk: schema.GroupKind{Kind: "Secret"}, namespaced: true}
	_, _, err = desiredObject(fed, "s", "demo", secret, nil)
	if err == nil || errors.As(err, &oe) {
		t.Fatalf("a template failure must not be an overridesError: %v", err)
	}
}

func TestOnlyOurFinalizerAdded(t *testing.T) {
	ours := corev1beta1.SyncControllerFinalizer
	for _, tc := range []struct {
		before, after []string
		want          bool
	}{
		{nil, []string{ours}, true},
		{[]string{"a"}, []string{"a", ours}, true},
		{[]string{ours}, []string{ours}, false},
		{[]string{"a"}, []string{"b", ours}, false},
		{[]string{ours}, nil, false},
		{nil, []string{"a", ours}, false},
	} {
		if got := onlyOurFinalizerAdded(tc.before, tc.after); got != tc.want {
			t.Errorf("onlyOurFinalizerAdded(%v, %v) = %v, want %v", tc.before, tc.after, got, tc.want)
		}
	}
}

// As in KubeFed, an update retains the member's fields before the
// overrides apply, so that overriding a retained field works on updates:
// spec.replicas under retainReplicas (a ReplicaSchedulingPreference's
// overrides), and the finalizers.
func TestRetainedFieldsCanBeOverridden(t *testing.T) {
	fed := fedDeployment()
	fed["spec"].(map[string]any)["overrides"] = []any{map[string]any{
		"clusterName": "c1",
		"clusterOverrides": []any{
			map[string]any{"path": "/spec/replicas", "value": int64(0)},
			map[string]any{"path": "/metadata/finalizers", "op": "add", "value": []any{"example.com/keep"}},
		},
	}}
	current := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "demo", "resourceVersion": "7",
			"annotations": map[string]any{"deployment.kubernetes.io/revision": "2"},
			"finalizers":  []any{"member.example.com/f"}},
		"spec": map[string]any{"replicas": int64(3)},
	}
	_, hash, err := desiredObject(fed, "web", "demo", deploymentType, mustOps(t, fed, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := retainedObject(fed, "web", "demo", deploymentType, mustOps(t, fed, "c1"), current, true, hash)
	if err != nil {
		t.Fatal(err)
	}
	if r := got["spec"].(map[string]any)["replicas"]; r != int64(0) {
		t.Errorf("spec.replicas = %v, want the override's 0 over the retained 3", r)
	}
	if f := got["metadata"].(map[string]any)["finalizers"]; !reflect.DeepEqual(f, []any{"example.com/keep"}) {
		t.Errorf("finalizers = %v, want the override's over the retained ones", f)
	}
	ann := got["metadata"].(map[string]any)["annotations"].(map[string]any)
	if ann["deployment.kubernetes.io/revision"] != "2" || ann[HashAnnotation] != hash {
		t.Errorf("annotations = %v, want the member's revision kept and the plan's hash", ann)
	}
	if got["metadata"].(map[string]any)["resourceVersion"] != "7" {
		t.Errorf("resourceVersion not retained: %v", got["metadata"])
	}

	// Without an override the member's replicas are retained.
	got, err = retainedObject(fed, "web", "demo", deploymentType, mustOps(t, fed, "c2"), current, true, hash)
	if err != nil {
		t.Fatal(err)
	}
	if r := got["spec"].(map[string]any)["replicas"]; r != int64(3) {
		t.Errorf("spec.replicas = %v, want the member's 3", r)
	}
}

// As in KubeFed, a template's empty labels and annotations stay for the
// overrides, which can then add a key to them; without overrides the empty
// annotations change neither the object nor its hash.
func TestEmptyTemplateMapsTakeOverrides(t *testing.T) {
	fed := fedDeployment()
	md := fed["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)
	delete(md, "annotations")
	delete(md, "labels")
	_, plain, err := desiredObject(fed, "web", "demo", deploymentType, nil)
	if err != nil {
		t.Fatal(err)
	}
	md["labels"] = map[string]any{}
	md["annotations"] = map[string]any{}
	d, hash, err := desiredObject(fed, "web", "demo", deploymentType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hash != plain {
		t.Fatal("empty template labels and annotations changed the hash")
	}
	if ann := d["metadata"].(map[string]any)["annotations"].(map[string]any); len(ann) != 1 {
		t.Fatalf("annotations: %v", ann)
	}
	fed["spec"].(map[string]any)["overrides"] = []any{map[string]any{
		"clusterName": "c1",
		"clusterOverrides": []any{
			map[string]any{"path": "/metadata/annotations/team", "op": "add", "value": "a"},
			map[string]any{"path": "/metadata/labels/tier", "op": "add", "value": "web"},
		},
	}}
	d, _, err = desiredObject(fed, "web", "demo", deploymentType, mustOps(t, fed, "c1"))
	if err != nil {
		t.Fatalf("an override adding to the template's empty maps: %v", err)
	}
	got := d["metadata"].(map[string]any)
	if got["annotations"].(map[string]any)["team"] != "a" || got["labels"].(map[string]any)["tier"] != "web" ||
		got["labels"].(map[string]any)["kubefed.io/managed"] != "true" {
		t.Fatalf("metadata: %v", got)
	}
	// Without the empty labels, as in KubeFed, there is nothing to add to.
	delete(md, "labels")
	if _, _, err := desiredObject(fed, "web", "demo", deploymentType, mustOps(t, fed, "c1")); err == nil {
		t.Fatal("adding a key to absent labels must fail")
	}
}

// KubeFed copied a member's annotations and finalizers into the rendering
// before the overrides of every update, so an override setting an
// annotation or adding a finalizer the template lacks worked on the copies
// that had any (all of ours carry the hash annotation). It works here on
// the rendering itself, for updates and creates.
func TestOverridesSetAnnotationsAndFinalizersTheTemplateLacks(t *testing.T) {
	fed := fedDeployment()
	md := fed["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)
	delete(md, "annotations")
	_, plain, err := desiredObject(fed, "web", "demo", deploymentType, nil)
	if err != nil {
		t.Fatal(err)
	}
	fed["spec"].(map[string]any)["overrides"] = []any{map[string]any{
		"clusterName": "c1",
		"clusterOverrides": []any{
			map[string]any{"path": "/metadata/annotations/team", "value": "a"},
			map[string]any{"path": "/metadata/finalizers/-", "op": "add", "value": "example.com/keep"},
		},
	}}
	ops := mustOps(t, fed, "c1")
	d, hash, err := desiredObject(fed, "web", "demo", deploymentType, ops)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	got := d["metadata"].(map[string]any)
	if got["annotations"].(map[string]any)["team"] != "a" || !reflect.DeepEqual(got["finalizers"], []any{"example.com/keep"}) {
		t.Fatalf("metadata: %v", got)
	}
	if hash == plain {
		t.Fatal("the overrides did not change the hash")
	}
	// The update writes the member's annotations and finalizers with the
	// overrides on top.
	current := map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{"deployment.kubernetes.io/revision": "3", "team": "old"},
		"finalizers":  []any{"member.example.com/f"},
	}}
	u, err := retainedObject(fed, "web", "demo", deploymentType, ops, current, false, hash)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	um := u["metadata"].(map[string]any)
	ann := um["annotations"].(map[string]any)
	if ann["team"] != "a" || ann["deployment.kubernetes.io/revision"] != "3" ||
		!reflect.DeepEqual(um["finalizers"], []any{"member.example.com/f", "example.com/keep"}) {
		t.Fatalf("update metadata: %v", um)
	}
	// Overrides that set nothing there leave the rendering as it was.
	fed["spec"].(map[string]any)["overrides"] = []any{map[string]any{
		"clusterName":      "c1",
		"clusterOverrides": []any{map[string]any{"path": "/metadata/annotations", "value": map[string]any{}}},
	}}
	if _, h, err := desiredObject(fed, "web", "demo", deploymentType, mustOps(t, fed, "c1")); err != nil || h != plain {
		t.Fatalf("an override to empty annotations: hash changed or %v", err)
	}
}
