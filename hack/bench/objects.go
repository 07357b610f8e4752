package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// resource is one federated type the bench propagates.
type resource struct {
	// name is the member resource; it also names the type in results.
	name       string
	gvr        schema.GroupVersionResource
	apiVersion string
	kind       string
	fedGVR     schema.GroupVersionResource
	// prefix starts the names of the type's objects.
	prefix string
}

var (
	deployments = resource{
		name:       "deployments",
		gvr:        schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		apiVersion: "apps/v1", kind: "Deployment",
		fedGVR: schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federateddeployments"},
		prefix: "d",
	}
	configMaps = resource{
		name:       "configmaps",
		gvr:        schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		apiVersion: "v1", kind: "ConfigMap",
		fedGVR: schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"},
		prefix: "c",
	}
	resources = []resource{deployments, configMaps}
)

// benchLabel marks every object the bench writes, federated or direct.
const benchLabel = "bench.kubefed.io/object"

// payload makes each ConfigMap about as large as a small real one.
var payload = strings.Repeat("kubefed-bench ", 32)

// version is what a wave makes of an object: the template revision and
// whether the override of the first member applies.
type version struct {
	revision   int
	overridden bool
}

func image(revision int) string { return fmt.Sprintf("example.invalid/bench:v%d", revision) }

// template is the object a federated object's spec.template holds, and
// what a member copy carries before overrides.
func template(r resource, name string, revision int) map[string]any {
	labels := map[string]any{benchLabel: name}
	switch r.name {
	case deployments.name:
		// No replicas: the members have no nodes, and pods would only
		// measure their kube-controller-managers.
		return map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{
				"replicas":        int64(0),
				"minReadySeconds": int64(1),
				"selector":        map[string]any{"matchLabels": map[string]any{benchLabel: name}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{benchLabel: name}},
					"spec": map[string]any{"containers": []any{
						map[string]any{"name": "app", "image": image(revision)},
					}},
				},
			},
		}
	default:
		return map[string]any{
			"metadata": map[string]any{"labels": labels},
			"data":     map[string]any{"k": fmt.Sprintf("v%d", revision), "o": "all", "payload": payload},
		}
	}
}

// overrideOf is the override the override wave gives the first member.
func overrideOf(r resource, cluster string) map[string]any {
	op := map[string]any{"path": "/data/o", "value": cluster}
	if r.name == deployments.name {
		op = map[string]any{"path": "/spec/minReadySeconds", "value": int64(2)}
	}
	return map[string]any{"clusterName": cluster, "clusterOverrides": []any{op}}
}

// stateOf condenses a member object into what the waves change, so that a
// watch event can be matched with the state a wave waits for.
func stateOf(resource string, u *unstructured.Unstructured) string {
	switch resource {
	case deployments.name:
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		img := ""
		if len(containers) > 0 {
			if c, ok := containers[0].(map[string]any); ok {
				img, _ = c["image"].(string)
			}
		}
		mrs, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "minReadySeconds")
		return fmt.Sprintf("%s|%v", img, mrs)
	case configMaps.name:
		k, _, _ := unstructured.NestedString(u.Object, "data", "k")
		o, _, _ := unstructured.NestedString(u.Object, "data", "o")
		return k + "|" + o
	}
	return ""
}

// wantState is stateOf of a copy at version v in a cluster.
func wantState(r resource, v version, cluster string) string {
	if r.name == deployments.name {
		mrs := 1
		if v.overridden {
			mrs = 2
		}
		return fmt.Sprintf("%s|%d", image(v.revision), mrs)
	}
	o := "all"
	if v.overridden {
		o = cluster
	}
	return fmt.Sprintf("v%d|%s", v.revision, o)
}

// federatedObject is Federated<kind> name at revision, placed on clusters.
func federatedObject(r resource, name string, revision int, clusters []string) *unstructured.Unstructured {
	list := make([]any, len(clusters))
	for i, c := range clusters {
		list[i] = map[string]any{"name": c}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": r.fedGVR.GroupVersion().String(),
		"kind":       "Federated" + r.kind,
		"metadata": map[string]any{
			"name": name, "namespace": benchNS,
			"labels": map[string]any{benchLabel: name},
		},
		"spec": map[string]any{
			"template":  template(r, name, revision),
			"placement": map[string]any{"clusters": list},
		},
	}}
}

// templatePatch is the merge patch of the update wave: one template field.
func templatePatch(r resource, revision int) map[string]any {
	if r.name == deployments.name {
		return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"template": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": image(revision)}}},
		}}}}}
	}
	return map[string]any{"spec": map[string]any{"template": map[string]any{"data": map[string]any{"k": fmt.Sprintf("v%d", revision)}}}}
}

// directObject is what the control plane would write into a member for
// the federated object at revision, written by the physical-limit
// scenarios instead: the same content and size, a label other than the
// managed one (so the control plane leaves it alone) and a hash annotation
// of the same length as the propagation hash.
func directObject(r resource, name string, revision int) *unstructured.Unstructured {
	obj := template(r, name, revision)
	meta := obj["metadata"].(map[string]any)
	meta["name"] = name
	meta["namespace"] = directNS
	meta["annotations"] = map[string]any{"bench.kubefed.io/propagation-hash": fmt.Sprintf("%016x", revision)}
	obj["apiVersion"] = r.apiVersion
	obj["kind"] = r.kind
	return &unstructured.Unstructured{Object: obj}
}

// managedSelector selects the copies the control plane wrote.
var managedSelector = corev1beta1.ManagedByKubeFedLabelKey + "=true"

// objectNames are the names of n objects of r in a wave.
func objectNames(r resource, wavePrefix string, n int) []string {
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%s-%05d", wavePrefix, r.prefix, i)
	}
	return names
}
