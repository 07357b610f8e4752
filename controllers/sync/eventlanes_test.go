package sync

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
)

// heldSink counts the writes in flight and holds each until released.
type heldSink struct {
	release chan struct{}

	mu       gosync.Mutex
	inFlight int
	written  map[types.UID][]string
}

func (s *heldSink) write(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	s.inFlight++
	s.mu.Unlock()
	<-s.release
	s.mu.Lock()
	s.inFlight--
	s.written[e.InvolvedObject.UID] = append(s.written[e.InvolvedObject.UID], e.Reason)
	s.mu.Unlock()
	return e, nil
}

func (s *heldSink) Create(e *corev1.Event) (*corev1.Event, error)          { return s.write(e) }
func (s *heldSink) Update(e *corev1.Event) (*corev1.Event, error)          { return s.write(e) }
func (s *heldSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return s.write(e) }

func (s *heldSink) flight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// The engine writes the events of different objects side by side, one per
// lane, where client-go's broadcaster writes one at a time; the events of
// one object stay in order on its lane.
func TestEventLanesWriteSideBySideAndInOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &heldSink{release: make(chan struct{}), written: map[types.UID][]string{}}
	lanes := newEventLanes(ctx, eventLaneCount, func() record.EventSink { return sink })
	defer lanes.Shutdown()
	rec := lanes.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "test"})

	// One object on each lane, its events recorded on a reference to it
	// as memberEvents does.
	var objects []*corev1.ObjectReference
	taken := map[int]bool{}
	for i := 0; len(objects) < eventLaneCount; i++ {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))}}
		ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: cm.Name, UID: cm.UID}
		l := laneOf(ref, eventLaneCount)
		if l != laneOf(cm, eventLaneCount) {
			t.Fatalf("%s: lane %d, its reference's %d", cm.Name, laneOf(cm, eventLaneCount), l)
		}
		if !taken[l] {
			taken[l] = true
			objects = append(objects, ref)
		}
	}
	for _, ref := range objects {
		rec.Event(ref, corev1.EventTypeNormal, "First", "first")
	}
	rec.Event(objects[0], corev1.EventTypeNormal, "Second", "second")
	rec.Event(objects[0], corev1.EventTypeNormal, "Third", "third")

	waitUntil(t, fmt.Sprintf("%d event writes in flight at once (one per lane)", eventLaneCount), func() bool {
		return sink.flight() >= eventLaneCount
	})
	close(sink.release)

	waitUntil(t, "the first object's three events written", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return len(sink.written[objects[0].UID]) == 3
	})
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if got, want := fmt.Sprint(sink.written[objects[0].UID]), "[First Second Third]"; got != want {
		t.Fatalf("one object's events written as %s, want %s", got, want)
	}
	for _, ref := range objects[1:] {
		if got := fmt.Sprint(sink.written[ref.UID]); got != "[First]" {
			t.Fatalf("%s: events written %s, want [First]", ref.Name, got)
		}
	}
}
