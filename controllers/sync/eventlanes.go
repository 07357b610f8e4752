package sync

import (
	"context"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// eventLanes are the engine's event broadcasters: several, each writing
// to the host on its own, and every event of one object on the same one.
//
// client-go's broadcaster writes its events one at a time, each waiting
// for the host's answer, and drops what comes while 1,000 wait, without a
// word. On a loaded host that is a few events a second, and a fast wave
// of 2,000 new federated objects with one replica lost 40-44 % of their
// events (docs/performance.md, "Events on four lanes"). Lanes write the
// events of different objects side by side; the events of one object
// still go in order through one correlator, which aggregates and
// spam-filters them as before (both are per object), and each lane
// retries a failed write as client-go does.
type eventLanes []record.EventBroadcaster

// eventLaneCount is how many events the engine writes to the host at once.
const eventLaneCount = 4

// newEventLanes starts n broadcasters, each recording to its own sink.
func newEventLanes(ctx context.Context, n int, sink func() record.EventSink) eventLanes {
	lanes := make(eventLanes, max(1, n))
	for i := range lanes {
		lanes[i] = record.NewBroadcaster(record.WithContext(ctx))
		lanes[i].StartRecordingToSink(sink())
	}
	return lanes
}

// NewRecorder is a recorder that sends each object's events to its lane.
func (l eventLanes) NewRecorder(scheme *runtime.Scheme, source corev1.EventSource) record.EventRecorder {
	r := make(laneRecorder, len(l))
	for i, b := range l {
		r[i] = b.NewRecorder(scheme, source)
	}
	return r
}

// Shutdown stops every lane.
func (l eventLanes) Shutdown() {
	for _, b := range l {
		b.Shutdown()
	}
}

// laneRecorder records an object's events on the lane its identity hashes
// to.
type laneRecorder []record.EventRecorder

func (r laneRecorder) lane(object runtime.Object) record.EventRecorder {
	return r[laneOf(object, len(r))]
}

// laneOf is the lane of n that object's events go to: by its UID, or its
// namespace and name when it has none; object is the object or a reference
// to it.
func laneOf(object runtime.Object, n int) int {
	if n <= 1 {
		return 0
	}
	var uid, namespace, name string
	switch o := object.(type) {
	case *corev1.ObjectReference:
		// What the per-member events are recorded on (memberEvents).
		uid, namespace, name = string(o.UID), o.Namespace, o.Name
	default:
		if m, err := meta.Accessor(object); err == nil {
			uid, namespace, name = string(m.GetUID()), m.GetNamespace(), m.GetName()
		}
	}
	h := fnv.New32a()
	if uid != "" {
		_, _ = h.Write([]byte(uid))
	} else {
		_, _ = h.Write([]byte(namespace + "/" + name))
	}
	return int(h.Sum32() % uint32(n))
}

func (r laneRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.lane(object).Event(object, eventtype, reason, message)
}

func (r laneRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.lane(object).Eventf(object, eventtype, reason, messageFmt, args...)
}

func (r laneRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.lane(object).AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
}
