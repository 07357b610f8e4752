package informermanager

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// informerSynced tells which member caches are complete, so that a
	// member stuck before its first list shows up on a dashboard.
	informerSynced = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kubefed_member_informer_synced",
		Help: "1 when the informer of a resource in a member cluster has completed its initial list, else 0.",
	}, []string{"cluster", "resource"})

	// informerEvents counts what members send, once per object however
	// many controllers subscribe, to show which member drives the load.
	informerEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubefed_member_informer_events_total",
		Help: "Objects received from a member cluster in list and watch responses of the member informers.",
	}, []string{"cluster", "resource"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(informerSynced, informerEvents)
}

// resourceLabel names a resource the way kubectl does (configmaps.v1,
// deployments.v1.apps), which is shorter than GroupVersionResource.String.
func resourceLabel(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "." + gvr.Version
	}
	return gvr.Resource + "." + gvr.Version + "." + gvr.Group
}

func deleteMetrics(cluster string, gvr schema.GroupVersionResource) {
	res := resourceLabel(gvr)
	informerSynced.DeleteLabelValues(cluster, res)
	informerEvents.DeleteLabelValues(cluster, res)
}
