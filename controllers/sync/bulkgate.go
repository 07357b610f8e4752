package sync

import (
	"context"
	gosync "sync"
	"time"
)

// bulkGate orders the host writes of bulk work (the objects a member's
// readiness or a namespace change planned again, thousands at once) behind
// prompt work's (a new or changed object's finalizer and status). The host
// answers every write in one line on the same CPUs: the status writes of a
// member's 10,000 objects turning ClusterNotReady and back, at the pace the
// host allows, slowed a wave of new objects to the other members several
// times over (docs/performance.md, "Readiness flip").
//
// Bulk writes hold at most slots of the host at a time. While prompt work
// was seen within quiet, they go one at a time at most every floor, so
// that they still move (a steady trickle of changes never stops them);
// once prompt work has been quiet for that long they go at full pace. A
// prompt write waits for nothing.
type bulkGate struct {
	slots chan struct{}
	quiet time.Duration
	floor time.Duration

	mu gosync.Mutex
	// lastPrompt is when prompt work was last seen; nextFloor is the
	// earliest time the next bulk write may go while prompt work is on.
	lastPrompt time.Time
	nextFloor  time.Time
}

// Defaults of the bulk gate: bulk writes go at full pace after prompt work
// has been quiet for bulkQuiet, and at one per bulkFloor while it is not.
const (
	bulkQuiet = 300 * time.Millisecond
	bulkFloor = 40 * time.Millisecond
)

func newBulkGate(slots int, quiet, floor time.Duration) *bulkGate {
	return &bulkGate{slots: make(chan struct{}, max(1, slots)), quiet: quiet, floor: floor}
}

// prompt notes that prompt work is being done now.
func (g *bulkGate) prompt() {
	if g == nil {
		return
	}
	now := time.Now()
	g.mu.Lock()
	if now.After(g.lastPrompt) {
		g.lastPrompt = now
	}
	g.mu.Unlock()
}

// acquire waits for a bulk write's turn and slot; release gives the slot
// back. It fails only when ctx ends.
func (g *bulkGate) acquire(ctx context.Context) (release func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	bulkWaiting.Inc()
	defer bulkWaiting.Dec()
	for {
		wait := g.turn(time.Now())
		if wait <= 0 {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// bulkWorkerHold is how long a bulk write waits in the gate before it
// gives its status worker back: the worker takes prompt work first from
// its queue, which would otherwise wait while every worker of the type
// held a bulk write (up to workers × floor).
const bulkWorkerHold = 100 * time.Millisecond

// acquireWithin is acquire waiting at most d: ok is false when the write's
// turn or slot did not come within d (err only when ctx ended).
func (g *bulkGate) acquireWithin(ctx context.Context, d time.Duration) (release func(), ok bool, err error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	release, err = g.acquire(wctx)
	switch {
	case err == nil:
		return release, true, nil
	case ctx.Err() != nil:
		return nil, false, ctx.Err()
	}
	return nil, false, nil
}

// turn returns 0 when a bulk write may go at now (taking the floor's turn
// if prompt work is on), or how long to wait before asking again.
func (g *bulkGate) turn(now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	quietAt := g.lastPrompt.Add(g.quiet)
	if !now.Before(quietAt) {
		return 0
	}
	if !now.Before(g.nextFloor) {
		g.nextFloor = now.Add(g.floor)
		return 0
	}
	return min(g.nextFloor.Sub(now), quietAt.Sub(now))
}
