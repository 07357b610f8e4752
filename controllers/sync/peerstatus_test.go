package sync

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
	got, used := w.withPeerEntries("ns/x", "uid-1", old, keep)
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
	got, used = w.withPeerEntries("ns/x", "uid-1", old, keep)
	if len(used) != 1 || used["b"] == 0 {
		t.Fatalf("after the write: used %v, want b's newer report only", used)
	}
	// Reports of an object since replaced are not used.
	if got, used := w.withPeerEntries("ns/x", "uid-2", old, keep); used != nil || len(got["clusters"].([]any)) != 3 {
		t.Fatalf("a report of the replaced object was used: %v", got)
	}
}

func TestOnlyTheOwnerUsesOthersEntries(t *testing.T) {
	w := peerWorker("r1", "r3")
	w.tookReportEntries("ns/x", "uid-1", []string{"b"}, []any{map[string]any{"name": "b"}})
	old := map[string]any{}
	if got, used := w.withPeerEntries("ns/x", "uid-1", old, func(c string) bool { return c == "a" }); used != nil || len(got) != 0 {
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
	if _, used := w.withPeerEntries("ns/x", "uid-1", map[string]any{}, func(string) bool { return false }); used != nil {
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
