package sync

import (
	"slices"
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubefed-io/kubefed/pkg/metrics"
)

// The histograms named as KubeFed's have its buckets, which dashboards
// written for KubeFed pick by their le values.
func TestKubeFedHistogramsHaveItsBuckets(t *testing.T) {
	dispatchDuration.WithLabelValues("create").Observe(0)
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"reconcile_federated_resources_duration_seconds": false,
		"dispatch_operation_duration_seconds":            false,
		"cluster_health_status_duration_seconds":         false,
		"cluster_client_connection_duration_seconds":     false,
	}
	for _, f := range families {
		if _, ok := want[f.GetName()]; !ok || len(f.GetMetric()) == 0 {
			continue
		}
		var bounds []float64
		for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		if !slices.Equal(bounds, metrics.KubeFedBuckets) {
			t.Errorf("%s: buckets %v, want KubeFed's %v", f.GetName(), bounds, metrics.KubeFedBuckets)
		}
		want[f.GetName()] = true
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("%s is not registered", name)
		}
	}
}
