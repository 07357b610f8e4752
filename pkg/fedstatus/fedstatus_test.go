package fedstatus

import (
	"maps"
	"testing"
)

// The message names the failing clusters in the order of their names, as
// the engine writes it; entries applied server-side by several replicas
// are stored in the order the API server merged them, and every
// cluster's message is still recovered.
func TestClusterMessagesWhateverTheOrderOfTheEntries(t *testing.T) {
	cond := map[string]any{"type": "Propagation", "status": "False", "reason": "CheckClusters",
		"message": "a: CreationFailed: quota exceeded; b: UpdateFailed: denied; retry later; c: ClusterNotReady"}
	want := map[string]string{"a": "quota exceeded", "b": "denied; retry later", "c": ""}
	for _, order := range [][]string{{"a", "b", "c"}, {"b", "a", "c"}, {"c", "b", "a"}} {
		statuses := map[string]string{"a": "CreationFailed", "b": "UpdateFailed", "c": "ClusterNotReady"}
		var entries []any
		for _, name := range order {
			entries = append(entries, map[string]any{"name": name, "status": statuses[name]})
		}
		// One cluster without a problem, listed first.
		entries = append([]any{map[string]any{"name": "d"}}, entries...)
		got := ClusterMessages(map[string]any{"clusters": entries, "conditions": []any{cond}})
		if !maps.Equal(got, want) {
			t.Errorf("entries in the order %v: messages %q, want %q", order, got, want)
		}
	}
}
