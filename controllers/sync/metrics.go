package sync

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// reconcileDuration is KubeFed's reconcile_federated_resources_duration_seconds.
	reconcileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "reconcile_federated_resources_duration_seconds",
		Help:    "Time taken to reconcile one federated object in every member cluster.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	// dispatchDuration is KubeFed's dispatch_operation_duration_seconds.
	dispatchDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "dispatch_operation_duration_seconds",
		Help:    "Time taken by one create, update or delete of a member object.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"action"})
	// propagationLatency is the time from a federated object's change, as
	// the engine first saw it, to each member copy written for it.
	propagationLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubefed_propagation_latency_seconds",
		Help:    "Time from a federated object's creation or spec change to a member copy written for it.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	})
	// dispatchInFlight is the writes to each member under way: a member
	// whose gauge stays high is slow or unreachable.
	dispatchInFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubefed_cluster_dispatch_in_flight",
		Help: "Writes to a member cluster under way, per cluster.",
	}, []string{"cluster"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(reconcileDuration, dispatchDuration, propagationLatency, dispatchInFlight)
}
