package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/fedstatus"
)

// PropagationState renders a federated object's Propagation condition and
// per-cluster statuses by cluster name, e.g. "True| member1 member2=ClusterNotReady", or
// "absent" for nil.
func PropagationState(u *unstructured.Unstructured) string {
	if u == nil {
		return "absent"
	}
	var b strings.Builder
	status, _ := u.Object["status"].(map[string]any)
	if m := fedstatus.PropagationCondition(status); m != nil {
		fmt.Fprintf(&b, "%v", m["status"])
		if r, ok := m["reason"].(string); ok && r != "" {
			fmt.Fprintf(&b, "/%s", r)
		}
	}
	b.WriteString("|")
	clusters, _, _ := unstructured.NestedSlice(u.Object, "status", "clusters")
	// By name: entries applied by several replicas are in the order the
	// server merged them.
	slices.SortStableFunc(clusters, func(a, b any) int {
		x, _ := a.(map[string]any)
		y, _ := b.(map[string]any)
		return strings.Compare(fmt.Sprint(x["name"]), fmt.Sprint(y["name"]))
	})
	for _, c := range clusters {
		m, _ := c.(map[string]any)
		fmt.Fprintf(&b, " %v", m["name"])
		if s, ok := m["status"].(string); ok && s != "" {
			b.WriteString("=" + s)
		}
	}
	return b.String()
}

// WaveCopies counts the ConfigMaps of a test wave in a cluster: managed by
// KubeFed, in namespace, named prefix+i and holding data i=<i>. A copy
// with other data is an error, naming the copy.
func WaveCopies(ctx context.Context, c *Cluster, namespace, prefix string) (int, error) {
	list := &corev1.ConfigMapList{}
	if err := c.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{corev1beta1.ManagedByKubeFedLabelKey: "true"}); err != nil {
		return 0, fmt.Errorf("list copies in %s: %w", c.Name, err)
	}
	n := 0
	for _, cm := range list.Items {
		if i, ok := strings.CutPrefix(cm.Name, prefix); ok {
			if cm.Data["i"] != i {
				return n, fmt.Errorf("%s in %s has data %v, want i=%s", cm.Name, c.Name, cm.Data, i)
			}
			n++
		}
	}
	return n, nil
}
