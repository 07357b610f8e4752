package sync

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
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
	m := newMemberEvents(r, 50*time.Millisecond)
	a, b := fedObject("a"), fedObject("b")
	for _, c := range []string{"member3", "member1", "member2", "member1"} {
		m.record(a, EventCreateInCluster, "Creating", "Deployment", "web", c, "")
	}
	if got, want := receive(t, r), `Normal CreateInCluster Creating Deployment "web" in clusters "member1", "member2", "member3"`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	m.record(b, EventCreateInCluster, "Creating", "Deployment", "web", "member1", "")
	if got, want := receive(t, r), `Normal CreateInCluster Creating Deployment "web" in cluster "member1"`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	m.record(a, EventUpdateInCluster, "Updating", "Deployment", "web", "member1", "")
	m.record(a, EventUpdateInCluster, "Updating", "Deployment", "web", "member2", adoptedNote)
	m.record(b, EventUpdateInCluster, "Updating", "Deployment", "web", "member2", "")
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
	m.record(a, EventDeleteInCluster, "Deleting", "Deployment", "web", "member1", "")
	if len(r.Events) != 1 {
		t.Fatalf("after stop, %d events recorded at once, want 1", len(r.Events))
	}
}

func TestMemberEventsNameAtMostMaxClusters(t *testing.T) {
	r := record.NewFakeRecorder(10)
	m := newMemberEvents(r, time.Hour)
	a := fedObject("a")
	for i := range maxEventClusters + 3 {
		m.record(a, EventDeleteInCluster, "Deleting", "ConfigMap", "web", fmt.Sprintf("m%02d", i), "")
	}
	m.stop()
	got := receive(t, r)
	want := fmt.Sprintf(`Normal DeleteInCluster Deleting ConfigMap "web" in clusters "m00", "m01", %s and 3 more`, `"m02", "m03", "m04", "m05", "m06", "m07", "m08", "m09", "m10", "m11", "m12", "m13", "m14", "m15", "m16", "m17", "m18", "m19"`)
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
