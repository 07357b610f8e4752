package sync

import (
	"context"
	gosync "sync"
	"testing"
	"time"
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
