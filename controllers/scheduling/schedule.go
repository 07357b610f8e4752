package scheduling

import (
	"maps"
	"time"

	schedulingv1alpha1 "github.com/kubefed-io/kubefed/api/scheduling/v1alpha1"
	"github.com/kubefed-io/kubefed/pkg/planner"
)

// member is a candidate cluster as scheduling sees it.
type member struct {
	name  string
	ready bool
	// notReadySince is when the cluster was first seen not ready; zero
	// while it is ready.
	notReadySince time.Time
	// failedOver is the RSP status's record that the cluster's replicas
	// were planned elsewhere.
	failedOver bool
	// capacity caps what a ready cluster is trusted to run; nil when
	// nothing limits it.
	capacity *int64
}

// decision is the outcome of scheduling one workload.
type decision struct {
	// replicas has an entry for every cluster that can take replicas:
	// the ready ones and those within the failover toleration.
	replicas map[string]int64
	// failedOver are the clusters whose replicas are planned elsewhere.
	failedOver map[string]bool
	// unplaced replicas fit in no cluster, its estimated capacity aside.
	unplaced int64
	// waiting are the replicas each cluster is given beyond its estimated
	// capacity, as KubeFed's overflow: they fit nowhere else, and wait
	// there as pending pods (which a member's cluster autoscaler acts on)
	// rather than not be asked for at all.
	waiting map[string]int64
	// recheckAt is when the next not ready cluster's toleration ends;
	// zero when none is pending.
	recheckAt time.Time
}

// mode maps the RSP's switches to a planner mode.
func mode(spec *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec) planner.Mode {
	switch {
	case spec.AvoidDisruption:
		return planner.AvoidDisruption
	case spec.Rebalance:
		return planner.Rebalance
	default:
		return planner.KeepExisting
	}
}

// preferences converts the RSP's cluster map.
func preferences(spec *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec) map[string]planner.Preference {
	prefs := make(map[string]planner.Preference, len(spec.Clusters))
	for name, p := range spec.Clusters {
		prefs[name] = planner.Preference{MinReplicas: p.MinReplicas, MaxReplicas: p.MaxReplicas, Weight: p.Weight}
	}
	return prefs
}

// decide plans the replicas of one workload over its candidate members.
//
// A ready member takes replicas within its capacity; one that returns
// after a failover is restored: what its override still holds counts as
// running there, and the replicas others took over meanwhile are the first
// to go. A member not ready for less than toleration keeps what it has but
// gets no more, since it may well be running them; after that, or while the
// status records it as failed over, it gets none, and its override is left
// alone so that it keeps its replicas if it comes back (see scheduleOf). current is the
// object's /spec/replicas overrides, nil when it has none.
func decide(spec *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec, key string, members []member, current map[string]int64, now time.Time, toleration time.Duration) decision {
	in := planner.Input{
		Key:           key,
		TotalReplicas: spec.TotalReplicas,
		Preferences:   preferences(spec),
		Capacity:      map[string]int64{},
		Current:       current,
		Mode:          mode(spec),
	}
	d := decision{failedOver: map[string]bool{}}
	for _, m := range members {
		switch {
		case m.ready:
			in.Clusters = append(in.Clusters, m.name)
			if m.capacity != nil {
				in.Capacity[m.name] = *m.capacity
			}
			if m.failedOver {
				if in.Restored == nil {
					in.Restored = map[string]bool{}
				}
				in.Restored[m.name] = true
			}
		case m.failedOver || !now.Before(m.notReadySince.Add(toleration)):
			d.failedOver[m.name] = true
		default:
			in.Clusters = append(in.Clusters, m.name)
			in.Capacity[m.name] = current[m.name]
			if end := m.notReadySince.Add(toleration); d.recheckAt.IsZero() || end.Before(d.recheckAt) {
				d.recheckAt = end
			}
		}
	}
	res := planner.Plan(in)
	d.replicas = res.Replicas
	d.unplaced = res.Unplaced
	d.overflow(in, members)
	return d
}

// overflow gives the replicas that fit in no cluster back to the clusters
// whose estimated capacity kept them out, each up to what it would get
// without that estimate, in name order, while any are left: KubeFed's
// overflow, which it trimmed this way too (but for rebalance, where it
// placed more replicas than asked).
func (d *decision) overflow(in planner.Input, members []member) {
	if d.unplaced == 0 {
		return
	}
	var limited []string
	uncapped := in
	uncapped.Capacity = maps.Clone(in.Capacity)
	for _, m := range members {
		if m.ready && m.capacity != nil {
			limited = append(limited, m.name)
			delete(uncapped.Capacity, m.name)
		}
	}
	if len(limited) == 0 {
		return
	}
	want := planner.Plan(uncapped).Replicas
	for _, name := range limited {
		extra := min(want[name]-d.replicas[name], d.unplaced)
		if extra <= 0 {
			continue
		}
		if d.waiting == nil {
			d.waiting = map[string]int64{}
		}
		d.waiting[name] = extra
		d.replicas[name] += extra
		d.unplaced -= extra
		if d.unplaced == 0 {
			return
		}
	}
}

// capacityHold is a capacity estimate the scheduler keeps using for a while
// after the unschedulable pods that caused it are gone: they go because the
// cluster was given fewer replicas, not because it could run more.
type capacityHold struct {
	limit int64
	until time.Time
}

// capacityInput is what one ready cluster's capacity estimate depends on.
type capacityInput struct {
	// current is the replicas the cluster was asked to run.
	current int64
	// unschedulableSince lists since when each of the workload's pods
	// there has been unschedulable.
	unschedulableSince []time.Time
	// changedAt is when the replicas asked of the cluster last changed.
	changedAt time.Time
	hold      *capacityHold
}

// estimateCapacity returns the cluster's capacity hold, nil when nothing
// limits it, and when to look again (zero for never).
//
// Pods unschedulable for longer than threshold reduce the capacity to the
// replicas asked of the cluster minus those pods, as in KubeFed. They only
// count once the replicas asked have not changed for threshold either: until
// the member has caught up with a change, its pending pods may be ones a
// scale-down is about to remove, and counting them would shrink the
// capacity twice. A new estimate is held for holdFor, never above an older
// one still held.
func estimateCapacity(in capacityInput, now time.Time, threshold, holdFor time.Duration) (*capacityHold, time.Time) {
	hold := in.hold
	if hold != nil && !now.Before(hold.until) {
		hold = nil
	}
	var recheck time.Time
	later := func(t time.Time) {
		if recheck.IsZero() || t.Before(recheck) {
			recheck = t
		}
	}
	cutoff := now.Add(-threshold)
	var unschedulable int64
	for _, since := range in.unschedulableSince {
		if since.After(cutoff) {
			later(since.Add(threshold))
		} else {
			unschedulable++
		}
	}
	if settled := in.changedAt.Add(threshold); unschedulable > 0 && now.Before(settled) {
		later(settled)
		unschedulable = 0
	}
	if unschedulable > 0 {
		limit := max(in.current-unschedulable, 0)
		if hold != nil {
			limit = min(limit, hold.limit)
		}
		hold = &capacityHold{limit: limit, until: now.Add(holdFor)}
	}
	if hold != nil {
		later(hold.until)
	}
	return hold, recheck
}
