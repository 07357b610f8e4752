package sync

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	gosync "sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
)

// overdueShard is a replica's share whose fence of every member is held
// but, until writable is set, awaits its renewal.
type overdueShard struct {
	mu       gosync.Mutex
	writable bool
	serving  bool
	asked    int
}

func (s *overdueShard) WriteDeadline(string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	if !s.writable {
		return time.Time{}, false
	}
	return time.Now().Add(time.Minute), true
}

func (s *overdueShard) Serving(string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serving
}

func (s *overdueShard) Assigned(string) bool { return true }

func (s *overdueShard) times() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked
}

// A member's work that meets a fence whose renewal is overdue (the host
// apiserver slow to answer the Lease update) is kept and tried again, not
// dropped: dropped, the plan would never be carried out and the object
// would report the member as propagating for ever.
func TestWorkWaitsForAnOverdueFenceRenewal(t *testing.T) {
	shard := &overdueShard{serving: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &Engine{opts: Options{Shard: shard, ClusterWorkers: 1}, ctx: ctx, workers: map[string]*typeWorker{}}
	w := &typeWorker{e: e, name: "configmaps", states: map[string]*objectState{
		"ns/a": {clusters: map[string]*clusterEntry{"member1": {plan: &clusterPlan{action: actionSync}}}},
	}}
	e.workers[w.name] = w
	d := newClusterDispatcher(e, "member1")
	defer d.stop()
	d.add(w.name, "ns/a", promptPriority, 0)

	waitUntil(t, "the work tried again", func() bool { return shard.times() >= 3 })
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A create the member carried out but did not answer in time (a slow
// member apiserver) is remembered as possibly written, so that the next
// try reads the copy rather than creating it again and being refused.
func TestATimedOutCreateIsRememberedAsPossiblyWritten(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		// The create is carried out, but its answer never comes in time.
		<-release
		rw.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	defer close(release)
	registry := clusterclient.NewRegistry(clusterclient.ConfigOptions{})
	if _, err := registry.SetLocal("member1", &rest.Config{Host: srv.URL}); err != nil {
		t.Fatal(err)
	}
	e := &Engine{opts: Options{Registry: registry, ClusterTimeout: 100 * time.Millisecond}, ctx: context.Background()}
	w := &typeWorker{e: e, name: "configmaps", gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		target: targetType{kind: "ConfigMap", namespaced: true}, recorder: record.NewFakeRecorder(10),
		written: map[writeKey]writeRecord{}, changed: map[string]changeSeen{}}
	w.events = newMemberEvents(w.recorder, time.Hour, time.Hour)
	fed := placedOn("a", "member1")
	desired := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "ns"}}
	o := w.create(context.Background(), fed, "member1", desired, "h1", nil)
	if o.status != typesv1beta1.CreationTimedOut {
		t.Fatalf("status %q (%s), want CreationTimedOut", o.status, o.message)
	}
	if !w.wrote("member1", fed, "h1") {
		t.Fatal("a create that timed out is not remembered: the next try creates the copy again")
	}
	if w.lastWrite("member1", fed).at("h1", "1") {
		t.Fatal("a possible write is taken for a copy at a known resourceVersion")
	}
}

// A replica's status write refused with a 409 (another replica wrote the
// object first) is not sent again while the host cache still shows the
// version it was refused at: it would only be refused again. Once the
// cache moves on, it is.
func TestARefusedStatusWriteWaitsForANewerObject(t *testing.T) {
	scheme := runtime.NewScheme()
	host := fakedynamic.NewSimpleDynamicClient(scheme)
	patches := 0
	host.PrependReactor("patch", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		patches++
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "types.kubefed.io", Resource: "federatedconfigmaps"}, "a", errors.New("the object has been modified"))
	})
	w := &typeWorker{e: &Engine{host: host}, fedGVR: schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"},
		recorder: record.NewFakeRecorder(10), log: logr.Discard(), statusWritten: map[string]statusRecord{}}
	fed := placedOn("a", "member1")
	fed.SetUID("u1")
	fed.SetResourceVersion("5")
	fed.SetGeneration(1)
	keep := func(c string) bool { return c == "member1" }
	outcomes := []outcome{{cluster: "member1", listed: true}}
	write := func() {
		t.Helper()
		if requeue, err := w.writeStatus(context.Background(), "ns/a", fed, outcomes, "", "", keep, false); err != nil || requeue == 0 {
			t.Fatalf("requeue %s, err %v: want a retry", requeue, err)
		}
	}
	write()
	write()
	if patches != 1 {
		t.Fatalf("%d status patches at the same cached version, want 1", patches)
	}
	fed = fed.DeepCopy()
	fed.SetResourceVersion("6")
	w.statusSeen(fed)
	write()
	if patches != 2 {
		t.Fatalf("%d status patches once the cache moved on, want 2", patches)
	}
}
