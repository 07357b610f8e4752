package cluster

import (
	"errors"
	"time"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// Defaults of Options; the first four are KubeFedConfig's clusterHealthCheck
// defaults.
const (
	DefaultPeriod           = 10 * time.Second
	DefaultTimeout          = 3 * time.Second
	DefaultFailureThreshold = 3
	DefaultSuccessThreshold = 1
	// DefaultSummaryPeriod refreshes the node, pod and discovery based
	// status fields once a minute: they change slowly and cost a list of
	// every pod in the member.
	DefaultSummaryPeriod = time.Minute
	// DefaultSummaryTimeout allows the pod list of a large member.
	DefaultSummaryTimeout = 30 * time.Second
	// DefaultProbeTimeWriteInterval writes a status whose only change is
	// lastProbeTime once a minute instead of every period.
	DefaultProbeTimeWriteInterval = time.Minute
)

// Options configure the KubeFedCluster controller. Zero fields but
// Namespace take the defaults.
type Options struct {
	// Namespace is the KubeFed namespace; KubeFedClusters and Secrets
	// elsewhere are ignored.
	Namespace string
	// Period is the interval between two health probes of a member.
	Period time.Duration
	// Timeout bounds one health probe.
	Timeout time.Duration
	// FailureThreshold is the number of consecutive failed probes that
	// turn a Ready member not ready.
	FailureThreshold int
	// SuccessThreshold is the number of consecutive successful probes
	// that turn a not ready member Ready.
	SuccessThreshold int
	// SummaryPeriod is how often zones, region, kubernetesVersion,
	// nodeSummary, resourceSummary and apiEnablements are refreshed while
	// a member is healthy; they are also refreshed when it becomes ready.
	SummaryPeriod time.Duration
	// SummaryTimeout bounds the collection of those fields.
	SummaryTimeout time.Duration
	// ProbeTimeWriteInterval is the least time between two status writes
	// that would only move lastProbeTime; it never writes more often than
	// Period. Any other change is written at once.
	ProbeTimeWriteInterval time.Duration
}

// OptionsFromConfig returns the Options for namespace with the health check
// settings of a KubeFedConfig; unset settings keep the defaults.
func OptionsFromConfig(namespace string, hc *fedv1b1.ClusterHealthCheckConfig) Options {
	o := Options{Namespace: namespace}
	if hc == nil {
		return o
	}
	if hc.Period != nil {
		o.Period = hc.Period.Duration
	}
	if hc.Timeout != nil {
		o.Timeout = hc.Timeout.Duration
	}
	if hc.FailureThreshold != nil {
		o.FailureThreshold = int(*hc.FailureThreshold)
	}
	if hc.SuccessThreshold != nil {
		o.SuccessThreshold = int(*hc.SuccessThreshold)
	}
	return o
}

func (o Options) withDefaults() (Options, error) {
	if o.Namespace == "" {
		return o, errors.New("kubefedcluster controller: Options.Namespace is required")
	}
	if o.Period <= 0 {
		o.Period = DefaultPeriod
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.FailureThreshold <= 0 {
		o.FailureThreshold = DefaultFailureThreshold
	}
	if o.SuccessThreshold <= 0 {
		o.SuccessThreshold = DefaultSuccessThreshold
	}
	if o.SummaryPeriod <= 0 {
		o.SummaryPeriod = DefaultSummaryPeriod
	}
	if o.SummaryTimeout <= 0 {
		o.SummaryTimeout = DefaultSummaryTimeout
	}
	if o.ProbeTimeWriteInterval <= 0 {
		o.ProbeTimeWriteInterval = DefaultProbeTimeWriteInterval
	}
	o.ProbeTimeWriteInterval = max(o.ProbeTimeWriteInterval, o.Period)
	return o, nil
}

func (o Options) thresholds() thresholds {
	return thresholds{failure: o.FailureThreshold, success: o.SuccessThreshold}
}
