package typeconfig

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	corev1beta1 "github.com/kubefed-io/kubefed/api/core/v1beta1"
)

// fakeMember is a member cluster whose discovery the test scripts.
type fakeMember struct {
	name       string
	generation uint64
	discovery  discovery.DiscoveryInterface
}

func (m *fakeMember) ClusterName() string { return m.name }
func (m *fakeMember) Generation() uint64  { return m.generation }
func (m *fakeMember) Discovery() (discovery.DiscoveryInterface, error) {
	if m.discovery == nil {
		return nil, errors.New("no discovery client")
	}
	return m.discovery, nil
}

// scriptedFetch answers discoveries from a queue of results, each held
// until released, and counts them.
type scriptedFetch struct {
	calls   atomic.Int32
	release chan fetchResult
}

type fetchResult struct {
	apis *memberAPIs
	err  error
}

func newScriptedFetch() *scriptedFetch { return &scriptedFetch{release: make(chan fetchResult, 10)} }

func (s *scriptedFetch) fetch(ctx context.Context, _ member) (*memberAPIs, error) {
	s.calls.Add(1)
	select {
	case r := <-s.release:
		return r.apis, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func apisWith(types ...string) *memberAPIs {
	list := &metav1.APIResourceList{GroupVersion: "example.com/v1"}
	for _, t := range types {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: t, Kind: t})
	}
	apis, err := newMemberAPIs([]*metav1.APIResourceList{list}, nil)
	if err != nil {
		panic(err)
	}
	return apis
}

// testDiscovery is a memberDiscovery with a scripted fetch and short,
// test-sized durations; changes are counted per cluster.
func testDiscovery(ttl time.Duration) (*memberDiscovery, *scriptedFetch, *changes) {
	ch := &changes{}
	d := newMemberDiscovery(ttl, ch.record)
	s := newScriptedFetch()
	d.fetch = s.fetch
	d.wait = 200 * time.Millisecond
	d.timeout = 5 * time.Second
	d.retry = 100 * time.Millisecond
	return d, s, ch
}

type changes struct {
	mu    sync.Mutex
	names []string
}

func (c *changes) record(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names = append(c.names, name)
}

func (c *changes) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.names)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// discoveryEnded waits for the running discovery of the member name, if
// any, to end: it reports a change before it does.
func discoveryEnded(t *testing.T, d *memberDiscovery, name string) {
	t.Helper()
	d.mu.Lock()
	var running chan struct{}
	if e := d.entries[name]; e != nil {
		running = e.running
	}
	d.mu.Unlock()
	if running == nil {
		return
	}
	select {
	case <-running:
	case <-time.After(5 * time.Second):
		t.Fatalf("the discovery of %s never ended", name)
	}
}

func TestMemberDiscoveryCachesWithinTTL(t *testing.T) {
	d, s, ch := testDiscovery(time.Hour)
	m := &fakeMember{name: "member1", generation: 1}
	s.release <- fetchResult{apis: apisWith("widgets")}
	for i := range 3 {
		apis, err := d.apis(context.Background(), m)
		if err != nil || !apis.equal(apisWith("widgets")) {
			t.Fatalf("call %d: %v %v", i, apis, err)
		}
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("%d discoveries, want 1", n)
	}
	eventually(t, "the first answer reported as a change", func() bool { return ch.count() == 1 })
}

func TestMemberDiscoveryServesStaleAnswerWhileRefreshing(t *testing.T) {
	d, s, ch := testDiscovery(50 * time.Millisecond)
	m := &fakeMember{name: "member1", generation: 1}
	s.release <- fetchResult{apis: apisWith("widgets")}
	if _, err := d.apis(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	eventually(t, "first change", func() bool { return ch.count() == 1 })
	time.Sleep(60 * time.Millisecond)

	// The refresh is held: the caller gets the old answer at once.
	start := time.Now()
	apis, err := d.apis(context.Background(), m)
	if err != nil || !apis.equal(apisWith("widgets")) {
		t.Fatalf("stale answer: %v %v", apis, err)
	}
	if waited := time.Since(start); waited > 100*time.Millisecond {
		t.Errorf("waited %s for a member that answered before", waited)
	}
	eventually(t, "a refresh to start", func() bool { return s.calls.Load() == 2 })

	// A CRD installed meanwhile: the refresh reports a change.
	s.release <- fetchResult{apis: apisWith("widgets", "gadgets")}
	eventually(t, "the change reported", func() bool { return ch.count() == 2 })
	apis, _ = d.apis(context.Background(), m)
	if !apis.equal(apisWith("widgets", "gadgets")) {
		t.Errorf("after the refresh: %v", apis)
	}

	// An identical answer is no change.
	time.Sleep(60 * time.Millisecond)
	s.release <- fetchResult{apis: apisWith("widgets", "gadgets")}
	_, _ = d.apis(context.Background(), m)
	eventually(t, "a third discovery", func() bool { return s.calls.Load() == 3 })
	discoveryEnded(t, d, m.name)
	if n := ch.count(); n != 2 {
		t.Errorf("%d changes reported, want 2", n)
	}
}

func TestMemberDiscoveryBoundsTheWaitForAFirstAnswer(t *testing.T) {
	d, s, ch := testDiscovery(time.Hour)
	m := &fakeMember{name: "slow", generation: 1}

	// Many types reconciled while the member has not answered: one
	// discovery, and nobody waits past the shared deadline.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Go(func() { _, errs[i] = d.apis(context.Background(), m) })
	}
	wg.Wait()
	if waited := time.Since(start); waited > d.wait+150*time.Millisecond {
		t.Errorf("callers waited %s, want about %s", waited, d.wait)
	}
	for i, err := range errs {
		if !errors.Is(err, errDiscoveryPending) {
			t.Errorf("caller %d: %v, want errDiscoveryPending", i, err)
		}
	}
	// Later callers do not wait at all.
	start = time.Now()
	if _, err := d.apis(context.Background(), m); !errors.Is(err, errDiscoveryPending) {
		t.Errorf("late caller: %v", err)
	}
	if waited := time.Since(start); waited > 50*time.Millisecond {
		t.Errorf("a late caller waited %s", waited)
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("%d discoveries, want 1", n)
	}

	// The late answer re-evaluates the types.
	s.release <- fetchResult{apis: apisWith("widgets")}
	eventually(t, "the late answer reported", func() bool { return ch.count() == 1 })
	if apis, err := d.apis(context.Background(), m); err != nil || !apis.equal(apisWith("widgets")) {
		t.Errorf("after the answer: %v %v", apis, err)
	}
}

func TestMemberDiscoveryWaitEndsWithTheCallersContext(t *testing.T) {
	d, _, _ := testDiscovery(time.Hour)
	d.wait = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := d.apis(ctx, &fakeMember{name: "slow", generation: 1}); !errors.Is(err, errDiscoveryPending) {
		t.Errorf("err = %v", err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("waited %s past the caller's deadline", waited)
	}
}

func TestMemberDiscoveryRetriesAFailureAfterAPause(t *testing.T) {
	d, s, ch := testDiscovery(time.Hour)
	m := &fakeMember{name: "member1", generation: 1}
	s.release <- fetchResult{err: errors.New("connection refused")}
	if _, err := d.apis(context.Background(), m); err == nil || err.Error() != "connection refused" {
		t.Fatalf("err = %v", err)
	}
	// Within the retry pause the error is returned without asking again.
	if _, err := d.apis(context.Background(), m); err == nil || err.Error() != "connection refused" {
		t.Fatalf("err = %v", err)
	}
	if n := s.calls.Load(); n != 1 {
		t.Fatalf("%d discoveries within the retry pause, want 1", n)
	}
	time.Sleep(d.retry + 10*time.Millisecond)
	s.release <- fetchResult{apis: apisWith("widgets")}
	if apis, err := d.apis(context.Background(), m); err != nil || apis == nil {
		t.Fatalf("after the pause: %v %v", apis, err)
	}
	if ch.count() != 1 {
		t.Errorf("%d changes, want 1 (the failure is none)", ch.count())
	}
}

func TestMemberDiscoveryForgetAndNewClients(t *testing.T) {
	d, s, ch := testDiscovery(time.Hour)
	m := &fakeMember{name: "member1", generation: 1}
	s.release <- fetchResult{apis: apisWith("widgets")}
	if _, err := d.apis(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	eventually(t, "first change", func() bool { return ch.count() == 1 })

	// Rebuilt clients (new credentials) may see other APIs: ask again.
	m.generation = 2
	s.release <- fetchResult{apis: apisWith("gadgets")}
	if apis, _ := d.apis(context.Background(), m); !apis.equal(apisWith("gadgets")) {
		t.Errorf("after new clients: %v", apis)
	}
	// A member that became ready again is asked again.
	d.forget("member1")
	s.release <- fetchResult{apis: apisWith("widgets", "gadgets")}
	if apis, _ := d.apis(context.Background(), m); !apis.equal(apisWith("widgets", "gadgets")) {
		t.Errorf("after forget: %v", apis)
	}
	if n := s.calls.Load(); n != 3 {
		t.Errorf("%d discoveries, want 3", n)
	}

	// A discovery of a member forgotten meanwhile reports no change.
	d.ttl = time.Nanosecond
	before := ch.count()
	_, _ = d.apis(context.Background(), m)
	eventually(t, "a refresh to start", func() bool { return s.calls.Load() == 4 })
	d.mu.Lock()
	ended := d.entries["member1"].running
	d.mu.Unlock()
	d.forget("member1")
	s.release <- fetchResult{apis: apisWith("other")}
	<-ended // closed after any change is reported
	if ch.count() != before {
		t.Errorf("a forgotten member's discovery was reported as a change")
	}
}

func TestDiscoverMember(t *testing.T) {
	fake := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: discovered()}}
	apis, err := discoverMember(context.Background(), &fakeMember{name: "member1", discovery: fake})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := apis.serves(deployments); !ok {
		t.Error("deployments not found")
	}

	// A failed aggregated API leaves the rest usable.
	aggregated := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	fake.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{aggregated: errors.New("503")}}
	})
	apis, err = discoverMember(context.Background(), &fakeMember{name: "member1", discovery: fake})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := apis.serves(configMaps); !ok {
		t.Error("configmaps not found beside a failed group")
	}
	if _, err := apis.serves(corev1beta1.APIResource{Group: aggregated.Group, Version: aggregated.Version, Kind: "PodMetrics", PluralName: "pods", Scope: corev1beta1.NamespaceScope}); err == nil {
		t.Error("a type of the failed group is reported as known")
	}

	// Anything else fails the member.
	fake.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if _, err := discoverMember(context.Background(), &fakeMember{name: "member1", discovery: fake}); err == nil {
		t.Error("no error for a member that does not answer")
	}
	if _, err := discoverMember(context.Background(), &fakeMember{name: "member1"}); err == nil {
		t.Error("no error without a discovery client")
	}
}
