package federatedtype

import (
	"fmt"
	"strconv"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
	"github.com/kubefed-io/kubefed/pkg/overrides"
)

// builtinAggregations are the counts the federated workload kinds sum over
// their clusters when their FederatedTypeConfig names none: the fields
// `kubectl get` shows for the kind, and the desired count from the spec,
// which is what READY divides by.
var builtinAggregations = map[string]corev1beta1.StatusAggregation{
	"apps/Deployment":  replicaCounts("updatedReplicas"),
	"apps/ReplicaSet":  replicaCounts(),
	"apps/StatefulSet": replicaCounts("updatedReplicas", "currentReplicas"),
	"apps/DaemonSet": {
		Fields: []corev1beta1.AggregatedField{
			{Name: "desiredNumberScheduled", Path: "/status/desiredNumberScheduled"},
			{Name: "currentNumberScheduled", Path: "/status/currentNumberScheduled"},
			{Name: "updatedNumberScheduled", Path: "/status/updatedNumberScheduled"},
			{Name: "numberReady", Path: "/status/numberReady"},
			{Name: "numberAvailable", Path: "/status/numberAvailable"},
		},
		Ready:   "numberReady",
		Desired: "desiredNumberScheduled",
	},
	"batch/Job": {
		Fields: []corev1beta1.AggregatedField{
			{Name: "completions", Path: "/spec/completions"},
			{Name: "active", Path: "/status/active"},
			{Name: "ready", Path: "/status/ready"},
			{Name: "succeeded", Path: "/status/succeeded"},
			{Name: "failed", Path: "/status/failed"},
		},
		Ready:   "succeeded",
		Desired: "completions",
	},
}

// builtinMissing are the values of built-in counts that a member object
// leaves unset: a Job without spec.completions is done after one success,
// which kubectl shows as 1 completion wanted.
var builtinMissing = map[string]map[string]int64{
	"batch/Job": {"completions": 1},
}

// replicaCounts are the counts of a kind with spec.replicas, and the extra
// status fields named.
func replicaCounts(extra ...string) corev1beta1.StatusAggregation {
	a := corev1beta1.StatusAggregation{
		Fields: []corev1beta1.AggregatedField{
			{Name: "desiredReplicas", Path: "/spec/replicas"},
			{Name: "replicas", Path: "/status/replicas"},
			{Name: "readyReplicas", Path: "/status/readyReplicas"},
			{Name: "availableReplicas", Path: "/status/availableReplicas"},
		},
		Ready:   "readyReplicas",
		Desired: "desiredReplicas",
	}
	for _, name := range extra {
		a.Fields = append(a.Fields, corev1beta1.AggregatedField{Name: name, Path: "/status/" + name})
	}
	return a
}

// BuiltinAggregation is the status aggregation a target type gets when its
// FederatedTypeConfig names none, or nil.
func BuiltinAggregation(group, kind string) *corev1beta1.StatusAggregation {
	a, ok := builtinAggregations[group+"/"+kind]
	if !ok {
		return nil
	}
	return a.DeepCopy()
}

// Aggregation is a federated type's status aggregation, ready to read
// member objects with.
type Aggregation struct {
	fields         []aggregatedField
	ready, desired string
}

type aggregatedField struct {
	name string
	path overrides.Pointer
	// missing is the count of an object without the field.
	missing int64
}

// AggregationFor is the status aggregation of ftc's type: what its spec
// names, else the built-in one of its target kind; nil when there is none.
// An invalid spec (which the CRD schema refuses) is an error naming it.
func AggregationFor(ftc *corev1beta1.FederatedTypeConfig) (*Aggregation, error) {
	spec := ftc.Spec.StatusAggregation
	if spec != nil && spec.Mode == corev1beta1.Disabled {
		return nil, nil
	}
	var missing map[string]int64
	if spec == nil || len(spec.Fields) == 0 {
		tt := ftc.Spec.TargetType
		spec = BuiltinAggregation(tt.Group, tt.Kind)
		if spec == nil {
			return nil, nil
		}
		missing = builtinMissing[tt.Group+"/"+tt.Kind]
	}
	a := &Aggregation{ready: spec.Ready, desired: spec.Desired}
	names := map[string]bool{}
	for _, f := range spec.Fields {
		p, err := overrides.ParsePointer(f.Path)
		if err != nil {
			return nil, fmt.Errorf("statusAggregation field %s: %w", f.Name, err)
		}
		if names[f.Name] {
			return nil, fmt.Errorf("statusAggregation names field %s twice", f.Name)
		}
		names[f.Name] = true
		a.fields = append(a.fields, aggregatedField{name: f.Name, path: p, missing: missing[f.Name]})
	}
	if (a.ready == "") != (a.desired == "") || (a.ready != "" && (!names[a.ready] || !names[a.desired])) {
		return nil, fmt.Errorf("statusAggregation ready %q and desired %q must both name fields", a.ready, a.desired)
	}
	return a, nil
}

// Counts reads the counts of a member object; a missing value counts 0
// (but for a built-in default), a non-integer one 0.
func (a *Aggregation) Counts(obj map[string]any) map[string]int64 {
	out := make(map[string]int64, len(a.fields))
	for _, f := range a.fields {
		v, found := f.path.Lookup(obj)
		if !found || v == nil {
			out[f.name] = f.missing
			continue
		}
		out[f.name], _ = jsonvalue.Int64(v)
	}
	return out
}

// Ready is what READY shows for counts, <ready>/<desired>; empty when the
// aggregation names no ready and desired counts.
func (a *Aggregation) Ready(counts map[string]int64) string {
	if a.ready == "" {
		return ""
	}
	return strconv.FormatInt(counts[a.ready], 10) + "/" + strconv.FormatInt(counts[a.desired], 10)
}
