package sync

import (
	"cmp"
	"encoding/json"
	"maps"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/overrides"
)

// planAction is what a member must do with its copy of a federated object.
type planAction int

const (
	// actionSync creates or updates the copy.
	actionSync planAction = iota
	// actionRemove deletes or unlabels the copy of an object no longer
	// placed on the member.
	actionRemove
	// actionDelete deletes or unlabels the copy of an object being deleted.
	actionDelete
	// actionRelease unlabels the copy of an object that no longer exists.
	actionRelease
)

// clusterPlan is what one member must do for one federated object. The
// object's reconcile makes it; the member's dispatcher carries it out, as
// often as the member's copy changes, without the object being reconciled
// again. A plan is immutable once published but for its rendering and the
// fingerprint of the copy last checked, which only the dispatcher worker
// holding the plan's item touches: a work queue never hands one item to
// two workers at once.
type clusterPlan struct {
	action planAction
	// identity tells an equal plan made by a later reconcile, which then
	// keeps this one, its rendering and its result.
	identity string
	ops      []overrides.Operation
	// namespace and name locate the copy of a release plan.
	namespace, name string
	// created is when the plan was made: a status write waits a little for
	// the plan's first outcome, not for ever.
	created time.Time

	rendered  bool
	desired   map[string]any
	hash      string
	renderErr *outcome
	// checked is the fingerprint of the copy last found to be what the
	// plan asks for: a copy with the same fingerprint needs no rendering.
	checked string
	// seed is the equal plan the member had before a spell not Ready
	// replaced it (clusterEntry.parked): the first check takes its checked
	// fingerprint, so that a member back from the spell, its copies as
	// they were, costs no rendering of them. The dispatcher worker holding
	// the item reads it, as the one that last ran the seed did.
	seed *clusterPlan
}

// takeSeed adopts the fingerprint of the plan p replaces after a spell not
// Ready, if p has none of its own. Only the dispatcher worker holding the
// plan's item calls it.
func (p *clusterPlan) takeSeed() {
	if p.seed == nil {
		return
	}
	if p.checked == "" {
		p.checked = p.seed.checked
	}
	p.seed = nil
}

// planIdentity is what a plan depends on: the action, and the federated
// object's UID, generation and the annotations that steer removal.
func planIdentity(action planAction, fed *unstructured.Unstructured) string {
	if fed == nil {
		return strconv.Itoa(int(action))
	}
	a := fed.GetAnnotations()
	b, _ := json.Marshal([]any{action, fed.GetUID(), fed.GetGeneration(),
		a[corev1beta1.OrphanManagedResourcesAnnotation], a[corev1beta1.DeleteOptionAnnotation]})
	return string(b)
}

// clusterEntry is one member's part of a federated object's state: a plan
// the member's dispatcher carries out, or an outcome known without asking
// the member (not ready, not joined, bad overrides for it).
type clusterEntry struct {
	plan *clusterPlan
	// result is the latest outcome; with a plan it belongs to resultOf,
	// which may be an earlier plan than the current one.
	result   *outcome
	resultOf *clusterPlan
	// parked, on an entry that says ClusterNotReady, is the plan the
	// member had before: back to Ready with the same plan, the member's
	// new plan starts from what it knew of the copy.
	parked *clusterPlan
}

// current reports whether the entry's result is the outcome of its plan.
func (c *clusterEntry) current() bool {
	return c.result != nil && (c.plan == nil || c.resultOf == c.plan)
}

// objectState is what the engine knows of one federated object between
// its reconciles: the plan or outcome of every member involved.
type objectState struct {
	// gone: the object no longer exists (release plans only).
	gone       bool
	uid        types.UID
	generation int64
	deleting   bool
	// reason and message: the object cannot be placed at all.
	reason, message string
	clusters        map[string]*clusterEntry
	// leftBehind are not-ready members a deletion gave up waiting for.
	leftBehind []string
	// held, on a replica serving a share of the members, are the joined
	// members it served when the state was planned: the status entries it
	// speaks for. Nil speaks for every member.
	held map[string]bool
	// standIn are the Pull-mode members, not ready when the state was
	// planned, whose ClusterNotReady entries the control plane writes: an
	// agent that is gone cannot say so itself.
	standIn map[string]bool
}

// covers reports whether the state speaks for a joined member.
func (st *objectState) covers(cluster string) bool {
	return st.held == nil || st.held[cluster]
}

// setState replaces a federated object's state with next, keeping the plan
// (and so its rendering and result) of every member whose plan did not
// change. It returns the members whose plan must be carried out: new
// plans, and plans without an outcome yet.
func (w *typeWorker) setState(key string, next *objectState) []string {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	old := w.states[key]
	var dispatch []string
	for name, e := range next.clusters {
		var prev *clusterEntry
		if old != nil {
			prev = old.clusters[name]
		}
		if e.plan == nil {
			if prev != nil && e.result != nil && e.result.status == typesv1beta1.ClusterNotReady {
				e.parked = cmp.Or(prev.plan, prev.parked)
			}
			continue
		}
		if prev != nil && prev.plan == nil && prev.parked != nil && prev.parked.identity == e.plan.identity &&
			e.plan.action == actionSync {
			e.plan.seed = prev.parked
		}
		if prev != nil && prev.plan != nil && prev.plan.identity == e.plan.identity {
			e.plan, e.result, e.resultOf = prev.plan, prev.result, prev.resultOf
			if e.current() {
				continue
			}
		} else if prev != nil {
			// The previous outcome stays visible until the new plan's.
			e.result, e.resultOf = prev.result, prev.resultOf
		}
		dispatch = append(dispatch, name)
	}
	w.states[key] = next
	return dispatch
}

// hasState reports whether a federated object was planned.
func (w *typeWorker) hasState(key string) bool {
	w.stateMu.RLock()
	defer w.stateMu.RUnlock()
	return w.states[key] != nil
}

// dropState forgets a federated object's state.
func (w *typeWorker) dropState(key string) {
	w.stateMu.Lock()
	delete(w.states, key)
	w.stateMu.Unlock()
}

// planFor returns the plan a member must carry out for a federated object,
// or nil when it has none.
func (w *typeWorker) planFor(key, cluster string) *clusterPlan {
	p, _ := w.planAndHold(key, cluster)
	return p
}

// planAndHold is planFor and, when the plan's latest outcome waits for the
// member to report on the copy (outcome.unobserved), when that wait
// started (see outcome.heldSince); zero otherwise.
func (w *typeWorker) planAndHold(key, cluster string) (*clusterPlan, time.Time) {
	w.stateMu.RLock()
	defer w.stateMu.RUnlock()
	if st := w.states[key]; st != nil {
		if e := st.clusters[cluster]; e != nil {
			if e.current() && e.result.unobserved {
				return e.plan, e.result.heldSince(e.plan)
			}
			return e.plan, time.Time{}
		}
	}
	return nil, time.Time{}
}

// resultChange says how a recorded outcome differs from the previous one.
type resultChange int

const (
	resultSame resultChange = iota
	// resultRemoteOnly: only the collected remote status or the counts
	// changed.
	resultRemoteOnly
	resultChanged
)

// recordResult stores a member's outcome of plan and says how it changed
// the object's state; an outcome of a plan already replaced is dropped.
func (w *typeWorker) recordResult(key, cluster string, plan *clusterPlan, o outcome) resultChange {
	w.stateMu.Lock()
	defer w.stateMu.Unlock()
	st := w.states[key]
	if st == nil {
		return resultSame
	}
	e := st.clusters[cluster]
	if e == nil || e.plan != plan {
		return resultSame
	}
	prev, wasCurrent := e.result, e.current()
	if wasCurrent && prev != nil && o.heldFrom.IsZero() {
		// A later look at the copy the member answered for: its hold
		// still runs from the answer.
		o.heldFrom = prev.heldFrom
	}
	e.result, e.resultOf = &o, plan
	switch {
	case !wasCurrent || prev == nil:
		return resultChanged
	case prev.status != o.status || prev.message != o.message || prev.listed != o.listed || prev.pending != o.pending ||
		prev.unobserved != o.unobserved:
		return resultChanged
	case !sameJSON(prev.remote, o.remote) || !maps.Equal(prev.counts, o.counts):
		return resultRemoteOnly
	}
	return resultSame
}

// statusHold is how long a status write waits for members that have not
// answered a new plan yet. Members that answer within it are reported in
// one write; one that is slow or hung is reported as still propagating
// rather than holding back the status of the others.
const statusHold = 2 * time.Second

// reportHold is how long a status write waits, from a member's answer to
// the write of its copy, for the member to report on that copy
// (outcome.unobserved): its controllers' first pass over a new copy,
// which a busy member takes seconds over. With a hold of statusHold from
// the plan, a third of a full-speed wave's new Deployments were written
// twice, their members' second report coming after the write.
const reportHold = 2 * statusHold

// Propagating is the status of a member whose write is still under way
// past statusHold: slow or hung, and not yet timed out or found NotReady.
// It is ours, not KubeFed's, which waited for every member in one reconcile.
const Propagating typesv1beta1.PropagationStatusValue = "Propagating"

// statusView is what a federated object's state adds up to for its status.
type statusView struct {
	outcomes []outcome
	// pending: a member's cache is still syncing; nothing is written yet.
	pending bool
	// wait: how long until members still under way are reported.
	wait time.Duration
}

// holds reports whether a hold of length hold that started at start is
// still on at now, and if so keeps the soonest end of a hold in v.wait.
func (v *statusView) holds(start time.Time, hold time.Duration, now time.Time) bool {
	left := hold - now.Sub(start)
	if left <= 0 {
		return false
	}
	if v.wait == 0 || left < v.wait {
		v.wait = left
	}
	return true
}

// laterOf is the later of two times.
func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// view collects the outcomes of the members of st as of now: all of them,
// or those keep accepts when it is set.
func (st *objectState) view(now time.Time, keep func(string) bool) statusView {
	var v statusView
	for name, e := range st.clusters {
		if keep != nil && !keep(name) {
			continue
		}
		if e.current() {
			if e.result.pending {
				v.pending = true
				continue
			}
			// A copy written a moment ago: the member's controllers are
			// about to report on it.
			if e.result.unobserved && e.plan != nil && v.holds(e.result.heldSince(e.plan), reportHold, now) {
				continue
			}
			v.outcomes = append(v.outcomes, *e.result)
			continue
		}
		if v.holds(e.plan.created, statusHold, now) {
			continue
		}
		o := outcome{cluster: name, listed: true, status: Propagating,
			message: "the cluster has not answered yet"}
		if e.plan.action != actionSync {
			o.status, o.message = typesv1beta1.WaitingForRemoval, "the cluster has not answered the removal yet"
		}
		if e.plan.action == actionRelease {
			o.listed = false
		}
		v.outcomes = append(v.outcomes, o)
	}
	return v
}

// released reports whether every member answered its plan and none still
// holds a managed copy.
func (st *objectState) released() bool {
	for _, e := range st.clusters {
		if !e.current() || e.result.listed || e.result.pending {
			return false
		}
	}
	return true
}
