package sync

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

func fedObject(uid string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("types.kubefed.io/v1beta1")
	u.SetKind("FederatedDeployment")
	u.SetNamespace("ns")
	u.SetName("web")
	u.SetUID(types.UID(uid))
	return u
}

// receive waits for the next event the fake recorder got.
func receive(t *testing.T, r *record.FakeRecorder) string {
	t.Helper()
	select {
	case e := <-r.Events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event recorded")
		return ""
	}
}

// The members of one burst share one event; one member alone reads as
// KubeFed wrote it; reasons, notes and objects are not merged; a member
// twice in a burst is named once.
func TestMemberEventsOnePerBurst(t *testing.T) {
	r := record.NewFakeRecorder(100)
	m := newMemberEvents(r, 50*time.Millisecond, time.Hour)
	a, b := fedObject("a"), fedObject("b")
	for _, c := range []string{"member3", "member1", "member2", "member1"} {
		m.record(a, EventCreateInCluster, "Creating", "Deployment", "web", c, "", false)
	}
	if got, want := receive(t, r), `Normal CreateInCluster Creating Deployment "web" in clusters "member1", "member2", "member3"`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	m.record(b, EventCreateInCluster, "Creating", "Deployment", "web", "member1", "", false)
	if got, want := receive(t, r), `Normal CreateInCluster Creating Deployment "web" in cluster "member1"`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	m.record(a, EventUpdateInCluster, "Updating", "Deployment", "web", "member1", "", false)
	m.record(a, EventUpdateInCluster, "Updating", "Deployment", "web", "member2", adoptedNote, false)
	m.record(b, EventUpdateInCluster, "Updating", "Deployment", "web", "member2", "", false)
	// stop records what is pending at once: after it, the channel holds
	// every event there will be.
	m.stop()
	got := map[string]bool{}
	for len(r.Events) > 0 {
		got[<-r.Events] = true
	}
	want := map[string]bool{
		`Normal UpdateInCluster Updating Deployment "web" in cluster "member1"`:                                true,
		`Normal UpdateInCluster Updating Deployment "web" in cluster "member2" (adopting the existing object)`: true,
	}
	if len(got) != 3 {
		t.Fatalf("got %d distinct events, want 3 (two objects' updates are not merged): %v", len(got), got)
	}
	for e := range want {
		if !got[e] {
			t.Fatalf("missing %q in %v", e, got)
		}
	}

	// Once stopped, an event is recorded at once.
	m.record(a, EventDeleteInCluster, "Deleting", "Deployment", "web", "member1", "", false)
	if len(r.Events) != 1 {
		t.Fatalf("after stop, %d events recorded at once, want 1", len(r.Events))
	}
}

func TestMemberEventsNameAtMostMaxClusters(t *testing.T) {
	r := record.NewFakeRecorder(10)
	m := newMemberEvents(r, time.Hour, time.Hour)
	a := fedObject("a")
	for i := range maxEventClusters + 3 {
		m.record(a, EventDeleteInCluster, "Deleting", "ConfigMap", "web", fmt.Sprintf("m%02d", i), "", false)
	}
	m.stop()
	got := receive(t, r)
	want := fmt.Sprintf(`Normal DeleteInCluster Deleting ConfigMap "web" in clusters "m00", "m01", %s and 3 more`, `"m02", "m03", "m04", "m05", "m06", "m07", "m08", "m09", "m10", "m11", "m12", "m13", "m14", "m15", "m16", "m17", "m18", "m19"`)
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// noEvent fails if the fake recorder holds an event.
func noEvent(t *testing.T, r *record.FakeRecorder, why string) {
	t.Helper()
	select {
	case e := <-r.Events:
		t.Fatalf("%s: recorded %q", why, e)
	default:
	}
}

// statusEventsWorker is a worker whose status patches the host answers
// (counted) and whose per-member events wait an hour unless a status write
// records them, with fed, generation 2 of an object whose status is of
// generation 1, placed on member1.
func statusEventsWorker() (*typeWorker, *record.FakeRecorder, *int, *unstructured.Unstructured) {
	host := fakedynamic.NewSimpleDynamicClient(runtime.NewScheme())
	patches := new(int)
	host.PrependReactor("patch", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		*patches++
		u := &unstructured.Unstructured{}
		u.SetResourceVersion("6")
		return true, u, nil
	})
	events := record.NewFakeRecorder(10)
	w := &typeWorker{e: &Engine{host: host}, fedGVR: schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"},
		recorder: events, log: logr.Discard(), statusWritten: map[string]statusRecord{}}
	w.events = newMemberEvents(events, time.Hour, time.Hour)
	fed := placedOn("a", "member1")
	fed.SetUID("u1")
	fed.SetResourceVersion("5")
	fed.SetGeneration(2)
	fed.Object["status"] = map[string]any{"observedGeneration": int64(1)}
	return w, events, patches, fed
}

// A burst of a generation whose status is still to be written waits for
// that write, past eventWindow: a member answering late, before the write,
// shares the event. A burst opened after the write, or of an object whose
// status is not awaited, waits eventWindow; one whose write never comes,
// the status wait.
func TestMemberEventsOfAGenerationGoWithItsStatusWrite(t *testing.T) {
	r := record.NewFakeRecorder(10)
	m := newMemberEvents(r, 20*time.Millisecond, time.Hour)
	a, b := fedObject("a"), fedObject("b")
	m.record(a, EventCreateInCluster, "Creating", "Deployment", "web", "member1", "", true)
	m.record(b, EventCreateInCluster, "Creating", "Deployment", "web", "member1", "", false)
	if got, want := receive(t, r), `Normal CreateInCluster Creating Deployment "web" in cluster "member1"`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// Another window for b: a's burst, opened before b's, would have been
	// recorded by now on a window of its own.
	m.record(b, EventUpdateInCluster, "Updating", "Deployment", "web", "member1", "", false)
	receive(t, r)
	noEvent(t, r, "a burst awaiting its status write past the window")

	m.record(a, EventCreateInCluster, "Creating", "Deployment", "web", "member2", "", true)
	m.written(a.GetUID())
	if got, want := receive(t, r), `Normal CreateInCluster Creating Deployment "web" in clusters "member1", "member2"`; got != want {
		t.Fatalf("at the status write: got %q, want %q", got, want)
	}
	// After the write, a late member is an event of its own.
	m.record(a, EventCreateInCluster, "Creating", "Deployment", "web", "member3", "", false)
	if got, want := receive(t, r), `Normal CreateInCluster Creating Deployment "web" in cluster "member3"`; got != want {
		t.Fatalf("after the status write: got %q, want %q", got, want)
	}

	// The status wait bounds a burst whose write does not come, and its
	// timer, firing after the write recorded it, leaves a newer burst of
	// the same event alone.
	r = record.NewFakeRecorder(10)
	m = newMemberEvents(r, time.Hour, 50*time.Millisecond)
	m.record(a, EventCreateInCluster, "Creating", "Deployment", "web", "member1", "", true)
	m.written(a.GetUID())
	receive(t, r)
	m.record(a, EventCreateInCluster, "Creating", "Deployment", "web", "member2", "", false)
	c := fedObject("c")
	m.record(c, EventCreateInCluster, "Creating", "Deployment", "web", "member1", "", true)
	if got, want := receive(t, r), `Normal CreateInCluster Creating Deployment "web" in cluster "member1"`; got != want {
		t.Fatalf("a burst whose status write never came: got %q, want %q", got, want)
	}
	noEvent(t, r, "the timer of a burst recorded at its status write took a newer burst")
	m.stop()
	if got, want := receive(t, r), `Normal CreateInCluster Creating Deployment "web" in cluster "member2"`; got != want {
		t.Fatalf("at stop: got %q, want %q", got, want)
	}
}

// A type's per-member events of a generation whose status it has not
// written yet are recorded by its status write; once that generation's
// status is written, or while the object is deleted, they are not waiting
// for one.
func TestAGenerationsEventsGoWithItsStatusWrite(t *testing.T) {
	w, events, patches, fed := statusEventsWorker()
	if !w.awaitsStatus("ns/a", fed) {
		t.Fatal("generation 2 of an object whose status is of generation 1 does not await its status write")
	}
	w.recordEvent(fed, EventUpdateInCluster, "Updating", "ConfigMap", "a", "member1", "")
	noEvent(t, events, "before the status write")
	if _, err := w.writeStatus(context.Background(), "ns/a", fed, []outcome{{cluster: "member1", listed: true}}, "", "", nil, false); err != nil {
		t.Fatal(err)
	}
	if *patches != 1 {
		t.Fatalf("%d status patches, want 1", *patches)
	}
	if got, want := receive(t, events), `Normal UpdateInCluster Updating ConfigMap "a" in cluster "member1"`; got != want {
		t.Fatalf("at the status write: got %q, want %q", got, want)
	}
	if w.awaitsStatus("ns/a", fed) {
		t.Fatal("a generation whose status this engine wrote, the cache not showing it yet, still awaits its status write")
	}
	deleting := placedOn("b", "member1")
	deleting.SetGeneration(2)
	deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	if w.awaitsStatus("ns/b", deleting) {
		t.Fatal("an object being deleted awaits a status write")
	}
}

// An object whose status of its generation the host shows already (another
// writer's: the control plane's where an agent serves a Pull member, or a
// write this engine's cache had not shown when the event was recorded)
// needs no write, and the events that waited for one go then, not at the
// bound.
func TestEventsGoWhenTheStatusNeedsNoWrite(t *testing.T) {
	w, events, patches, fed := statusEventsWorker()
	w.recordEvent(fed, EventUpdateInCluster, "Updating", "ConfigMap", "a", "member1", "")
	noEvent(t, events, "before the status write")

	outcomes := []outcome{{cluster: "member1", listed: true}}
	shown := fed.DeepCopy()
	shown.SetResourceVersion("6")
	shown.Object["status"] = buildStatus(nil, 2, outcomes, "", "", time.Now(), nil)
	if _, err := w.writeStatus(context.Background(), "ns/a", shown, outcomes, "", "", nil, false); err != nil {
		t.Fatal(err)
	}
	if *patches != 0 {
		t.Fatalf("%d status patches of a status the host shows already, want 0", *patches)
	}
	if got, want := receive(t, events), `Normal UpdateInCluster Updating ConfigMap "a" in cluster "member1"`; got != want {
		t.Fatalf("when the status needed no write: got %q, want %q", got, want)
	}
}
