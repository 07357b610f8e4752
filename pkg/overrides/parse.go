package overrides

import (
	"fmt"
	"slices"

	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
)

// ByCluster maps a cluster name to its overrides, in manifest order.
type ByCluster map[string][]Operation

// FromUnstructured reads spec.overrides of a federated object. It returns an
// error naming the field for everything KubeFed rejected or could not apply:
// a cluster listed twice, a path listed twice for one cluster, an op other
// than add, remove or replace, a forbidden path and a malformed pointer. The
// schema rejects most of these, but objects stored before (or without) the
// CRD's validation must be handled too.
//
// Values are not copied here: Operations refer into obj, and Apply copies.
func FromUnstructured(obj map[string]any) (ByCluster, error) {
	byCluster, invalid, err := PerCluster(obj)
	if err != nil {
		return nil, err
	}
	if len(invalid) > 0 {
		// Report the first offending entry in manifest order, as a reader
		// of the manifest would find it.
		first := ""
		for name, e := range invalid {
			if first == "" || e.index < invalid[first].index {
				first = name
			}
		}
		return nil, invalid[first]
	}
	return byCluster, nil
}

// ClusterError is what is wrong with the overrides of one cluster.
type ClusterError struct {
	// index is the cluster's first entry in spec.overrides.
	index int
	err   error
}

func (e *ClusterError) Error() string { return e.err.Error() }
func (e *ClusterError) Unwrap() error { return e.err }

// PerCluster reads spec.overrides like FromUnstructured but confines what is
// wrong with one cluster's entry (listed twice, a bad op or path) to that
// cluster: it is left out of ByCluster and its error is in the map, so that
// propagation reports ApplyOverridesFailed for it alone and goes on with the
// others. Only a malformed overrides list as a whole, or an entry without a
// cluster name, is an error for every cluster.
func PerCluster(obj map[string]any) (ByCluster, map[string]*ClusterError, error) {
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		if obj["spec"] == nil {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("spec: expected an object, got %s", jsonvalue.TypeName(obj["spec"]))
	}
	raw := spec["overrides"]
	if raw == nil {
		return nil, nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, nil, fmt.Errorf("spec.overrides: expected a list, got %s", jsonvalue.TypeName(raw))
	}

	byCluster := make(ByCluster, len(list))
	var invalid map[string]*ClusterError
	fail := func(cluster string, index int, err error) {
		if invalid == nil {
			invalid = map[string]*ClusterError{}
		}
		if _, ok := invalid[cluster]; !ok {
			invalid[cluster] = &ClusterError{index: index, err: err}
		}
		delete(byCluster, cluster)
	}
	seen := make(map[string]bool, len(list))
	for i, item := range list {
		co, ok := item.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("spec.overrides[%d]: expected an object, got %s", i, jsonvalue.TypeName(item))
		}
		cluster, ok := co["clusterName"].(string)
		if !ok || cluster == "" {
			return nil, nil, fmt.Errorf("spec.overrides[%d].clusterName: expected a non-empty string, got %s", i, describe(co["clusterName"]))
		}
		if seen[cluster] {
			first := firstIndex(list, cluster)
			// A duplicate invalidates the cluster even if its first entry
			// was fine: which of the two was meant cannot be known.
			delete(invalid, cluster)
			fail(cluster, first, fmt.Errorf("spec.overrides[%d].clusterName: cluster %q is listed twice (first in spec.overrides[%d])", i, cluster, first))
			continue
		}
		seen[cluster] = true
		ops, err := parseClusterOverrides(co["clusterOverrides"], cluster)
		if err != nil {
			fail(cluster, i, fmt.Errorf("spec.overrides[%d].clusterOverrides%w", i, err))
			continue
		}
		byCluster[cluster] = ops
	}
	return byCluster, invalid, nil
}

// firstIndex finds where cluster was first listed; only errors need it.
func firstIndex(list []any, cluster string) int {
	for i, item := range list {
		if co, ok := item.(map[string]any); ok && co["clusterName"] == cluster {
			return i
		}
	}
	return -1
}

// maxLinearPaths bounds the quadratic duplicate-path check; longer lists (the
// schema allows 200, unvalidated objects any number) use a map.
const maxLinearPaths = 16

// parseClusterOverrides parses one clusterOverrides list. Its errors start
// with the item's sub-path ("[2].path: ...") for the caller to prefix.
func parseClusterOverrides(raw any, cluster string) ([]Operation, error) {
	if raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf(": expected a list, got %s", jsonvalue.TypeName(raw))
	}
	ops := make([]Operation, 0, len(list))
	var seen map[string]int
	var paths []string
	if len(list) > maxLinearPaths {
		seen = make(map[string]int, len(list))
	} else {
		paths = make([]string, 0, len(list))
	}
	for j, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("[%d]: expected an object, got %s", j, jsonvalue.TypeName(item))
		}

		var op typesv1beta1.OverrideOp
		if rawOp := m["op"]; rawOp != nil {
			s, ok := rawOp.(string)
			if !ok {
				return nil, fmt.Errorf("[%d].op: expected a string, got %s", j, jsonvalue.TypeName(rawOp))
			}
			op = typesv1beta1.OverrideOp(s)
		}

		path, ok := m["path"].(string)
		if !ok {
			return nil, fmt.Errorf("[%d].path: expected a string, got %s", j, jsonvalue.TypeName(m["path"]))
		}
		// Paths are compared as written: RFC 6901 escaping is canonical, so
		// one pointer has one spelling.
		first := -1
		if seen != nil {
			if k, dup := seen[path]; dup {
				first = k
			} else {
				seen[path] = j
			}
		} else {
			first = slices.Index(paths, path)
			paths = append(paths, path)
		}
		if first >= 0 {
			return nil, fmt.Errorf("[%d].path: %q is listed twice for cluster %q (first in [%d])", j, path, cluster, first)
		}

		pointer, err := ParsePointer(path)
		if err != nil {
			return nil, fmt.Errorf("[%d].path: %w", j, err)
		}
		o := Operation{Op: op, Path: pointer, Value: m["value"]}
		if err := o.validate(); err != nil {
			return nil, fmt.Errorf("[%d]: %w", j, err)
		}
		if o.Op == "" {
			o.Op = typesv1beta1.OverrideReplace
		}
		ops = append(ops, o)
	}
	return ops, nil
}

// describe is jsonvalue.TypeName, but quotes strings, for fields whose value is the
// problem (an empty name).
func describe(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return jsonvalue.TypeName(v)
}
