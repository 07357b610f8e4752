package sync

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/placement"
)

type fakePulled map[string]bool

func (f fakePulled) Pulled(c string) bool { return f[c] }
func (f fakePulled) Any() bool            { return len(f) > 0 }

type assignedShard struct{ assigned map[string]bool }

func (assignedShard) Serving(string) bool                    { return true }
func (s assignedShard) Assigned(c string) bool               { return s.assigned[c] }
func (assignedShard) WriteDeadline(string) (time.Time, bool) { return time.Time{}, true }

// The control plane writes a Pull-mode member's entries while the member
// is not ready, as a push member's would show ClusterNotReady, and stops
// once it is Ready (its agent writes them); an agent never stands in, nor
// does a replica the member's name does not hash to.
func TestStandsInForPullMembersThatAreNotReady(t *testing.T) {
	set := placement.NewClusterSet([]placement.Cluster{{Name: "edge-down"}, {Name: "edge-up", Ready: true}, {Name: "push-down"}})
	e := &Engine{opts: Options{Pulled: fakePulled{"edge-down": true, "edge-up": true}}}
	for c, want := range map[string]bool{"edge-down": true, "edge-up": false, "push-down": false, "unjoined": false} {
		if got := e.standsIn(c, set); got != want {
			t.Errorf("standsIn(%s) = %v, want %v", c, got, want)
		}
	}
	agent := &Engine{opts: Options{Pulled: fakePulled{"edge-down": true}, Agent: true}}
	if agent.standsIn("edge-down", set) {
		t.Error("an agent stands in for its own cluster")
	}
	sharded := &Engine{opts: Options{Pulled: fakePulled{"edge-down": true}, Shard: assignedShard{assigned: map[string]bool{}}}}
	if sharded.standsIn("edge-down", set) {
		t.Error("a replica the member does not hash to stands in")
	}

	// The entry is spoken for only while the member is still not ready, as
	// the KubeFedClusters say when the status is written.
	scheme := runtime.NewScheme()
	if err := corev1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kfc := func(name string, ready corev1.ConditionStatus) *corev1beta1.KubeFedCluster {
		return &corev1beta1.KubeFedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-federation-system"},
			Spec:       corev1beta1.KubeFedClusterSpec{Mode: corev1beta1.ClusterModePull},
			Status:     corev1beta1.KubeFedClusterStatus{Conditions: []corev1beta1.ClusterCondition{{Type: corev1beta1.ClusterReady, Status: ready}}},
		}
	}
	down := kfc("edge-down", corev1.ConditionFalse)
	c := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(down, kfc("edge-up", corev1.ConditionTrue)).WithStatusSubresource(down).Build()
	e.ctx, e.opts.Client, e.opts.Namespace = context.Background(), c, "kube-federation-system"
	w := &typeWorker{e: e}
	st := &objectState{held: map[string]bool{}, standIn: map[string]bool{"edge-down": true}}
	keep := w.speaksFor(st)
	if !keep("edge-down") || keep("edge-up") {
		t.Errorf("speaks for edge-down %v, edge-up %v", keep("edge-down"), keep("edge-up"))
	}
	down.Status.Conditions[0].Status = corev1.ConditionTrue
	if err := c.Status().Update(context.Background(), down); err != nil {
		t.Fatal(err)
	}
	if w.speaksFor(st)("edge-down") {
		t.Error("speaks for a pull member's entry after it turned Ready")
	}
}

// What a replica saw of Pull-mode members' entries on an object goes when
// the object does, on every replica (not only on the one that releases its
// finalizer), and an object created again under the same name starts with
// nothing seen.
func TestPullEntriesSeenGoWithTheObject(t *testing.T) {
	w := &typeWorker{e: &Engine{opts: Options{Pulled: fakePulled{"edge": true}}}}
	fed := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "web", "namespace": "apps", "uid": "uid-1"},
		"status":   map[string]any{"clusters": []any{map[string]any{"name": "edge"}, map[string]any{"name": "push"}}},
	}}
	key := objectKey(fed)
	w.notePullEntries(fed)
	if !w.sawPullEntry(key, "uid-1", "edge") || w.sawPullEntry(key, "uid-1", "push") {
		t.Fatalf("seen: edge %v, push %v", w.sawPullEntry(key, "uid-1", "edge"), w.sawPullEntry(key, "uid-1", "push"))
	}
	if w.sawPullEntry(key, "uid-2", "edge") {
		t.Error("an object created again under the name shows its predecessor's entries as seen")
	}
	w.forgetGone(key)
	if w.sawPullEntry(key, "uid-1", "edge") || len(w.pullSeen) != 0 {
		t.Errorf("%d objects' entries kept after the object went", len(w.pullSeen))
	}
}

// A deletion waits for a selected Pull-mode member whose agent never
// reported the object: for the grace while the member is Ready (its agent
// may have made a copy and died before reporting it, which the health
// checks tell within the grace), then, once it is not ready, for as long
// as a deletion waits for any member not ready. An entry seen, or a member
// that is not pulled, holds nothing here.
func TestADeletionWaitsForAPullMemberThatNeverReported(t *testing.T) {
	deleted := func(ago time.Duration) *unstructured.Unstructured {
		fed := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "x", "namespace": "ns", "uid": "uid-1"},
			"spec":     map[string]any{"placement": map[string]any{"clusters": []any{map[string]any{"name": "edge"}}}},
		}}
		fed.SetDeletionTimestamp(&metav1.Time{Time: time.Now().Add(-ago)})
		return fed
	}
	w := &typeWorker{e: &Engine{opts: Options{Pulled: fakePulled{"edge": true}, PullReportGrace: 40 * time.Second,
		NotReadyClusterDeletionTimeout: 2 * time.Minute}}, pullSeen: map[string]pullEntriesSeen{}}
	ready := placement.NewClusterSet([]placement.Cluster{{Name: "edge", Ready: true}})
	notReady := placement.NewClusterSet([]placement.Cluster{{Name: "edge"}})
	for _, c := range []struct {
		name string
		set  placement.ClusterSet
		ago  time.Duration
		want bool
	}{
		{"ready, within the grace", ready, 20 * time.Second, true},
		{"ready, past the grace", ready, time.Minute, false},
		{"not ready, past the grace", notReady, time.Minute, true},
		{"not ready, past the deletion timeout", notReady, 3 * time.Minute, false},
	} {
		if got := w.pullMayHold(deleted(c.ago), c.set, map[string]bool{}); got != c.want {
			t.Errorf("%s: holds %v, want %v", c.name, got, c.want)
		}
	}
	if w.pullMayHold(deleted(time.Second), ready, map[string]bool{"edge": true}) {
		t.Error("a listed member is othersHold's to judge, not the grace's")
	}
	w.notePullEntry("ns/x", "uid-1", "edge")
	if w.pullMayHold(deleted(time.Second), notReady, map[string]bool{}) {
		t.Error("an entry seen and gone is the agent saying its copy is gone")
	}
}

// A member that moved from Push to Pull mode is its agent's: this engine
// lets go of its dispatcher, its informers (fed by the push credentials
// that were withdrawn) and the records of its writes there.
func TestAMemberHandedToItsAgentIsLetGo(t *testing.T) {
	srv := configMapMember(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}`)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	_, _, members := syncedMemberCaches(t, srv, gvr, "edge")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &typeWorker{written: map[writeKey]writeRecord{{"edge", "ns/a"}: {hash: "h"}}}
	e := &Engine{opts: Options{Members: members, Pulled: fakePulled{"edge": true}, ClusterWorkers: 1}, ctx: ctx,
		workers: map[string]*typeWorker{"configmaps": w}, dispatchers: map[string]*clusterDispatcher{}}
	e.dispatchers["edge"] = newClusterDispatcher(e, "edge")
	e.letGo("edge")
	if e.takeDispatcher("edge") != nil {
		t.Error("the member's dispatcher is still there")
	}
	if lister, _ := members.Lister("edge", gvr); lister != nil {
		t.Error("the member's informers still run")
	}
	if len(w.written) != 0 {
		t.Errorf("records of writes to the member left: %v", w.written)
	}
}

// No dispatcher is started for a member this engine does not serve: a plan
// made just before the member was handed over (to another replica, or to
// its agent) would otherwise start one that nothing stops.
func TestNoDispatcherForAMemberNotServed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &Engine{opts: Options{Pulled: fakePulled{"edge": true}, ClusterWorkers: 1}, ctx: ctx, dispatchers: map[string]*clusterDispatcher{}}
	if d := e.dispatcher("edge"); d != nil {
		t.Fatal("a dispatcher was started for a member its agent serves")
	}
	if d := e.dispatcher("member1"); d == nil {
		t.Fatal("no dispatcher for a member served here")
	}
	if len(e.dispatchers) != 1 {
		t.Fatalf("dispatchers: %v", e.dispatchers)
	}
	e.takeDispatcher("member1").stop()
}
