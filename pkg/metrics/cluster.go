package metrics

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Cluster states, the values of the state label of ClusterTotal.
const (
	ClusterStateReady    = "ready"
	ClusterStateNotReady = "notready"
	ClusterStateOffline  = "offline"
)

var clusterStates = []string{ClusterStateReady, ClusterStateNotReady, ClusterStateOffline}

var (
	// ClusterTotal is 1 for the state a member cluster is in and 0 for the
	// other states, so that sum by (state) counts clusters per state.
	ClusterTotal = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubefedcluster_total",
		Help: "Member clusters by state: 1 for the state each cluster is in, 0 for the others.",
	}, []string{"state", "cluster"})

	// ClusterHealthStatusDuration observes how long one health probe of a
	// member cluster takes.
	ClusterHealthStatusDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "cluster_health_status_duration_seconds",
		Help:    "Time taken to probe the health of a member cluster.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	})

	// ClusterClientConnectionDuration observes how long building the
	// clients of a member cluster takes.
	ClusterClientConnectionDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "cluster_client_connection_duration_seconds",
		Help:    "Time taken to build the clients of a member cluster.",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(ClusterTotal, ClusterHealthStatusDuration, ClusterClientConnectionDuration)
}

// SetClusterState sets ClusterTotal to 1 for cluster's state and to 0 for
// its other states.
func SetClusterState(cluster, state string) {
	for _, s := range clusterStates {
		v := 0.0
		if s == state {
			v = 1
		}
		ClusterTotal.WithLabelValues(s, cluster).Set(v)
	}
}

// DeleteCluster drops every ClusterTotal series of cluster, so that a
// deleted member does not linger in dashboards.
func DeleteCluster(cluster string) {
	ClusterTotal.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
}

// Clusters returns the clusters ClusterTotal has series for, sorted, so that
// a restarted controller can delete those of clusters that vanished.
func Clusters() []string {
	ch := make(chan prometheus.Metric)
	go func() {
		ClusterTotal.Collect(ch)
		close(ch)
	}()
	seen := map[string]bool{}
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			continue
		}
		for _, l := range out.GetLabel() {
			if l.GetName() == "cluster" {
				seen[l.GetValue()] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
