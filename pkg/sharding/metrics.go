package sharding

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	heldClusters = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubefed_shard_clusters",
		Help: "Member clusters whose fence this replica holds, that is, that it writes to.",
	})
	liveReplicas = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubefed_shard_replicas",
		Help: "Live controller-manager replicas this replica sees, itself included.",
	})
	fenceChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubefed_shard_fence_changes_total",
		Help: "Member cluster fences this replica acquired, released (handed over) or lost (renewal failed or taken).",
	}, []string{"change"})
)

func init() {
	metrics.Registry.MustRegister(heldClusters, liveReplicas, fenceChanges)
}

func publish(s *Shard) {
	s.mu.Lock()
	held, live := len(s.held), len(s.live)
	s.mu.Unlock()
	heldClusters.Set(float64(held))
	liveReplicas.Set(float64(live))
}
