package sync

import (
	"fmt"
	"slices"
	"strings"
	gosync "sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
)

// eventWindow is how long a federated object's per-member event waits for
// the same event of its other members, to be recorded as one: as long as
// its status write waits for members that have not answered (statusHold).
// A member's queue can hold a wave's work longer than another's; with a
// second, one created object in seven was two events with six members.
const eventWindow = statusHold

// eventStatusWait is how long, at most, a burst of a generation whose
// status is still to be written waits for that write, which records it
// (memberEvents.written): the owner's longest wait for the other
// replicas' word (peerGather). A member's answer past eventWindow but
// before the status write (which waits for every member's report, up to
// reportHold after its answer) joins the burst instead of making an event
// of its own.
const eventStatusWait = peerGather

// maxEventClusters is how many member names one event lists; the rest are
// counted.
const maxEventClusters = 20

// memberEvents records KubeFed's per-member Normal events
// (CreateInCluster, UpdateInCluster, DeleteInCluster,
// RemoveManagedLabelFromInCluster) of a federated object, with their
// reason, once per burst rather than once per member: the members that
// answer within eventWindow of the first share one event, "Creating
// Deployment "web" in clusters "a", "b"", and one member alone reads as
// KubeFed wrote it, "... in cluster "a"". A burst of a generation whose
// status is still to be written is recorded with that write instead, up
// to statusWait after its first member. With ten members a create was ten
// host writes of events; it is one. Warnings, which carry one member's
// error, are recorded at once and apart.
type memberEvents struct {
	recorder   record.EventRecorder
	window     time.Duration
	statusWait time.Duration

	mu gosync.Mutex
	// pending are the open bursts by object.
	pending map[types.UID]map[eventKey]*eventBurst
	stopped bool
}

// eventKey is one event of one object: events of different reasons, or an
// update that adopted against one that did not, are not merged.
type eventKey struct {
	uid                types.UID
	reason, verb, note string
}

type eventBurst struct {
	ref        *corev1.ObjectReference
	kind, name string
	clusters   []string
}

func newMemberEvents(recorder record.EventRecorder, window, statusWait time.Duration) *memberEvents {
	return &memberEvents{recorder: recorder, window: window, statusWait: statusWait, pending: map[types.UID]map[eventKey]*eventBurst{}}
}

// record notes that verb (as in "Creating") was done to fed's copy named
// name, of kind, in cluster; note is appended to the message. awaitsStatus
// says that the status of fed's generation is still to be written: a burst
// it opens waits for that write (written) rather than eventWindow.
func (m *memberEvents) record(fed *unstructured.Unstructured, reason, verb, kind, name, cluster, note string, awaitsStatus bool) {
	key := eventKey{uid: fed.GetUID(), reason: reason, verb: verb, note: note}
	m.mu.Lock()
	if b, ok := m.pending[key.uid][key]; ok {
		if !slices.Contains(b.clusters, cluster) {
			b.clusters = append(b.clusters, cluster)
		}
		m.mu.Unlock()
		return
	}
	b := &eventBurst{ref: objectRef(fed), kind: kind, name: name, clusters: []string{cluster}}
	stopped := m.stopped
	if !stopped {
		if m.pending[key.uid] == nil {
			m.pending[key.uid] = map[eventKey]*eventBurst{}
		}
		m.pending[key.uid][key] = b
	}
	m.mu.Unlock()
	if stopped {
		m.emit(key, b)
		return
	}
	wait := m.window
	if awaitsStatus {
		wait = m.statusWait
	}
	time.AfterFunc(wait, func() { m.flush(key, b) })
}

// flush records b, the burst of key, unless it was recorded already.
func (m *memberEvents) flush(key eventKey, b *eventBurst) {
	m.mu.Lock()
	open := m.pending[key.uid][key] == b
	if open {
		delete(m.pending[key.uid], key)
		if len(m.pending[key.uid]) == 0 {
			delete(m.pending, key.uid)
		}
	}
	m.mu.Unlock()
	if open {
		m.emit(key, b)
	}
}

// written records the open bursts of the object uid now: its status was
// written, with the outcomes of the members they name.
func (m *memberEvents) written(uid types.UID) {
	if m == nil {
		return
	}
	m.mu.Lock()
	bursts := m.pending[uid]
	delete(m.pending, uid)
	m.mu.Unlock()
	for key, b := range bursts {
		m.emit(key, b)
	}
}

// stop records every pending event now, and later ones at once.
func (m *memberEvents) stop() {
	m.mu.Lock()
	pending := m.pending
	m.pending = map[types.UID]map[eventKey]*eventBurst{}
	m.stopped = true
	m.mu.Unlock()
	for _, bursts := range pending {
		for key, b := range bursts {
			m.emit(key, b)
		}
	}
}

func (m *memberEvents) emit(key eventKey, b *eventBurst) {
	m.recorder.Event(b.ref, corev1.EventTypeNormal, key.reason, eventMessage(key.verb, b.kind, b.name, b.clusters)+key.note)
}

// eventMessage is KubeFed's message, `Creating Deployment "web" in cluster
// "a"`, naming every member of a burst.
func eventMessage(verb, kind, name string, clusters []string) string {
	if len(clusters) == 1 {
		return fmt.Sprintf("%s %s %q in cluster %q", verb, kind, name, clusters[0])
	}
	sorted := slices.Sorted(slices.Values(clusters))
	shown := sorted[:min(len(sorted), maxEventClusters)]
	quoted := make([]string, len(shown))
	for i, c := range shown {
		quoted[i] = fmt.Sprintf("%q", c)
	}
	list := strings.Join(quoted, ", ")
	if more := len(sorted) - len(shown); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("%s %s %q in clusters %s", verb, kind, name, list)
}

// objectRef is the reference an event of fed is about.
func objectRef(fed *unstructured.Unstructured) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion:      fed.GetAPIVersion(),
		Kind:            fed.GetKind(),
		Namespace:       fed.GetNamespace(),
		Name:            fed.GetName(),
		UID:             fed.GetUID(),
		ResourceVersion: fed.GetResourceVersion(),
	}
}
