package sync

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
)

func hostCacheObject(replicas int64, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "FederatedDeployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "ns", "uid": "u1", "resourceVersion": "42", "generation": int64(3),
			"creationTimestamp": "2026-12-07T10:00:00Z",
			"labels":            map[string]any{"app": "web"},
			"annotations":       map[string]any{"note": "kept"},
			"finalizers":        []any{"kubefed.io/sync-controller"},
			"managedFields":     []any{map[string]any{"manager": "kubectl", "operation": "Apply"}},
		},
		"spec": map[string]any{
			"template": map[string]any{"spec": map[string]any{
				"replicas": replicas,
				"template": map[string]any{"spec": map[string]any{"containers": []any{
					map[string]any{"name": "c", "image": "nginx", "resources": map[string]any{"limits": map[string]any{"cpu": "0.5"}}},
				}}},
			}},
			"placement": map[string]any{"clusters": []any{map[string]any{"name": "m1"}}},
			"overrides": []any{map[string]any{"clusterName": "m1", "clusterOverrides": []any{
				map[string]any{"path": "/spec/replicas", "value": int64(5)},
				map[string]any{"path": "/metadata/annotations/weight", "value": 0.25},
			}}},
		},
	}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// The host cache keeps a federated object as its metadata and its JSON,
// and gives back what the informer's transform made of it before: the
// object without managed fields, remote statuses as digests.
func TestHostCacheKeepsTheObjectAsItCame(t *testing.T) {
	status := map[string]any{
		"observedGeneration": int64(3),
		"conditions":         []any{map[string]any{"type": "Propagation", "status": "True"}},
		"clusters": []any{map[string]any{"name": "m1", "remoteStatus": map[string]any{
			"readyReplicas": int64(5), "conditions": []any{map[string]any{"type": "Available", "status": "True"}},
		}}},
	}
	in := hostCacheObject(2, status)
	want := in.DeepCopy()
	want.SetManagedFields(nil)
	compactRemoteStatus(want)

	out, err := compactHostObject(in)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := out.(*cachedObject)
	if !ok {
		t.Fatalf("cached as %T, want *cachedObject", out)
	}
	if key, _ := toolscache.MetaNamespaceKeyFunc(c); key != "ns/web" {
		t.Errorf("key %q, want ns/web", key)
	}
	if c.GetGeneration() != 3 || c.GetUID() != "u1" || c.GetAnnotations()["note"] != "kept" || len(c.GetFinalizers()) != 1 || c.GetManagedFields() != nil {
		t.Errorf("metadata not kept: %+v", c.ObjectMeta)
	}
	got, ok := decoded(c)
	if !ok {
		t.Fatal("cached object does not decode")
	}
	if !reflect.DeepEqual(got.Object, want.Object) {
		t.Errorf("decoded\n%v\nwant\n%v", got.Object, want.Object)
	}
	// Each reader gets a copy of its own.
	got.Object["spec"].(map[string]any)["template"] = nil
	again, _ := decoded(c)
	if !reflect.DeepEqual(again.Object, want.Object) {
		t.Error("a reader's change reached the cache")
	}
	// A deep copy (the informer's, a test's) has metadata of its own.
	cp := c.DeepCopyObject().(*cachedObject)
	cp.Labels["app"] = "changed"
	if c.Labels["app"] != "web" {
		t.Error("DeepCopyObject shares the labels")
	}
	// A deleted object's last state decodes too.
	if d, ok := decoded(toolscache.DeletedFinalStateUnknown{Key: "ns/web", Obj: c}); !ok || d.GetName() != "web" {
		t.Error("tombstone not decoded")
	}
	if m, ok := objectMeta(toolscache.DeletedFinalStateUnknown{Key: "ns/web", Obj: c}); !ok || m.GetNamespace() != "ns" {
		t.Error("tombstone's metadata not read")
	}

	// Without a status, none is made up.
	bare, _ := compactHostObject(hostCacheObject(2, nil))
	if u, _ := decoded(bare); u == nil || u.Object["status"] != nil {
		t.Errorf("object without status decoded with %v", u)
	}
}

// Another replica's status entry is told from a write that changed
// nothing in the status, from the cached bytes alone.
func TestHostCacheComparesStatuses(t *testing.T) {
	st := func(ready int64) map[string]any {
		return map[string]any{"clusters": []any{map[string]any{"name": "m1", "status": "OK", "remoteStatus": map[string]any{"readyReplicas": ready}}}}
	}
	a, _ := compactHostObject(hostCacheObject(2, st(1)))
	b, _ := compactHostObject(hostCacheObject(3, st(1))) // spec changed only
	c, _ := compactHostObject(hostCacheObject(2, st(2)))
	if !sameCachedStatus(a, b) {
		t.Error("same status reported different")
	}
	if sameCachedStatus(a, c) {
		t.Error("a changed remote status reported the same")
	}
	// Objects cached as they came compare decoded.
	u1, u2 := hostCacheObject(2, st(1)), hostCacheObject(2, st(2))
	if !sameCachedStatus(u1, u1.DeepCopy()) || sameCachedStatus(u1, u2) || sameCachedStatus(a, u2) {
		t.Error("uncompacted objects compared wrong")
	}
	var _ metav1.Object = a.(*cachedObject)
}
