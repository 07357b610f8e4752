package sync

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kubefed-io/kubefed/pkg/metrics"
)

var (
	// reconcileDuration is KubeFed's reconcile_federated_resources_duration_seconds.
	reconcileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "reconcile_federated_resources_duration_seconds",
		Help:    "Time taken to reconcile one federated object in every member cluster.",
		Buckets: metrics.KubeFedBuckets,
	})
	// dispatchDuration is KubeFed's dispatch_operation_duration_seconds.
	dispatchDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "dispatch_operation_duration_seconds",
		Help:    "Time taken by one create, update or delete of a member object.",
		Buckets: metrics.KubeFedBuckets,
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

	// clusterWriteDuration is dispatchDuration per member.
	clusterWriteDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubefed_cluster_write_duration_seconds",
		Help:    "Time taken by one create, update or delete of a member object, per cluster.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"cluster", "action"})
	// clusterWriteErrors counts the writes a member refused or did not answer.
	clusterWriteErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubefed_cluster_write_errors_total",
		Help: "Writes to a member cluster that failed, per cluster, action and reason.",
	}, []string{"cluster", "action", "reason"})
	// statusConflicts counts the status writes that lost to another
	// replica's, which are tried again; only replicas serving a share of
	// the members guard status writes with the resourceVersion.
	statusConflicts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubefed_status_write_conflicts_total",
		Help: "Status writes of federated objects that conflicted with another replica's and were tried again.",
	})
	// bulkWaiting is the status writes of bulk work waiting for their
	// turn while prompt work is on (bulkGate).
	bulkWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubefed_bulk_status_writes_waiting",
		Help: "Status writes of fan-out work (a member's readiness or a FederatedNamespace changed) waiting for changes of objects to ease.",
	})
	// bulkWorkerReturns counts the bulk status writes that gave their
	// worker back after bulkWorkerHold in the gate, to be tried again.
	bulkWorkerReturns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubefed_bulk_status_writes_deferred_total",
		Help: "Status writes of fan-out work that waited 100ms for their turn without getting it and gave their worker back to changes of objects, to be tried again.",
	})
	// copyChecks counts the checks of member copies against their plan: a
	// copy unchanged since its last check is taken as it is, any other is
	// compared with the plan's rendering.
	copyChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubefed_copy_checks_total",
		Help: "Checks of member copies against their federated object, per cluster and how: unchanged (as last found up to date, nothing rendered) or compared (rendered, then compared with the copy, or created).",
	}, []string{"cluster", "how"})
	// statusWrites counts the status writes to federated objects.
	statusWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubefed_status_writes_total",
		Help: "Status writes to federated objects.",
	})
	// The peer channel between scaled-out replicas (peerstatus.go).
	peerReportsSent = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubefed_peer_reports_sent_total",
		Help: "Status entries of a federated object sent to the replica that writes its status, instead of written here.",
	})
	peerReportsTaken = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubefed_peer_reports_taken_total",
		Help: "Status entries of a federated object another replica sent this one to write.",
	})
	peerSendFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubefed_peer_send_failures_total",
		Help: "Messages to another replica that could not be delivered; their entries and events were written here.",
	})
	peerFallbacks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubefed_peer_fallbacks_total",
		Help: "Status entries sent twice to the replica that writes the object's status without the host showing them, then written here.",
	})
)

// observeDispatch records one member write's duration and, if it failed, why.
func observeDispatch(cluster, action string, start time.Time, err error) {
	d := time.Since(start).Seconds()
	dispatchDuration.WithLabelValues(action).Observe(d)
	clusterWriteDuration.WithLabelValues(cluster, action).Observe(d)
	if err != nil {
		clusterWriteErrors.WithLabelValues(cluster, action, string(apierrors.ReasonForError(err))).Inc()
	}
}

func init() {
	ctrlmetrics.Registry.MustRegister(reconcileDuration, dispatchDuration, propagationLatency, dispatchInFlight,
		clusterWriteDuration, clusterWriteErrors, statusWrites, statusConflicts, bulkWaiting, bulkWorkerReturns, copyChecks,
		peerReportsSent, peerReportsTaken, peerSendFailures, peerFallbacks)
}
