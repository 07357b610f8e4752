package scheduling

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/kubefed-io/kubefed/pkg/clusterclient"
)

func pendingPod(ns, name string, podLabels map[string]string, since time.Time, unschedulable bool) *corev1.Pod {
	reason := corev1.PodReasonUnschedulable
	if !unschedulable {
		reason = "SchedulingGated"
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: podLabels},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, LastTransitionTime: metav1.NewTime(since),
		}}},
	}
}

// An agent's report groups its unschedulable pods by namespace and labels,
// the same pods always the same way, and leaves out pods that wait for
// other reasons.
func TestPendingReport(t *testing.T) {
	web := map[string]string{"app": "web", "pod-template-hash": "a"}
	objs := []any{
		pendingPod("ns", "web-2", web, t0.Add(-time.Minute), true),
		pendingPod("other", "web-1", web, t0, true),
		pendingPod("ns", "web-1", web, t0.Add(-time.Hour), true),
		pendingPod("ns", "db-1", map[string]string{"app": "db"}, t0, true),
		pendingPod("ns", "gated", web, t0, false),
	}
	got := pendingReport(objs)
	want := PendingReport{Groups: []PendingGroup{
		{Namespace: "ns", Labels: map[string]string{"app": "db"}, Since: []int64{t0.Unix()}},
		{Namespace: "ns", Labels: web, Since: []int64{t0.Add(-time.Hour).Unix(), t0.Add(-time.Minute).Unix()}},
		{Namespace: "other", Labels: web, Since: []int64{t0.Unix()}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pendingReport() = %+v\nwant %+v", got, want)
	}
	reversed := make([]any, len(objs))
	for i := range objs {
		reversed[len(objs)-1-i] = objs[i]
	}
	if EncodePendingReport(pendingReport(reversed)) != EncodePendingReport(got) {
		t.Error("the same pods in another order give another report")
	}
}

// A report stays within its bounds and says when it left pods out.
func TestPendingReportBounds(t *testing.T) {
	var many []any
	for i := range maxPendingGroups + 10 {
		many = append(many, pendingPod("ns", fmt.Sprint("p", i), map[string]string{"app": fmt.Sprint(i)}, t0, true))
	}
	r := pendingReport(many)
	if len(r.Groups) != maxPendingGroups || !r.Truncated {
		t.Errorf("%d groups, truncated %v", len(r.Groups), r.Truncated)
	}
	many = nil
	for i := range maxPendingPods + 10 {
		many = append(many, pendingPod("ns", fmt.Sprint("p", i), map[string]string{"app": "web"}, t0.Add(time.Duration(i)*time.Second), true))
	}
	r = pendingReport(many)
	if len(r.Groups) != 1 || len(r.Groups[0].Since) != maxPendingPods || !r.Truncated {
		t.Fatalf("%d groups, truncated %v", len(r.Groups), r.Truncated)
	}
	// The longest pending are kept.
	if r.Groups[0].Since[0] != t0.Unix() {
		t.Errorf("the report starts at %d", r.Groups[0].Since[0])
	}
	if r := pendingReport(many[:3]); r.Truncated {
		t.Error("a small report says it is truncated")
	}
	// Past the group bound, the longest pending groups are kept, wherever
	// they sort.
	many = nil
	for i := range maxPendingGroups {
		many = append(many, pendingPod("a", fmt.Sprint("p", i), map[string]string{"app": fmt.Sprint(i)}, t0, true))
	}
	many = append(many, pendingPod("z", "oldest", map[string]string{"app": "old"}, t0.Add(-time.Hour), true))
	r = pendingReport(many)
	if !r.Truncated || !slices.ContainsFunc(r.Groups, func(g PendingGroup) bool { return g.Namespace == "z" }) {
		t.Error("the longest pending group was left out of a truncated report")
	}
	// Labels take room: the report stays within its bytes.
	many = nil
	long := strings.Repeat("v", 1000)
	for i := range 200 {
		many = append(many, pendingPod("ns", fmt.Sprint("p", i), map[string]string{"app": fmt.Sprint(i), "note": long}, t0, true))
	}
	r = pendingReport(many)
	if encoded := EncodePendingReport(r); !r.Truncated || len(encoded) > maxPendingBytes || len(r.Groups) == 0 {
		t.Errorf("%d bytes in %d groups, truncated %v", len(encoded), len(r.Groups), r.Truncated)
	}
}

func lease(annotations map[string]string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
}

type notes struct {
	mu    sync.Mutex
	heard []string
}

func (n *notes) notify(cluster, namespace string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.heard = append(n.heard, cluster+"/"+namespace)
}

func (n *notes) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.heard
	n.heard = nil
	sort.Strings(out)
	return out
}

// The control plane estimates a pull member's capacity from what its agent
// reported last: a member that never reported is unknown (not limited);
// subscribers hear of the namespaces whose unschedulable pods changed.
func TestAgentPods(t *testing.T) {
	a := NewAgentPods()
	heard := &notes{}
	unsubscribe := a.Subscribe(heard.notify)
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	if _, ok := a.UnschedulableSince("edge", "ns", web); ok {
		t.Error("a member that never reported is known")
	}
	report := func(pods ...*corev1.Pod) *coordinationv1.Lease {
		objs := make([]any, len(pods))
		for i, p := range pods {
			objs[i] = p
		}
		return lease(map[string]string{AgentPendingAnnotation: EncodePendingReport(pendingReport(objs))})
	}
	webLabels := map[string]string{"app": "web", "pod-template-hash": "a"}
	a.Heartbeat("edge", report(
		pendingPod("ns", "web-1", webLabels, t0, true),
		pendingPod("ns", "web-2", webLabels, t0.Add(time.Second), true),
		pendingPod("ns", "db-1", map[string]string{"app": "db"}, t0, true),
		pendingPod("other", "web-1", webLabels, t0, true),
	))
	if got := heard.take(); !reflect.DeepEqual(got, []string{"edge/ns", "edge/other"}) {
		t.Errorf("heard %v", got)
	}
	since, ok := a.UnschedulableSince("edge", "ns", web)
	if !ok || len(since) != 2 || !since[0].Equal(t0) || !since[1].Equal(t0.Add(time.Second)) {
		t.Errorf("UnschedulableSince() = %v %v", since, ok)
	}
	if since, ok := a.UnschedulableSince("edge", "empty", web); !ok || len(since) != 0 {
		t.Errorf("a namespace without unschedulable pods: %v %v", since, ok)
	}
	// The same report again: nothing changed, nobody is told.
	a.Heartbeat("edge", report(
		pendingPod("ns", "web-1", webLabels, t0, true),
		pendingPod("ns", "web-2", webLabels, t0.Add(time.Second), true),
		pendingPod("ns", "db-1", map[string]string{"app": "db"}, t0, true),
		pendingPod("other", "web-1", webLabels, t0, true),
	))
	if got := heard.take(); len(got) != 0 {
		t.Errorf("an unchanged report notified %v", got)
	}
	// web-2 got scheduled: only ns changed.
	a.Heartbeat("edge", report(
		pendingPod("ns", "web-1", webLabels, t0, true),
		pendingPod("ns", "db-1", map[string]string{"app": "db"}, t0, true),
		pendingPod("other", "web-1", webLabels, t0, true),
	))
	if got := heard.take(); !reflect.DeepEqual(got, []string{"edge/ns"}) {
		t.Errorf("heard %v", got)
	}
	// A heartbeat without a report (an older agent, or its pods not
	// listed yet): unknown again, every namespace it had told of.
	a.Heartbeat("edge", lease(nil))
	if _, ok := a.UnschedulableSince("edge", "ns", web); ok {
		t.Error("known after a heartbeat without a report")
	}
	if got := heard.take(); !reflect.DeepEqual(got, []string{"edge/ns", "edge/other"}) {
		t.Errorf("heard %v", got)
	}
	a.Heartbeat("edge", lease(map[string]string{AgentPendingAnnotation: "{not json"}))
	if _, ok := a.UnschedulableSince("edge", "ns", web); ok {
		t.Error("an unreadable report is taken")
	}
	// A truncated report knows only the namespaces it names.
	truncated := PendingReport{Truncated: true, Groups: []PendingGroup{{Namespace: "ns", Labels: webLabels, Since: []int64{t0.Unix()}}}}
	a.Heartbeat("edge", lease(map[string]string{AgentPendingAnnotation: EncodePendingReport(truncated)}))
	if since, ok := a.UnschedulableSince("edge", "ns", web); !ok || len(since) != 1 {
		t.Errorf("a namespace the truncated report names: %v %v", since, ok)
	}
	if _, ok := a.UnschedulableSince("edge", "other", web); ok {
		t.Error("a namespace left out of a truncated report is known")
	}
	if got := heard.take(); !slices.Contains(got, "edge/") {
		t.Errorf("truncation changed what is known everywhere, heard %v", got)
	}
	// The member is gone or in push mode: forgotten.
	a.Forget("edge")
	if _, ok := a.UnschedulableSince("edge", "ns", web); ok {
		t.Error("known after Forget")
	}
	if got := heard.take(); !slices.Contains(got, "edge/ns") {
		t.Errorf("heard %v on Forget", got)
	}
	a.Forget("edge")
	if got := heard.take(); len(got) != 0 {
		t.Errorf("forgetting an unknown member notified %v", got)
	}
	unsubscribe()
	a.Heartbeat("edge", report(pendingPod("ns", "web-1", webLabels, t0, true)))
	if got := heard.take(); len(got) != 0 {
		t.Errorf("heard %v after unsubscribing", got)
	}
}

type fixedEstimate struct {
	name string
	subs int
}

func (f *fixedEstimate) UnschedulableSince(string, string, labels.Selector) ([]time.Time, bool) {
	return []time.Time{time.Unix(int64(len(f.name)), 0)}, true
}

func (f *fixedEstimate) Subscribe(func(string, string)) func() {
	f.subs++
	return func() { f.subs-- }
}

// Members the control plane holds clients for are estimated from their
// pods, the others (pull members) from their agents' reports.
func TestMemberPodsChoosesBySourceOfTruth(t *testing.T) {
	registry := clusterclient.NewRegistry(clusterclient.ConfigOptions{})
	if _, err := registry.SetLocal("pushed", &rest.Config{Host: "https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	push, pull := &fixedEstimate{name: "p"}, &fixedEstimate{name: "pull"}
	m := memberPods{registry: registry, push: push, pull: pull}
	if got, _ := m.UnschedulableSince("pushed", "ns", labels.Everything()); got[0].Unix() != 1 {
		t.Error("a push member was not estimated from its pods")
	}
	if got, _ := m.UnschedulableSince("edge", "ns", labels.Everything()); got[0].Unix() != 4 {
		t.Error("a pull member was not estimated from its agent's reports")
	}
	unsubscribe := m.Subscribe(func(string, string) {})
	if push.subs != 1 || pull.subs != 1 {
		t.Fatalf("subscribed %d and %d times", push.subs, pull.subs)
	}
	unsubscribe()
	if push.subs != 0 || pull.subs != 0 {
		t.Error("the subscriptions outlived unsubscribing")
	}
}
