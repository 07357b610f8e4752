package sync

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/tools/record"

	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
)

// Bulk writes go at full pace while no prompt work was seen for the quiet
// period, one per floor while it was, and never more than the slots at once.
func TestBulkGateMakesWayForPromptWork(t *testing.T) {
	const quiet, floor = time.Second, 100 * time.Millisecond
	g := newBulkGate(2, quiet, floor)
	t0 := time.Unix(1_000_000, 0)

	for i := range 5 {
		if wait := g.turn(t0); wait != 0 {
			t.Fatalf("write %d with no prompt work waits %s", i, wait)
		}
	}

	g.lastPrompt = t0
	if wait := g.turn(t0.Add(time.Millisecond)); wait != 0 {
		t.Fatalf("the first write beside prompt work waits %s, want its floor turn at once", wait)
	}
	if wait := g.turn(t0.Add(2 * time.Millisecond)); wait != floor-time.Millisecond {
		t.Fatalf("the second write beside prompt work waits %s, want the rest of the floor (%s)", wait, floor-time.Millisecond)
	}
	if wait := g.turn(t0.Add(floor + time.Millisecond)); wait != 0 {
		t.Fatalf("a write a floor later waits %s", wait)
	}
	// Prompt work goes on: the floor holds.
	g.lastPrompt = t0.Add(950 * time.Millisecond)
	if wait := g.turn(t0.Add(990 * time.Millisecond)); wait != 0 {
		t.Fatalf("a floor turn waits %s", wait)
	}
	if wait := g.turn(t0.Add(1000 * time.Millisecond)); wait != floor-10*time.Millisecond {
		t.Fatalf("within the floor: waits %s, want %s", wait, floor-10*time.Millisecond)
	}
	// Quiet since 950 ms: from 1,950 ms on, full pace again.
	if wait := g.turn(t0.Add(1_900 * time.Millisecond)); wait != 0 {
		t.Fatalf("a floor turn waits %s", wait)
	}
	if wait := g.turn(t0.Add(1_920 * time.Millisecond)); wait != 30*time.Millisecond {
		t.Fatalf("30 ms before the quiet ends: waits %s, want 30ms", wait)
	}
	for i := range 5 {
		if wait := g.turn(t0.Add(1_950 * time.Millisecond)); wait != 0 {
			t.Fatalf("write %d after the quiet waits %s", i, wait)
		}
	}
}

// acquire holds at most the gate's slots, gives them back on release, and
// gives up when its context ends.
func TestBulkGateSlots(t *testing.T) {
	g := newBulkGate(2, time.Hour, time.Hour)
	r1, err := g.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r2, err := g.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		r, err := g.acquire(ctx)
		if err == nil {
			r()
		}
		got <- err
	}()
	// The third waits for a slot: once r1 is given back, it gets it.
	r1()
	if err := <-got; err != nil {
		t.Fatalf("a freed slot was not taken: %v", err)
	}
	r2()
	if len(g.slots) != 0 {
		t.Fatalf("%d slots held after every release", len(g.slots))
	}

	// Prompt work just seen, the floor's turn taken: the next waits a
	// floor (an hour) and gives up with its context.
	takeFloorsTurn(t, g)
	go func() {
		_, err := g.acquire(ctx)
		got <- err
	}()
	cancel()
	if err := <-got; err == nil {
		t.Fatal("a write waiting for its turn went with its context ended")
	}
	// A nil gate (an engine built by a test) waits for nothing.
	var none *bulkGate
	none.prompt()
	if r, err := none.acquire(context.Background()); err != nil {
		t.Fatal(err)
	} else {
		r()
	}
}

// metricValue reads a gauge's or a counter's value.
func metricValue(t *testing.T, metric prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := metric.Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Gauge != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetCounter().GetValue()
}

// takeFloorsTurn notes prompt work on g and takes the one bulk write its
// floor lets go meanwhile: the next waits a floor.
func takeFloorsTurn(t *testing.T, g *bulkGate) {
	t.Helper()
	g.prompt()
	r, err := g.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r()
}

func waiting(t *testing.T) float64 { return metricValue(t, bulkWaiting) }

// kubefed_bulk_status_writes_waiting counts the bulk writes waiting for
// their turn, and drops when they go or give up.
func TestBulkGateWaitingMetric(t *testing.T) {
	base := waiting(t)
	g := newBulkGate(1, time.Hour, time.Hour)
	takeFloorsTurn(t, g)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := g.acquire(ctx)
		done <- err
	}()
	waitUntil(t, "the waiting write counted", func() bool { return waiting(t) == base+1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the waiting write went with its context ended")
	}
	if got := waiting(t); got != base {
		t.Fatalf("gauge %v after the write gave up, want %v", got, base)
	}
}

func deferred(t *testing.T) float64 { return metricValue(t, bulkWorkerReturns) }

// A bulk status write whose turn does not come within bulkWorkerHold gives
// its worker back, to be tried again a floor later, and writes nothing: a
// changed object's status write queued behind it never waits for every
// worker of its type to be held in the gate.
func TestBulkStatusWriteGivesItsWorkerBack(t *testing.T) {
	g := newBulkGate(1, time.Hour, time.Hour)
	takeFloorsTurn(t, g)

	// The gate alone: not within the hold, and no error.
	start := time.Now()
	if _, ok, err := g.acquireWithin(context.Background(), 50*time.Millisecond); ok || err != nil {
		t.Fatalf("acquireWithin with the turn an hour away: ok=%v err=%v, want neither", ok, err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 10*time.Second {
		t.Fatalf("acquireWithin gave up after %v, want 50ms", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok, err := g.acquireWithin(ctx, time.Hour); ok || err == nil {
		t.Fatalf("acquireWithin with its context ended: ok=%v err=%v, want the context's error", ok, err)
	}

	// A type's status write of bulk work: back to the queue a floor later,
	// nothing written (the worker has no host client to write with).
	w := &typeWorker{e: &Engine{bulk: g}, statusWritten: map[string]statusRecord{}}
	fed := testFed(1, nil)
	fed.SetNamespace("ns")
	fed.SetName("a")
	before := deferred(t)
	start = time.Now()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	requeue, err := w.writeStatus(wctx, "ns/a", fed, []outcome{{cluster: "member1", listed: true}}, "", "", nil, true)
	if err != nil || requeue != bulkFloor {
		t.Fatalf("bulk status write with the gate's turn an hour away: requeue %v, err %v; want %v and none", requeue, err, bulkFloor)
	}
	if d := time.Since(start); d < bulkWorkerHold || d > 10*time.Second {
		t.Fatalf("the bulk status write held its worker %v, want %v", d, bulkWorkerHold)
	}
	if got := deferred(t) - before; got != 1 {
		t.Fatalf("kubefed_bulk_status_writes_deferred_total rose by %v, want 1", got)
	}
	if len(w.statusWritten) != 0 {
		t.Fatalf("a deferred write recorded %v", w.statusWritten)
	}

	// A write saying why the object goes nowhere records its Warning with
	// the write: one deferred records none, or every turn it waited for
	// would be one more event on the host.
	events := record.NewFakeRecorder(10)
	w.recorder = events
	before = deferred(t)
	requeue, err = w.writeStatus(wctx, "ns/a", fed, nil, typesv1beta1.ReasonNamespaceNotFederated, "the namespace is not federated", nil, true)
	if err != nil || requeue != bulkFloor {
		t.Fatalf("bulk status write with a reason, the gate's turn an hour away: requeue %v, err %v; want %v and none", requeue, err, bulkFloor)
	}
	if got := deferred(t) - before; got != 1 {
		t.Fatalf("kubefed_bulk_status_writes_deferred_total rose by %v, want 1", got)
	}
	select {
	case e := <-events.Events:
		t.Fatalf("a deferred status write recorded the event %q", e)
	default:
	}
}
