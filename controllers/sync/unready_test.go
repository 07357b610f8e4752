package sync

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/controllers/cluster"
	"github.com/kubefed-io/kubefed/pkg/clusterclient"
	"github.com/kubefed-io/kubefed/pkg/placement"
)

func unreadyEngine(t *testing.T, delay time.Duration, clusters ...*corev1beta1.KubeFedCluster) (*Engine, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := make([]client.Object, len(clusters))
	for i, c := range clusters {
		objs[i] = c
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	e := &Engine{
		opts:          Options{Client: c, Namespace: "kube-federation-system", UnavailableDelay: delay},
		ctx:           context.Background(),
		workers:       map[string]*typeWorker{},
		clusterEvents: workqueue.NewTyped[string](),
		actedReady:    map[string]bool{},
		fullFanOut:    map[string]bool{},
		spells:        map[string]*unreadySpell{},
	}
	t.Cleanup(func() {
		e.endSpells()
		e.clusterEvents.ShutDown()
	})
	return e, c
}

func setOf(ready bool, labels map[string]string) placement.ClusterSet {
	return placement.NewClusterSet([]placement.Cluster{{Name: "m", Ready: ready, Labels: labels}})
}

// scope is fanOutScope's answer in a comparable form.
type scope struct {
	full bool
	keys map[typedKey]struct{}
}

func keysOf(keys ...string) map[typedKey]struct{} {
	out := map[typedKey]struct{}{}
	for _, k := range keys {
		out[typedKey{"configmaps", k}] = struct{}{}
	}
	return out
}

// A member not Ready re-plans nothing until the unavailable delay has
// passed; back within it, only the objects planned meanwhile are planned
// again; past it, all of its objects are, and again when it is back. A
// change besides readiness re-plans everything at once.
func TestUnreadyMemberFanOutWaitsForTheDelay(t *testing.T) {
	const delay = time.Minute
	e, _ := unreadyEngine(t, delay)
	t0 := time.Unix(1_000_000, 0)
	step := func(what string, set placement.ClusterSet, now time.Time, want scope) {
		t.Helper()
		keys, full := e.fanOutScope("m", set, now)
		if full != want.full || len(keys) != len(want.keys) || !maps.Equal(keys, want.keys) {
			t.Fatalf("%s: full %v, keys %v; want full %v, keys %v", what, full, keys, want.full, want.keys)
		}
	}
	noLabels := map[string]string{}

	step("first seen", setOf(true, noLabels), t0, scope{full: true})
	step("the same readiness heard again", setOf(true, noLabels), t0, scope{})
	step("not ready", setOf(false, noLabels), t0, scope{})
	if spell := e.spells["m"]; spell == nil || spell.timer == nil {
		t.Fatal("no spell with a timer for the delay")
	}
	e.plannedUnready("m", "configmaps", "ns/new")
	e.plannedUnready("m", "configmaps", "ns/gone")
	step("not ready heard again within the delay", setOf(false, noLabels), t0.Add(delay/2), scope{})
	step("back within the delay", setOf(true, noLabels), t0.Add(delay-time.Second), scope{keys: keysOf("ns/new", "ns/gone")})
	if len(e.spells) != 0 {
		t.Fatalf("spells left: %v", e.spells)
	}

	t1 := t0.Add(time.Hour)
	step("not ready again", setOf(false, noLabels), t1, scope{})
	step("the delay passed", setOf(false, noLabels), t1.Add(delay), scope{full: true})
	e.plannedUnready("m", "configmaps", "ns/late")
	if len(e.spells) != 0 {
		t.Fatal("a plan after the fan-out started a spell: the member's return re-plans everything anyway")
	}
	step("the spell's timer after the fan-out", setOf(false, noLabels), t1.Add(delay+time.Second), scope{})
	step("back after the delay", setOf(true, noLabels), t1.Add(2*delay), scope{full: true})

	t2 := t1.Add(time.Hour)
	step("not ready once more", setOf(false, noLabels), t2, scope{})
	e.clusterEvent("m", true)
	step("labels changed meanwhile", setOf(false, map[string]string{"region": "x"}), t2.Add(time.Second), scope{full: true})
	if len(e.spells) != 0 {
		t.Fatal("a full fan-out left the spell")
	}
	step("back", setOf(true, map[string]string{"region": "x"}), t2.Add(2*time.Second), scope{full: true})
	step("unjoined", placement.NewClusterSet(nil), t2.Add(3*time.Second), scope{full: true})
	step("joined again", setOf(true, noLabels), t2.Add(4*time.Second), scope{full: true})
}

// Without a delay a member not Ready is reacted to at once.
func TestUnreadyMemberWithoutADelay(t *testing.T) {
	e, _ := unreadyEngine(t, 0)
	now := time.Now()
	if _, full := e.fanOutScope("m", setOf(true, nil), now); !full {
		t.Fatal("first seen: not a full fan-out")
	}
	if _, full := e.fanOutScope("m", setOf(false, nil), now); !full {
		t.Fatal("not ready: not a full fan-out")
	}
	e.plannedUnready("m", "configmaps", "ns/a")
	if len(e.spells) != 0 {
		t.Fatal("a spell without a delay")
	}
}

// A plan that read the member as not ready before its change was handled
// starts the spell, whose delay the change then keeps; one that read it
// before it was back, after its spell ended, is planned again at once.
func TestPlansRacingTheMembersChange(t *testing.T) {
	e, c := unreadyEngine(t, time.Minute, readyCluster("m", false))
	e.clustersWatched.Store(true)
	w := &typeWorker{name: "configmaps", queue: newQueue[string]("test-plan")}
	defer w.queue.ShutDown()
	e.workers["configmaps"] = w
	t0 := time.Now()
	e.actedReady["m"] = true

	// The cluster set shows m not ready; its change is still queued.
	e.plannedUnready("m", "configmaps", "ns/early")
	spell := e.spells["m"]
	if spell == nil {
		t.Fatal("no spell started by the plan")
	}
	if _, full := e.fanOutScope("m", setOf(false, nil), t0.Add(10*time.Second)); full {
		t.Fatal("the change handled after the plan re-planned everything")
	}
	if e.spells["m"] != spell || spell.timer == nil {
		t.Fatal("the change did not keep the plan's spell and time it")
	}

	// m is back: the set shows it ready and the spell ends.
	existing := &corev1beta1.KubeFedCluster{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "kube-federation-system", Name: "m"}, existing); err != nil {
		t.Fatal(err)
	}
	existing.Status = readyCluster("m", true).Status
	if err := c.Update(context.Background(), existing); err != nil {
		t.Fatal(err)
	}
	e.clustersGen.Add(1)
	keys, full := e.fanOutScope("m", e.clusterSet(), t0.Add(20*time.Second))
	if full || !maps.Equal(keys, keysOf("ns/early")) {
		t.Fatalf("back: full %v, keys %v", full, keys)
	}
	// A plan that read the set from before.
	e.plannedUnready("m", "configmaps", "ns/late")
	if len(e.spells) != 0 {
		t.Fatal("a stale plan started a spell of a member that is ready")
	}
	if w.queue.Len() != 1 {
		t.Fatalf("%d queued, want the stale plan's object", w.queue.Len())
	}
	if key, _, _ := w.queue.GetWithPriority(); key != "ns/late" {
		t.Fatalf("queued %s, want ns/late", key)
	}
}

// A member whose cache has not synced is reported ClusterNotReady while it
// is not Ready, at once, rather than holding the object's status as
// pending until the cache's grace: its objects are not planned again for
// it until the unavailable delay has passed.
func TestUnsyncedCacheOfAMemberNotReady(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	registry := clusterclient.NewRegistry(clusterclient.ConfigOptions{})
	if _, err := registry.SetLocal("m", &rest.Config{Host: srv.URL}); err != nil {
		t.Fatal(err)
	}
	members := NewMemberCaches(registry, cluster.NewReadinessTracker("kube-federation-system"), "", logr.Discard())
	defer members.Stop()
	for _, ready := range []bool{true, false} {
		e, _ := unreadyEngine(t, time.Minute, readyCluster("m", ready))
		e.opts.Members, e.opts.Registry = members, registry
		w := &typeWorker{e: e, name: "configmaps", gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			unsynced: map[string]time.Time{}}
		ok, o := w.memberCache("m")
		switch {
		case ok:
			t.Fatalf("ready %v: an unsynced cache trusted", ready)
		case ready && !o.pending:
			t.Fatalf("ready: %+v, want pending while the cache may still sync", o)
		case !ready && (o.pending || !o.listed || o.status != typesv1beta1.ClusterNotReady || o.requeue <= 0):
			t.Fatalf("not ready: %+v, want ClusterNotReady and a requeue", o)
		}
	}
}

// A copy whose federated object is gone is released in a member the
// cluster set shows Ready, even while the readiness tracker, which turns a
// moment after the KubeFedCluster's condition, still says it is not: the
// fan-out of the member's return reads the set, and a release skipped then
// would leave the copy labelled as managed for good.
func TestReleaseReadsReadinessFromTheClusterSet(t *testing.T) {
	const copy = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"stranded","namespace":"ns","resourceVersion":"5","labels":{"kubefed.io/managed":"true"}}}`
	srv := configMapMember(t, copy)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	registry, tracker, members := syncedMemberCaches(t, srv, gvr, "m")
	// The KubeFedCluster says Ready; the tracker has not caught up.
	tracker.Set("m", false)

	e, _ := unreadyEngine(t, time.Minute, readyCluster("m", true))
	e.opts.Members, e.opts.Registry, e.opts.Readiness = members, registry, tracker
	e.dispatchers = map[string]*clusterDispatcher{} // no ClusterWorkers: plans stay queued
	w := &typeWorker{e: e, name: "configmaps", gvr: gvr, target: targetType{namespaced: true},
		states: map[string]*objectState{}, statusQueue: newQueue[string]("test-status")}
	defer w.statusQueue.ShutDown()
	e.workers["configmaps"] = w

	w.planRelease("ns/stranded", promptPriority)
	if p := w.planFor("ns/stranded", "m"); p == nil || p.action != actionRelease {
		t.Fatalf("plan for m: %+v, want the copy released", p)
	}
	if d := e.dispatchers["m"]; d == nil || d.queue.Len() != 1 {
		t.Fatal("the release was not handed to the member's dispatcher")
	}
	if len(e.spells) != 0 {
		t.Fatal("a member the set shows Ready was treated as not ready")
	}
}

// configMapMember is a member API server that lists and streams the
// ConfigMaps given (JSON), then holds every watch open; it closes after
// the cleanups registered after it (the caches watching it) ran.
func configMapMember(t *testing.T, items ...string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		switch {
		case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
			// A streaming list: the items, then the end of the initial events.
			for _, item := range items {
				_, _ = rw.Write([]byte(`{"type":"ADDED","object":` + item + "}\n"))
			}
			_, _ = rw.Write([]byte(`{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"5","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n"))
			rw.(http.Flusher).Flush()
			<-r.Context().Done()
		case q.Get("watch") == "true":
			<-r.Context().Done()
		default:
			_, _ = rw.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"5"},"items":[` + strings.Join(items, ",") + "]}"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
