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

// KubeFedBuckets are the buckets of KubeFed's duration histograms, which
// the histograms of the same names keep: dashboards and alerts written for
// KubeFed pick le values such as 7.5 or 12.5.
var KubeFedBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 7.5, 10.0, 12.5, 15.0, 17.5, 20.0, 22.5, 25.0, 27.5, 30.0, 50.0, 75.0, 100.0, 1000.0}

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
		Buckets: KubeFedBuckets,
	})

	// ClusterClientConnectionDuration observes how long building the
	// clients of a member cluster takes.
	ClusterClientConnectionDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "cluster_client_connection_duration_seconds",
		Help:    "Time taken to build the clients of a member cluster.",
		Buckets: KubeFedBuckets,
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
