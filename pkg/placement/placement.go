package placement

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
)

// Placement is a federated object's spec.placement in the form selection needs.
//
// It keeps the distinction the typed API loses on re-encoding: a present but
// empty clusters list places nowhere and still wins over clusterSelector.
type Placement struct {
	// Clusters are the names listed in spec.placement.clusters, in order.
	Clusters []string
	// HasClusters is true when spec.placement.clusters is present, even empty.
	HasClusters bool
	// Selector is spec.placement.clusterSelector; nil selects no cluster.
	// It is ignored when HasClusters is true.
	Selector labels.Selector
}

// Cluster is a candidate member cluster: a KubeFedCluster as placement sees it.
type Cluster struct {
	Name   string
	Labels map[string]string
	Ready  bool
}

// Result is the outcome of placing one federated object.
type Result struct {
	// Clusters are the placed clusters that exist, sorted.
	Clusters []string
	// Ready are the members of Clusters that are Ready, sorted.
	Ready []string
	// Unknown are names in spec.placement.clusters that match no cluster,
	// sorted, so that the caller can report them.
	Unknown []string
}

// ClusterSet is the candidate clusters, sorted and indexed once so that many
// objects can be placed against it cheaply.
type ClusterSet struct {
	clusters []Cluster
	index    map[string]int
	ready    int
}

// NewClusterSet indexes clusters; of clusters sharing a name, the first wins.
// The slice is copied, the label maps are not: they must not change while the
// set is in use.
func NewClusterSet(clusters []Cluster) ClusterSet {
	sorted := slices.Clone(clusters)
	// Stable so that "the first wins" holds for duplicate names.
	slices.SortStableFunc(sorted, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	sorted = slices.CompactFunc(sorted, func(a, b Cluster) bool { return a.Name == b.Name })
	set := ClusterSet{clusters: sorted, index: make(map[string]int, len(sorted))}
	for i, c := range sorted {
		set.index[c.Name] = i
		if c.Ready {
			set.ready++
		}
	}
	return set
}

// Select places p on the set: the listed clusters if p.HasClusters, else the
// clusters p.Selector matches.
func (s ClusterSet) Select(p Placement) Result {
	if !p.HasClusters {
		var r Result
		if p.Selector == nil {
			return r
		}
		if p.Selector.Empty() {
			// clusterSelector: {}, what kubefedctl federate writes: every
			// cluster, so the result's size is known.
			r.Clusters = make([]string, 0, len(s.clusters))
			r.Ready = make([]string, 0, s.ready)
		}
		// s.clusters is sorted, so the result is too without sorting.
		for _, c := range s.clusters {
			if p.Selector.Matches(labels.Set(c.Labels)) {
				r.add(c)
			}
		}
		return r
	}

	var r Result
	idx := make([]int, 0, len(p.Clusters))
	for _, name := range p.Clusters {
		if i, ok := s.index[name]; ok {
			idx = append(idx, i)
		} else {
			r.Unknown = append(r.Unknown, name)
		}
	}
	// Sorting indexes sorts by name, since s.clusters is sorted by name.
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		r.add(s.clusters[i])
	}
	slices.Sort(r.Unknown)
	r.Unknown = slices.Compact(r.Unknown)
	return r
}

// SelectNamespaced places a namespaced object: its own placement intersected
// with the placement of its FederatedNamespace. Unknown reports only the
// object's unknown names; the namespace's are the namespace's to report.
//
// Whether a missing FederatedNamespace means "place nowhere"
// (NamespaceNotFederated, cluster-scoped control plane) or "no restriction"
// (namespace-scoped control plane) is the caller's decision: it calls Select
// in the latter case.
func (s ClusterSet) SelectNamespaced(obj, namespace Placement) Result {
	r := s.Select(obj)
	if len(r.Clusters) == 0 {
		return r
	}
	// Testing only the object's clusters against the namespace's placement
	// is cheaper than placing the namespace on every cluster.
	in := namespace.contains()
	outside := func(name string) bool { return !in(s.clusters[s.index[name]]) }
	r.Clusters = slices.DeleteFunc(r.Clusters, outside)
	r.Ready = slices.DeleteFunc(r.Ready, outside)
	return r
}

// maxLinearNames bounds the linear search of listed cluster names; longer
// lists are indexed in a map.
const maxLinearNames = 8

// Places says whether p places c.
func (p Placement) Places(c Cluster) bool {
	return p.contains()(c)
}

// contains returns whether p places a cluster.
func (p Placement) contains() func(Cluster) bool {
	switch {
	case !p.HasClusters && p.Selector == nil:
		return func(Cluster) bool { return false }
	case !p.HasClusters:
		return func(c Cluster) bool { return p.Selector.Matches(labels.Set(c.Labels)) }
	case len(p.Clusters) <= maxLinearNames:
		return func(c Cluster) bool { return slices.Contains(p.Clusters, c.Name) }
	}
	names := make(map[string]struct{}, len(p.Clusters))
	for _, n := range p.Clusters {
		names[n] = struct{}{}
	}
	return func(c Cluster) bool {
		_, ok := names[c.Name]
		return ok
	}
}

func (r *Result) add(c Cluster) {
	r.Clusters = append(r.Clusters, c.Name)
	if c.Ready {
		r.Ready = append(r.Ready, c.Name)
	}
}

// FromUnstructured reads spec.placement of a federated object. Malformed
// fields and an invalid selector are errors that name the field; the caller
// reports them as ComputePlacementFailed.
//
// As in KubeFed, clusterSelector is not read at all when clusters is present,
// so an invalid selector next to a clusters list is not an error.
func FromUnstructured(obj map[string]any) (Placement, error) {
	var p Placement
	spec, err := nestedObject(obj["spec"], "spec")
	if err != nil || spec == nil {
		return p, err
	}
	placement, err := nestedObject(spec["placement"], "spec.placement")
	if err != nil || placement == nil {
		return p, err
	}

	// A null clusters is treated as absent, as KubeFed's typed decoding did
	// (and as the API server prunes it anyway).
	if raw := placement["clusters"]; raw != nil {
		list, ok := raw.([]any)
		if !ok {
			return p, fmt.Errorf("spec.placement.clusters: expected a list, got %s", jsonvalue.TypeName(raw))
		}
		p.HasClusters = true
		p.Clusters = make([]string, 0, len(list))
		for i, item := range list {
			ref, ok := item.(map[string]any)
			if !ok {
				return p, fmt.Errorf("spec.placement.clusters[%d]: expected an object, got %s", i, jsonvalue.TypeName(item))
			}
			name, ok := ref["name"].(string)
			if !ok || name == "" {
				return p, fmt.Errorf("spec.placement.clusters[%d].name: expected a non-empty string, got %s", i, describe(ref["name"]))
			}
			p.Clusters = append(p.Clusters, name)
		}
		return p, nil
	}

	p.Selector, err = selectorFromUnstructured(placement["clusterSelector"], "spec.placement.clusterSelector")
	return p, err
}

// selectorFromUnstructured converts an unstructured metav1.LabelSelector at
// field (used in errors) to a Selector: null selects nothing, {} everything.
func selectorFromUnstructured(raw any, field string) (labels.Selector, error) {
	sel, err := nestedObject(raw, field)
	if err != nil || sel == nil {
		return nil, err
	}

	var reqs []labels.Requirement
	if raw := sel["matchLabels"]; raw != nil {
		ml, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.matchLabels: expected an object, got %s", field, jsonvalue.TypeName(raw))
		}
		// Sorted keys make the first reported error deterministic.
		keys := make([]string, 0, len(ml))
		for k := range ml {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v, ok := ml[k].(string)
			if !ok {
				return nil, fmt.Errorf("%s.matchLabels[%s]: expected a string, got %s", field, k, jsonvalue.TypeName(ml[k]))
			}
			r, err := labels.NewRequirement(k, selection.Equals, []string{v})
			if err != nil {
				return nil, fmt.Errorf("%s.matchLabels[%s]: %w", field, k, err)
			}
			reqs = append(reqs, *r)
		}
	}

	if raw := sel["matchExpressions"]; raw != nil {
		list, ok := raw.([]any)
		if !ok {
			return nil, fmt.Errorf("%s.matchExpressions: expected a list, got %s", field, jsonvalue.TypeName(raw))
		}
		for i, item := range list {
			r, err := requirement(item)
			if err != nil {
				return nil, fmt.Errorf("%s.matchExpressions[%d]%w", field, i, err)
			}
			reqs = append(reqs, *r)
		}
	}

	if len(reqs) == 0 {
		return labels.Everything(), nil
	}
	return labels.NewSelector().Add(reqs...), nil
}

// requirement converts one matchExpressions item; its errors start with the
// sub-field (".key: ...") so that the caller can prefix the item's path.
func requirement(item any) (*labels.Requirement, error) {
	expr, ok := item.(map[string]any)
	if !ok {
		return nil, fmt.Errorf(": expected an object, got %s", jsonvalue.TypeName(item))
	}
	key, ok := expr["key"].(string)
	if !ok {
		return nil, fmt.Errorf(".key: expected a string, got %s", describe(expr["key"]))
	}
	opName, ok := expr["operator"].(string)
	if !ok {
		return nil, fmt.Errorf(".operator: expected a string, got %s", describe(expr["operator"]))
	}
	var op selection.Operator
	switch metav1.LabelSelectorOperator(opName) {
	case metav1.LabelSelectorOpIn:
		op = selection.In
	case metav1.LabelSelectorOpNotIn:
		op = selection.NotIn
	case metav1.LabelSelectorOpExists:
		op = selection.Exists
	case metav1.LabelSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return nil, fmt.Errorf(".operator: %q is not one of In, NotIn, Exists, DoesNotExist", opName)
	}
	var values []string
	if raw := expr["values"]; raw != nil {
		list, ok := raw.([]any)
		if !ok {
			return nil, fmt.Errorf(".values: expected a list, got %s", jsonvalue.TypeName(raw))
		}
		values = make([]string, 0, len(list))
		for j, v := range list {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf(".values[%d]: expected a string, got %s", j, jsonvalue.TypeName(v))
			}
			values = append(values, s)
		}
	}
	r, err := labels.NewRequirement(key, op, values)
	if err != nil {
		return nil, fmt.Errorf(": %w", err)
	}
	return r, nil
}

// IgnoredNamespace reports whether FederatedNamespaces in namespace are
// ignored, as KubeFed ignores them in kube-system, kube-public, default and
// its own namespace: propagating them would fight each member's own copy.
func IgnoredNamespace(namespace, kubefedNamespace string) bool {
	switch namespace {
	case "kube-system", "kube-public", "default", kubefedNamespace:
		return true
	}
	return false
}

// ValidateFederatedNamespace returns an error unless a FederatedNamespace's
// name equals its namespace, the only form KubeFed accepts: the namespace it
// federates is identified by both.
func ValidateFederatedNamespace(name, namespace string) error {
	if name != namespace {
		return fmt.Errorf("FederatedNamespace %s/%s is invalid: its name must equal its namespace %q", namespace, name, namespace)
	}
	return nil
}

// nestedObject returns raw as an object, nil for null/absent, or an error
// naming field for any other type.
func nestedObject(raw any, field string) (map[string]any, error) {
	if raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: expected an object, got %s", field, jsonvalue.TypeName(raw))
	}
	return m, nil
}

// describe is jsonvalue.TypeName, but quotes strings, for fields whose value is the
// problem (an empty name).
func describe(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return jsonvalue.TypeName(v)
}

// Get returns the named cluster of the set.
func (s ClusterSet) Get(name string) (Cluster, bool) {
	i, ok := s.index[name]
	if !ok {
		return Cluster{}, false
	}
	return s.clusters[i], true
}

// Names returns the names of every cluster of the set, sorted.
func (s ClusterSet) Names() []string {
	names := make([]string, len(s.clusters))
	for i, c := range s.clusters {
		names[i] = c.Name
	}
	return names
}
