package sync

import (
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/federatedtype"
	"github.com/kubefed-io/kubefed/pkg/fedstatus"
	"github.com/kubefed-io/kubefed/pkg/informermanager"
)

func testFed(generation int64, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetUID(types.UID("uid-1"))
	u.SetGeneration(generation)
	u.SetAnnotations(annotations)
	return u
}

func syncPlan(fed *unstructured.Unstructured, created time.Time) *clusterPlan {
	return &clusterPlan{action: actionSync, created: created, identity: planIdentity(actionSync, fed)}
}

func stateOf(fed *unstructured.Unstructured, entries map[string]*clusterEntry) *objectState {
	return &objectState{uid: fed.GetUID(), generation: fed.GetGeneration(), clusters: entries}
}

func TestPlanIdentity(t *testing.T) {
	base := planIdentity(actionSync, testFed(1, nil))
	for name, other := range map[string]string{
		"generation":        planIdentity(actionSync, testFed(2, nil)),
		"action":            planIdentity(actionRemove, testFed(1, nil)),
		"orphan annotation": planIdentity(actionSync, testFed(1, map[string]string{corev1beta1.OrphanManagedResourcesAnnotation: "true"})),
		"delete option":     planIdentity(actionSync, testFed(1, map[string]string{corev1beta1.DeleteOptionAnnotation: "{}"})),
	} {
		if other == base {
			t.Errorf("a change of %s keeps the plan identity %s", name, base)
		}
	}
	if got := planIdentity(actionSync, testFed(1, map[string]string{"unrelated": "x"})); got != base {
		t.Errorf("an unrelated annotation changed the identity: %s vs %s", got, base)
	}
}

func TestSetStateKeepsUnchangedPlansAndTheirResults(t *testing.T) {
	w := &typeWorker{states: map[string]*objectState{}}
	now := time.Now()
	fed1 := testFed(1, nil)
	first := stateOf(fed1, map[string]*clusterEntry{
		"a": {plan: syncPlan(fed1, now)},
		"b": {plan: syncPlan(fed1, now)},
		"c": {result: &outcome{cluster: "c", listed: true, status: typesv1beta1.ClusterNotReady}},
	})
	got := w.setState("ns/x", first)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("first plans dispatch %v, want [a b]", got)
	}
	planA := first.clusters["a"].plan
	if w.recordResult("ns/x", "a", planA, outcome{cluster: "a", listed: true}) != resultChanged {
		t.Fatal("a first outcome is a change")
	}

	// The same generation again (a cluster event): a is answered and kept,
	// b has no answer yet and is dispatched again, c becomes ready.
	again := stateOf(fed1, map[string]*clusterEntry{
		"a": {plan: syncPlan(fed1, now.Add(time.Minute))},
		"b": {plan: syncPlan(fed1, now.Add(time.Minute))},
		"c": {plan: syncPlan(fed1, now.Add(time.Minute))},
	})
	got = w.setState("ns/x", again)
	slices.Sort(got)
	if !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("re-plan dispatches %v, want [b c]", got)
	}
	if again.clusters["a"].plan != planA || !again.clusters["a"].current() {
		t.Fatal("cluster a lost its plan or its result")
	}

	// A new generation replaces every plan; a's old outcome is not current.
	fed2 := testFed(2, nil)
	next := stateOf(fed2, map[string]*clusterEntry{"a": {plan: syncPlan(fed2, now)}})
	if got := w.setState("ns/x", next); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("new generation dispatches %v, want [a]", got)
	}
	if next.clusters["a"].current() {
		t.Fatal("the outcome of generation 1 counts for generation 2")
	}
	// A late answer to the replaced plan is dropped.
	if w.recordResult("ns/x", "a", planA, outcome{cluster: "a", listed: true, status: typesv1beta1.UpdateFailed}) != resultSame {
		t.Fatal("an outcome of a replaced plan was recorded")
	}
	if next.clusters["a"].current() {
		t.Fatal("an outcome of a replaced plan became current")
	}
	if w.planFor("ns/x", "a") != next.clusters["a"].plan || w.planFor("ns/x", "b") != nil || w.planFor("ns/y", "a") != nil {
		t.Fatal("planFor does not return the current plans")
	}
}

// A member back from a spell not Ready gets a new plan that starts from
// what the plan before the spell knew of its copy; a plan that changed
// meanwhile (a new generation) starts afresh.
func TestPlanParkedWhileNotReadySeedsTheNextOne(t *testing.T) {
	w := &typeWorker{states: map[string]*objectState{}}
	now := time.Now()
	notReady := func() *clusterEntry {
		return &clusterEntry{result: &outcome{cluster: "a", listed: true, status: typesv1beta1.ClusterNotReady}}
	}
	fed1 := testFed(1, nil)
	before := syncPlan(fed1, now)
	w.setState("ns/x", stateOf(fed1, map[string]*clusterEntry{"a": {plan: before}}))
	before.checked = "copy-fingerprint"

	spell := stateOf(fed1, map[string]*clusterEntry{"a": notReady()})
	if got := w.setState("ns/x", spell); len(got) != 0 {
		t.Fatalf("a member not ready was dispatched: %v", got)
	}
	if spell.clusters["a"].parked != before {
		t.Fatal("the plan before the spell was not parked")
	}
	// Planned again during the spell: still parked.
	again := stateOf(fed1, map[string]*clusterEntry{"a": notReady()})
	w.setState("ns/x", again)
	if again.clusters["a"].parked != before {
		t.Fatal("a second plan during the spell lost the parked plan")
	}

	back := syncPlan(fed1, now.Add(time.Minute))
	if got := w.setState("ns/x", stateOf(fed1, map[string]*clusterEntry{"a": {plan: back}})); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("back from the spell dispatches %v, want [a]: the copy must be looked at", got)
	}
	if back.seed != before || back.checked != "" {
		t.Fatalf("the new plan's seed is %p (want %p), checked %q", back.seed, before, back.checked)
	}
	back.takeSeed()
	if back.checked != "copy-fingerprint" || back.seed != nil {
		t.Fatalf("after taking the seed: checked %q, seed %p", back.checked, back.seed)
	}
	// A plan that found the copy itself keeps its own fingerprint.
	own := &clusterPlan{checked: "own", seed: before}
	own.takeSeed()
	if own.checked != "own" {
		t.Fatalf("a seed replaced the plan's own fingerprint: %q", own.checked)
	}

	// A new generation during a spell: the parked plan is not equal.
	w.setState("ns/x", stateOf(fed1, map[string]*clusterEntry{"a": notReady()}))
	fed2 := testFed(2, nil)
	changed := syncPlan(fed2, now.Add(2*time.Minute))
	w.setState("ns/x", stateOf(fed2, map[string]*clusterEntry{"a": {plan: changed}}))
	if changed.seed != nil {
		t.Fatal("a plan of another generation was seeded from the parked one")
	}
}

func TestRecordResultClassifiesChanges(t *testing.T) {
	w := &typeWorker{states: map[string]*objectState{}}
	fed := testFed(1, nil)
	st := stateOf(fed, map[string]*clusterEntry{"a": {plan: syncPlan(fed, time.Now())}})
	w.setState("k", st)
	p := st.clusters["a"].plan
	steps := []struct {
		o    outcome
		want resultChange
	}{
		{outcome{cluster: "a", listed: true, remote: map[string]any{"replicas": int64(1)}}, resultChanged},
		{outcome{cluster: "a", listed: true, remote: map[string]any{"replicas": float64(1)}}, resultSame},
		{outcome{cluster: "a", listed: true, remote: map[string]any{"replicas": int64(2)}}, resultRemoteOnly},
		{outcome{cluster: "a", listed: true, status: typesv1beta1.UpdateFailed, message: "boom", remote: map[string]any{"replicas": int64(2)}}, resultChanged},
		{outcome{cluster: "a", listed: true, status: typesv1beta1.UpdateFailed, message: "boom again", remote: map[string]any{"replicas": int64(2)}}, resultChanged},
		{outcome{cluster: "a", listed: true, unobserved: true}, resultChanged},
		// The member's first report on the copy is written at once, not
		// coalesced as a remote status change.
		{outcome{cluster: "a", listed: true, remote: map[string]any{"observedGeneration": int64(1)}}, resultChanged},
	}
	for i, s := range steps {
		if got := w.recordResult("k", "a", p, s.o); got != s.want {
			t.Errorf("step %d: got %v, want %v", i, got, s.want)
		}
	}
	if w.recordResult("k", "nope", p, outcome{}) != resultSame || w.recordResult("other", "a", p, outcome{}) != resultSame {
		t.Error("an outcome for an unknown object or cluster was recorded")
	}
}

func TestViewHoldsForMembersUnderWayThenReportsThem(t *testing.T) {
	start := time.Now()
	fed := testFed(1, nil)
	answered := syncPlan(fed, start)
	slow := syncPlan(fed, start)
	deleting := &clusterPlan{action: actionDelete, created: start}
	st := stateOf(fed, map[string]*clusterEntry{
		"fast":    {plan: answered, result: &outcome{cluster: "fast", listed: true}, resultOf: answered},
		"slow":    {plan: slow},
		"gone":    {plan: deleting},
		"offline": {result: &outcome{cluster: "offline", listed: true, status: typesv1beta1.ClusterNotReady}},
	})

	v := st.view(start.Add(500*time.Millisecond), nil)
	if v.pending || v.wait != statusHold-500*time.Millisecond {
		t.Fatalf("within the hold: pending=%v wait=%v, want a wait of %v", v.pending, v.wait, statusHold-500*time.Millisecond)
	}

	v = st.view(start.Add(statusHold+time.Millisecond), nil)
	if v.wait != 0 || v.pending {
		t.Fatalf("past the hold: pending=%v wait=%v", v.pending, v.wait)
	}
	got := map[string]typesv1beta1.PropagationStatusValue{}
	for _, o := range v.outcomes {
		if !o.listed {
			t.Errorf("%s is not listed", o.cluster)
		}
		got[o.cluster] = o.status
	}
	want := map[string]typesv1beta1.PropagationStatusValue{
		"fast": "", "slow": Propagating, "gone": typesv1beta1.WaitingForRemoval, "offline": typesv1beta1.ClusterNotReady,
	}
	if len(got) != len(want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	for c, s := range want {
		if got[c] != s {
			t.Errorf("%s: %q, want %q", c, got[c], s)
		}
	}

	// A member whose cache is still syncing holds the write however long.
	syncing := syncPlan(fed, start)
	st.clusters["syncing"] = &clusterEntry{plan: syncing, result: &outcome{cluster: "syncing", pending: true}, resultOf: syncing}
	if v := st.view(start.Add(time.Hour), nil); !v.pending {
		t.Error("a pending member does not hold the status write")
	}
}

// A copy written a moment ago whose member has not reported on it yet
// holds the status write, up to reportHold, so that the write carries the
// member's first report rather than being followed by a second write.
func TestViewWaitsForTheMembersFirstReport(t *testing.T) {
	start := time.Now()
	fed := testFed(1, nil)
	p := syncPlan(fed, start)
	st := stateOf(fed, map[string]*clusterEntry{
		"a": {plan: p, result: &outcome{cluster: "a", listed: true, unobserved: true}, resultOf: p},
	})
	v := st.view(start.Add(500*time.Millisecond), nil)
	if len(v.outcomes) != 0 || v.wait != reportHold-500*time.Millisecond {
		t.Fatalf("before the member reports: outcomes %v, wait %v; want none and a wait of %v", v.outcomes, v.wait, reportHold-500*time.Millisecond)
	}
	w := &typeWorker{states: map[string]*objectState{"k": st}}
	if _, held := w.planAndHold("k", "a"); !held.Equal(start) {
		t.Errorf("planAndHold says the copy's hold started at %v, want the plan's %v", held, start)
	}
	v = st.view(start.Add(reportHold+time.Millisecond), nil)
	if len(v.outcomes) != 1 || v.wait != 0 {
		t.Fatalf("past the hold: outcomes %v, wait %v; want the outcome written as it is", v.outcomes, v.wait)
	}
	st.clusters["a"].result = &outcome{cluster: "a", listed: true}
	if v := st.view(start.Add(time.Millisecond), nil); len(v.outcomes) != 1 || v.wait != 0 {
		t.Fatalf("once reported: outcomes %v, wait %v", v.outcomes, v.wait)
	}
	if _, held := w.planAndHold("k", "a"); !held.IsZero() {
		t.Errorf("planAndHold says a reported copy still holds since %v", held)
	}
}

// The hold for a member's report on a copy runs from the member's answer
// to its write, which may have waited in the member's queue, and a later
// look at the copy (its first report, a step its controller reports again
// at once) keeps it.
func TestHoldForAReportRunsFromTheAnswer(t *testing.T) {
	start := time.Now()
	fed := testFed(1, nil)
	p := syncPlan(fed, start)
	answered := start.Add(1500 * time.Millisecond)
	st := stateOf(fed, map[string]*clusterEntry{"a": {plan: p}})
	w := &typeWorker{states: map[string]*objectState{"k": st}}
	w.recordResult("k", "a", p, outcome{cluster: "a", listed: true, unobserved: true, heldFrom: answered})
	w.recordResult("k", "a", p, outcome{cluster: "a", listed: true, unobserved: true, remote: map[string]any{"phase": "halfway"}})
	if _, held := w.planAndHold("k", "a"); !held.Equal(answered) {
		t.Fatalf("the hold started at %v, want the answer's %v", held, answered)
	}
	at := start.Add(reportHold + 100*time.Millisecond)
	if v := st.view(at, nil); len(v.outcomes) != 0 || v.wait != answered.Add(reportHold).Sub(at) {
		t.Fatalf("%v after the plan, %v after the answer: outcomes %v, wait %v; want none and a wait of %v",
			at.Sub(start), at.Sub(answered), v.outcomes, v.wait, answered.Add(reportHold).Sub(at))
	}
	if v := st.view(answered.Add(reportHold+time.Millisecond), nil); len(v.outcomes) != 1 || v.wait != 0 {
		t.Fatalf("past the hold: outcomes %v, wait %v", v.outcomes, v.wait)
	}
	// A new plan's outcome does not inherit the earlier plan's answer.
	next := syncPlan(fed, start.Add(time.Hour))
	st.clusters["a"].plan = next
	w.recordResult("k", "a", next, outcome{cluster: "a", listed: true, unobserved: true})
	if _, held := w.planAndHold("k", "a"); !held.Equal(next.created) {
		t.Errorf("a new plan's hold started at %v, want its own %v", held, next.created)
	}
}

// A copy a member just removed holds the status write until its watch
// shows the copy gone, within reportHold of the member's answer, however
// long the removal waited for the member: the entry is dropped in one
// write, never written WaitingForRemoval first.
func TestViewWaitsForTheMembersWatchAfterARemoval(t *testing.T) {
	start := time.Now()
	fed := testFed(1, nil)
	deleting := &clusterPlan{action: actionDelete, created: start}
	answered := start.Add(3 * time.Second)
	st := stateOf(fed, map[string]*clusterEntry{
		"a": {plan: deleting, result: &outcome{cluster: "a", listed: true, status: typesv1beta1.WaitingForRemoval,
			unobserved: true, heldFrom: answered}, resultOf: deleting},
	})
	v := st.view(answered.Add(500*time.Millisecond), nil)
	if len(v.outcomes) != 0 || v.wait != reportHold-500*time.Millisecond {
		t.Fatalf("a removal answered 500 ms ago, its plan %v old: outcomes %v, wait %v; want none and a wait of %v",
			answered.Add(500*time.Millisecond).Sub(start), v.outcomes, v.wait, reportHold-500*time.Millisecond)
	}
	v = st.view(answered.Add(reportHold+time.Millisecond), nil)
	if len(v.outcomes) != 1 || v.outcomes[0].status != typesv1beta1.WaitingForRemoval || v.wait != 0 {
		t.Fatalf("past the hold: outcomes %v, wait %v; want WaitingForRemoval written", v.outcomes, v.wait)
	}
}

func TestObservedReadsTheMembersReport(t *testing.T) {
	copyWith := func(generation int64, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetGeneration(generation)
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	deployment := func(generation int64, status map[string]any) *unstructured.Unstructured {
		u := copyWith(generation, status)
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
		return u
	}
	progressing := func(reason string) []any {
		return []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
			map[string]any{"type": "Progressing", "status": "True", "reason": reason},
		}
	}
	reported := &typeWorker{collectStatus: true}
	for _, c := range []struct {
		name string
		w    *typeWorker
		obj  *unstructured.Unstructured
		want bool
	}{
		{"just created, no status", reported, copyWith(1, nil), false},
		{"just created, empty status", reported, copyWith(1, map[string]any{}), false},
		{"an older generation observed", reported, copyWith(2, map[string]any{"observedGeneration": int64(1), "replicas": int64(3)}), false},
		{"this generation observed", reported, copyWith(2, map[string]any{"observedGeneration": int64(2)}), true},
		{"a kind without observedGeneration reported", reported, copyWith(1, map[string]any{"phase": "Active"}), true},
		{"a kind without metadata.generation", reported, copyWith(0, nil), true},
		{"status neither collected nor aggregated", &typeWorker{}, copyWith(1, nil), true},
		// A new Deployment's first report, its ReplicaSet created, is
		// followed by the rollout's; an update's, with the generation
		// observed, too.
		{"a new Deployment's ReplicaSet created", reported, deployment(1, map[string]any{"conditions": progressing("NewReplicaSetCreated")}), false},
		{"an updated Deployment's ReplicaSet created", reported, deployment(2, map[string]any{"observedGeneration": int64(2), "conditions": progressing("NewReplicaSetCreated")}), false},
		{"a Deployment available", reported, deployment(1, map[string]any{"observedGeneration": int64(1), "conditions": progressing("NewReplicaSetAvailable")}), true},
		{"a Deployment rolling out", reported, deployment(1, map[string]any{"observedGeneration": int64(1), "conditions": progressing("ReplicaSetUpdated")}), true},
		{"another kind with that reason", reported, copyWith(1, map[string]any{"conditions": progressing("NewReplicaSetCreated")}), true},
		{"a Deployment, status not reported", &typeWorker{}, deployment(1, map[string]any{"conditions": progressing("NewReplicaSetCreated")}), true},
	} {
		if got := c.w.observed(c.obj); got != c.want {
			t.Errorf("%s: observed %v, want %v", c.name, got, c.want)
		}
	}
}

func TestReleased(t *testing.T) {
	p := &clusterPlan{action: actionRelease}
	for _, tc := range []struct {
		name  string
		entry *clusterEntry
		want  bool
	}{
		{"no answer yet", &clusterEntry{plan: p}, false},
		{"failed, still managed", &clusterEntry{plan: p, resultOf: p, result: &outcome{listed: true, status: typesv1beta1.LabelRemovalFailed}}, false},
		{"answer of an older plan", &clusterEntry{plan: p, resultOf: &clusterPlan{}, result: &outcome{}}, false},
		{"unlabelled", &clusterEntry{plan: p, resultOf: p, result: &outcome{}}, true},
	} {
		st := &objectState{clusters: map[string]*clusterEntry{"a": tc.entry}}
		if got := st.released(); got != tc.want {
			t.Errorf("%s: released=%v, want %v", tc.name, got, tc.want)
		}
	}
	if !(&objectState{}).released() {
		t.Error("an object with no copies is not released")
	}
}

func TestCacheBehind(t *testing.T) {
	rec := statusRecord{before: "100", after: "105"}
	for rv, want := range map[string]bool{"99": true, "100": true, "104": true, "105": false, "1000": false} {
		if got := cacheBehind(rv, rec); got != want {
			t.Errorf("cacheBehind(%s) = %v, want %v", rv, got, want)
		}
	}
	opaque := statusRecord{before: "a", after: "b"}
	if !cacheBehind("a", opaque) || cacheBehind("c", opaque) {
		t.Error("opaque versions: only the version before the write is behind")
	}
}

func TestFingerprintIgnoresOnlyStatus(t *testing.T) {
	base := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"replicas": int64(1)}}}
		u.SetUID("u")
		u.SetGeneration(3)
		u.SetLabels(map[string]string{"a": "b"})
		u.SetAnnotations(map[string]string{HashAnnotation: "h"})
		return u
	}
	fp := fingerprint(base())
	if fp == "" {
		t.Fatal("no fingerprint for an object with a generation")
	}
	statusOnly := base()
	statusOnly.Object["status"] = map[string]any{"replicas": int64(2)}
	statusOnly.SetResourceVersion("99")
	if fingerprint(statusOnly) != fp {
		t.Error("a status change changed the fingerprint")
	}
	for name, change := range map[string]func(*unstructured.Unstructured){
		"generation":  func(u *unstructured.Unstructured) { u.SetGeneration(4) },
		"labels":      func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "c"}) },
		"annotations": func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{HashAnnotation: "other"}) },
		"uid":         func(u *unstructured.Unstructured) { u.SetUID("v") },
	} {
		u := base()
		change(u)
		if fingerprint(u) == fp {
			t.Errorf("a change of %s kept the fingerprint", name)
		}
	}
	// Without metadata.generation every write counts, as it changes the
	// resourceVersion; a copy never read from a member has none to tell.
	noGeneration := base()
	noGeneration.SetGeneration(0)
	if fingerprint(noGeneration) != "" {
		t.Error("an object without generation or resourceVersion has a fingerprint: its data changes would go unchecked")
	}
	noGeneration.SetResourceVersion("7")
	seven := fingerprint(noGeneration)
	if seven == "" {
		t.Fatal("no fingerprint for an object without generation read from a member")
	}
	written := noGeneration.DeepCopy()
	written.Object["data"] = map[string]any{"k": "v"}
	written.SetResourceVersion("8")
	if fingerprint(written) == seven {
		t.Error("a write of an object without generation kept the fingerprint")
	}
	recreated := noGeneration.DeepCopy()
	recreated.SetUID("v")
	if fingerprint(recreated) == seven {
		t.Error("an object made anew kept the fingerprint")
	}
}

// TestOtherReplicasEntriesAreKeptWithWhatTheConditionSaidOfThem: a replica
// serving member2 rewrites its entry and keeps member1's and member3's,
// written by others, with the messages the condition had for them, so the
// replicas agree on the condition and do not rewrite each other's.
func TestOtherReplicasEntriesAreKeptWithWhatTheConditionSaidOfThem(t *testing.T) {
	now := time.Now()
	byOthers := []outcome{
		{cluster: "member1", listed: true, status: "CreationFailed", message: "admission webhook denied it; retry later"},
		{cluster: "member3", listed: true, status: "ClusterNotReady"},
		{cluster: "member4", listed: true, remote: map[string]any{"replicas": int64(2)}},
	}
	mine := outcome{cluster: "member2", listed: true, status: "UpdateFailed", message: "conflict"}
	old := buildStatus(nil, 3, append(slices.Clone(byOthers), mine), "", "", now, nil)
	keep := func(c string) bool { return c == "member2" }

	got := othersOutcomes(old, keep)
	sortOutcomes(got)
	if len(got) != 3 {
		t.Fatalf("others' outcomes %+v", got)
	}
	for i, want := range byOthers {
		if got[i].cluster != want.cluster || got[i].status != want.status || got[i].message != want.message || !sameJSON(got[i].remote, want.remote) {
			t.Errorf("entry %d: got %+v, want %+v", i, got[i], want)
		}
	}
	// Rebuilt with the same own outcome, the status is unchanged: no write.
	again := buildStatus(old, 3, append(got, mine), "", "", now.Add(time.Minute), nil)
	if !sameJSON(old, again) {
		t.Errorf("rebuilt status differs:\n%v\n%v", old, again)
	}
	// member2 recovers: only its part of the message goes.
	healed := buildStatus(old, 3, append(othersOutcomes(old, keep), outcome{cluster: "member2", listed: true}), "", "", now, nil)
	msg := fedstatus.PropagationCondition(healed)["message"]
	if msg != "member1: CreationFailed: admission webhook denied it; retry later; member3: ClusterNotReady" {
		t.Errorf("message after member2 healed: %q", msg)
	}
	// Entries that replicas apply server-side are stored in the order the
	// API server merged them, not by name: what the condition said of each
	// is still kept, or two replicas would each drop the other's message
	// and rewrite the status in turn without end.
	merged := maps.Clone(old)
	entries := slices.Clone(old["clusters"].([]any))
	slices.Reverse(entries)
	merged["clusters"] = entries
	got = othersOutcomes(merged, keep)
	sortOutcomes(got)
	for i, want := range byOthers {
		if i >= len(got) || got[i].message != want.message {
			t.Errorf("entries stored in reverse: entry %d: got %+v, want %+v", i, got, want)
		}
	}
	if again := buildStatus(merged, 3, append(got, mine), "", "", now.Add(time.Minute), nil); !sameJSON(fedstatus.PropagationCondition(old), fedstatus.PropagationCondition(again)) {
		t.Errorf("entries stored in reverse: condition rebuilt as %v, was %v", fedstatus.PropagationCondition(again), fedstatus.PropagationCondition(old))
	}
}

func TestClusterMessagesOfAnUnparsableMessageAreEmpty(t *testing.T) {
	old := map[string]any{
		"clusters":   []any{map[string]any{"name": "member1", "status": "CreationFailed"}},
		"conditions": []any{map[string]any{"type": "Propagation", "status": "False", "reason": "CheckClusters", "message": "edited by hand"}},
	}
	if got := fedstatus.ClusterMessages(old); got["member1"] != "" {
		t.Errorf("message %q recovered from an unrelated text", got["member1"])
	}
	if got := othersOutcomes(old, func(string) bool { return false }); len(got) != 1 || got[0].status != "CreationFailed" {
		t.Errorf("others' outcomes %+v", got)
	}
}

// The status sums the copies' counts, shows READY per cluster and in all,
// and a replica that serves only some members sums the counts other
// replicas wrote for the rest.
func TestStatusAggregatesCountsOverClustersAndReplicas(t *testing.T) {
	agg, err := federatedtype.AggregationFor(&corev1beta1.FederatedTypeConfig{Spec: corev1beta1.FederatedTypeConfigSpec{
		TargetType: corev1beta1.APIResource{Group: "apps", Version: "v1", Kind: "Deployment"}}})
	if err != nil {
		t.Fatal(err)
	}
	copyOf := func(desired, ready int64) map[string]int64 {
		return agg.Counts(map[string]any{"spec": map[string]any{"replicas": desired}, "status": map[string]any{"readyReplicas": ready, "replicas": desired}})
	}
	now := time.Now()
	outcomes := []outcome{
		{cluster: "member1", listed: true, counts: copyOf(3, 3)},
		{cluster: "member2", listed: true, counts: copyOf(5, 2)},
		// Failing, its copy's last counts still count.
		{cluster: "member3", listed: true, status: "UpdateFailed", counts: copyOf(2, 2)},
		// Not read (no copy yet): listed without counts.
		{cluster: "member4", listed: true},
	}
	s := buildStatus(nil, 1, outcomes, "", "", now, agg)
	if s["ready"] != "7/10" {
		t.Errorf("ready = %v, want 7/10", s["ready"])
	}
	if c := s["counts"].(map[string]any); c["readyReplicas"] != int64(7) || c["desiredReplicas"] != int64(10) || c["replicas"] != int64(10) {
		t.Errorf("counts = %v", c)
	}
	perCluster := map[string]any{}
	for _, e := range s["clusters"].([]any) {
		m := e.(map[string]any)
		perCluster[m["name"].(string)] = m["ready"]
	}
	if want := map[string]any{"member1": "3/3", "member2": "2/5", "member3": "2/2", "member4": nil}; !maps.Equal(perCluster, want) {
		t.Errorf("per-cluster ready = %v, want %v", perCluster, want)
	}

	// Replica B serves member2 only; the others' entries count as written.
	keep := func(c string) bool { return c == "member2" }
	mine := outcome{cluster: "member2", listed: true, counts: copyOf(5, 5)}
	again := buildStatus(s, 1, append(othersOutcomes(s, keep), mine), "", "", now, agg)
	if again["ready"] != "10/10" {
		t.Errorf("ready after member2 rolled out = %v, want 10/10", again["ready"])
	}
	// member2 is not ready now and not read: its last counts stand, so
	// READY does not improve because a member stopped answering.
	later := buildStatus(again, 1, []outcome{
		{cluster: "member1", listed: true, counts: copyOf(3, 3)},
		{cluster: "member2", listed: true, status: "ClusterNotReady"},
		{cluster: "member3", listed: true, counts: copyOf(2, 2)},
	}, "", "", now, agg)
	if later["ready"] != "10/10" {
		t.Errorf("ready with member2 not read = %v, want its last 5/5 in 10/10", later["ready"])
	}
	// Without aggregation nothing of it is written.
	plain := buildStatus(nil, 1, outcomes, "", "", now, nil)
	if _, ok := plain["counts"]; ok || plain["ready"] != nil {
		t.Errorf("status without aggregation: %v", plain)
	}
}

// A merge patch of the status nulls what is gone at every depth: a count
// no longer summed would otherwise stay on the server, and the status
// would differ from what the engine wants forever.
func TestStatusPatchRemovesNestedKeys(t *testing.T) {
	old := map[string]any{"counts": map[string]any{"a": int64(1), "b": int64(2)}, "ready": "1/2", "observedGeneration": int64(3)}
	next := map[string]any{"counts": map[string]any{"a": int64(1)}, "observedGeneration": int64(4)}
	got := mergePatch(old, next)
	want := map[string]any{"counts": map[string]any{"a": int64(1), "b": nil}, "ready": nil, "observedGeneration": int64(4)}
	if !sameJSON(got, want) {
		t.Errorf("mergePatch = %v, want %v", got, want)
	}
}

func TestFirstReportDelay(t *testing.T) {
	created := time.Now()
	for _, c := range []struct {
		since, want time.Duration
	}{
		{0, statusCoalesceDelay},
		{500 * time.Millisecond, statusCoalesceDelay},
		// Past statusHold, the member's report is still waited for.
		{statusHold, statusCoalesceDelay},
		// Late in the hold: only until shortly before it ends.
		{reportHold - 500*time.Millisecond, 300 * time.Millisecond},
		{reportHold, 0},
		{time.Minute, 0},
	} {
		if got := firstReportDelay(created, created.Add(c.since)); got != c.want {
			t.Errorf("%s into the plan: delay %s, want %s", c.since, got, c.want)
		}
	}
}

// A change of a copy just written that the member has not reported on yet
// waits for the changes that follow it (a new Deployment is annotated with
// its revision, then its status changes twice within a moment), so that the
// object's status write carries them all; a copy's creation is taken at
// once.
func TestTheFirstReportIsTakenWithTheOnesThatFollow(t *testing.T) {
	d := &clusterDispatcher{cluster: "a", queue: newQueue[dispatchItem]("test-a")}
	defer d.queue.ShutDown()
	w := &typeWorker{e: &Engine{dispatchers: map[string]*clusterDispatcher{"a": d}}, name: "deployments.apps",
		collectStatus: true, states: map[string]*objectState{}}
	fed := testFed(1, nil)
	p := syncPlan(fed, time.Now())
	w.setState("ns/web", stateOf(fed, map[string]*clusterEntry{
		"a": {plan: p, result: &outcome{cluster: "a", listed: true, unobserved: true}, resultOf: p}}))
	copyAt := func(rv string, observed int64, revision string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"observedGeneration": observed}}}
		u.SetNamespace("ns")
		u.SetName("web")
		u.SetGeneration(1)
		u.SetResourceVersion(rv)
		if revision != "" {
			u.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": revision})
		}
		return u
	}
	for name, ev := range map[string]informermanager.Event{
		"annotated": {Cluster: "a", Type: informermanager.Updated, OldObject: copyAt("1", 0, ""), Object: copyAt("2", 0, "1")},
		"reported":  {Cluster: "a", Type: informermanager.Updated, OldObject: copyAt("2", 0, "1"), Object: copyAt("3", 1, "1")},
	} {
		sent := time.Now()
		w.memberEvent(ev)
		if n := d.queue.Len(); n != 0 {
			t.Fatalf("%s: ready at once (%d ready), want it to wait for the next change", name, n)
		}
		item, _, shutdown := d.queue.GetWithPriority()
		if shutdown || item.key != "ns/web" {
			t.Fatalf("%s: got %v (shutdown %v)", name, item, shutdown)
		}
		if waited := time.Since(sent); waited < statusCoalesceDelay-100*time.Millisecond {
			t.Errorf("%s: waited %s, want about %s", name, waited, statusCoalesceDelay)
		}
		d.queue.Done(item)
		// A new plan: the hold starts again.
		p.created = time.Now()
	}

	w.memberEvent(informermanager.Event{Cluster: "a", Type: informermanager.Added, Object: copyAt("4", 1, "1")})
	if n := d.queue.Len(); n != 1 {
		t.Fatalf("a copy's creation: %d ready, want it at once", n)
	}
}
