package scheduling

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/kubefed-io/kubefed/api/scheduling/v1alpha1"
	"github.com/kubefed-io/kubefed/pkg/planner"
)

// ConditionScheduled says whether the preference's replicas are placed.
const ConditionScheduled = "Scheduled"

// Reasons of the Scheduled condition.
const (
	// ReasonScheduled: every replica is placed.
	ReasonScheduled = "Scheduled"
	// ReasonFederatedTypeConfigNotFound: no FederatedTypeConfig federates
	// spec.targetKind.
	ReasonFederatedTypeConfigNotFound = "FederatedTypeConfigNotFound"
	// ReasonAmbiguousTargetKind: several FederatedTypeConfigs federate
	// spec.targetKind.
	ReasonAmbiguousTargetKind = "AmbiguousTargetKind"
	// ReasonFederatedTypeNotFound: the host does not serve the federated type.
	ReasonFederatedTypeNotFound = "FederatedTypeNotFound"
	// ReasonTargetTypeWithoutReplicas: the federated type's target has no
	// integer spec.replicas.
	ReasonTargetTypeWithoutReplicas = "TargetTypeWithoutReplicas"
	// ReasonFederatedObjectNotFound: no federated object has the
	// preference's namespace and name.
	ReasonFederatedObjectNotFound = "FederatedObjectNotFound"
	// ReasonInvalidFederatedObject: the federated object's placement or
	// overrides cannot be read.
	ReasonInvalidFederatedObject = "InvalidFederatedObject"
	// ReasonNoClusterSelector: the preference intersects with the
	// federated object's clusterSelector, which is not set and so selects
	// no cluster, as in KubeFed; the object is left as it is.
	ReasonNoClusterSelector = "NoClusterSelector"
	// ReasonNamespaceNotFederated: the preference intersects with the
	// placement of the workload's namespace, which has no
	// FederatedNamespace, so the workload is placed nowhere.
	ReasonNamespaceNotFederated = "NamespaceNotFederated"
	// ReasonNoClusters: no candidate cluster can take replicas; with no
	// candidate at all, the object is left as it is, as in KubeFed.
	ReasonNoClusters = "NoClusters"
	// ReasonTypeNotPropagated: the FederatedTypeConfig of spec.targetKind
	// has its propagation Disabled or is being deleted; the object is
	// left as it is, as KubeFed stopped scheduling the kind then.
	ReasonTypeNotPropagated = "PropagationDisabled"
	// ReasonInsufficientCapacity: some replicas fit in no cluster, as
	// maximums, weights and estimated capacity allow; those that only
	// estimated capacity keeps out are placed, and wait, where they were
	// planned.
	ReasonInsufficientCapacity = "InsufficientCapacity"
)

// Event reasons recorded on a ReplicaSchedulingPreference.
const (
	// EventFailedOver: a cluster was not ready for longer than the
	// toleration and its replicas were planned on other clusters.
	EventFailedOver = "FailedOver"
	// EventRestored: a failed-over cluster is ready again.
	EventRestored = "Restored"
	// EventCapacityLimited: unschedulable pods limit a cluster's replicas.
	EventCapacityLimited = "CapacityLimited"
)

// outcome is what one reconcile decided, for the status.
type outcome struct {
	reason  string
	message string
	// clusters is nil unless the federated object was scheduled.
	clusters []schedulingv1alpha1.ClusterReplicas
	// stopped says nothing was scheduled: the status keeps the clusters
	// it records as failed over, and no other.
	stopped bool
}

// restoredClusters names the clusters before records as failed over that
// o no longer does.
func restoredClusters(before []schedulingv1alpha1.ClusterReplicas, o outcome) map[string]bool {
	if o.stopped {
		return nil
	}
	now := map[string]bool{}
	for _, c := range o.clusters {
		now[c.Name] = c.FailedOver
	}
	var restored map[string]bool
	for _, c := range before {
		if failed, ok := now[c.Name]; c.FailedOver && ok && !failed {
			if restored == nil {
				restored = map[string]bool{}
			}
			restored[c.Name] = true
		}
	}
	return restored
}

// failedOverStill is o with the clusters of names still failed over.
func (o outcome) failedOverStill(names map[string]bool) outcome {
	o.clusters = slices.Clone(o.clusters)
	for i := range o.clusters {
		if names[o.clusters[i].Name] {
			o.clusters[i].FailedOver = true
		}
	}
	return o
}

func (o outcome) condition(generation int64) metav1.Condition {
	status := metav1.ConditionFalse
	if o.reason == ReasonScheduled {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{
		Type: ConditionScheduled, Status: status, Reason: o.reason, Message: o.message, ObservedGeneration: generation,
	}
}

// scheduledMessage summarizes a decision for humans.
func scheduledMessage(spec *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec, d decision) (reason, message string) {
	var b strings.Builder
	total := spec.TotalReplicas
	reason = ReasonScheduled
	switch {
	case d.unplaced > 0 && len(d.replicas) == 0:
		reason = ReasonNoClusters
		fmt.Fprintf(&b, "no ready candidate cluster for %d replicas", total)
	case d.unplaced > 0:
		reason = ReasonInsufficientCapacity
		fmt.Fprintf(&b, "%d of %d replicas fit in no cluster", d.unplaced, total)
		b.WriteString(preferenceHints(spec, d))
	default:
		fmt.Fprintf(&b, "%d replicas over %d clusters", total, len(d.replicas))
	}
	if len(d.waiting) > 0 {
		reason = ReasonInsufficientCapacity
		var waiting int64
		names := make([]string, 0, len(d.waiting))
		for name, n := range d.waiting {
			waiting += n
			names = append(names, fmt.Sprintf("%s %d", name, n))
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "; %d of them fit in no cluster's estimated capacity and wait where they were planned: %s", waiting, strings.Join(names, ", "))
	}
	if len(d.failedOver) > 0 {
		names := make([]string, 0, len(d.failedOver))
		for name := range d.failedOver {
			names = append(names, name)
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "; failed over: %s", strings.Join(names, ", "))
	}
	return reason, b.String()
}

// preferenceHints names what in spec.clusters may be why replicas fit
// nowhere, beside maximums and capacity: entries that name no candidate
// (a typo, or a cluster not ready past its toleration), and candidates
// that all have weight 0 or no entry at all, so that they get their
// minimums only.
func preferenceHints(spec *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec, d decision) string {
	var unknown []string
	for name := range spec.Clusters {
		if _, candidate := d.replicas[name]; name != planner.Wildcard && !candidate {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	var b strings.Builder
	if len(unknown) > 0 {
		fmt.Fprintf(&b, "; spec.clusters names %s, which is no candidate cluster", strings.Join(unknown, ", "))
	}
	weighted := len(spec.Clusters) == 0
	for name := range d.replicas {
		p, ok := spec.Clusters[name]
		if !ok {
			p, ok = spec.Clusters[planner.Wildcard]
		}
		weighted = weighted || (ok && p.Weight > 0)
	}
	if !weighted {
		b.WriteString("; no candidate cluster has a weight above 0 in spec.clusters, so each gets its minReplicas only")
	}
	return b.String()
}
