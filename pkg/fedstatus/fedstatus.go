// Package fedstatus reads what the propagation engine writes into a
// federated object's status (decoded JSON, as unstructured objects hold
// it), for the engine itself and for the tools that show it.
package fedstatus

import (
	"slices"
	"strings"

	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
)

// MaxConditionMessage bounds the Propagation condition's message, which
// names every failing cluster, so that a large federation cannot push the
// object past the apiserver's size limit.
const MaxConditionMessage = 4096

// PropagationCondition is the Propagation condition of a federated
// object's status, or nil.
func PropagationCondition(status map[string]any) map[string]any {
	return jsonvalue.Condition(status, typesv1beta1.ConditionPropagation)
}

// ClusterMessages recovers what the Propagation condition's message says
// of each failing cluster. The engine (controllers/sync) writes it as "<cluster>: <status>"
// or "<cluster>: <status>: <message>" per failing entry of status.clusters,
// in the order of their names, joined by "; ", so each part is found by
// the prefixes of its own entry and the next one. The entries themselves
// need not be in that order: entries that replicas apply server-side are
// kept in the order the API server merged them.
func ClusterMessages(status map[string]any) map[string]string {
	cond := PropagationCondition(status)
	if cond == nil || cond["reason"] != typesv1beta1.ReasonCheckClusters {
		return nil
	}
	msg, _ := cond["message"].(string)
	if len(msg) > MaxConditionMessage {
		msg = strings.TrimSuffix(msg, "…")
	}
	entries, _ := status["clusters"].([]any)
	type part struct{ name, prefix string }
	var parts []part
	for _, e := range entries {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		status, _ := m["status"].(string)
		if name != "" && status != "" {
			parts = append(parts, part{name, name + ": " + status})
		}
	}
	slices.SortStableFunc(parts, func(a, b part) int { return strings.Compare(a.name, b.name) })
	out := map[string]string{}
	pos := 0
	for i, p := range parts {
		if !strings.HasPrefix(msg[pos:], p.prefix) {
			break
		}
		end := len(msg)
		if i+1 < len(parts) {
			next := strings.Index(msg[pos+len(p.prefix):], "; "+parts[i+1].prefix)
			if next < 0 {
				end = -1
			} else {
				end = pos + len(p.prefix) + next
			}
		}
		if end < 0 {
			out[p.name] = strings.TrimPrefix(msg[pos+len(p.prefix):], ": ")
			break
		}
		out[p.name] = strings.TrimPrefix(msg[pos+len(p.prefix):end], ": ")
		pos = end + 2
	}
	return out
}
