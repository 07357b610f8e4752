package sync

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kubefed-io/kubefed/pkg/placement"
)

// fakePeers names owner as the owner of every object.
type fakePeers struct{ self, owner string }

func (p fakePeers) Identity() string                           { return p.self }
func (p fakePeers) OwnerOf(string) string                      { return p.owner }
func (p fakePeers) Reachable(id string) bool                   { return id != "" }
func (p fakePeers) Send(context.Context, string, []byte) error { return nil }

func peerWorker(self, owner string) *typeWorker {
	return &typeWorker{
		e:      &Engine{opts: Options{Peers: fakePeers{self: self, owner: owner}}},
		fedGVR: schema.GroupVersionResource{Resource: "federatedconfigmaps"},
		peerIn: map[string]*peerHeld{}, peerSent: map[string]peerSent{},
	}
}

func TestOwnerWritesOthersEntriesInPlaceOfTheHostsUntilWritten(t *testing.T) {
	w := peerWorker("r1", "r1")
	keep := func(c string) bool { return c == "a" }
	old := map[string]any{"clusters": []any{
		map[string]any{"name": "a"},
		map[string]any{"name": "b", "status": "CreationFailed"},
		map[string]any{"name": "c"},
	}}
	// r2 serves b and c: b is now fine, c has no copy any more.
	w.tookReportEntries("ns/x", "uid-1", []string{"b", "c"}, []any{map[string]any{"name": "b"}})
	got, used := w.withPeerEntries("ns/x", "uid-1", 1, old, keep)
	if names := entryNames(got); !names["a"] || !names["b"] || names["c"] || len(used) != 2 {
		t.Fatalf("entries %v, used %v: want a kept, b from the report, c dropped", got["clusters"], used)
	}
	for _, e := range got["clusters"].([]any) {
		if m := e.(map[string]any); m["name"] == "b" && m["status"] != nil {
			t.Fatalf("b is still %v", m["status"])
		}
	}
	if entries := old["clusters"].([]any); len(entries) != 3 {
		t.Fatalf("the host's status was changed in place: %v", entries)
	}
	// A report of b that comes after the write was computed stays for the
	// next one; what the write carried is forgotten.
	w.tookReportEntries("ns/x", "uid-1", []string{"b"}, []any{map[string]any{"name": "b", "status": "UpdateFailed"}})
	w.wrotePeerEntries("ns/x", used)
	got, used = w.withPeerEntries("ns/x", "uid-1", 1, old, keep)
	if len(used) != 1 || used["b"] == 0 {
		t.Fatalf("after the write: used %v, want b's newer report only", used)
	}
	// Reports of an object since replaced are not used.
	if got, used := w.withPeerEntries("ns/x", "uid-2", 1, old, keep); used != nil || len(got["clusters"].([]any)) != 3 {
		t.Fatalf("a report of the replaced object was used: %v", got)
	}
}

func TestOnlyTheOwnerUsesOthersEntries(t *testing.T) {
	w := peerWorker("r1", "r3")
	w.tookReportEntries("ns/x", "uid-1", []string{"b"}, []any{map[string]any{"name": "b"}})
	old := map[string]any{}
	if got, used := w.withPeerEntries("ns/x", "uid-1", 1, old, func(c string) bool { return c == "a" }); used != nil || len(got) != 0 {
		t.Fatalf("a replica that does not own the object used others' entries: %v", got)
	}
}

func TestOthersEntriesExpire(t *testing.T) {
	w := peerWorker("r1", "r1")
	w.tookReportEntries("ns/x", "uid-1", []string{"b"}, []any{map[string]any{"name": "b"}})
	h := w.peerIn["ns/x"]
	e := h.clusters["b"]
	e.at = time.Now().Add(-peerEntryTTL - time.Second)
	h.clusters["b"] = e
	if _, used := w.withPeerEntries("ns/x", "uid-1", 1, map[string]any{}, func(string) bool { return false }); used != nil {
		t.Fatalf("an expired report was used: %v", used)
	}
	if _, held := w.peerIn["ns/x"]; held {
		t.Fatal("an expired report is still held")
	}
}

// tookReportEntries is tookReport without the status queue.
func (w *typeWorker) tookReportEntries(key string, uid types.UID, clusters []string, entries []any) {
	w.holdReport(peerReport{Key: key, UID: uid, Clusters: clusters, Entries: entries})
}

// The owner of a new or changed object waits for the word of the replicas
// serving its other members on that generation for as long as they may
// hold their own (their plan can come later than the owner's, and each
// waits up to reportHold for its members to answer and report), then
// writes without it; a report of the generation ends the wait, one of an
// earlier generation does not.
func TestOwnerWaitsForOthersWordOnAGeneration(t *testing.T) {
	w := peerWorker("r1", "r1")
	w.changed = map[string]changeSeen{}
	w.e.clustersWatched.Store(true)
	w.e.clusters.Store(&cachedClusterSet{set: placement.NewClusterSet([]placement.Cluster{
		{Name: "a", Ready: true}, {Name: "b", Ready: true},
	})})
	fed := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "ns", "name": "x", "uid": "uid-1", "generation": int64(1)},
		"spec":     map[string]any{"placement": map[string]any{"clusters": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}}},
	}}
	keep := func(c string) bool { return c == "a" }
	seen := func(generation int64, ago time.Duration) {
		fed.SetGeneration(generation)
		w.changed["ns/x"] = changeSeen{generation: generation, at: time.Now().Add(-ago)}
	}
	report := func(generation int64) {
		w.holdReport(peerReport{Key: "ns/x", UID: "uid-1", Generation: generation, Clusters: []string{"b"}, Entries: []any{map[string]any{"name": "b"}}})
	}

	// A new object seen 1.5 s ago, past a hold of the replica serving b
	// that began a moment after ours: still waiting for b.
	seen(1, 1500*time.Millisecond)
	if wait := w.gatherPeers("ns/x", fed, keep); wait <= 0 || wait > peerGather {
		t.Fatalf("waited %v for b's entry 1.5 s after the object was seen, want the rest of %v", wait, peerGather)
	}
	report(1)
	if wait := w.gatherPeers("ns/x", fed, keep); wait != 0 {
		t.Fatalf("waited %v with b's entry held", wait)
	}
	// Without it, the wait ends.
	w.forgetPeer("ns/x")
	seen(1, peerGather+time.Second)
	if wait := w.gatherPeers("ns/x", fed, keep); wait != 0 {
		t.Fatalf("waited %v past %v", wait, peerGather)
	}

	// Changed: the host lists both entries, of generation 1. The owner
	// waits for b's word on generation 2.
	fed.Object["status"] = map[string]any{"observedGeneration": int64(1), "clusters": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}}
	seen(2, 0)
	report(1)
	if wait := w.gatherPeers("ns/x", fed, keep); wait <= 0 {
		t.Fatal("wrote a changed object's status with only a report of its earlier generation")
	}
	report(2)
	if wait := w.gatherPeers("ns/x", fed, keep); wait != 0 {
		t.Fatalf("waited %v with b's word on generation 2", wait)
	}
	// Once the status is of generation 2, nothing more is waited for.
	w.forgetPeer("ns/x")
	fed.Object["status"].(map[string]any)["observedGeneration"] = int64(2)
	if wait := w.gatherPeers("ns/x", fed, keep); wait != 0 {
		t.Fatalf("waited %v after the generation's status was written", wait)
	}

	// A replica that does not own the object does not wait.
	other := peerWorker("r2", "r1")
	other.changed = map[string]changeSeen{"ns/x": {generation: 3, at: time.Now()}}
	other.e.clusters.Store(w.e.clusters.Load())
	other.e.clustersWatched.Store(true)
	fed.SetGeneration(3)
	if wait := other.gatherPeers("ns/x", fed, func(c string) bool { return c == "b" }); wait != 0 {
		t.Fatalf("a replica that does not own the object waited %v", wait)
	}
}

// sendingPeers is fakePeers that hands every message sent on.
type sendingPeers struct {
	fakePeers
	sent chan []byte
}

func (p sendingPeers) Send(_ context.Context, _ string, body []byte) error {
	p.sent <- body
	return nil
}

// senderOfB is replica r2, which serves member b, reporting on objects
// that r1 owns through peers, and the keep of its entries.
func senderOfB(t *testing.T) (*typeWorker, sendingPeers, func(string) bool) {
	t.Helper()
	w := peerWorker("r2", "r1")
	peers := sendingPeers{fakePeers: fakePeers{self: "r2", owner: "r1"}, sent: make(chan []byte, 4)}
	w.e.opts.Peers = peers
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w.e.ctx = ctx
	w.e.outbox = newPeerOutbox(w.e)
	w.e.clustersWatched.Store(true)
	w.e.clusters.Store(&cachedClusterSet{set: placement.NewClusterSet([]placement.Cluster{{Name: "b", Ready: true}})})
	return w, peers, func(c string) bool { return c == "b" }
}

// A replica tells the owner its entries of a changed object even when they
// are those the host shows: the owner waits for its word. Once the host
// shows the generation, nothing is sent.
func TestSenderReportsUnchangedEntriesOfANewGeneration(t *testing.T) {
	w, peers, keep := senderOfB(t)
	fed := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "ns", "name": "x", "uid": "uid-1", "generation": int64(2)},
	}}
	entries := []any{map[string]any{"name": "b"}}
	old := map[string]any{"observedGeneration": int64(1), "clusters": entries}
	status := map[string]any{"observedGeneration": int64(2), "clusters": entries}
	if _, done := w.reportToOwner("ns/x", fed, old, status, keep, false); !done {
		t.Fatal("not handed to the owner")
	}
	select {
	case body := <-peers.sent:
		var m peerMessage
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		if len(m.Reports) != 1 || m.Reports[0].Generation != 2 || !slices.Equal(m.Reports[0].Clusters, []string{"b"}) {
			t.Fatalf("sent %+v, want one report of b for generation 2", m.Reports)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing sent to the owner")
	}
	// The host shows generation 2: done, and nothing sent (nothing
	// recorded as sent, which precedes every send).
	w.forgetSent("ns/x")
	if _, done := w.reportToOwner("ns/x", fed, status, status, keep, false); !done {
		t.Fatal("not done with the entries the host shows")
	}
	if sent, ok := w.peerSent["ns/x"]; ok {
		t.Fatalf("sent again for a generation the host shows: %+v", sent)
	}
	// Deleting the object raised its generation, for which no status is
	// written: entries the host shows are not sent.
	fed.SetGeneration(3)
	fed.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	if _, done := w.reportToOwner("ns/x", fed, status, status, keep, false); !done {
		t.Fatal("not done with the entries the host shows of an object being deleted")
	}
	if sent, ok := w.peerSent["ns/x"]; ok {
		t.Fatalf("sent unchanged entries of an object being deleted: %+v", sent)
	}
}

// A sender whose entries the host does not show yet sends them again, and
// leaves them to the owner for as long as the owner may still be waiting
// for the other replicas' word (peerGather), before it writes them itself.
func TestSenderLeavesItsEntriesToAnOwnerStillGathering(t *testing.T) {
	w, _, keep := senderOfB(t)
	fed := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "ns", "name": "x", "uid": "uid-1", "generation": int64(1)},
	}}
	status := map[string]any{"observedGeneration": int64(1), "clusters": []any{map[string]any{"name": "b"}}}
	// elapse moves the last send back by d, as if d had passed since.
	elapse := func(d time.Duration) {
		w.peerMu.Lock()
		defer w.peerMu.Unlock()
		s := w.peerSent["ns/x"]
		s.at = s.at.Add(-d)
		w.peerSent["ns/x"] = s
	}
	sends := func() int {
		w.peerMu.Lock()
		defer w.peerMu.Unlock()
		return w.peerSent["ns/x"].tries
	}
	if _, done := w.reportToOwner("ns/x", fed, nil, status, keep, false); !done || sends() != 1 {
		t.Fatalf("first report: done %v after %d sends", done, sends())
	}
	elapse(peerConfirmWait)
	if _, done := w.reportToOwner("ns/x", fed, nil, status, keep, false); !done || sends() != 2 {
		t.Fatalf("not shown %v after the first send: done %v after %d sends, want it sent again", peerConfirmWait, done, sends())
	}
	// As long after the first send as the owner may gather the others'
	// word: still the owner's to write.
	elapse(peerGather - peerConfirmWait)
	if wait, done := w.reportToOwner("ns/x", fed, nil, status, keep, false); !done || wait <= 0 {
		t.Fatalf("%v after the first send, while the owner may still gather: done %v, wait %v; want it left to the owner", peerGather, done, wait)
	}
	elapse(peerConfirmWait)
	if _, done := w.reportToOwner("ns/x", fed, nil, status, keep, false); done {
		t.Fatalf("%v after the first send, past the owner's longest wait: still left to the owner", peerGather+peerConfirmWait)
	}
}

// Entries reported on a generation the owner's cache does not show yet
// wait for it: a write of the earlier generation does not carry them.
func TestOthersEntriesOfALaterGenerationWait(t *testing.T) {
	w := peerWorker("r1", "r1")
	w.holdReport(peerReport{Key: "ns/x", UID: "uid-1", Generation: 3, Clusters: []string{"b"}, Entries: []any{map[string]any{"name": "b", "status": "WaitingForRemoval"}}})
	keep := func(c string) bool { return c == "a" }
	if _, used := w.withPeerEntries("ns/x", "uid-1", 2, map[string]any{}, keep); used != nil {
		t.Fatalf("entries of generation 3 used for a write of generation 2: %v", used)
	}
	if _, used := w.withPeerEntries("ns/x", "uid-1", 3, map[string]any{}, keep); len(used) != 1 {
		t.Fatalf("entries of generation 3 not used for its write: %v", used)
	}
}

// Past the owner's wait, a member whose replica has not reported on the
// object's generation is written as still propagating, not with its entry
// of the earlier generation, nor left out of a new object's status; once
// the status is of that generation, entries are taken as they are.
func TestMembersWithoutWordOnAGenerationArePropagating(t *testing.T) {
	w := peerWorker("r1", "r1")
	w.e.clustersWatched.Store(true)
	w.e.clusters.Store(&cachedClusterSet{set: placement.NewClusterSet([]placement.Cluster{
		{Name: "a", Ready: true}, {Name: "b", Ready: true}, {Name: "c", Ready: true},
	})})
	fed := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "ns", "name": "x", "uid": "uid-1", "generation": int64(2)},
		"spec": map[string]any{"placement": map[string]any{"clusters": []any{
			map[string]any{"name": "a"}, map[string]any{"name": "b"}, map[string]any{"name": "c"},
		}}},
	}}
	keep := func(m string) bool { return m == "a" }
	old := map[string]any{"observedGeneration": int64(1), "clusters": []any{
		map[string]any{"name": "a"}, map[string]any{"name": "b"}, map[string]any{"name": "c", "status": "CreationFailed"},
	}}
	w.holdReport(peerReport{Key: "ns/x", UID: "uid-1", Generation: 2, Clusters: []string{"b"}, Entries: []any{map[string]any{"name": "b"}}})
	unreported := w.unreported("ns/x", fed, old, keep)
	if len(unreported) != 1 || !unreported["c"] {
		t.Fatalf("unreported %v, want c alone (b reported on generation 2, a is ours)", unreported)
	}
	merged, _ := w.withPeerEntries("ns/x", "uid-1", 2, old, keep)
	got := markUnreported(append([]outcome{{cluster: "a", listed: true}}, othersOutcomes(merged, keep)...), unreported)
	byName := map[string]outcome{}
	for _, o := range got {
		byName[o.cluster] = o
	}
	if len(got) != 3 || byName["a"].status != "" || byName["b"].status != "" || byName["c"].status != Propagating || byName["c"].message != unreportedMessage {
		t.Fatalf("outcomes %+v: want a and b as they are, c still propagating", got)
	}

	// A new object: members without a report are listed as propagating.
	w.forgetPeer("ns/x")
	fed.SetGeneration(1)
	got = markUnreported([]outcome{{cluster: "a", listed: true}}, w.unreported("ns/x", fed, nil, keep))
	if len(got) != 3 || got[1].cluster != "b" || got[1].status != Propagating || !got[1].listed || got[2].cluster != "c" || got[2].status != Propagating {
		t.Fatalf("outcomes of a new object %+v: want b and c added as still propagating", got)
	}

	// The status is of this generation: entries stand as they are.
	if u := w.unreported("ns/x", fed, map[string]any{"observedGeneration": int64(1)}, keep); len(u) != 0 {
		t.Fatalf("unreported %v once the status is of the object's generation", u)
	}
	// Nor does a replica that does not own the object mark anything.
	other := peerWorker("r2", "r1")
	other.e.clusters.Store(w.e.clusters.Load())
	other.e.clustersWatched.Store(true)
	if u := other.unreported("ns/x", fed, nil, func(m string) bool { return m == "b" }); len(u) != 0 {
		t.Fatalf("a replica that does not own the object found %v unreported", u)
	}
}

// A report, or a failed delivery, of an object already gone leaves an
// entry nothing else would drop: the tables are swept of objects the host
// cache does not show once their time to live passed, and keep what is
// fresh or of an object still there.
func TestPeerTablesForgetObjectsGone(t *testing.T) {
	w := peerWorker("r1", "r1")
	w.informer = toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &unstructured.Unstructured{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	there := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "there", "namespace": "ns"}}}
	if err := w.informer.GetIndexer().Add(there); err != nil {
		t.Fatal(err)
	}
	w.statusQueue = newQueue[string]("test-status")
	defer w.statusQueue.ShutDown()
	w.peerSwept = time.Now() // no sweep while the entries are made
	for _, key := range []string{"ns/there", "ns/gone"} {
		w.tookReportEntries(key, "uid", []string{"b"}, []any{map[string]any{"name": "b"}})
		w.sendFailed(key)
	}
	w.peerMu.Lock()
	defer w.peerMu.Unlock()
	w.sweepPeersLocked(time.Now().Add(peerSweepEvery / 2))
	if len(w.peerIn) != 2 || len(w.peerSent) != 2 {
		t.Fatalf("swept before peerSweepEvery: %d held, %d sent", len(w.peerIn), len(w.peerSent))
	}
	w.sweepPeersLocked(time.Now().Add(2 * peerSweepEvery))
	if _, ok := w.peerIn["ns/gone"]; ok || len(w.peerIn) != 1 {
		t.Errorf("held after the sweep: %v, want ns/there alone", slices.Collect(maps.Keys(w.peerIn)))
	}
	if _, ok := w.peerSent["ns/gone"]; ok || len(w.peerSent) != 1 {
		t.Errorf("sent after the sweep: %v, want ns/there alone", slices.Collect(maps.Keys(w.peerSent)))
	}
}

// A message naming a type this replica does not run, or sent to an engine
// that stopped, is refused whole, so that its sender writes what it carried
// at once instead of having it dropped after a 204.
func TestAPeerMessageIsTakenWholeOrRefused(t *testing.T) {
	w := peerWorker("r1", "r1")
	ctx, cancel := context.WithCancel(context.Background())
	w.e.ctx = ctx
	w.e.workers = map[string]*typeWorker{"federatedconfigmaps": w}
	body, err := json.Marshal(peerMessage{Reports: []peerReport{
		{Type: "federatedconfigmaps", Key: "ns/x", UID: "uid-1", Clusters: []string{"b"}},
		{Type: "federatedwidgets", Key: "ns/y", UID: "uid-2", Clusters: []string{"b"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.e.PeerMessage("r2", body); err == nil || !strings.Contains(err.Error(), "federatedwidgets") {
		t.Fatalf("a report of a type not run here: %v, want an error naming the type", err)
	}
	if len(w.peerIn) != 0 {
		t.Fatalf("a refused message's reports were taken: %v", w.peerIn)
	}
	events, err := json.Marshal(peerMessage{Events: []peerEvent{{Type: "federatedwidgets", Name: "y"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.e.PeerMessage("r2", events); err == nil {
		t.Fatal("an event of a type not run here was taken")
	}
	cancel()
	none, _ := json.Marshal(peerMessage{})
	if err := w.e.PeerMessage("r2", none); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("a message to a stopped engine: %v, want it refused", err)
	}
}

// capturePeers keeps every message sent.
type capturePeers struct {
	fakePeers
	mu   gosync.Mutex
	sent []peerMessage
	big  []int
}

func (p *capturePeers) Send(_ context.Context, _ string, body []byte) error {
	var m peerMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = append(p.sent, m)
	p.big = append(p.big, len(body))
	return nil
}

// A batch larger than a replica takes goes in parts under the limit, the
// events first, each report and event once; a report too large alone is
// written by its sender.
func TestPeerBatchesLargerThanAReplicaTakesAreSplit(t *testing.T) {
	peers := &capturePeers{fakePeers: fakePeers{self: "r1", owner: "r2"}}
	w := peerWorker("r1", "r2")
	w.statusQueue = newQueue[string]("test-status")
	w.e.opts.Peers = peers
	w.e.ctx = context.Background()
	w.e.workers = map[string]*typeWorker{"federatedconfigmaps": w}
	o := newPeerOutbox(w.e)
	o.limit = 400
	var m peerMessage
	for i := range 12 {
		m.Reports = append(m.Reports, peerReport{Type: "federatedconfigmaps", Key: fmt.Sprintf("ns/o%d", i), UID: "u", Clusters: []string{"b"},
			Entries: []any{map[string]any{"name": "b", "status": "CreationFailed"}}})
	}
	for i := range 5 {
		m.Events = append(m.Events, peerEvent{Type: "federatedconfigmaps", Name: fmt.Sprintf("o%d", i), Reason: "CreateInCluster", Cluster: "b"})
	}
	huge := peerReport{Type: "federatedconfigmaps", Key: "ns/huge", UID: "u", Clusters: []string{"b"},
		Entries: []any{map[string]any{"name": "b", "remoteStatus": map[string]any{"x": strings.Repeat("y", 500)}}}}
	m.Reports = append(m.Reports, huge)
	o.deliver("r2", m)

	reports, events := map[string]int{}, map[string]int{}
	sawReport := false
	for i, part := range peers.sent {
		if peers.big[i] > o.limit {
			t.Errorf("a part of %d bytes, over the limit", peers.big[i])
		}
		for _, r := range part.Reports {
			reports[r.Key]++
			sawReport = true
		}
		for _, e := range part.Events {
			if sawReport {
				t.Error("an event sent after a report")
			}
			events[e.Name]++
		}
	}
	if len(reports) != 12 || len(events) != 5 {
		t.Fatalf("sent %d reports and %d events, want 12 and 5", len(reports), len(events))
	}
	for k, n := range reports {
		if n != 1 {
			t.Errorf("report %s sent %d times", k, n)
		}
	}
	if reports["ns/huge"] != 0 || w.peerSent["ns/huge"].failed.IsZero() {
		t.Error("the report too large to send is not written by its sender")
	}
}
