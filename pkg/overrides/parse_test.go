package overrides

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
)

const seedFederatedDeployment = `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: test-deployment, namespace: test-namespace}
spec:
  template:
    spec: {replicas: 3}
  placement:
    clusters: [{name: cluster2}, {name: cluster1}]
  overrides:
  - clusterName: cluster2
    clusterOverrides:
    - path: "/spec/replicas"
      value: 5
    - path: "/spec/template/spec/containers/0/image"
      value: "nginx:1.17.0-alpine"
    - path: "/metadata/annotations"
      op: "add"
      value:
        foo: bar
    - path: "/metadata/annotations/foo"
      op: "remove"
  - clusterName: cluster1
`

func TestFromUnstructured(t *testing.T) {
	got, err := FromUnstructured(object(t, seedFederatedDeployment))
	if err != nil {
		t.Fatal(err)
	}
	want := ByCluster{
		"cluster2": {
			{Op: typesv1beta1.OverrideReplace, Path: Pointer{"spec", "replicas"}, Value: int64(5)},
			{Op: typesv1beta1.OverrideReplace, Path: Pointer{"spec", "template", "spec", "containers", "0", "image"}, Value: "nginx:1.17.0-alpine"},
			{Op: typesv1beta1.OverrideAdd, Path: Pointer{"metadata", "annotations"}, Value: map[string]any{"foo": "bar"}},
			{Op: typesv1beta1.OverrideRemove, Path: Pointer{"metadata", "annotations", "foo"}},
		},
		"cluster1": nil,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
}

func TestFromUnstructuredNothing(t *testing.T) {
	for _, m := range []string{`{}`, `spec: null`, `spec: {}`, `spec: {overrides: null}`, `spec: {overrides: []}`} {
		got, err := FromUnstructured(object(t, m))
		if err != nil || len(got) != 0 {
			t.Errorf("%s: got %v, %v; want no overrides", m, got, err)
		}
	}
}

func TestFromUnstructuredErrors(t *testing.T) {
	item := func(path string) string {
		return fmt.Sprintf(`spec: {overrides: [{clusterName: c1, clusterOverrides: [{path: %q, value: 1}]}]}`, path)
	}
	cases := []struct {
		name     string
		manifest string
		want     string
	}{
		{"spec not an object", `spec: []`, "spec: expected an object, got a list"},
		{"overrides not a list", `spec: {overrides: {c1: []}}`, "spec.overrides: expected a list, got an object"},
		{"item not an object", `spec: {overrides: [c1]}`, "spec.overrides[0]: expected an object, got a string"},
		{"missing clusterName", `spec: {overrides: [{clusterOverrides: []}]}`, "spec.overrides[0].clusterName: expected a non-empty string, got null"},
		{"empty clusterName", `spec: {overrides: [{clusterName: ""}]}`, `spec.overrides[0].clusterName: expected a non-empty string, got ""`},
		{"cluster listed twice", `spec: {overrides: [{clusterName: a}, {clusterName: c1}, {clusterName: c1, clusterOverrides: []}]}`,
			`spec.overrides[2].clusterName: cluster "c1" is listed twice (first in spec.overrides[1])`},
		{"clusterOverrides not a list", `spec: {overrides: [{clusterName: c1, clusterOverrides: {path: /a}}]}`,
			"spec.overrides[0].clusterOverrides: expected a list, got an object"},
		{"override not an object", `spec: {overrides: [{clusterName: c1, clusterOverrides: [/a]}]}`,
			"spec.overrides[0].clusterOverrides[0]: expected an object, got a string"},
		{"op not a string", `spec: {overrides: [{clusterName: c1, clusterOverrides: [{op: 1, path: /a}]}]}`,
			"spec.overrides[0].clusterOverrides[0].op: expected a string, got a number"},
		{"op not add, remove or replace", `spec: {overrides: [{clusterName: c1, clusterOverrides: [{op: move, path: /a}]}]}`,
			`spec.overrides[0].clusterOverrides[0]: op "move" is not add, remove or replace`},
		{"op test is not supported", `spec: {overrides: [{clusterName: c1, clusterOverrides: [{op: test, path: /a}]}]}`,
			`op "test" is not add, remove or replace`},
		{"missing path", `spec: {overrides: [{clusterName: c1, clusterOverrides: [{value: 1}]}]}`,
			"spec.overrides[0].clusterOverrides[0].path: expected a string, got null"},
		{"path twice for one cluster", `spec: {overrides: [{clusterName: c1, clusterOverrides: [{path: /a}, {path: /b}, {op: remove, path: /a}]}]}`,
			`spec.overrides[0].clusterOverrides[2].path: "/a" is listed twice for cluster "c1" (first in [0])`},
		{"path without a leading slash", item("spec/replicas"), `spec.overrides[0].clusterOverrides[0].path: path "spec/replicas": a JSON pointer must start with "/", such as "/spec/replicas"`},
		{"empty path", item(""), `spec.overrides[0].clusterOverrides[0].path: path "": a JSON pointer must start with "/"`},
		{"bad escape", item("/metadata/labels/a~2b"), `only ~0 and ~1 are valid escapes`},
		{"dangling escape", item("/metadata/labels/a~"), `ends with "~"`},
		{"/metadata/name", item("/metadata/name"), "spec.overrides[0].clusterOverrides[0]: path /metadata/name may not be overridden"},
		{"/metadata/namespace", item("/metadata/namespace"), "path /metadata/namespace may not be overridden"},
		{"/metadata/generateName", item("/metadata/generateName"), "path /metadata/generateName may not be overridden"},
		{"/kind", item("/kind"), "path /kind may not be overridden"},
		{"/apiVersion", item("/apiVersion"), "path /apiVersion may not be overridden"},
		{"second cluster's error is named", `spec: {overrides: [{clusterName: c1}, {clusterName: c2, clusterOverrides: [{path: /kind}]}]}`,
			"spec.overrides[1].clusterOverrides[0]: path /kind may not be overridden"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromUnstructured(object(t, tc.manifest))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestFromUnstructuredManyPaths covers the map-based duplicate check used for
// long lists.
func TestFromUnstructuredManyPaths(t *testing.T) {
	var items []any
	for i := range 3 * maxLinearPaths {
		items = append(items, map[string]any{"path": fmt.Sprintf("/metadata/labels/l%d", i), "value": "x"})
	}
	obj := map[string]any{"spec": map[string]any{"overrides": []any{
		map[string]any{"clusterName": "c1", "clusterOverrides": items},
	}}}
	got, err := FromUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(got["c1"]) != len(items) {
		t.Fatalf("got %d operations, want %d", len(got["c1"]), len(items))
	}
	items = append(items, map[string]any{"path": "/metadata/labels/l7"})
	obj["spec"].(map[string]any)["overrides"].([]any)[0].(map[string]any)["clusterOverrides"] = items
	_, err = FromUnstructured(obj)
	want := fmt.Sprintf(`spec.overrides[0].clusterOverrides[%d].path: "/metadata/labels/l7" is listed twice for cluster "c1" (first in [7])`, len(items)-1)
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestParsedOverridesApply runs the seed example end to end, for each cluster.
func TestParsedOverridesApply(t *testing.T) {
	fed := object(t, seedFederatedDeployment)
	byCluster, err := FromUnstructured(fed)
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, deployment)
	if err := Apply(obj, byCluster["cluster2"]); err != nil {
		t.Fatal(err)
	}
	want := object(t, deployment)
	spec(want)["replicas"] = int64(5)
	container(want, 0)["image"] = "nginx:1.17.0-alpine"
	metadata(want)["annotations"] = map[string]any{}
	if !reflect.DeepEqual(obj, want) {
		t.Errorf("cluster2: got %s\nwant %s", mustJSON(t, obj), mustJSON(t, want))
	}

	obj = object(t, deployment)
	if err := Apply(obj, byCluster["cluster1"]); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obj, object(t, deployment)) {
		t.Errorf("cluster1 has no overrides but its object changed: %s", mustJSON(t, obj))
	}
	if err := Apply(object(t, deployment), byCluster["not-listed"]); err != nil {
		t.Errorf("a cluster without overrides: %v", err)
	}

	// Applying must not have touched the federated object's values.
	if !reflect.DeepEqual(fed, object(t, seedFederatedDeployment)) {
		t.Errorf("federated object changed: %s", mustJSON(t, fed))
	}
}

func FuzzFromUnstructured(f *testing.F) {
	f.Add(`{"spec":{"overrides":[{"clusterName":"c1","clusterOverrides":[{"path":"/spec/replicas","value":5}]}]}}`)
	f.Add(`{"spec":{"overrides":[{"clusterName":"c1","clusterOverrides":[{"op":"add","path":"/a/-","value":{"b":[1]}},{"op":"remove","path":"/c~1d"}]}]}}`)
	f.Add(`{"spec":{"overrides":[{"clusterName":"c1"},{"clusterName":"c1"}]}}`)
	f.Add(`{"spec":{"overrides":[{"clusterName":"c1","clusterOverrides":[{"path":"/kind"}]}]}}`)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4*maxFuzzLen {
			return
		}
		var obj map[string]any
		if err := utiljson.Unmarshal([]byte(s), &obj); err != nil {
			return
		}
		byCluster, err := FromUnstructured(obj)
		if err != nil {
			return
		}
		for cluster, ops := range byCluster {
			if cluster == "" {
				t.Fatal("empty cluster name accepted")
			}
			seen := map[string]bool{}
			for _, o := range ops {
				if err := o.validate(); err != nil || o.Op == "" {
					t.Fatalf("parsed an invalid operation %+v: %v", o, err)
				}
				if seen[o.Path.String()] {
					t.Fatalf("path %s accepted twice for %s", o.Path, cluster)
				}
				seen[o.Path.String()] = true
			}
			// Parsed overrides apply without panicking to any object.
			_ = Apply(map[string]any{"metadata": map[string]any{}, "spec": map[string]any{"a": []any{int64(1)}}}, ops)
		}
	})
}

func TestPerClusterConfinesProblemsToTheirCluster(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"overrides": []any{
		map[string]any{"clusterName": "ok", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(2)}}},
		map[string]any{"clusterName": "dup", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(2)}}},
		map[string]any{"clusterName": "badop", "clusterOverrides": []any{map[string]any{"op": "move", "path": "/spec/replicas"}}},
		map[string]any{"clusterName": "dup", "clusterOverrides": []any{}},
		map[string]any{"clusterName": "forbidden", "clusterOverrides": []any{map[string]any{"path": "/metadata/name", "value": "x"}}},
	}}}
	byCluster, invalid, err := PerCluster(obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(byCluster) != 1 || len(byCluster["ok"]) != 1 {
		t.Fatalf("valid clusters: %v", byCluster)
	}
	for _, c := range []string{"dup", "badop", "forbidden"} {
		if invalid[c] == nil {
			t.Errorf("cluster %s: want an error", c)
		}
	}
	if !strings.Contains(invalid["dup"].Error(), "listed twice") {
		t.Errorf("dup: %v", invalid["dup"])
	}
	// FromUnstructured reports the first problem in manifest order.
	if _, err := FromUnstructured(obj); err == nil || !strings.Contains(err.Error(), "spec.overrides[3].clusterName") {
		t.Errorf("FromUnstructured: %v", err)
	}
	// A malformed list is everyone's problem.
	if _, _, err := PerCluster(map[string]any{"spec": map[string]any{"overrides": "x"}}); err == nil {
		t.Error("want an error for a malformed list")
	}
}
