package framework

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PropagationState renders a federated object's Propagation condition and
// per-cluster statuses, e.g. "True| member1 member2=ClusterNotReady", or
// "absent" for nil.
func PropagationState(u *unstructured.Unstructured) string {
	if u == nil {
		return "absent"
	}
	var b strings.Builder
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Propagation" {
			fmt.Fprintf(&b, "%v", m["status"])
			if r, ok := m["reason"].(string); ok && r != "" {
				fmt.Fprintf(&b, "/%s", r)
			}
		}
	}
	b.WriteString("|")
	clusters, _, _ := unstructured.NestedSlice(u.Object, "status", "clusters")
	for _, c := range clusters {
		m, _ := c.(map[string]any)
		fmt.Fprintf(&b, " %v", m["name"])
		if s, ok := m["status"].(string); ok && s != "" {
			b.WriteString("=" + s)
		}
	}
	return b.String()
}
