package sharding

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// memLeases is an apiserver's Lease semantics in memory: resourceVersions,
// optimistic concurrency and preconditions.
type memLeases struct {
	mu     sync.Mutex
	rv     int
	leases map[string]coordinationv1.Lease
	writes int
}

var leaseGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func newMemLeases() *memLeases { return &memLeases{leases: map[string]coordinationv1.Lease{}} }

func (m *memLeases) list(context.Context) ([]coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]coordinationv1.Lease, 0, len(m.leases))
	for _, l := range m.leases {
		out = append(out, *l.DeepCopy())
	}
	return out, nil
}

func (m *memLeases) get(_ context.Context, name string) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.leases[name]
	if !ok {
		return nil, apierrors.NewNotFound(leaseGR, name)
	}
	return l.DeepCopy(), nil
}

func (m *memLeases) create(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.leases[l.Name]; ok {
		return nil, apierrors.NewAlreadyExists(leaseGR, l.Name)
	}
	m.rv++
	m.writes++
	n := *l.DeepCopy()
	n.ResourceVersion = strconv.Itoa(m.rv)
	m.leases[l.Name] = n
	return n.DeepCopy(), nil
}

func (m *memLeases) update(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.leases[l.Name]
	if !ok {
		return nil, apierrors.NewNotFound(leaseGR, l.Name)
	}
	if cur.ResourceVersion != l.ResourceVersion {
		return nil, apierrors.NewConflict(leaseGR, l.Name, fmt.Errorf("resourceVersion %s, not %s", cur.ResourceVersion, l.ResourceVersion))
	}
	m.rv++
	m.writes++
	n := *l.DeepCopy()
	n.ResourceVersion = strconv.Itoa(m.rv)
	m.leases[l.Name] = n
	return n.DeepCopy(), nil
}

func (m *memLeases) delete(_ context.Context, name, rv string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.leases[name]
	if !ok {
		return apierrors.NewNotFound(leaseGR, name)
	}
	if rv != "" && cur.ResourceVersion != rv {
		return apierrors.NewConflict(leaseGR, name, fmt.Errorf("precondition"))
	}
	delete(m.leases, name)
	return nil
}

func (m *memLeases) holder(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.leases[name]
	if !ok || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// recorder is a Handler that checks its calls alternate per cluster.
type recorder struct {
	t    *testing.T
	mu   sync.Mutex
	held map[string]bool
	log  []string
}

func (r *recorder) Acquired(c string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[c] {
		r.t.Errorf("acquired %s twice", c)
	}
	r.held[c] = true
	r.log = append(r.log, "+"+c)
}

func (r *recorder) Releasing(c string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.held[c] {
		r.t.Errorf("released %s, never acquired", c)
	}
	r.held[c] = false
	r.log = append(r.log, "-"+c)
}

type testFleet struct {
	t        *testing.T
	store    *memLeases
	clock    *fakeClock
	clusters []string
	shards   map[string]*Shard
	handlers map[string]*recorder
	// stopped replicas take no more steps, as a killed process.
	stopped map[string]bool
}

func newFleet(t *testing.T, clusters []string, replicas ...string) *testFleet {
	f := &testFleet{t: t, store: newMemLeases(), clock: &fakeClock{t: time.Unix(1_800_000_000, 0)},
		clusters: clusters, shards: map[string]*Shard{}, handlers: map[string]*recorder{}, stopped: map[string]bool{}}
	for _, r := range replicas {
		f.add(r)
	}
	return f
}

func (f *testFleet) add(identity string) *Shard {
	h := &recorder{t: f.t, held: map[string]bool{}}
	s, err := New(Options{Identity: identity, Namespace: "kube-federation-system", LeaseDuration: 15 * time.Second,
		RetryPeriod: 2 * time.Second, Clusters: func() ([]string, error) { return f.clusters, nil }, Handler: h, Log: logr.Discard()})
	if err != nil {
		f.t.Fatal(err)
	}
	s.store, s.now = f.store, f.clock.now
	f.shards[identity], f.handlers[identity] = s, h
	return s
}

// tick advances the clock one retry period and steps every running
// replica, checking after each step that no member has two writers.
func (f *testFleet) tick() {
	f.t.Helper()
	f.clock.advance(2 * time.Second)
	ids := make([]string, 0, len(f.shards))
	for id := range f.shards {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if !f.stopped[id] {
			f.shards[id].step(context.Background())
		}
		f.checkOneWriter()
	}
}

func (f *testFleet) checkOneWriter() {
	f.t.Helper()
	for _, c := range f.clusters {
		var writers []string
		for id, s := range f.shards {
			if s.Holds(c) {
				writers = append(writers, id)
			}
		}
		if len(writers) > 1 {
			f.t.Fatalf("at %s cluster %s has writers %v", f.clock.now().Format(time.TimeOnly), c, writers)
		}
	}
}

// owners maps each cluster to the replica that may write to it now.
func (f *testFleet) owners() map[string]string {
	out := map[string]string{}
	for _, c := range f.clusters {
		for id, s := range f.shards {
			if s.Holds(c) {
				out[c] = id
			}
		}
	}
	return out
}

func (f *testFleet) settle(want []string) map[string]string {
	f.t.Helper()
	for range 20 {
		f.tick()
		o := f.owners()
		if len(o) == len(f.clusters) {
			ok := true
			assigned := Assign(f.clusters, want)
			for c, id := range o {
				ok = ok && id == assigned[c]
			}
			if ok {
				return o
			}
		}
	}
	f.t.Fatalf("no settled assignment over %v: %v", want, f.owners())
	return nil
}

func TestShardsSplitTheMembersAndEachHasOneWriter(t *testing.T) {
	f := newFleet(t, names("member", 12), "a", "b", "c")
	owners := f.settle([]string{"a", "b", "c"})
	per := map[string]int{}
	for _, id := range owners {
		per[id]++
	}
	if len(per) != 3 {
		t.Errorf("owners %v: not every replica serves a member", per)
	}
	for _, c := range f.clusters {
		if got := f.store.holder(FenceLeaseName(c)); got != owners[c] {
			t.Errorf("fence of %s held by %q in the API, %q by the replicas", c, got, owners[c])
		}
	}
	// Steady state: only renewals, a third of the duration apart.
	before := f.store.writes
	for range 15 { // 30 s
		f.tick()
	}
	renewals := f.store.writes - before
	// 3 replica and 12 fence Leases, renewed every 6 s (three ticks), over 30 s.
	if want := (3 + 12) * 5; renewals > want {
		t.Errorf("%d Lease writes in 30 s of steady state, want at most %d", renewals, want)
	}
}

func TestAKilledReplicasMembersMoveAfterTheLeaseDurationAndNeverHaveTwoWriters(t *testing.T) {
	f := newFleet(t, names("member", 9), "a", "b")
	f.settle([]string{"a", "b"})
	var bs []string
	for c, id := range f.owners() {
		if id == "b" {
			bs = append(bs, c)
		}
	}
	if len(bs) == 0 {
		t.Fatal("b serves nothing")
	}
	f.stopped["b"] = true
	killed := f.clock.now()
	var moved time.Duration
	for range 30 {
		f.tick() // checks one writer at every step
		o := f.owners()
		all := true
		for _, c := range bs {
			all = all && o[c] == "a"
		}
		if all {
			moved = f.clock.now().Sub(killed)
			break
		}
	}
	if moved == 0 {
		t.Fatalf("b's members %v never moved to a: %v", bs, f.owners())
	}
	if moved < 15*time.Second || moved > 30*time.Second {
		t.Errorf("b's members moved %s after it stopped, want between the lease duration and 30 s", moved)
	}
	// b's own view: it stopped writing before a started.
	for _, c := range bs {
		if f.shards["b"].Holds(c) {
			t.Errorf("b still believes it may write to %s", c)
		}
	}
}

func TestAJoiningReplicaTakesOnlyItsShareAndIsHandedItWithoutWaiting(t *testing.T) {
	f := newFleet(t, names("member", 30), "a", "b")
	before := f.settle([]string{"a", "b"})
	f.add("c")
	start := f.clock.now()
	after := f.settle([]string{"a", "b", "c"})
	if took := f.clock.now().Sub(start); took >= 15*time.Second {
		t.Errorf("the handover took %s; a released fence should not wait for expiry", took)
	}
	moved, taken := 0, 0
	for c, id := range after {
		if id != before[c] {
			moved++
		}
		if id == "c" {
			taken++
		}
	}
	// Its share, and few others moved between a and b for room.
	if taken != 10 || moved > 12 {
		t.Errorf("the new replica took %d of 30 members and %d moved, want 10 and at most 12", taken, moved)
	}
	for id, h := range f.handlers {
		h.mu.Lock()
		for c, held := range h.held {
			if held != (after[c] == id) {
				t.Errorf("replica %s was told it holds %s: %v, owner %s", id, c, held, after[c])
			}
		}
		h.mu.Unlock()
	}
}

func TestAFenceTakenByAnotherWriterIsDroppedAtTheNextRenewal(t *testing.T) {
	f := newFleet(t, []string{"member1"}, "a")
	f.settle([]string{"a"})
	// Someone (an operator, a replica with a broken clock) takes the fence.
	f.store.mu.Lock()
	l := f.store.leases[FenceLeaseName("member1")]
	l.Spec.HolderIdentity = ptrString("intruder")
	f.store.rv++
	l.ResourceVersion = strconv.Itoa(f.store.rv)
	f.store.leases[l.Name] = l
	f.store.mu.Unlock()
	for range 4 {
		f.tick()
	}
	if f.shards["a"].Holds("member1") && f.store.holder(FenceLeaseName("member1")) == "intruder" {
		t.Fatal("a writes to member1 while the fence names another holder")
	}
	if got := f.handlers["a"].log; !slices.Contains(got, "-member1") {
		t.Errorf("handler calls %v, want member1 released", got)
	}
}

func TestAReplicaThatCannotRenewStopsWritingBeforeOthersMayStart(t *testing.T) {
	f := newFleet(t, []string{"member1"}, "a", "b")
	f.settle([]string{"a", "b"})
	owner := f.owners()["member1"]
	deadline, ok := f.shards[owner].WriteDeadline("member1")
	if !ok {
		t.Fatal("no write deadline")
	}
	// Others see the fence expire no sooner than the duration after its
	// last change, which is after the holder's deadline.
	renewed := f.shards[owner].held["member1"].lease.Spec.RenewTime.Time
	if !deadline.Before(renewed.Add(15 * time.Second)) {
		t.Errorf("write deadline %s is not before the fence's expiry %s", deadline, renewed.Add(15*time.Second))
	}
}

func TestAnUnjoinedMembersFenceIsDeleted(t *testing.T) {
	f := newFleet(t, []string{"member1", "member2"}, "a")
	f.settle([]string{"a"})
	f.clusters = []string{"member1"}
	f.tick()
	if _, ok := f.store.leases[FenceLeaseName("member2")]; ok {
		t.Error("the fence of an unjoined member is left behind")
	}
	if f.shards["a"].Holds("member2") {
		t.Error("a still writes to an unjoined member")
	}
}

func TestLeaveHandsEverythingOver(t *testing.T) {
	f := newFleet(t, names("member", 6), "a", "b")
	f.settle([]string{"a", "b"})
	f.shards["b"].leave()
	f.stopped["b"] = true
	start := f.clock.now()
	f.settle([]string{"a"})
	if took := f.clock.now().Sub(start); took >= 15*time.Second {
		t.Errorf("taking over from a replica that left took %s, want less than the lease duration", took)
	}
}

func TestLeaseNames(t *testing.T) {
	long := string(slices.Repeat([]byte("x"), 260))
	for _, n := range []string{FenceLeaseName(long), ReplicaLeaseName(long)} {
		if len(n) > 253 {
			t.Errorf("lease name of %d characters", len(n))
		}
	}
	if FenceLeaseName(long) == FenceLeaseName(long[:259]) {
		t.Error("shortened names collide")
	}
	if FenceLeaseName("member1") != "kubefed-cluster-member1" {
		t.Error(FenceLeaseName("member1"))
	}
}

func ptrString(s string) *string { return &s }

// holdsChecker is a Handler that asserts, when told to release, that the
// shard already refuses new writes to the member.
type holdsChecker struct {
	t     *testing.T
	shard *Shard
	calls int
}

func (h *holdsChecker) Acquired(string) {}

func (h *holdsChecker) Releasing(c string) {
	h.calls++
	if h.shard.Holds(c) {
		h.t.Errorf("Releasing(%s) while Holds still says writes may start", c)
	}
}

func TestNoWriteStartsOnceReleasingBegins(t *testing.T) {
	f := newFleet(t, names("member", 4), "a")
	f.settle([]string{"a"})
	h := &holdsChecker{t: t, shard: f.shards["a"]}
	f.shards["a"].SetHandler(h)
	f.add("b")
	f.settle([]string{"a", "b"})
	f.shards["a"].leave()
	if h.calls == 0 {
		t.Fatal("nothing was released")
	}
}

// A renewal that lands after the write deadline (a host apiserver slow to
// answer) keeps the fence: meanwhile no write may start, but the member is
// still served, so its work waits instead of being dropped, and nothing is
// handed over.
func TestAnOverdueRenewalKeepsServingWithoutWrites(t *testing.T) {
	f := newFleet(t, []string{"member1"}, "a")
	f.settle([]string{"a"})
	s := f.shards["a"]
	deadline, ok := s.WriteDeadline("member1")
	if !ok {
		t.Fatal("a may not write to member1")
	}
	f.clock.advance(deadline.Sub(f.clock.now()) + time.Second)
	if _, ok := s.WriteDeadline("member1"); ok {
		t.Fatal("a may write past its deadline")
	}
	if !s.Serving("member1") {
		t.Fatal("a stopped serving member1 while its renewal is only overdue")
	}
	s.step(context.Background())
	if _, ok := s.WriteDeadline("member1"); !ok || !s.Serving("member1") {
		t.Fatal("the renewal that landed did not restore writes")
	}
	if got := f.handlers["a"].log; slices.Contains(got, "-member1") {
		t.Errorf("handler calls %v: member1 was handed over", got)
	}
}
