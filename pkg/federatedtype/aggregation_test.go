package federatedtype

import (
	"maps"
	"strings"
	"testing"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

func typeConfig(group, kind string, agg *corev1beta1.StatusAggregation) *corev1beta1.FederatedTypeConfig {
	return &corev1beta1.FederatedTypeConfig{Spec: corev1beta1.FederatedTypeConfigSpec{
		TargetType:        corev1beta1.APIResource{Group: group, Version: "v1", Kind: kind},
		StatusAggregation: agg,
	}}
}

func TestBuiltinAggregations(t *testing.T) {
	for _, tc := range []struct {
		group, kind string
		obj         map[string]any
		want        map[string]int64
		ready       string
	}{
		{"apps", "Deployment",
			map[string]any{"spec": map[string]any{"replicas": int64(5)}, "status": map[string]any{"replicas": int64(5), "readyReplicas": int64(3), "availableReplicas": int64(3), "updatedReplicas": int64(4)}},
			map[string]int64{"desiredReplicas": 5, "replicas": 5, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 4}, "3/5"},
		// A copy that has no status yet counts 0, as JSON floats count as integers.
		{"apps", "StatefulSet",
			map[string]any{"spec": map[string]any{"replicas": float64(2)}},
			map[string]int64{"desiredReplicas": 2, "replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "updatedReplicas": 0, "currentReplicas": 0}, "0/2"},
		{"apps", "ReplicaSet",
			map[string]any{"spec": map[string]any{"replicas": int64(1)}, "status": map[string]any{"readyReplicas": int64(1)}},
			map[string]int64{"desiredReplicas": 1, "replicas": 0, "readyReplicas": 1, "availableReplicas": 0}, "1/1"},
		{"apps", "DaemonSet",
			map[string]any{"status": map[string]any{"desiredNumberScheduled": int64(2), "numberReady": int64(2), "currentNumberScheduled": int64(2)}},
			map[string]int64{"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "updatedNumberScheduled": 0, "numberReady": 2, "numberAvailable": 0}, "2/2"},
		{"batch", "Job",
			map[string]any{"spec": map[string]any{"completions": int64(3)}, "status": map[string]any{"active": int64(1), "succeeded": int64(2), "ready": int64(1)}},
			map[string]int64{"completions": 3, "active": 1, "ready": 1, "succeeded": 2, "failed": 0}, "2/3"},
		// A work-queue Job leaves completions unset: one success is done.
		{"batch", "Job",
			map[string]any{"spec": map[string]any{"parallelism": int64(3)}, "status": map[string]any{"succeeded": int64(1)}},
			map[string]int64{"completions": 1, "active": 0, "ready": 0, "succeeded": 1, "failed": 0}, "1/1"},
	} {
		t.Run(tc.kind+" "+tc.ready, func(t *testing.T) {
			a, err := AggregationFor(typeConfig(tc.group, tc.kind, nil))
			if err != nil || a == nil {
				t.Fatalf("AggregationFor = %v, %v", a, err)
			}
			got := a.Counts(tc.obj)
			if !maps.Equal(got, tc.want) {
				t.Errorf("Counts = %v, want %v", got, tc.want)
			}
			if r := a.Ready(got); r != tc.ready {
				t.Errorf("Ready = %q, want %q", r, tc.ready)
			}
		})
	}
}

func TestAggregationFromTheTypeConfig(t *testing.T) {
	// Other kinds have none unless their type config names fields.
	if a, err := AggregationFor(typeConfig("", "ConfigMap", nil)); a != nil || err != nil {
		t.Errorf("ConfigMap: %v, %v", a, err)
	}
	if a, err := AggregationFor(typeConfig("apps", "Deployment", &corev1beta1.StatusAggregation{Mode: corev1beta1.Disabled})); a != nil || err != nil {
		t.Errorf("disabled Deployment: %v, %v", a, err)
	}
	// Enabled without fields is the built-in one.
	if a, err := AggregationFor(typeConfig("apps", "Deployment", &corev1beta1.StatusAggregation{Mode: corev1beta1.Enabled})); a == nil || err != nil || a.Ready(map[string]int64{"readyReplicas": 1, "desiredReplicas": 2}) != "1/2" {
		t.Errorf("enabled Deployment: %v, %v", a, err)
	}

	custom := &corev1beta1.StatusAggregation{
		Fields: []corev1beta1.AggregatedField{
			{Name: "wanted", Path: "/spec/size"},
			{Name: "up", Path: "/status/members/ready"},
			{Name: "firstPort", Path: "/spec/ports/0/port"},
			{Name: "escaped", Path: "/metadata/annotations/example.com~1count"},
		},
		Ready: "up", Desired: "wanted",
	}
	a, err := AggregationFor(typeConfig("example.com", "Cache", custom))
	if err != nil || a == nil {
		t.Fatalf("custom: %v, %v", a, err)
	}
	obj := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"example.com/count": int64(7)}},
		"spec":     map[string]any{"size": int64(3), "ports": []any{map[string]any{"port": int64(6379)}}},
		"status":   map[string]any{"members": map[string]any{"ready": "two"}},
	}
	want := map[string]int64{"wanted": 3, "up": 0, "firstPort": 6379, "escaped": 7}
	if got := a.Counts(obj); !maps.Equal(got, want) {
		t.Errorf("custom counts = %v, want %v (a string counts 0)", got, want)
	}
	if r := a.Ready(a.Counts(obj)); r != "0/3" {
		t.Errorf("custom ready = %q", r)
	}
	// Without ready and desired there is no READY.
	noReady := &corev1beta1.StatusAggregation{Fields: custom.Fields[:1]}
	if a, err := AggregationFor(typeConfig("example.com", "Cache", noReady)); err != nil || a.Ready(map[string]int64{"wanted": 1}) != "" {
		t.Errorf("no ready: %v, %v", a, err)
	}

	for name, bad := range map[string]*corev1beta1.StatusAggregation{
		"dotted path":         {Fields: []corev1beta1.AggregatedField{{Name: "n", Path: "status.ready"}}},
		"ready names nothing": {Fields: custom.Fields, Ready: "down", Desired: "wanted"},
		"ready alone":         {Fields: custom.Fields, Ready: "up"},
		"twice":               {Fields: []corev1beta1.AggregatedField{{Name: "n", Path: "/a"}, {Name: "n", Path: "/b"}}},
	} {
		if _, err := AggregationFor(typeConfig("example.com", "Cache", bad)); err == nil || !strings.Contains(err.Error(), "statusAggregation") {
			t.Errorf("%s: got %v, want an error naming statusAggregation", name, err)
		}
	}
}

// The workload kinds' CRDs print READY first, as kubectl does for
// Deployments; other kinds have no READY column.
func TestReadyColumnOfTheWorkloadKinds(t *testing.T) {
	for _, tc := range []struct {
		target Target
		first  string
	}{
		{Target{Group: "apps", Version: "v1", Kind: "StatefulSet", Plural: "statefulsets", Namespaced: true}, "Ready"},
		{Target{Group: "batch", Version: "v1", Kind: "Job", Plural: "jobs", Namespaced: true}, "Ready"},
		{Target{Version: "v1", Kind: "ConfigMap", Plural: "configmaps", Namespaced: true}, "Propagation"},
	} {
		crd, err := CRD(tc.target, Options{})
		if err != nil {
			t.Fatal(err)
		}
		cols := crd.Spec.Versions[0].AdditionalPrinterColumns
		if cols[0].Name != tc.first {
			t.Errorf("%s: first column %s, want %s", tc.target.Kind, cols[0].Name, tc.first)
		}
		if tc.first == "Ready" && cols[0].JSONPath != ".status.ready" {
			t.Errorf("%s: READY reads %s", tc.target.Kind, cols[0].JSONPath)
		}
	}
}
