package metrics

import (
	"fmt"
	"testing"

	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// clusterTotal returns the kubefedcluster_total samples as
// cluster → state → value, read through the registry users scrape.
func clusterTotal(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]map[string]float64{}
	for _, f := range families {
		if f.GetName() != "kubefedcluster_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := labelMap(m)
			if out[labels["cluster"]] == nil {
				out[labels["cluster"]] = map[string]float64{}
			}
			out[labels["cluster"]][labels["state"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestSetClusterStateIsOneHot(t *testing.T) {
	SetClusterState("c1", ClusterStateReady)
	SetClusterState("c1", ClusterStateOffline)
	SetClusterState("c2", ClusterStateNotReady)

	got := clusterTotal(t)
	want := map[string]float64{ClusterStateReady: 0, ClusterStateNotReady: 0, ClusterStateOffline: 1}
	for state, v := range want {
		if got["c1"][state] != v {
			t.Errorf("c1 %s = %v, want %v", state, got["c1"][state], v)
		}
	}

	if got := fmt.Sprint(Clusters()); got != "[c1 c2]" {
		t.Errorf("Clusters() = %s, want [c1 c2]", got)
	}

	DeleteCluster("c1")
	got = clusterTotal(t)
	if _, ok := got["c1"]; ok {
		t.Errorf("c1 still has series after DeleteCluster: %v", got["c1"])
	}
	if len(got["c2"]) != 3 {
		t.Errorf("c2 has %d series, want 3", len(got["c2"]))
	}
	DeleteCluster("c2")
}

func TestHistogramsAreRegistered(t *testing.T) {
	ClusterHealthStatusDuration.Observe(0.1)
	ClusterClientConnectionDuration.Observe(0.001)
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	found := map[string]bool{}
	for _, f := range families {
		found[f.GetName()] = f.GetType() == dto.MetricType_HISTOGRAM
	}
	for _, name := range []string{"cluster_health_status_duration_seconds", "cluster_client_connection_duration_seconds"} {
		if !found[name] {
			t.Errorf("histogram %s is not served by controller-runtime's registry", name)
		}
	}
}
