package sync

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/placement"
)

func placedOn(name, clusterName string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "FederatedConfigMap",
		"spec": map[string]any{"placement": map[string]any{
			"clusters": []any{map[string]any{"name": clusterName}},
		}},
	}}
	u.SetNamespace("ns")
	u.SetName(name)
	return u
}

// A member's readiness change re-plans its objects behind, not in front
// of, a change of another object: the readiness-flip bench's 10,000
// objects of one member once held new objects for seconds.
func TestClusterFanOutIsQueuedBehindObjectChanges(t *testing.T) {
	readiness := cluster.NewReadinessTracker("kube-federation-system")
	members := NewMemberCaches(clusterclient.NewRegistry(clusterclient.ConfigOptions{}), readiness, "", logr.Discard())
	defer members.Stop()
	w := &typeWorker{
		e:           &Engine{opts: Options{Members: members}},
		name:        "configmaps",
		gvr:         schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		informer:    toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &unstructured.Unstructured{}, 0, toolscache.Indexers{}),
		queue:       newQueue[string]("test-plan"),
		statusQueue: newQueue[string]("test-status"),
		states:      map[string]*objectState{},
	}
	defer w.queue.ShutDown()
	defer w.statusQueue.ShutDown()
	for _, name := range []string{"a", "b", "c"} {
		if err := w.informer.GetStore().Add(placedOn(name, "member3")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.informer.GetStore().Add(placedOn("unrelated", "member1")); err != nil {
		t.Fatal(err)
	}
	set := placement.NewClusterSet([]placement.Cluster{{Name: "member1", Ready: true}, {Name: "member3"}})
	w.enqueueForCluster("member3", set)
	// A new object arrives after the fan-out.
	w.enqueueObject(placedOn("new", "member1"))

	if got := w.queue.Len(); got != 4 {
		t.Fatalf("queued %d objects, want the 3 on member3 and the new one", got)
	}
	key, priority, _ := w.queue.GetWithPriority()
	if key != "ns/new" || priority != promptPriority {
		t.Fatalf("first out: %s at priority %d, want ns/new at the prompt priority", key, priority)
	}
	w.queue.Done(key)
	for range 3 {
		key, priority, _ := w.queue.GetWithPriority()
		if priority != bulkPriority || key == "ns/unrelated" {
			t.Fatalf("fan-out item %s at priority %d, want member3's objects at the bulk priority", key, priority)
		}
		w.queue.Done(key)
	}

	// The plan of a bulk item dispatches and reports at the bulk priority,
	// and a change of the object itself lifts it.
	w.publish("ns/a", &objectState{clusters: map[string]*clusterEntry{}}, bulkPriority)
	w.publish("ns/b", &objectState{clusters: map[string]*clusterEntry{}}, bulkPriority)
	w.publish("ns/b", &objectState{clusters: map[string]*clusterEntry{}}, promptPriority)
	key, priority, _ = w.statusQueue.GetWithPriority()
	if key != "ns/b" || priority != promptPriority {
		t.Fatalf("first status out: %s at priority %d, want ns/b lifted to the prompt priority", key, priority)
	}
	key, priority, _ = w.statusQueue.GetWithPriority()
	if key != "ns/a" || priority != bulkPriority {
		t.Fatalf("second status out: %s at priority %d, want ns/a at the bulk priority", key, priority)
	}
}

// A retry, after an error or when asked to look again, keeps the work's
// priority: a bulk item failing does not jump the queue.
func TestSettleKeepsThePriority(t *testing.T) {
	w := &typeWorker{}
	q := newQueue[string]("test-settle")
	defer q.ShutDown()
	for _, tc := range []struct {
		key      string
		priority int
		requeue  time.Duration
		err      error
	}{
		{"ns/failed", bulkPriority, 0, errors.New("boom")},
		{"ns/again", bulkPriority, 10 * time.Millisecond, nil},
		{"ns/prompt", promptPriority, 10 * time.Millisecond, nil},
	} {
		enqueue(q, tc.key, tc.priority, 0)
		key, _, _ := q.GetWithPriority()
		w.settle(q, key, tc.priority, tc.requeue, tc.err, "test")
		q.Done(key)
		got, priority, _ := q.GetWithPriority()
		if got != tc.key || priority != tc.priority {
			t.Errorf("%s came back as %s at priority %d, want priority %d", tc.key, got, priority, tc.priority)
		}
		q.Done(got)
	}
}

// The status writes of bulk work (a member's readiness change re-plans
// thousands of objects) hold at most the bulk gate's slots of the host at a
// time, while a new object's status write does not wait for a slot: in the
// readiness-flip bench, 32 status workers writing re-planned objects held
// new objects' writes behind theirs.
func TestBulkStatusWritesAreBoundedAndPromptOnesAreNot(t *testing.T) {
	var mu gosync.Mutex
	inFlight := map[string]bool{}
	entered := make(chan string, 16)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPatch {
			http.Error(rw, "unexpected", http.StatusMethodNotAllowed)
			return
		}
		// .../federatedconfigmaps/<name>/status
		parts := strings.Split(r.URL.Path, "/")
		name := parts[len(parts)-2]
		mu.Lock()
		inFlight[name] = true
		mu.Unlock()
		entered <- name
		<-release
		mu.Lock()
		delete(inFlight, name)
		mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(rw, `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedConfigMap","metadata":{"name":%q,"namespace":"ns","resourceVersion":"2"}}`, name)
	}))
	defer srv.Close()
	// Released before the server closes, also when the test fails.
	var releaseOnce gosync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseAll()
	host, err := dynamic.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	const slots = 2
	// No floor: a bulk write that reaches the gate after the prompt one
	// (the goroutines start in any order) waits only for a slot, which is
	// what this test is about; the floor's pace is TestBulkGateSlots'.
	w := &typeWorker{e: &Engine{host: host, bulk: newBulkGate(slots, time.Hour, 0)},
		fedGVR:   schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federatedconfigmaps"},
		recorder: record.NewFakeRecorder(10), log: logr.Discard(), statusWritten: map[string]statusRecord{}}
	write := func(name string, bulk bool, done chan<- error) {
		fed := placedOn(name, "member1")
		fed.SetUID(types.UID("uid-" + name))
		fed.SetGeneration(1)
		fed.SetResourceVersion("1")
		_, err := w.writeStatus(context.Background(), "ns/"+name, fed, []outcome{{cluster: "member1", listed: true}}, "", "", nil, bulk)
		done <- err
	}
	done := make(chan error, 16)
	bulk := []string{"bulk-0", "bulk-1", "bulk-2", "bulk-3", "bulk-4"}
	for _, name := range bulk {
		go write(name, true, done)
	}
	for range slots {
		<-entered
	}
	go write("prompt", false, done)
	// The prompt write reaching the host is the signal that the rest of
	// the bulk writes had the time to get there too, had they no bound.
	for name := range entered {
		if name == "prompt" {
			break
		}
		if strings.HasPrefix(name, "bulk") {
			mu.Lock()
			n := len(inFlight)
			mu.Unlock()
			if n > slots {
				t.Fatalf("%d bulk status writes in flight, want at most %d", n, slots)
			}
		}
	}
	mu.Lock()
	n := 0
	for name := range inFlight {
		if strings.HasPrefix(name, "bulk") {
			n++
		}
	}
	mu.Unlock()
	if n != slots {
		t.Fatalf("%d bulk status writes in flight beside a prompt one, want %d", n, slots)
	}
	releaseAll()
	for range len(bulk) + 1 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if len(w.e.bulk.slots) != 0 {
		t.Fatalf("%d bulk slots still held after every write", len(w.e.bulk.slots))
	}
}
