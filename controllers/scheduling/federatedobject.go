package scheduling

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
)

// replicasPath is the override the scheduler owns in every cluster's entry.
const replicasPath = "/spec/replicas"

// federatedObject is what scheduling reads from a Federated<T>.
type federatedObject struct {
	// clusterSelector is spec.placement.clusterSelector, read only for a
	// preference that intersects with it; nil when absent, which selects
	// no cluster, as in KubeFed.
	clusterSelector labels.Selector
	// current maps each cluster with a /spec/replicas override to its
	// value; nil when no cluster has one, i.e. no distribution yet.
	current map[string]int64
	// podSelector selects the workload's pods in members, nil when the
	// template says nothing about them.
	podSelector labels.Selector
}

// readFederatedObject reads what scheduling needs from a federated object:
// the placement's clusterSelector only when intersect says the preference
// uses it (KubeFed does not read it otherwise, and neither does the
// propagation engine once the scheduler wrote the clusters list). A
// malformed selector so read or overrides list is an error; an override
// value that is not a non-negative integer only counts as no value, since
// the scheduler replaces it anyway.
func readFederatedObject(obj map[string]any, intersect bool) (federatedObject, error) {
	var fo federatedObject
	spec, err := objectField(obj, "spec")
	if err != nil {
		return fo, err
	}
	placement, err := objectField(spec, "placement")
	if err != nil {
		return fo, fmt.Errorf("spec.%w", err)
	}
	if raw, ok := placement["clusterSelector"]; ok && raw != nil && intersect {
		fo.clusterSelector, err = labelSelector(raw)
		if err != nil {
			return fo, fmt.Errorf("spec.placement.clusterSelector: %w", err)
		}
	}

	entries, err := overrideEntries(spec)
	if err != nil {
		return fo, err
	}
	for _, e := range entries {
		if _, seen := fo.current[e.cluster]; seen {
			continue
		}
		for _, item := range e.items {
			if item["path"] != replicasPath || item["op"] == "remove" {
				continue
			}
			if n, ok := replicaCount(item["value"]); ok {
				if fo.current == nil {
					fo.current = map[string]int64{}
				}
				fo.current[e.cluster] = n
			}
			break
		}
	}

	fo.podSelector = podSelector(spec)
	return fo, nil
}

// objectField returns obj[key] as an object; absent or null is empty.
func objectField(obj map[string]any, key string) (map[string]any, error) {
	raw, ok := obj[key]
	if !ok || raw == nil {
		return map[string]any{}, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: expected an object, got %s", key, jsonvalue.TypeName(raw))
	}
	return m, nil
}

// labelSelector converts a metav1.LabelSelector in unstructured form.
func labelSelector(raw any) (labels.Selector, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected an object, got %s", jsonvalue.TypeName(raw))
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil, err
	}
	return metav1.LabelSelectorAsSelector(&ls)
}

// replicaCount reads an override value as a replica count.
func replicaCount(v any) (int64, bool) {
	n, ok := jsonvalue.Int64(v)
	return n, ok && n >= 0
}

// overrideEntry is one element of spec.overrides.
type overrideEntry struct {
	cluster string
	// entry is the element itself, so that it can be changed in place.
	entry map[string]any
	items []map[string]any
}

// overrideEntries reads spec.overrides without judging operations other
// than the scheduler's own: they are the propagation engine's to validate.
func overrideEntries(spec map[string]any) ([]overrideEntry, error) {
	raw, ok := spec["overrides"]
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("spec.overrides: expected a list, got %s", jsonvalue.TypeName(raw))
	}
	entries := make([]overrideEntry, 0, len(list))
	for i, rawEntry := range list {
		entry, ok := rawEntry.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.overrides[%d]: expected an object, got %s", i, jsonvalue.TypeName(rawEntry))
		}
		name, ok := entry["clusterName"].(string)
		if !ok || name == "" {
			return nil, fmt.Errorf("spec.overrides[%d].clusterName: expected a cluster name", i)
		}
		e := overrideEntry{cluster: name, entry: entry}
		if rawItems, ok := entry["clusterOverrides"]; ok && rawItems != nil {
			items, ok := rawItems.([]any)
			if !ok {
				return nil, fmt.Errorf("spec.overrides[%d].clusterOverrides: expected a list, got %s", i, jsonvalue.TypeName(rawItems))
			}
			for j, rawItem := range items {
				item, ok := rawItem.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("spec.overrides[%d].clusterOverrides[%d]: expected an object, got %s", i, j, jsonvalue.TypeName(rawItem))
				}
				e.items = append(e.items, item)
			}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// podSelector finds the selector of the workload's pods in the template:
// spec.selector as a LabelSelector (Deployment, ReplicaSet, StatefulSet and
// most custom workloads) or as a label map (ReplicationController), else
// the labels of the pod template. It is nil when there is none, or when it
// would select every pod.
func podSelector(spec map[string]any) labels.Selector {
	template, _ := spec["template"].(map[string]any)
	targetSpec, _ := template["spec"].(map[string]any)
	if raw, ok := targetSpec["selector"].(map[string]any); ok && len(raw) > 0 {
		_, hasLabels := raw["matchLabels"]
		_, hasExpressions := raw["matchExpressions"]
		if hasLabels || hasExpressions {
			if s, err := labelSelector(raw); err == nil && !s.Empty() {
				return s
			}
			return nil
		}
		if set, ok := stringMap(raw); ok {
			return labels.SelectorFromSet(set)
		}
	}
	podTemplate, _ := targetSpec["template"].(map[string]any)
	meta, _ := podTemplate["metadata"].(map[string]any)
	if raw, ok := meta["labels"].(map[string]any); ok && len(raw) > 0 {
		if set, ok := stringMap(raw); ok {
			return labels.SelectorFromSet(set)
		}
	}
	return nil
}

func stringMap(m map[string]any) (labels.Set, bool) {
	set := make(labels.Set, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		set[k] = s
	}
	return set, true
}

// schedule is what the scheduler writes into a federated object.
type schedule struct {
	// placement lists every candidate cluster, also those with 0 replicas
	// and those failed over.
	placement []string
	// replicas is the /spec/replicas override of each cluster that gets
	// one; a placed cluster missing from it (failed over, with an
	// override) keeps its override as it is.
	replicas map[string]int64
}

// applySchedule writes s into the federated object obj: spec.placement.clusters
// becomes s.placement, sorted, next to any clusterSelector; each cluster of
// s.replicas gets its /spec/replicas override, in its first entry of
// spec.overrides (a new entry for a cluster without one, in name order
// after the others); clusters that are not placed lose theirs, and lose
// their entry if nothing else is left in it. Every other override stays as
// it is. It reports whether obj changed.
func applySchedule(obj map[string]any, s schedule) (bool, error) {
	spec, err := objectField(obj, "spec")
	if err != nil {
		return false, err
	}
	placement, err := objectField(spec, "placement")
	if err != nil {
		return false, fmt.Errorf("spec.%w", err)
	}
	entries, err := overrideEntries(spec)
	if err != nil {
		return false, err
	}
	changed := false

	names := slices.Clone(s.placement)
	slices.Sort(names)
	names = slices.Compact(names)
	clusters := make([]any, 0, len(names))
	for _, name := range names {
		clusters = append(clusters, map[string]any{"name": name})
	}
	if !sameClusters(placement["clusters"], clusters) {
		placement["clusters"] = clusters
		spec["placement"] = placement
		changed = true
	}

	placed := make(map[string]bool, len(names))
	for _, name := range names {
		placed[name] = true
	}
	overridesChanged := false
	handled := map[string]bool{}
	kept := make([]any, 0, len(entries)+len(s.replicas))
	for _, e := range entries {
		n, scheduled := s.replicas[e.cluster]
		switch {
		case scheduled && !handled[e.cluster]:
			handled[e.cluster] = true
			if setReplicas(&e, n) {
				overridesChanged = true
			}
		case !placed[e.cluster]:
			if removeReplicas(&e) {
				overridesChanged = true
				if len(e.items) == 0 {
					continue
				}
			}
		}
		kept = append(kept, e.entry)
	}
	missing := make([]string, 0, len(s.replicas))
	for name := range s.replicas {
		if !handled[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	for _, name := range missing {
		kept = append(kept, map[string]any{
			"clusterName":      name,
			"clusterOverrides": []any{map[string]any{"path": replicasPath, "value": s.replicas[name]}},
		})
		overridesChanged = true
	}
	if overridesChanged {
		spec["overrides"] = kept
	}
	if changed || overridesChanged {
		obj["spec"] = spec
	}
	return changed || overridesChanged, nil
}

// setReplicas makes the entry's /spec/replicas override set n, keeping its
// position among the entry's operations.
func setReplicas(e *overrideEntry, n int64) bool {
	for _, item := range e.items {
		if item["path"] != replicasPath {
			continue
		}
		changed := false
		if op, ok := item["op"]; ok && op != "replace" && op != "add" {
			item["op"] = "replace"
			changed = true
		}
		if current, ok := replicaCount(item["value"]); !ok || current != n {
			item["value"] = n
			changed = true
		}
		return changed
	}
	e.items = append(e.items, map[string]any{"path": replicasPath, "value": n})
	e.entry["clusterOverrides"] = itemsList(e.items)
	return true
}

// removeReplicas drops the entry's /spec/replicas overrides.
func removeReplicas(e *overrideEntry) bool {
	kept := e.items[:0:0]
	for _, item := range e.items {
		if item["path"] != replicasPath {
			kept = append(kept, item)
		}
	}
	if len(kept) == len(e.items) {
		return false
	}
	e.items = kept
	e.entry["clusterOverrides"] = itemsList(kept)
	return true
}

func itemsList(items []map[string]any) []any {
	list := make([]any, len(items))
	for i, item := range items {
		list[i] = item
	}
	return list
}

// sameClusters says whether a spec.placement.clusters value lists the
// clusters of b, in order.
func sameClusters(a any, b []any) bool {
	list, ok := a.([]any)
	if !ok || len(list) != len(b) {
		return ok && len(list) == 0 && len(b) == 0
	}
	for i := range list {
		m, ok := list[i].(map[string]any)
		if !ok || len(m) != 1 || m["name"] != b[i].(map[string]any)["name"] {
			return false
		}
	}
	return true
}
