package informermanager

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	pkgruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	fedv1b1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

const managedSelector = "kubefed.io/managed=true"

func TestInformersStartLazilyAndAreShared(t *testing.T) {
	a := newMember(configMap("web", true), configMap("plain", false))
	b := newMember(configMap("api", true))
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"lazy-a": a, "lazy-b": b})
	m.add(t, "lazy-a", "lazy-b")

	// Nothing is listed until someone subscribes.
	time.Sleep(100 * time.Millisecond)
	if n := len(a.Actions()) + len(b.Actions()); n != 0 {
		t.Fatalf("members got %d requests before any subscription", n)
	}
	if l, synced := m.Lister("lazy-a", configMaps); l != nil || synced {
		t.Fatalf("Lister before Subscribe = %v, %v; want nil, false", l, synced)
	}

	var first, second recorder
	defer m.Subscribe(configMaps, first.handle)()
	first.waitSeen(t, "lazy-a", Added, "web")
	first.waitSeen(t, "lazy-b", Added, "api")
	eventually(t, 5*time.Second, "both caches synced", func() bool {
		return m.HasSynced("lazy-a", configMaps) && m.HasSynced("lazy-b", configMaps)
	})

	// A later subscriber gets the cache replayed, from the same informer.
	defer m.Subscribe(configMaps, second.handle)()
	second.waitSeen(t, "lazy-a", Added, "web")
	second.waitSeen(t, "lazy-b", Added, "api")

	for name, c := range map[string]*fake.FakeDynamicClient{"lazy-a": a, "lazy-b": b} {
		lists, listSelectors := actions(c, "list", configMaps)
		_, watchSelectors := actions(c, "watch", configMaps)
		if lists != 1 {
			t.Errorf("%s got %d lists for two subscribers, want 1", name, lists)
		}
		for _, s := range append(listSelectors, watchSelectors...) {
			if s != managedSelector {
				t.Errorf("%s was listed or watched with selector %q, want %q", name, s, managedSelector)
			}
		}
		if n, _ := actions(c, "list", secrets); n != 0 {
			t.Errorf("%s got %d lists of an unsubscribed resource", name, n)
		}
	}
	for _, r := range []*recorder{&first, &second} {
		if r.seen("lazy-a", Added, "plain") {
			t.Error("a subscriber saw the unlabelled ConfigMap")
		}
	}

	lister, synced := m.Lister("lazy-a", configMaps)
	if lister == nil || !synced {
		t.Fatalf("Lister = %v, %v; want a synced lister", lister, synced)
	}
	if got, err := lister.Namespace(testNamespace).Get("web"); err != nil || got.GetName() != "web" {
		t.Errorf("Lister Get(web) = %v, %v", got, err)
	}
	if _, err := lister.Namespace(testNamespace).Get("plain"); !apierrors.IsNotFound(err) {
		t.Errorf("Lister Get(plain) error = %v, want NotFound", err)
	}
	if all, err := lister.List(labels.Everything()); err != nil || len(all) != 1 {
		t.Errorf("Lister List = %d objects, %v; want 1", len(all), err)
	}
}

func TestHandlersReceiveEveryChangeFromEveryCluster(t *testing.T) {
	a, b := newMember(), newMember()
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"fan-a": a, "fan-b": b})
	m.add(t, "fan-a", "fan-b")
	var r1, r2 recorder
	defer m.Subscribe(configMaps, r1.handle)()
	defer m.Subscribe(configMaps, r2.handle)()
	eventually(t, 5*time.Second, "caches synced", func() bool {
		return m.HasSynced("fan-a", configMaps) && m.HasSynced("fan-b", configMaps)
	})

	ctx := context.Background()
	create(t, a, configMap("one", true))
	create(t, b, configMap("two", true))
	create(t, a, configMap("unmanaged", false))

	updated := configMap("one", true)
	_ = unstructured.SetNestedField(updated.Object, "changed", "data", "key")
	if _, err := a.Resource(configMaps).Namespace(testNamespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Resource(configMaps).Namespace(testNamespace).Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, r := range []*recorder{&r1, &r2} {
		r.waitSeen(t, "fan-a", Added, "one")
		r.waitSeen(t, "fan-b", Added, "two")
		r.waitSeen(t, "fan-a", Updated, "one")
		r.waitSeen(t, "fan-a", Deleted, "one")
		if r.seen("fan-a", Added, "unmanaged") {
			t.Error("a subscriber saw an unlabelled ConfigMap")
		}
	}
	r1.mu.Lock()
	defer r1.mu.Unlock()
	for _, e := range r1.events {
		if e.Type != Updated {
			continue
		}
		if e.OldObject == nil {
			t.Fatal("Updated event has no OldObject")
		}
		if v, _, _ := unstructured.NestedString(e.Object.Object, "data", "key"); v != "changed" {
			t.Errorf("Updated event's object has data.key %q, want changed", v)
		}
		if v, _, _ := unstructured.NestedString(e.OldObject.Object, "data", "key"); v != "one" {
			t.Errorf("Updated event's old object has data.key %q, want one", v)
		}
	}
}

func TestUnchangedResourceVersionIsNotAnUpdate(t *testing.T) {
	var r recorder
	d := &delivery{cluster: "c", sub: &subscription{handler: r.handle}}
	obj := func(rv string) *unstructured.Unstructured {
		u := configMap("x", true)
		u.SetResourceVersion(rv)
		return u
	}
	d.OnUpdate(obj("5"), obj("5"))
	if r.count() != 0 {
		t.Fatal("an update with an unchanged resourceVersion was delivered")
	}
	d.OnUpdate(obj("5"), obj("6"))
	d.OnDelete(cache.DeletedFinalStateUnknown{Key: "default/x", Obj: obj("6")})
	if got := r.names(); !slices.Equal(got, []string{"c/x", "c/x"}) {
		t.Fatalf("events = %v, want an update and a delete from a tombstone", got)
	}
	if r.events[1].Type != Deleted {
		t.Errorf("tombstone delivered as %s", r.events[1].Type)
	}
}

func TestUnsubscribe(t *testing.T) {
	a := newMember(configMap("web", true))
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"unsub-a": a})
	m.add(t, "unsub-a")
	var r1, r2 recorder
	unsub1 := m.Subscribe(configMaps, r1.handle)
	unsub2 := m.Subscribe(configMaps, r2.handle)
	r1.waitSeen(t, "unsub-a", Added, "web")
	r2.waitSeen(t, "unsub-a", Added, "web")

	unsub1()
	unsub1() // harmless
	before := r1.count()
	create(t, a, configMap("after-first", true))
	r2.waitSeen(t, "unsub-a", Added, "after-first")
	if r1.count() != before {
		t.Errorf("unsubscribed handler got events: %v", r1.names())
	}
	if !m.HasSynced("unsub-a", configMaps) {
		t.Error("informer stopped while a subscriber remains")
	}

	unsub2()
	if l, synced := m.Lister("unsub-a", configMaps); l != nil || synced || m.HasSynced("unsub-a", configMaps) {
		t.Error("informer still serves after its last subscriber left")
	}
	if _, ok := metricValue(t, "kubefed_member_informer_synced", "unsub-a", configMaps); ok {
		t.Error("synced metric still exported for a stopped informer")
	}
	before2 := r2.count()
	create(t, a, configMap("after-last", true))
	time.Sleep(200 * time.Millisecond)
	if r2.count() != before2 {
		t.Errorf("handler got events after the last unsubscribe: %v", r2.names())
	}

	// Subscribing again starts a new informer, which lists again.
	var r3 recorder
	defer m.Subscribe(configMaps, r3.handle)()
	r3.waitSeen(t, "unsub-a", Added, "after-last")
	if n, _ := actions(a, "list", configMaps); n != 2 {
		t.Errorf("member got %d lists, want 2 (one per informer start)", n)
	}
}

func TestClustersAddedLaterJoinSubscriptions(t *testing.T) {
	a, b := newMember(configMap("in-a", true)), newMember(configMap("in-b", true))
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"late-a": a, "late-b": b})
	m.add(t, "late-a")
	var r recorder
	defer m.Subscribe(configMaps, r.handle)()
	r.waitSeen(t, "late-a", Added, "in-a")

	m.add(t, "late-b")
	r.waitSeen(t, "late-b", Added, "in-b")
	create(t, b, configMap("later", true))
	r.waitSeen(t, "late-b", Added, "later")
}

func TestRemoveClusterIsFinal(t *testing.T) {
	a, b := newMember(), newMember()
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"rm-a": a, "rm-b": b})
	m.add(t, "rm-a", "rm-b")

	var r recorder
	inHandler := make(chan struct{})
	release := make(chan struct{})
	var afterRemove atomic.Bool
	defer m.Subscribe(configMaps, func(e Event) {
		if afterRemove.Load() && e.Cluster == "rm-a" {
			t.Errorf("event from a removed cluster: %s %s", e.Type, e.Object.GetName())
		}
		if e.Object.GetName() == "block" {
			close(inHandler)
			<-release
			if afterRemove.Load() {
				t.Error("RemoveCluster returned while a handler call for the cluster was running")
			}
		}
		r.handle(e)
	})()
	// Deferred after the unsubscribe, so it runs first and a failing test
	// does not wait forever for the blocked handler.
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock()
	eventually(t, 5*time.Second, "caches synced", func() bool {
		return m.HasSynced("rm-a", configMaps) && m.HasSynced("rm-b", configMaps)
	})

	// RemoveCluster waits for a handler call that is under way.
	create(t, a, configMap("block", true))
	<-inHandler
	removed := callUntilGate(t, func() { m.RemoveCluster("rm-a") }, &afterRemove, "informermanager.(*delivery).close")
	unblock()
	waitClosed(t, "RemoveCluster to return after the handler did", removed)

	create(t, a, configMap("ignored", true))
	create(t, b, configMap("still-flowing", true))
	r.waitSeen(t, "rm-b", Added, "still-flowing")
	if r.seen("rm-a", Added, "ignored") {
		t.Error("event delivered from a removed cluster")
	}
	if l, _ := m.Lister("rm-a", configMaps); l != nil {
		t.Error("Lister of a removed cluster is not nil")
	}
	if _, err := m.Get(context.Background(), "rm-a", configMaps, testNamespace, "ignored"); !errors.Is(err, ErrUnknownCluster) {
		t.Errorf("Get from a removed cluster: %v, want ErrUnknownCluster", err)
	}
	if _, ok := metricValue(t, "kubefed_member_informer_synced", "rm-a", configMaps); ok {
		t.Error("synced metric still exported for a removed cluster")
	}
	m.RemoveCluster("rm-a") // harmless
}

func TestReplacingAClusterRestartsItsInformers(t *testing.T) {
	old, renewed := newMember(configMap("old", true)), newMember(configMap("new", true))
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"old-endpoint": old, "new-endpoint": renewed})
	if err := m.AddCluster("swap", &rest.Config{Host: "old-endpoint"}); err != nil {
		t.Fatal(err)
	}
	var r recorder
	defer m.Subscribe(configMaps, r.handle)()
	r.waitSeen(t, "swap", Added, "old")

	if err := m.AddCluster("swap", &rest.Config{Host: "new-endpoint"}); err != nil {
		t.Fatal(err)
	}
	r.waitSeen(t, "swap", Added, "new")
	eventually(t, 5*time.Second, "synced metric of the new informer", func() bool {
		v, ok := metricValue(t, "kubefed_member_informer_synced", "swap", configMaps)
		return ok && v == 1
	})
	create(t, old, configMap("stale", true))
	time.Sleep(100 * time.Millisecond)
	if r.seen("swap", Added, "stale") {
		t.Error("event delivered from the replaced configuration")
	}
}

// An object deleted while a cluster's clients changed (a rotated token: the
// old watch failing with 401 Unauthorized cannot report it) is not listed
// by the new informer; its subscribers hear of the deletion once the new
// one has synced, and nothing of the objects that are still there.
func TestReplacingAClusterReportsWhatWentMeanwhileAsDeleted(t *testing.T) {
	old, renewed := newMember(configMap("kept", true), configMap("gone", true)), newMember(configMap("kept", true))
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"old-endpoint": old, "new-endpoint": renewed})
	if err := m.AddCluster("swap", &rest.Config{Host: "old-endpoint"}); err != nil {
		t.Fatal(err)
	}
	var r recorder
	defer m.Subscribe(configMaps, r.handle)()
	r.waitSeen(t, "swap", Added, "gone")
	r.waitSeen(t, "swap", Added, "kept")

	if err := m.AddCluster("swap", &rest.Config{Host: "new-endpoint"}); err != nil {
		t.Fatal(err)
	}
	r.waitSeen(t, "swap", Deleted, "gone")
	if r.seen("swap", Deleted, "kept") {
		t.Error("an object the new clients list was reported deleted")
	}
}

func TestManagedFieldsAreStripped(t *testing.T) {
	cm := configMap("web", true)
	cm.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
	a := newMember(cm)
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"strip": a})
	m.add(t, "strip")
	var r recorder
	defer m.Subscribe(configMaps, r.handle)()
	r.waitSeen(t, "strip", Added, "web")

	lister, _ := m.Lister("strip", configMaps)
	cached, err := lister.Namespace(testNamespace).Get("web")
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	delivered := r.events[0].Object
	r.mu.Unlock()
	for what, u := range map[string]*unstructured.Unstructured{"cached": cached, "delivered": delivered} {
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields"); found {
			t.Errorf("%s object still has managedFields", what)
		}
		if v, _, _ := unstructured.NestedString(u.Object, "data", "key"); v != "web" {
			t.Errorf("%s object lost its data: %v", what, u.Object)
		}
		if u.GetLabels()[fedv1b1.ManagedByKubeFedLabelKey] != "true" {
			t.Errorf("%s object lost its labels", what)
		}
	}
}

func TestFailingClusterDoesNotBlockOthers(t *testing.T) {
	down := newMember(configMap("down-obj", true))
	var downFails atomic.Bool
	downFails.Store(true)
	down.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, pkgruntime.Object, error) {
		if downFails.Load() {
			return true, nil, errConnectionRefused
		}
		return false, nil, nil
	})
	// A member whose API does not serve the resource answers 404.
	missing := newMember()
	missing.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, pkgruntime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "")
	})
	healthy := newMember(configMap("healthy-obj", true))
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"down": down, "missing": missing, "healthy": healthy})
	m.add(t, "down", "missing", "healthy")

	var r recorder
	start := time.Now()
	defer m.Subscribe(configMaps, r.handle)()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Subscribe took %s with unreachable members", d)
	}
	r.waitSeen(t, "healthy", Added, "healthy-obj")
	eventually(t, 5*time.Second, "healthy cache synced", func() bool { return m.HasSynced("healthy", configMaps) })
	create(t, healthy, configMap("more", true))
	r.waitSeen(t, "healthy", Added, "more")

	// The failing members retry in the background and report not synced.
	eventually(t, 10*time.Second, "a retried list of the down member", func() bool {
		n, _ := actions(down, "list", configMaps)
		return n >= 2
	})
	for _, name := range []string{"down", "missing"} {
		if m.HasSynced(name, configMaps) {
			t.Errorf("%s reports synced", name)
		}
		if _, synced := m.Lister(name, configMaps); synced {
			t.Errorf("Lister of %s reports synced", name)
		}
		if v, ok := metricValue(t, "kubefed_member_informer_synced", name, configMaps); !ok || v != 0 {
			t.Errorf("synced metric of %s = %v (exported %v), want 0", name, v, ok)
		}
	}
	if v, ok := metricValue(t, "kubefed_member_informer_synced", "healthy", configMaps); !ok || v != 1 {
		t.Errorf("synced metric of healthy = %v (exported %v), want 1", v, ok)
	}
	if v, ok := metricValue(t, "kubefed_member_informer_events_total", "healthy", configMaps); !ok || v < 2 {
		t.Errorf("events metric of healthy = %v (exported %v), want at least 2", v, ok)
	}

	// When the member comes back, its informer syncs on its own.
	downFails.Store(false)
	r.waitSeen(t, "down", Added, "down-obj")
	eventually(t, 5*time.Second, "recovered member synced", func() bool { return m.HasSynced("down", configMaps) })
}

func TestReadinessGatesStartOnly(t *testing.T) {
	a := newMember(configMap("web", true))
	ready := &readiness{ready: map[string]bool{}}
	m := newTestManager(t, Options{Readiness: ready}, map[string]*fake.FakeDynamicClient{"gated": a})
	m.add(t, "gated")
	var r recorder
	defer m.Subscribe(configMaps, r.handle)()

	time.Sleep(100 * time.Millisecond)
	if len(a.Actions()) != 0 || r.count() != 0 {
		t.Fatal("informer of a cluster that was never ready started")
	}
	if _, err := m.Get(context.Background(), "gated", configMaps, testNamespace, "web"); err != nil {
		t.Errorf("Get from a cluster that is not ready: %v", err)
	}

	ready.set("gated", true)
	m.ClusterReadinessChanged("gated", true)
	r.waitSeen(t, "gated", Added, "web")
	eventually(t, 5*time.Second, "cache synced", func() bool { return m.HasSynced("gated", configMaps) })

	// Not ready keeps the informer and its cache; it retries on its own.
	ready.set("gated", false)
	m.ClusterReadinessChanged("gated", false)
	if !m.HasSynced("gated", configMaps) {
		t.Fatal("cache dropped when the cluster became not ready")
	}
	create(t, a, configMap("while-not-ready", true))
	r.waitSeen(t, "gated", Added, "while-not-ready")
	if n, _ := actions(a, "list", configMaps); n != 1 {
		t.Errorf("member got %d lists, want 1", n)
	}
}

func TestGetReadsPastCacheAndSelector(t *testing.T) {
	a := newMember(configMap("plain", false))
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"get-a": a})
	m.add(t, "get-a")
	got, err := m.Get(context.Background(), "get-a", configMaps, testNamespace, "plain")
	if err != nil || got.GetName() != "plain" {
		t.Fatalf("Get(plain) = %v, %v", got, err)
	}
	if _, err := m.Get(context.Background(), "get-a", configMaps, testNamespace, "absent"); !apierrors.IsNotFound(err) {
		t.Errorf("Get(absent) error = %v, want NotFound", err)
	}
	_, err = m.Get(context.Background(), "nowhere", configMaps, testNamespace, "plain")
	if !errors.Is(err, ErrUnknownCluster) || apierrors.IsNotFound(err) {
		t.Errorf("Get from an unknown cluster: %v, want ErrUnknownCluster and not NotFound", err)
	}
}

func TestWatchClientHasNoRequestTimeout(t *testing.T) {
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"timeouts": newMember()})
	cfg := &rest.Config{Host: "timeouts", Timeout: 30 * time.Second}
	if err := m.AddCluster("timeouts", cfg); err != nil {
		t.Fatal(err)
	}
	var timeouts []time.Duration
	for _, c := range m.configs["timeouts"] {
		timeouts = append(timeouts, c.Timeout)
	}
	slices.Sort(timeouts)
	if !slices.Equal(timeouts, []time.Duration{0, 30 * time.Second}) {
		t.Errorf("client timeouts = %v, want a watch client without and a read client with 30s", timeouts)
	}
	if cfg.Timeout != 30*time.Second {
		t.Error("AddCluster modified the caller's configuration")
	}
}

func TestEverythingSelectorSeesUnlabelledObjects(t *testing.T) {
	a := newMember(configMap("plain", false))
	m := newTestManager(t, Options{LabelSelector: labels.Everything()}, map[string]*fake.FakeDynamicClient{"all": a})
	m.add(t, "all")
	var r recorder
	defer m.Subscribe(configMaps, r.handle)()
	r.waitSeen(t, "all", Added, "plain")
	if _, selectors := actions(a, "list", configMaps); len(selectors) != 1 || selectors[0] != "" {
		t.Errorf("list selectors = %q, want none", selectors)
	}
}

func TestSlowHandlerDoesNotDelayOthers(t *testing.T) {
	a := newMember()
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"slow": a})
	m.add(t, "slow")
	release := make(chan struct{})
	var once atomic.Bool
	defer m.Subscribe(configMaps, func(Event) {
		if once.CompareAndSwap(false, true) {
			<-release
		}
	})()
	defer close(release) // runs before the unsubscribe above, which waits for the handler
	var fast recorder
	defer m.Subscribe(configMaps, fast.handle)()
	eventually(t, 5*time.Second, "cache synced", func() bool { return m.HasSynced("slow", configMaps) })

	for _, name := range []string{"first", "second", "third"} {
		create(t, a, configMap(name, true))
	}
	fast.waitSeen(t, "slow", Added, "third")
}

func TestStopEndsEverything(t *testing.T) {
	before := runtime.NumGoroutine()

	down := newMember()
	down.PrependReactor("list", "*", func(clienttesting.Action) (bool, pkgruntime.Object, error) {
		return true, nil, errConnectionRefused
	})
	a, b := newMember(configMap("web", true)), newMember()
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"stop-a": a, "stop-b": b, "stop-down": down})
	m.add(t, "stop-a", "stop-b", "stop-down")
	var r recorder
	var afterStop atomic.Bool
	m.Subscribe(configMaps, func(e Event) {
		if afterStop.Load() {
			t.Errorf("event after Stop: %s/%s", e.Cluster, e.Object.GetName())
		}
		r.handle(e)
	})
	unsubSecrets := m.Subscribe(secrets, func(Event) {})
	r.waitSeen(t, "stop-a", Added, "web")
	eventually(t, 5*time.Second, "caches synced", func() bool {
		return m.HasSynced("stop-a", secrets) && m.HasSynced("stop-b", configMaps)
	})

	m.Stop()
	afterStop.Store(true)
	m.Stop() // harmless
	unsubSecrets()
	create(t, a, configMap("after-stop", true))

	if err := m.AddCluster("stop-c", &rest.Config{Host: "stop-a"}); !errors.Is(err, ErrStopped) {
		t.Errorf("AddCluster after Stop: %v, want ErrStopped", err)
	}
	m.Subscribe(configMaps, func(Event) { t.Error("handler subscribed after Stop was called") })()
	if m.HasSynced("stop-a", configMaps) {
		t.Error("HasSynced after Stop")
	}

	// goleak is not a dependency of this module, so look for leftovers the
	// way it does: by the functions on every goroutine's stack.
	eventually(t, 10*time.Second, "informer goroutines to end", func() bool {
		return len(informerGoroutines()) == 0 && runtime.NumGoroutine() <= before
	})
}

// informerGoroutines returns the stacks of goroutines running informer,
// reflector, watch or manager code.
func informerGoroutines() []string {
	return goroutinesIn("k8s.io/client-go/tools/cache.", "k8s.io/apimachinery/pkg/watch.", "informermanager.(*")
}

// goroutinesIn returns the stacks of goroutines with any of the markers
// (function names) on their stack.
func goroutinesIn(markers ...string) []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, marker := range markers {
			if strings.Contains(g, marker) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

func TestUnsubscribeWaitsForRunningHandler(t *testing.T) {
	a := newMember()
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"wait": a})
	m.add(t, "wait")
	// Another subscriber keeps the informer running, so that only this
	// subscription's delivery ends.
	var other recorder
	t.Cleanup(m.Subscribe(configMaps, other.handle))

	inHandler := make(chan struct{})
	release := make(chan struct{})
	var unsubscribed atomic.Bool
	unsub := m.Subscribe(configMaps, func(e Event) {
		if unsubscribed.Load() {
			t.Errorf("handler called after unsubscribe returned: %s", e.Object.GetName())
		}
		if e.Object.GetName() == "block" {
			close(inHandler)
			<-release
			if unsubscribed.Load() {
				t.Error("unsubscribe returned while the handler was running")
			}
		}
	})
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock) // runs before the cleanups above, which wait for the handler
	eventually(t, 5*time.Second, "cache synced", func() bool { return m.HasSynced("wait", configMaps) })
	create(t, a, configMap("block", true))
	<-inHandler
	// Queued behind the blocked call; it must never be delivered.
	create(t, a, configMap("queued", true))

	done := callUntilGate(t, unsub, &unsubscribed, "informermanager.(*subscription).close", "informermanager.(*delivery).close")
	unblock()
	waitClosed(t, "unsubscribe to return after the handler did", done)
	// The informer handed "queued" to its listeners: the one still
	// subscribed has it.
	other.waitSeen(t, "wait", Added, "queued")
}

// A RemoveCluster under way has taken the cluster's deliveries out of the
// Manager's maps, where unsubscribe cannot find them, and closes them only
// once the running handler call returns. Unsubscribing meanwhile must still
// wait for that call.
func TestUnsubscribeWaitsForHandlersOfAClusterBeingRemoved(t *testing.T) {
	a := newMember()
	m := newTestManager(t, Options{}, map[string]*fake.FakeDynamicClient{"going": a})
	m.add(t, "going")

	inHandler := make(chan struct{})
	release := make(chan struct{})
	var unsubscribed atomic.Bool
	unsub := m.Subscribe(configMaps, func(e Event) {
		if e.Object.GetName() != "block" {
			return
		}
		close(inHandler)
		<-release
		if unsubscribed.Load() {
			t.Error("unsubscribe returned while a handler call of the subscription was running")
		}
	})
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock)
	eventually(t, 5*time.Second, "cache synced", func() bool { return m.HasSynced("going", configMaps) })
	create(t, a, configMap("block", true))
	<-inHandler

	removed := make(chan struct{})
	go func() {
		m.RemoveCluster("going")
		close(removed)
	}()
	eventually(t, 5*time.Second, "the cluster out of the maps", func() bool {
		l, _ := m.Lister("going", configMaps)
		return l == nil
	})
	done := callUntilGate(t, unsub, &unsubscribed, "informermanager.(*subscription).close")
	unblock()
	waitClosed(t, "unsubscribe to return after the handler did", done)
	waitClosed(t, "RemoveCluster to return after the handler did", removed)
}

// callUntilGate runs call in a goroutine, where it should wait at a gate
// (one of the functions named gates) for a handler call that the test holds. It
// returns once call has returned, which is wrong, or waits at the gate: a
// positive signal either way, which the held handler, once released, tells
// apart by returned, set when call returns. done closes then.
func callUntilGate(t *testing.T, call func(), returned *atomic.Bool, gates ...string) (done <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{})
	go func() {
		call()
		returned.Store(true)
		close(ch)
	}()
	eventually(t, 5*time.Second, "the call to return or wait at a gate", func() bool {
		select {
		case <-ch:
			return true
		default:
			return len(goroutinesIn(gates...)) > 0
		}
	})
	return ch
}

func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for " + what)
	}
}
