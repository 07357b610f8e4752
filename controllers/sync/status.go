package sync

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
	"github.com/kubefed-io/kubefed/pkg/fedstatus"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
	"github.com/kubefed-io/kubefed/pkg/placement"
)

// buildStatus is the status a federated object's outcomes add up to. A
// reason means the object could not be placed at all; outcomes are then
// ignored. Condition times are taken from old when the condition did not
// change, so an unchanged status is equal to old and is not written.
//
// With an aggregation, each cluster entry holds its copy's counts and
// READY, and the status their sums.
func buildStatus(old map[string]any, generation int64, outcomes []outcome, reason, message string, now time.Time, agg *federatedtype.Aggregation) map[string]any {
	clusters := []any{}
	var total map[string]int64
	var lastCounts map[string]map[string]int64
	if agg != nil {
		lastCounts = countsByCluster(old)
	}
	// With a reason, the object is placed nowhere new: outcomes are only
	// the entries of others that stand as they are (a Pull-mode member's
	// agent's), and the reason is the condition's, whatever they say.
	sortOutcomes(outcomes)
	var problems []string
	for _, o := range outcomes {
		if !o.listed {
			continue
		}
		c := map[string]any{"name": o.cluster}
		if o.status != "" {
			c["status"] = string(o.status)
			p := o.cluster + ": " + string(o.status)
			if o.message != "" {
				p += ": " + o.message
			}
			problems = append(problems, p)
		}
		if o.remote != nil {
			c["remoteStatus"] = jsonvalue.Copy(o.remote)
		} else if o.remoteDigest != "" {
			c[remoteDigestKey] = o.remoteDigest
		}
		if agg != nil && o.counts == nil {
			// Not read this time (not ready, still propagating, a
			// failed write): the copy's last counts stand, or READY
			// would look better the fewer members answer.
			o.counts = lastCounts[o.cluster]
		}
		if agg != nil && o.counts != nil {
			if total == nil {
				total = map[string]int64{}
			}
			for name, n := range o.counts {
				total[name] += n
			}
			c["counts"] = countsValue(o.counts)
			if r := agg.Ready(o.counts); r != "" {
				c["ready"] = r
			}
		}
		clusters = append(clusters, c)
	}
	if len(problems) > 0 && reason == "" {
		reason = typesv1beta1.ReasonCheckClusters
		message = strings.Join(problems, "; ")
	}
	if len(message) > fedstatus.MaxConditionMessage {
		message = message[:fedstatus.MaxConditionMessage] + "…"
	}
	cond := map[string]any{
		"type":   typesv1beta1.ConditionPropagation,
		"status": string(metav1.ConditionTrue),
	}
	if reason != "" {
		cond["status"] = string(metav1.ConditionFalse)
		cond["reason"] = reason
		cond["message"] = message
	}
	stamp := now.UTC().Format(time.RFC3339)
	cond["lastUpdateTime"] = stamp
	cond["lastTransitionTime"] = stamp
	if prev := fedstatus.PropagationCondition(old); prev != nil {
		if prev["status"] == cond["status"] {
			if t, ok := prev["lastTransitionTime"]; ok {
				cond["lastTransitionTime"] = t
			}
			if prev["reason"] == cond["reason"] && prev["message"] == cond["message"] {
				if t, ok := prev["lastUpdateTime"]; ok {
					cond["lastUpdateTime"] = t
				}
			}
		}
	}
	status := map[string]any{
		"observedGeneration": generation,
		"conditions":         []any{cond},
	}
	if len(clusters) > 0 {
		status["clusters"] = clusters
	}
	if total != nil {
		status["counts"] = countsValue(total)
		if r := agg.Ready(total); r != "" {
			status["ready"] = r
		}
	}
	return status
}

// mergePatch is the JSON merge patch (RFC 7386) that turns old into new: new
// whole, with null for every key, at any depth of nested objects, that old
// has and new has not (a count no longer summed, say), which a merge patch
// would otherwise keep.
func mergePatch(old, new map[string]any) map[string]any {
	patch := make(map[string]any, len(new))
	for k, v := range new {
		nv, newIsObject := v.(map[string]any)
		ov, oldIsObject := old[k].(map[string]any)
		if newIsObject && oldIsObject {
			patch[k] = mergePatch(ov, nv)
			continue
		}
		patch[k] = v
	}
	for k := range old {
		if _, ok := new[k]; !ok {
			patch[k] = nil
		}
	}
	return patch
}

// countsValue is counts as a JSON object.
func countsValue(counts map[string]int64) map[string]any {
	out := make(map[string]any, len(counts))
	for name, n := range counts {
		out[name] = n
	}
	return out
}

// countsByCluster are the counts of every entry of a status.clusters.
func countsByCluster(status map[string]any) map[string]map[string]int64 {
	entries, _ := status["clusters"].([]any)
	out := map[string]map[string]int64{}
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if name, _ := m["name"].(string); name != "" {
			if c := countsOfEntry(m); c != nil {
				out[name] = c
			}
		}
	}
	return out
}

// countsOfEntry reads the counts of a status.clusters entry; nil when it
// has none.
func countsOfEntry(m map[string]any) map[string]int64 {
	raw, ok := m["counts"].(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]int64, len(raw))
	for name, v := range raw {
		if n, ok := jsonvalue.Int64(v); ok {
			out[name] = n
		}
	}
	return out
}

// sameJSON compares two JSON values as their encodings, which is blind to
// the int64/float64 difference of decoded numbers.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// statusRecord is the status this engine last wrote to an object: the
// host cache may not show it yet, and comparing with the cache alone would
// write it again.
//
// A record with refused set is instead a write a replica serving a share of
// the members lost to another writer (a 409): the object had changed since
// the version in before, which the cache still shows. Until the cache moves
// past it, writing again would only be refused again.
type statusRecord struct {
	status map[string]any
	// before and after are the object's resourceVersions around the write.
	before, after string
	refused       bool
}

// syncStatus writes the status a federated object's members add up to,
// once the members of its latest plans answered (or statusHold passed),
// and releases an object being deleted once no member holds a copy. A
// bulk status write waits for its turn (bulkGate).
func (w *typeWorker) syncStatus(ctx context.Context, key string, bulk bool) (time.Duration, error) {
	w.stateMu.Lock()
	st := w.states[key]
	var v statusView
	released := false
	var keep func(string) bool
	if st != nil {
		keep = w.speaksFor(st)
		v = st.view(time.Now(), keep)
		released = st.released()
	}
	w.stateMu.Unlock()
	if st == nil {
		return 0, nil
	}
	obj, exists, err := w.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return 0, err
	}
	if st.gone {
		// Copies of an object that is gone: forget them once released.
		if !exists && released {
			w.dropStateIf(key, st)
		}
		return v.wait, nil
	}
	fed, ok := decoded(obj)
	if !exists || !ok || fed.GetUID() != st.uid || fed.GetGeneration() != st.generation {
		// The object changed or went away; its reconcile plans again.
		return 0, nil
	}
	if st.reason != "" {
		if w.e.opts.Agent {
			// Why the object is placed nowhere is the control plane's to
			// say; an agent's write would drop the other members' entries.
			return 0, nil
		}
		// The entries of Pull-mode members stay: their agents' copies stay
		// too (nothing is placed or removed while the placement cannot be
		// told), and a deletion reads the entries to wait for them.
		var notPulled func(string) bool
		if w.e.anyPulled() {
			notPulled = func(c string) bool { return !w.e.pulled(c) }
		}
		return w.writeStatus(ctx, key, fed, nil, st.reason, st.message, notPulled, bulk)
	}
	if v.pending {
		return 0, nil
	}
	if v.wait > 0 {
		return v.wait, nil
	}
	if st.deleting {
		// One replica, by hashing, releases the object, as one adds the
		// finalizer: the others would each send an update that conflicts
		// with its or finds the object gone.
		releaser := w.hashedHere(key)
		if anyListed(v.outcomes) || keep != nil && (!releaser || w.e.opts.Agent) {
			// A replica serving a share of the members (or an agent) drops
			// its entries once its copies are gone, which tells the
			// releaser; the releaser's own entries go with the object.
			if requeue, err := w.writeStatus(ctx, key, fed, v.outcomes, "", "", keep, bulk); err != nil || requeue > 0 || anyListed(v.outcomes) {
				return requeue, err
			}
			if w.e.opts.Agent {
				// Our copy is gone and our entry dropped: the control
				// plane releases the object.
				return 0, nil
			}
		}
		if !releaser {
			// The others look again in a moment, should the releaser be
			// going away.
			return finalizerWait, nil
		}
		if keep != nil && w.othersHold(ctx, fed, keep) {
			if time.Since(fed.GetDeletionTimestamp().Time) > othersSlow {
				// The others take a while: our entries say meanwhile
				// that our copies are gone.
				if requeue, err := w.writeStatus(ctx, key, fed, v.outcomes, "", "", keep, bulk); err != nil || requeue > 0 {
					return requeue, err
				}
			}
			return othersHoldRequeue, nil
		}
		w.forgetPullEntries(key)
		return 0, w.releaseFinalizer(ctx, key, fed, st.leftBehind)
	}
	if wait := w.gatherPeers(key, fed, keep); wait > 0 {
		return wait, nil
	}
	failed := false
	for _, o := range v.outcomes {
		failed = failed || o.status != ""
	}
	if !failed {
		w.settled(fed)
	}
	return w.writeStatus(ctx, key, fed, v.outcomes, "", "", keep, bulk)
}

// othersSlow is how long the replica releasing a deleted object leaves
// its own entries as they are while the others remove their copies: they
// go with the object, unless the others take longer.
const othersSlow = 10 * time.Second

// othersHoldRequeue is how often a deletion looks again whether members
// served by other replicas still hold copies.
const othersHoldRequeue = time.Second

// speaksFor is, on a replica serving a share of the members, which status
// entries of st's object it writes: those of the joined members it served
// when st was planned and still serves, and of names not joined that
// hashing gives it. Nil, on a single active replica, is every entry.
func (w *typeWorker) speaksFor(st *objectState) func(string) bool {
	shard := w.e.opts.Shard
	if shard == nil && !w.e.anyPulled() {
		return nil
	}
	set := w.e.clusterSet()
	return func(c string) bool {
		if _, joined := set.Get(c); joined {
			// A stand-in entry only while the member is still not ready:
			// once Ready, its agent writes it again.
			return st.held[c] && w.e.serves(c) || st.standIn[c] && w.e.standsIn(c, set)
		}
		return shard == nil || shard.Assigned(c)
	}
}

// othersHold reports whether members this replica does not serve may still
// hold managed copies of fed, being deleted: their entries are still in its
// status, or a live read finds a copy. The read is of members' copies, never
// a write, so it needs no fence.
func (w *typeWorker) othersHold(ctx context.Context, fed *unstructured.Unstructured, keep func(string) bool) bool {
	set := w.e.clusterSet()
	// A Pull-mode member whose agent is gone cannot drop its entry; after
	// the deletion timeout its copy is left behind, as on any member that
	// is not ready.
	expired := time.Since(fed.GetDeletionTimestamp().Time) > w.e.opts.NotReadyClusterDeletionTimeout
	status, _ := fed.Object["status"].(map[string]any)
	// Entries other replicas sent this one, as their owner, say sooner
	// than the host that their copies are gone.
	status, _ = w.withPeerEntries(objectKey(fed), fed.GetUID(), fed.GetGeneration(), status, keep)
	entries, _ := status["clusters"].([]any)
	listed := map[string]bool{}
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			name, _ := m["name"].(string)
			listed[name] = true
			if keep(name) {
				continue
			}
			if cl, joined := set.Get(name); joined && w.e.pulled(name) {
				w.notePullEntry(objectKey(fed), fed.GetUID(), name)
				if !cl.Ready && expired {
					continue
				}
			}
			// Another replica's member, or a Pull-mode member's agent, is
			// still at work on it.
			return true
		}
	}
	if w.pullMayHold(fed, set, listed) {
		return true
	}
	namespace, name := w.memberName(fed)
	for _, c := range set.Names() {
		// A Pull-mode member's copy is its agent's to report: its entry.
		if cl, _ := set.Get(c); keep(c) || !cl.Ready || w.e.pulled(c) {
			continue
		}
		r, err := w.memberResource(c, namespace)
		if err != nil {
			return true
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		obj, err := r.Get(cctx, name, metav1.GetOptions{})
		cancel()
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil || obj.GetLabels()[corev1beta1.ManagedByKubeFedLabelKey] == corev1beta1.ManagedByKubeFedLabelValue {
			return true
		}
	}
	return false
}

// pullReportGrace is Options.PullReportGrace's default.
const pullReportGrace = 10 * time.Second

// pullMayHold reports whether a Pull-mode member may hold a copy of fed,
// being deleted, without an entry to say so: selected by the object's
// placement, never seen with an entry for this object, and the deletion
// younger than Options.PullReportGrace while the member is Ready (its
// agent may have made a copy a moment ago and not reported it yet, or
// died since, which the health checks tell within the grace) or than
// NotReadyClusterDeletionTimeout while it is not (its agent is gone, and
// may come back to a copy). An entry seen and then gone is the agent
// saying its copy is gone.
func (w *typeWorker) pullMayHold(fed *unstructured.Unstructured, set placement.ClusterSet, listed map[string]bool) bool {
	if !w.e.anyPulled() || w.e.opts.Agent {
		return false
	}
	age := time.Since(fed.GetDeletionTimestamp().Time)
	grace := w.e.opts.PullReportGrace
	if grace <= 0 {
		grace = pullReportGrace
	}
	if age > grace && age > w.e.opts.NotReadyClusterDeletionTimeout {
		return false
	}
	p, err := placement.FromUnstructured(fed.Object)
	if err != nil {
		return false
	}
	for _, c := range set.Select(p).Clusters {
		if !w.e.pulled(c) || listed[c] || w.sawPullEntry(objectKey(fed), fed.GetUID(), c) {
			continue
		}
		if cl, _ := set.Get(c); cl.Ready && age <= grace || !cl.Ready && age <= w.e.opts.NotReadyClusterDeletionTimeout {
			return true
		}
	}
	return false
}

// notePullEntries remembers the Pull-mode members whose entries fed's
// status shows.
func (w *typeWorker) notePullEntries(obj any) {
	fed, ok := objectMeta(obj)
	if !ok {
		return
	}
	var status any
	switch o := obj.(type) {
	case *cachedObject:
		if o.status == nil {
			return
		}
		var err error
		if status, err = o.statusValue(); err != nil {
			return
		}
	case *unstructured.Unstructured:
		status = o.Object["status"]
	}
	st, _ := status.(map[string]any)
	entries, _ := st["clusters"].([]any)
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			if name, _ := m["name"].(string); w.e.pulled(name) {
				w.notePullEntry(objectKey(fed), fed.GetUID(), name)
			}
		}
	}
}

// pullEntriesSeen are the Pull-mode members seen reporting on one object,
// the one with uid (a name deleted and created again is a new object).
type pullEntriesSeen struct {
	uid      types.UID
	clusters map[string]bool
}

// notePullEntry remembers that a Pull-mode member reported on an object.
func (w *typeWorker) notePullEntry(key string, uid types.UID, cluster string) {
	w.pullSeenMu.Lock()
	defer w.pullSeenMu.Unlock()
	if w.pullSeen == nil {
		w.pullSeen = map[string]pullEntriesSeen{}
	}
	seen, ok := w.pullSeen[key]
	if !ok || seen.uid != uid {
		seen = pullEntriesSeen{uid: uid, clusters: map[string]bool{}}
		w.pullSeen[key] = seen
	}
	seen.clusters[cluster] = true
}

func (w *typeWorker) sawPullEntry(key string, uid types.UID, cluster string) bool {
	w.pullSeenMu.Lock()
	defer w.pullSeenMu.Unlock()
	seen, ok := w.pullSeen[key]
	return ok && seen.uid == uid && seen.clusters[cluster]
}

// forgetPullEntries drops what notePullEntry remembered of an object.
func (w *typeWorker) forgetPullEntries(key string) {
	w.pullSeenMu.Lock()
	defer w.pullSeenMu.Unlock()
	delete(w.pullSeen, key)
}

func anyListed(outcomes []outcome) bool {
	for _, o := range outcomes {
		if o.listed {
			return true
		}
	}
	return false
}

// dropStateIf forgets an object's state if it is still st.
func (w *typeWorker) dropStateIf(key string, st *objectState) {
	w.stateMu.Lock()
	if w.states[key] == st {
		delete(w.states, key)
	}
	w.stateMu.Unlock()
}

// cacheBehind reports whether a cached object at resourceVersion rv is older
// than our status write rec. Resource versions of one resource compare as
// integers (apimachinery's resourceversion package); where one does not,
// only the version our write started from counts as behind.
func cacheBehind(rv string, rec statusRecord) bool {
	if c, err := resourceversion.CompareResourceVersion(rv, rec.after); err == nil {
		return c < 0
	}
	return rv == rec.before
}

// statusSeen forgets our last status write of an object once the host
// cache shows it (or something newer).
func (w *typeWorker) statusSeen(fed metav1.Object) {
	key := objectKey(fed)
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	if rec, ok := w.statusWritten[key]; ok && !cacheBehind(fed.GetResourceVersion(), rec) {
		delete(w.statusWritten, key)
	}
}

// writeStatus writes fed's status when it changed. It is a merge patch of
// the status alone, guarded by the object's UID: the status worker is the
// only writer of an object's status at a time and writes all of it, so a
// resourceVersion precondition would only add conflicts with our own
// finalizer and the users' spec writes.
//
// On a replica serving a share of the members (keep set), the entries of
// the others' members are kept as the host cache shows them and the write
// is guarded by the object's resourceVersion, so that concurrent writes of
// two replicas conflict instead of one losing the other's entries; the
// loser tries again once its cache caught up. Where the type's CRD keys
// the entries by name and no member is in Pull mode, a replica applies its
// part server-side instead, which needs no guard (see apply.go).
//
// A bulk write first waits for its turn and slot (bulkGate).
func (w *typeWorker) writeStatus(ctx context.Context, key string, fed *unstructured.Unstructured, outcomes []outcome, reason, message string, keep func(string) bool, bulk bool) (time.Duration, error) {
	old, _ := fed.Object["status"].(map[string]any)
	w.statusMu.Lock()
	rec, ok := w.statusWritten[key]
	w.statusMu.Unlock()
	if ok && cacheBehind(fed.GetResourceVersion(), rec) {
		if keep != nil || rec.refused {
			// The others' entries must come from the object our write made.
			return cacheBehindRequeue, nil
		}
		// The cache does not show our last write yet.
		old = rec.status
	}
	// The status our members' outcomes make of old, whose other entries
	// are kept, or taken from what the other replicas sent when this one
	// writes the object's status for them (used: peerstatus.go).
	var used map[string]uint64
	statusOf := func(old map[string]any) map[string]any {
		all := outcomes
		if keep != nil && reason == "" {
			unreported := w.unreported(key, fed, old, keep)
			old, used = w.withPeerEntries(key, fed.GetUID(), fed.GetGeneration(), old, keep)
			all = markUnreported(append(slices.Clone(outcomes), othersOutcomes(old, keep)...), unreported)
		} else if keep != nil {
			all = append(slices.Clone(outcomes), othersOutcomes(old, keep)...)
		}
		return buildStatus(old, fed.GetGeneration(), all, reason, message, time.Now(), w.aggregation)
	}
	status := statusOf(old)
	if sameStatus(old, status) {
		w.wrotePeerEntries(key, used)
		if w.e.opts.Peers != nil {
			w.forgetSent(key)
		}
		// The host shows the status this write would make, of this
		// generation (another writer's, such as the control plane's where
		// an agent serves a Pull member): the events waiting for it go now.
		w.events.written(fed.GetUID())
		return 0, nil
	}
	if keep != nil && reason == "" && w.e.opts.Peers != nil && !w.e.anyPulled() {
		// Another replica writes this object's status: it gets our
		// entries.
		if requeue, done := w.reportToOwner(key, fed, old, status, keep, bulk); done {
			return requeue, nil
		}
	}
	// The entries this write carries: ours, or, on the replica that writes
	// the object's status for every replica, all of them (an apply that
	// left out an entry it applied before would remove it).
	carries := keep
	if keep != nil && w.owns(key) {
		carries = func(string) bool { return true }
	}
	if bulk {
		release, ok, err := w.e.bulk.acquireWithin(ctx, bulkWorkerHold)
		if err != nil {
			return 0, err
		}
		if !ok {
			// Prompt work goes on: the worker goes back to its queue,
			// where prompt items come first, and this write waits for
			// its turn again in a moment.
			bulkWorkerReturns.Inc()
			return bulkFloor, nil
		}
		defer release()
	} else {
		w.e.bulk.prompt()
	}
	// Recorded and logged once the write has its turn: a bulk write that
	// gave its worker back comes here again.
	if reason != "" && (fedstatus.PropagationCondition(old) == nil || fedstatus.PropagationCondition(old)["reason"] != reason) {
		w.recorder.Eventf(fed, corev1.EventTypeWarning, reason, "%s", message)
	}
	if log := w.log.V(1); log.Enabled() {
		was, _ := json.Marshal(old)
		now, _ := json.Marshal(status)
		log.Info("writing status", "federatedObject", key, "old", string(was), "new", string(now))
	}
	// Others' entries the host cache shows hold digests of their remote
	// statuses, which no write may carry: fromLive computes the status
	// again from the object as it is now, and says whether it still needs
	// writing.
	fromLive := func() (bool, error) {
		live, err := w.hostResource(fed.GetNamespace()).Get(ctx, fed.GetName(), metav1.GetOptions{})
		if err != nil {
			if isGone(err) {
				return false, nil
			}
			return false, fmt.Errorf("read for the status write: %w", err)
		}
		if live.GetUID() != fed.GetUID() || live.GetGeneration() != fed.GetGeneration() {
			// Replaced, or changed since planned: planned again.
			return false, nil
		}
		fed = live
		old, _ = fed.Object["status"].(map[string]any)
		status = statusOf(old)
		if sameStatus(old, status) {
			w.wrotePeerEntries(key, used)
			w.events.written(fed.GetUID())
			return false, nil
		}
		return true, nil
	}
	// Agents write their entries with guarded merge patches, which own
	// only what they change: an apply dropping an entry one took over
	// would remove it. So entries are applied only without Pull members.
	if keep != nil && w.applyStatus && !w.e.anyPulled() {
		if carriesDigests(ownPart(status, carries)) {
			// The replica writing every entry applies the others' too.
			if write, err := fromLive(); !write || err != nil {
				return 0, err
			}
		}
		updated, done, err := w.applyOwnStatus(ctx, fed, status, carries)
		if err != nil {
			if w.statusGone(key, err) {
				return 0, nil
			}
			return 0, fmt.Errorf("apply status: %w", err)
		}
		got, _ := updated.Object["status"].(map[string]any)
		w.noteStatusWrite(key, fed, updated, got)
		if done {
			w.wrotePeerEntries(key, used)
			w.events.written(fed.GetUID())
			return 0, nil
		}
		// Another field manager's field is in our part: write it the
		// guarded way, from the object the apply made, with the other
		// entries it shows (they may be newer than our cache's).
		fed = updated
		old, _ = fed.Object["status"].(map[string]any)
		status = statusOf(old)
		if sameStatus(old, status) {
			w.events.written(fed.GetUID())
			return 0, nil
		}
	}
	if carriesDigests(status) {
		if write, err := fromLive(); !write || err != nil {
			return 0, err
		}
	}
	patch := mergePatch(old, status)
	meta := map[string]any{"uid": string(fed.GetUID())}
	if keep != nil {
		meta["resourceVersion"] = fed.GetResourceVersion()
	}
	body, err := json.Marshal(map[string]any{"metadata": meta, "status": patch})
	if err != nil {
		return 0, err
	}
	updated, err := w.hostResource(fed.GetNamespace()).Patch(ctx, fed.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, "status")
	statusWrites.Inc()
	if err != nil {
		if apierrors.IsConflict(err) && keep != nil {
			statusConflicts.Inc()
			w.statusMu.Lock()
			w.statusWritten[key] = statusRecord{before: fed.GetResourceVersion(), refused: true}
			w.statusMu.Unlock()
			return cacheBehindRequeue, nil
		}
		if w.statusGone(key, err) || apierrors.IsConflict(err) {
			// Deleted, or replaced by an object of the same name.
			return 0, nil
		}
		return 0, fmt.Errorf("write status: %w", err)
	}
	w.noteStatusWrite(key, fed, updated, status)
	w.wrotePeerEntries(key, used)
	w.events.written(fed.GetUID())
	return 0, nil
}

// noteStatusWrite records that this engine turned fed into updated, whose
// status is status: the next status write takes it as the old status until
// the host cache shows the write.
func (w *typeWorker) noteStatusWrite(key string, fed, updated *unstructured.Unstructured, status map[string]any) {
	w.statusMu.Lock()
	w.statusWritten[key] = statusRecord{status: status, before: fed.GetResourceVersion(), after: updated.GetResourceVersion()}
	w.statusMu.Unlock()
}

// cacheBehindRequeue is how soon a status write is tried again when the
// host cache does not show the object's latest status yet.
const cacheBehindRequeue = 100 * time.Millisecond

// othersOutcomes are the entries of old's status.clusters that keep does
// not accept, written by other replicas, as outcomes: the status, remote
// status and what the Propagation condition said of each.
func othersOutcomes(old map[string]any, keep func(string) bool) []outcome {
	entries, _ := old["clusters"].([]any)
	said := fedstatus.ClusterMessages(old)
	var out []outcome
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		if name == "" || keep(name) {
			continue
		}
		status, _ := m["status"].(string)
		o := outcome{cluster: name, listed: true, status: typesv1beta1.PropagationStatusValue(status), message: said[name]}
		if r, ok := m["remoteStatus"]; ok {
			o.remote = r
		} else if d, ok := m[remoteDigestKey].(string); ok {
			o.remoteDigest = d
		}
		o.counts = countsOfEntry(m)
		out = append(out, o)
	}
	return out
}
