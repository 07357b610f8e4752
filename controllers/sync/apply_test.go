package sync

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func crdWithClusters(version string, clusters map[string]any) map[string]any {
	return map[string]any{"spec": map[string]any{"versions": []any{
		map[string]any{"name": "v1alpha1"},
		map[string]any{"name": version, "schema": map[string]any{"openAPIV3Schema": map[string]any{
			"properties": map[string]any{"status": map[string]any{"properties": map[string]any{"clusters": clusters}}},
		}}},
	}}}
}

func TestKeyedByName(t *testing.T) {
	for name, tc := range map[string]struct {
		crd  map[string]any
		want bool
	}{
		"keyed by name": {crdWithClusters("v1beta1", map[string]any{
			"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"name"}}), true},
		"atomic, as KubeFed's": {crdWithClusters("v1beta1", map[string]any{"type": "array"}), false},
		"keyed by more than the name": {crdWithClusters("v1beta1", map[string]any{
			"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"name", "status"}}), false},
		"another version keyed": {crdWithClusters("v1", map[string]any{
			"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"name"}}), false},
		"no schema": {map[string]any{}, false},
	} {
		if got := keyedByName(tc.crd, "v1beta1"); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

// A replica applies its members' entries and the fields that add up every
// member, never another replica's entries.
func TestOwnPart(t *testing.T) {
	status := map[string]any{
		"observedGeneration": int64(2),
		"conditions":         []any{map[string]any{"type": "Propagation", "status": "True"}},
		"clusters": []any{
			map[string]any{"name": "a"},
			map[string]any{"name": "b", "status": "CreationFailed"},
			map[string]any{"name": "c"},
		},
		"ready": "3/3",
	}
	mine := func(c string) bool { return c == "b" || c == "c" }
	got := ownPart(status, mine)
	want := map[string]any{
		"observedGeneration": int64(2),
		"conditions":         []any{map[string]any{"type": "Propagation", "status": "True"}},
		"clusters":           []any{map[string]any{"name": "b", "status": "CreationFailed"}, map[string]any{"name": "c"}},
		"ready":              "3/3",
	}
	if !sameJSON(got, want) {
		t.Fatalf("own part %v, want %v", got, want)
	}
	if _, ok := ownPart(status, func(string) bool { return false })["clusters"]; ok {
		t.Fatal("entries applied for a replica serving none of the members")
	}
	if len(status["clusters"].([]any)) != 3 {
		t.Fatal("ownPart changed the status it was given")
	}
}

// Entries merged on the server are not sorted: the same entries in another
// order are the same status, or replicas would write it again and again.
func TestSameStatusIgnoresTheOrderOfEntries(t *testing.T) {
	a := map[string]any{"observedGeneration": int64(1), "clusters": []any{
		map[string]any{"name": "b"}, map[string]any{"name": "a", "status": "ClusterNotReady"}}}
	b := map[string]any{"observedGeneration": int64(1), "clusters": []any{
		map[string]any{"name": "a", "status": "ClusterNotReady"}, map[string]any{"name": "b"}}}
	if !sameStatus(a, b) {
		t.Fatal("the same entries in another order differ")
	}
	c := map[string]any{"observedGeneration": int64(1), "clusters": []any{
		map[string]any{"name": "a"}, map[string]any{"name": "b"}}}
	if sameStatus(a, c) {
		t.Fatal("different entries are the same")
	}
	if first := a["clusters"].([]any)[0].(map[string]any)["name"]; first != "b" {
		t.Fatal("sameStatus sorted the status it was given")
	}
}

func TestRefusedContentTellsABadStatusFromAReplacedObject(t *testing.T) {
	gk := schema.GroupKind{Group: "types.kubefed.io", Kind: "FederatedConfigMap"}
	replaced := apierrors.NewInvalid(gk, "x", field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "b", "field is immutable")})
	bad := apierrors.NewInvalid(gk, "x", field.ErrorList{field.Forbidden(field.NewPath("status", "clusters").Index(0).Child("kubefed.internal/remoteStatusDigest"), "unknown field")})
	if refusedContent(replaced) {
		t.Error("a replaced object's refusal read as a refused status")
	}
	if !refusedContent(bad) {
		t.Error("a status the schema refused read as a replaced object")
	}
	if refusedContent(apierrors.NewNotFound(schema.GroupResource{Resource: "federatedconfigmaps"}, "x")) {
		t.Error("a missing object read as a refused status")
	}
}
