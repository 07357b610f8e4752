package overrides

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
)

// Operation is one override of one cluster: a JSON-patch operation.
type Operation struct {
	// Op is add, remove or replace; empty means replace.
	Op typesv1beta1.OverrideOp
	// Path is where the operation applies.
	Path Pointer
	// Value is the JSON value add and replace set (nil is null); remove
	// ignores it. It is deep-copied into each object it is applied to.
	Value any
}

// forbiddenPaths identify the object: name and namespace come from the
// federated object, kind and apiVersion from its FederatedTypeConfig, and a
// member object whose identity varied per cluster could not be found again.
// KubeFed allowed /apiVersion (for Ingress moving groups); here members
// are reached through the FTC's one version, so an override of it is
// refused when applied (ApplyOverridesFailed for that cluster), though the
// CRD admits it as KubeFed's did, so that KubeFed manifests still apply.
// Only exact paths are forbidden, as in KubeFed; /metadata as a whole is not.
var forbiddenPaths = []Pointer{
	{"metadata", "name"},
	{"metadata", "namespace"},
	{"metadata", "generateName"},
	{"kind"},
	{"apiVersion"},
}

// validate checks what Apply needs and the schema's rules, which objects
// created without the CRD's validation may break.
func (o *Operation) validate() error {
	switch o.Op {
	case "", typesv1beta1.OverrideAdd, typesv1beta1.OverrideRemove, typesv1beta1.OverrideReplace:
	default:
		return fmt.Errorf("op %q is not add, remove or replace", o.Op)
	}
	if len(o.Path) == 0 {
		return fmt.Errorf("path must not be empty: the whole object cannot be overridden")
	}
	for _, f := range forbiddenPaths {
		if slices.Equal(o.Path, f) {
			return fmt.Errorf("path %s may not be overridden: name, namespace, generateName, kind and apiVersion come from the federated object and its type", o.Path)
		}
	}
	return nil
}

func (o *Operation) op() typesv1beta1.OverrideOp {
	if o.Op == "" {
		return typesv1beta1.OverrideReplace
	}
	return o.Op
}

// Apply applies ops in order to obj, which the caller owns (a copy of the
// template for one cluster) and which is modified in place. Values are
// deep-copied, so obj never aliases the federated object's overrides.
//
// The semantics are those of evanphx/json-patch v4, which KubeFed used:
//   - replace of a missing object key adds it (but missing intermediate
//     objects are never created, for any op: that is an error);
//   - replace and add without a value set null;
//   - add on an object key sets it; on a list index inserts there, and "-"
//     appends;
//   - remove of a missing key or index is an error that names the path;
//   - list indexes may appear anywhere in a path, and negative indexes count
//     from the end (-1 is the last element; for add, -1 appends);
//   - an out-of-range index is an error that names the list and the index.
//
// On error obj is partially modified and must be discarded; the error names
// the operation and the path, for ApplyOverridesFailed of that cluster.
func Apply(obj map[string]any, ops []Operation) error {
	for i := range ops {
		o := &ops[i]
		if err := o.validate(); err != nil {
			return fmt.Errorf("%s %s: %w", o.op(), o.Path, err)
		}
		if obj == nil {
			return fmt.Errorf("%s %s: the object is null", o.op(), o.Path)
		}
		if _, err := apply(obj, o, 0); err != nil {
			return fmt.Errorf("%s %s: %w", o.op(), o.Path, err)
		}
	}
	return nil
}

// apply applies o inside node, the value at o.Path[:depth], and returns what
// the parent must hold afterwards: a list changes identity when an element is
// inserted or removed.
func apply(node any, o *Operation, depth int) (any, error) {
	tok := o.Path[depth]
	last := depth == len(o.Path)-1
	switch n := node.(type) {
	case map[string]any:
		if n == nil {
			return nil, fmt.Errorf("%s is null", o.Path[:depth])
		}
		if last {
			return n, applyToObject(n, tok, o)
		}
		child, ok := n[tok]
		if !ok || child == nil {
			// json-patch v4 only adds the last key; neither do we invent
			// intermediate objects whose kind (object or list) is unknown.
			return nil, fmt.Errorf("%s does not exist", o.Path[:depth+1])
		}
		updated, err := apply(child, o, depth+1)
		if err != nil {
			return nil, err
		}
		if _, isList := child.([]any); isList {
			n[tok] = updated
		}
		return n, nil

	case []any:
		if last {
			return applyToList(n, tok, o, depth)
		}
		i, err := listIndex(tok, len(n), false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Path[:depth], err)
		}
		updated, err := apply(n[i], o, depth+1)
		if err != nil {
			return nil, err
		}
		n[i] = updated
		return n, nil

	default:
		// depth > 0: the root is always an object.
		return nil, fmt.Errorf("%s is %s, not an object or a list", o.Path[:depth], jsonvalue.TypeName(node))
	}
}

func applyToObject(n map[string]any, key string, o *Operation) error {
	switch o.op() {
	case typesv1beta1.OverrideRemove:
		if _, ok := n[key]; !ok {
			return fmt.Errorf("%s does not exist", o.Path)
		}
		delete(n, key)
	default: // add and replace: KubeFed's replace adds a missing key.
		v, err := copyValue(o.Value)
		if err != nil {
			return err
		}
		n[key] = v
	}
	return nil
}

func applyToList(n []any, tok string, o *Operation, depth int) ([]any, error) {
	add := o.op() == typesv1beta1.OverrideAdd
	i, err := listIndex(tok, len(n), add)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Path[:depth], err)
	}
	if o.op() == typesv1beta1.OverrideRemove {
		return slices.Delete(n, i, i+1), nil
	}
	v, err := copyValue(o.Value)
	if err != nil {
		return nil, err
	}
	if add {
		return slices.Insert(n, i, v), nil
	}
	n[i] = v
	return n, nil
}

// listIndex resolves tok to an index of a list of length n. For insertion
// (add) n itself is valid, and "-" means n. Negative indexes count from the
// end, as json-patch v4 allowed with SupportNegativeIndices (its default).
// Like v4, the number is read with strconv.Atoi, so "01" is 1.
func listIndex(tok string, n int, insert bool) (int, error) {
	size := n
	if insert {
		size = n + 1
		if tok == "-" {
			return n, nil
		}
	}
	i, err := strconv.Atoi(tok)
	if err != nil {
		if tok == "-" {
			return 0, fmt.Errorf(`index "-" (after the last element) is only valid for add`)
		}
		return 0, fmt.Errorf("%q is not a list index", tok)
	}
	if i < 0 {
		i += size
	}
	if i < 0 || i >= size {
		return 0, fmt.Errorf("index %s is out of range: the list has %d %s", tok, n, plural(n, "element", "elements"))
	}
	return i, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// copyValue deep-copies a JSON value. Go numbers other than int64 and
// float64 are normalised to those, since the rest of the stack
// (runtime.DeepCopyJSON) panics on them; other types are an error.
func copyValue(v any) (any, error) {
	switch v := v.(type) {
	case nil, string, bool, int64, float64, json.Number:
		return v, nil
	case map[string]any:
		if v == nil {
			return nil, nil
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := copyValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		if v == nil {
			return nil, nil
		}
		out := make([]any, len(v))
		for i, e := range v {
			c, err := copyValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case int:
		return int64(v), nil
	case int8:
		return int64(v), nil
	case int16:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case uint8:
		return int64(v), nil
	case uint16:
		return int64(v), nil
	case uint32:
		return int64(v), nil
	case uint:
		if uint64(v) > math.MaxInt64 {
			return nil, fmt.Errorf("value %d does not fit in int64", v)
		}
		return int64(v), nil
	case uint64:
		if v > math.MaxInt64 {
			return nil, fmt.Errorf("value %d does not fit in int64", v)
		}
		return int64(v), nil
	case float32:
		return float64(v), nil
	}
	return nil, fmt.Errorf("value of type %T is not a JSON value", v)
}
