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
)

func init() {
	ctrlmetrics.Registry.MustRegister(reconcileDuration, dispatchDuration)
}
