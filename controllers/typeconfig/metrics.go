package typeconfig

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// targetMissing is 1 for each ready member that does not serve a type's
// target type and 0 for each that does, so that an alert on
// max(...) == 1 names the type and the cluster.
var targetMissing = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "kubefed_federatedtypeconfig_target_missing",
	Help: "1 when a ready member cluster does not serve the target type of a FederatedTypeConfig, 0 when it does.",
}, []string{"federatedtypeconfig", "cluster"})

func init() {
	ctrlmetrics.Registry.MustRegister(targetMissing)
}

// presenceSeries are the clusters each type has targetMissing series for.
// It is shared by every Reconciler of the process, as the gauge is, so that
// a Reconciler rebuilt for a new KubeFedConfig still drops old series.
var presenceSeries = struct {
	sync.Mutex
	clusters map[string][]string
}{clusters: map[string][]string{}}

// publishPresence sets targetMissing for a type's ready members and drops
// the series of members that are no longer ready. Series are replaced one
// by one rather than all deleted first, so no scrape sees a gap.
func publishPresence(typeConfig string, status []corev1beta1.TargetTypeClusterStatus) {
	presenceSeries.Lock()
	defer presenceSeries.Unlock()
	current := make([]string, 0, len(status))
	for _, s := range status {
		v := 0.0
		if s.Status != corev1beta1.TargetTypePresent {
			v = 1
		}
		targetMissing.WithLabelValues(typeConfig, s.ClusterName).Set(v)
		current = append(current, s.ClusterName)
	}
	for _, old := range presenceSeries.clusters[typeConfig] {
		if !slices.Contains(current, old) {
			targetMissing.DeleteLabelValues(typeConfig, old)
		}
	}
	if len(current) == 0 {
		delete(presenceSeries.clusters, typeConfig)
		return
	}
	presenceSeries.clusters[typeConfig] = current
}

// forgetPresence drops every series of a deleted type.
func forgetPresence(typeConfig string) { publishPresence(typeConfig, nil) }
