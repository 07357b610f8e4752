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

// maxEventClusters is how many member names one event lists; the rest are
// counted.
const maxEventClusters = 20

// memberEvents records KubeFed's per-member Normal events
// (CreateInCluster, UpdateInCluster, DeleteInCluster,
// RemoveManagedLabelFromInCluster) of a federated object, with their
// reason, once per burst rather than once per member: the members that
// answer within eventWindow of the first share one event, "Creating
// Deployment "web" in clusters "a", "b"", and one member alone reads as
// KubeFed wrote it, "... in cluster "a"". With ten members a create was ten
// host writes of events; it is one. Warnings, which carry one member's
// error, are recorded at once and apart.
type memberEvents struct {
	recorder record.EventRecorder
	window   time.Duration

	mu      gosync.Mutex
	pending map[eventKey]*eventBurst
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

func newMemberEvents(recorder record.EventRecorder, window time.Duration) *memberEvents {
	return &memberEvents{recorder: recorder, window: window, pending: map[eventKey]*eventBurst{}}
}

// record notes that verb (as in "Creating") was done to fed's copy named
// name, of kind, in cluster; note is appended to the message.
func (m *memberEvents) record(fed *unstructured.Unstructured, reason, verb, kind, name, cluster, note string) {
	key := eventKey{uid: fed.GetUID(), reason: reason, verb: verb, note: note}
	m.mu.Lock()
	if b, ok := m.pending[key]; ok {
		if !slices.Contains(b.clusters, cluster) {
			b.clusters = append(b.clusters, cluster)
		}
		m.mu.Unlock()
		return
	}
	b := &eventBurst{ref: objectRef(fed), kind: kind, name: name, clusters: []string{cluster}}
	stopped := m.stopped
	if !stopped {
		m.pending[key] = b
	}
	m.mu.Unlock()
	if stopped {
		m.emit(key, b)
		return
	}
	time.AfterFunc(m.window, func() { m.flush(key) })
}

func (m *memberEvents) flush(key eventKey) {
	m.mu.Lock()
	b, ok := m.pending[key]
	delete(m.pending, key)
	m.mu.Unlock()
	if ok {
		m.emit(key, b)
	}
}

// stop records every pending event now, and later ones at once.
func (m *memberEvents) stop() {
	m.mu.Lock()
	pending := m.pending
	m.pending = map[eventKey]*eventBurst{}
	m.stopped = true
	m.mu.Unlock()
	for key, b := range pending {
		m.emit(key, b)
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
