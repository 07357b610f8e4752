package scheduling

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubefed-io/kubefed/controllers/cluster"
)

// Readiness says which member clusters are ready and tells listeners when
// that changes; *cluster.ReadinessTracker implements it.
type Readiness interface {
	IsReady(name string) bool
	AddListener(l cluster.ReadinessListener) (remove func())
}

// CapacityEstimator reports the pods of a workload that member clusters
// cannot schedule; PendingPods implements it with member informers.
type CapacityEstimator interface {
	// UnschedulableSince returns since when each pod of namespace in the
	// named cluster that selector matches has been unschedulable
	// (PodScheduled=False with reason Unschedulable). ok is false while the
	// cluster's pods are not known, for example before the first list; the
	// cluster is then not limited.
	UnschedulableSince(cluster, namespace string, selector labels.Selector) (since []time.Time, ok bool)
	// Subscribe calls notify whenever a pod of namespace in cluster becomes,
	// stays or stops being unschedulable; namespace "" means any namespace. notify must return quickly and
	// may be called concurrently. The returned function ends the
	// subscription.
	Subscribe(notify func(cluster, namespace string)) (unsubscribe func())
}
