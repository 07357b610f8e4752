package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
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
	// failLists makes list fail, as a host refusing lists (429) would;
	// failWrites the same for creates and updates.
	failLists  bool
	failWrites bool
	// loseAnswerOf is a Lease whose next update is written but answered
	// with a timeout, as a renewal whose answer is lost on the way back.
	loseAnswerOf string
}

var leaseGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func newMemLeases() *memLeases { return &memLeases{leases: map[string]coordinationv1.Lease{}} }

func (m *memLeases) list(context.Context) ([]coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failLists {
		return nil, apierrors.NewTooManyRequests("lists refused", 1)
	}
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
	if m.failWrites {
		return nil, apierrors.NewTooManyRequests("writes refused", 1)
	}
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
	if m.failWrites {
		return nil, apierrors.NewTooManyRequests("writes refused", 1)
	}
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
	if m.loseAnswerOf == l.Name {
		m.loseAnswerOf = ""
		return nil, apierrors.NewTimeoutError("the answer was lost", 1)
	}
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

// refuseLists makes list fail, or work again.
func (m *memLeases) refuseLists(on bool) {
	m.mu.Lock()
	m.failLists = on
	m.mu.Unlock()
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

// clusterOwnedBy is a member name that Assign gives to want over replicas.
func clusterOwnedBy(t *testing.T, want string, replicas ...string) string {
	t.Helper()
	for i := range 100 {
		c := fmt.Sprintf("member%d", i)
		if Assign([]string{c}, replicas)[c] == want {
			return c
		}
	}
	t.Fatalf("no member name hashes to %s over %v", want, replicas)
	return ""
}

// A fence its holder frees (the assignment moved) is taken by the next
// owner no sooner than the margin after it was freed, as an expired one is
// taken no sooner than the margin after its holder's deadline: a write
// sent just before the release may still be under way at the member.
func TestAFreedFenceIsTakenAMarginAfterItsHolderLetItGo(t *testing.T) {
	c := clusterOwnedBy(t, "b", "a", "b")
	f := newFleet(t, []string{c}, "a")
	f.settle([]string{"a"})
	f.add("b")
	var freed time.Time
	for range 10 {
		f.tick()
		if freed.IsZero() && slices.Contains(f.handlers["a"].log, "-"+c) {
			freed = f.clock.now()
		}
		if f.shards["b"].Holds(c) {
			if freed.IsZero() {
				t.Fatal("b writes before a released")
			}
			if took := f.clock.now().Sub(freed); took < f.shards["b"].margin() {
				t.Fatalf("b took the fence %s after a freed it, within the margin %s", took, f.shards["b"].margin())
			}
			return
		}
	}
	t.Fatalf("b never took %s (freed at %s)", c, freed)
}

// A renewal written but answered with an error (its answer lost) leaves
// the replica's copy of the fence one version behind; the next renewal
// finds the fence still its own and keeps it, rather than dropping it and
// then waiting out its own Lease.
func TestARenewalWhoseAnswerWasLostKeepsTheFence(t *testing.T) {
	f := newFleet(t, []string{"member1"}, "a")
	f.settle([]string{"a"})
	f.store.mu.Lock()
	f.store.loseAnswerOf = FenceLeaseName("member1")
	f.store.mu.Unlock()
	for range 10 { // 20 s: past the lost renewal and a Lease duration
		f.tick()
		if !f.shards["a"].Serving("member1") {
			t.Fatalf("a stopped serving member1 at %s; handler calls %v", f.clock.now().Format(time.TimeOnly), f.handlers["a"].log)
		}
	}
	if f.store.loseAnswerOf != "" {
		t.Fatal("no renewal was made")
	}
	if !f.shards["a"].Holds("member1") || slices.Contains(f.handlers["a"].log, "-member1") {
		t.Errorf("a holds member1: %v; handler calls %v", f.shards["a"].Holds("member1"), f.handlers["a"].log)
	}
}

// Renewing a fence needs no list: while the host refuses lists, the fences
// held are renewed and stay, where they were lost after a Lease duration.
func TestFencesAreRenewedWhileTheLeasesCannotBeListed(t *testing.T) {
	f := newFleet(t, names("member", 3), "a")
	f.settle([]string{"a"})
	f.store.refuseLists(true)
	for range 15 { // 30 s, twice the Lease duration
		f.tick()
	}
	for _, c := range f.clusters {
		if !f.shards["a"].Holds(c) {
			t.Errorf("a lost %s while only lists failed; handler calls %v", c, f.handlers["a"].log)
		}
	}
}

// A Lease says how long it lasts in whole seconds: rounded up, never down,
// so that others never see it expire before its holder stops writing.
func TestALeaseNeverSaysItExpiresBeforeItsHolderStops(t *testing.T) {
	s, err := New(Options{Identity: "a", LeaseDuration: 15900 * time.Millisecond, RetryPeriod: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l := s.newLease("x", RoleFence, "member1", time.Now())
	if got := duration(l, 0); got < s.o.LeaseDuration {
		t.Errorf("a Lease of %s says it lasts %s", s.o.LeaseDuration, got)
	}
	if got := leaseSeconds(300 * time.Millisecond); got != 1 {
		t.Errorf("leaseSeconds(300ms) = %d, want 1", got)
	}
}

// Leaving deletes this replica's membership Lease only as it last wrote
// it: one taken over meanwhile (by the shard that replaced this one when
// the controllers restarted) is left to its new writer.
func TestLeaveDeletesOnlyTheLeaseItWrote(t *testing.T) {
	f := newFleet(t, []string{"member1"}, "a")
	f.settle([]string{"a"})
	old := f.shards["a"]
	replacement := f.add("a")
	replacement.step(context.Background()) // takes the Lease over
	old.leave()
	if f.store.holder(ReplicaLeaseName("a")) != "a" {
		t.Fatal("the replaced shard deleted the Lease its replacement had taken over")
	}
}

// A fence whose member left while its holder was gone (killed before it
// could delete it) is deleted by the replicas still running once no one
// has renewed it for twice its duration; a fence of a joined member whose
// holder died is taken over, not deleted.
func TestAFenceLeftBehindByADeadHolderIsDeleted(t *testing.T) {
	f := newFleet(t, []string{"member1", "member2"}, "a", "b")
	f.settle([]string{"a", "b"})
	dead := f.owners()["member2"]
	f.stopped[dead] = true
	f.clusters = []string{"member1"}
	gone := FenceLeaseName("member2")
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.tick()
		f.store.mu.Lock()
		_, ok := f.store.leases[gone]
		f.store.mu.Unlock()
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fence of member2, left by %s, is still there at %s", dead, f.clock.now().Format(time.TimeOnly))
		}
		time.Sleep(time.Millisecond) // the delete runs on its own goroutine
	}
	if f.store.holder(FenceLeaseName("member1")) == "" {
		t.Error("the fence of a joined member was deleted or freed")
	}
}

// Every Lease call the shard makes is bounded: one the host never answers
// returns an error instead of holding the step, and the renewals behind it.
func TestLeaseCallsAreBounded(t *testing.T) {
	st := timedLeases{store: hangingLeases{}, timeout: 10 * time.Millisecond}
	ctx := context.Background()
	l := &coordinationv1.Lease{}
	_, errList := st.list(ctx)
	_, errGet := st.get(ctx, "x")
	_, errCreate := st.create(ctx, l)
	_, errUpdate := st.update(ctx, l)
	errDelete := st.delete(ctx, "x", "")
	for i, err := range []error{errList, errGet, errCreate, errUpdate, errDelete} {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("call %d: %v, want the deadline exceeded", i, err)
		}
	}
	s, err := New(Options{Identity: "a", LeaseDuration: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if ts, ok := s.store.(timedLeases); !ok || ts.timeout != 5*time.Second {
		t.Errorf("the shard's store is %#v, want its calls bounded by a third of the Lease duration", s.store)
	}
}

// hangingLeases answers nothing until the call's context ends.
type hangingLeases struct{}

func (hangingLeases) list(ctx context.Context) ([]coordinationv1.Lease, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hangingLeases) get(ctx context.Context, _ string) (*coordinationv1.Lease, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hangingLeases) create(ctx context.Context, _ *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hangingLeases) update(ctx context.Context, _ *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hangingLeases) delete(ctx context.Context, _, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

// The metrics follow the fences dropped while the Leases cannot be read.
func TestFencesLostWhileListsFailAreNoLongerCounted(t *testing.T) {
	f := newFleet(t, names("member", 3), "a")
	f.settle([]string{"a"})
	if got := gauge(t, heldClusters); got != 3 {
		t.Fatalf("kubefed_shard_clusters %v, want 3", got)
	}
	f.store.refuseLists(true)
	f.store.mu.Lock()
	f.store.failWrites = true
	f.store.mu.Unlock()
	for range 10 { // 20 s, past the Lease duration
		f.tick()
	}
	if f.shards["a"].Holds("member1") {
		t.Fatal("a still holds a fence it could not renew")
	}
	if got := gauge(t, heldClusters); got != 0 {
		t.Errorf("kubefed_shard_clusters %v after every fence was lost, want 0", got)
	}
}

func gauge(t *testing.T, g interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
