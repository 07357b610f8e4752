package scheduling

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubefed-io/kubefed/pkg/clusterclient"
)

func TestUnschedulableSince(t *testing.T) {
	created := metav1.NewTime(t0.Add(-time.Hour))
	since := metav1.NewTime(t0.Add(-time.Minute))
	pod := func(phase corev1.PodPhase, conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created}, Status: corev1.PodStatus{Phase: phase, Conditions: conds}}
	}
	unschedulable := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: since}
	deleting := pod(corev1.PodPending, unschedulable)
	deleting.DeletionTimestamp = &since
	tests := []struct {
		name string
		pod  *corev1.Pod
		want time.Time
		ok   bool
	}{
		{"unschedulable", pod(corev1.PodPending, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}, unschedulable), since.Time, true},
		{"without a transition time", pod(corev1.PodPending, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}), created.Time, true},
		{"pending without a condition: nobody scheduled it yet", pod(corev1.PodPending), time.Time{}, false},
		{"scheduled", pod(corev1.PodPending, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}), time.Time{}, false},
		{"another reason", pod(corev1.PodPending, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}), time.Time{}, false},
		{"not pending", pod(corev1.PodRunning, unschedulable), time.Time{}, false},
		{"being deleted", deleting, time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := unschedulableSince(tt.pod)
			if ok != tt.ok || !got.Equal(tt.want) {
				t.Errorf("unschedulableSince() = %v %v, want %v %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestTrimPod(t *testing.T) {
	since := metav1.NewTime(t0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-1", Namespace: "ns", UID: "u", ResourceVersion: "7", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"big": "value"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Message: "m", Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse},
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes", LastTransitionTime: since},
		}},
	}
	trimmed, _ := trimPod(pod)
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", UID: "u", ResourceVersion: "7", Labels: map[string]string{"app": "web"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: since},
		}},
	}
	if !reflect.DeepEqual(trimmed, want) {
		t.Fatalf("trimPod() = %+v", trimmed)
	}
	if again, _ := trimPod(trimmed); !reflect.DeepEqual(again, want) {
		t.Fatal("trimPod is not idempotent")
	}
}

// The informer of a cluster that left the Registry stops at the next
// question about any cluster, not when leadership ends.
func TestPendingPodsStopTheInformersOfClustersGone(t *testing.T) {
	registry := clusterclient.NewRegistry(clusterclient.ConfigOptions{})
	for _, name := range []string{"c1", "c2"} {
		// Nothing listens there: the informers retry with backoff.
		if _, err := registry.SetLocal(name, &rest.Config{Host: "https://127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
	}
	p := NewPendingPods(registry, "", logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- p.Start(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for p.informerFor("c1") == nil {
		if time.Now().After(deadline) {
			t.Fatal("PendingPods did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p.informerFor("c2") == nil {
		t.Fatal("no informer for c2")
	}
	p.mu.Lock()
	c1 := p.informers["c1"]
	p.mu.Unlock()

	registry.Remove("c1")
	p.informerFor("c2")
	p.mu.Lock()
	_, kept := p.informers["c1"]
	n := len(p.informers)
	p.mu.Unlock()
	if kept || n != 1 {
		t.Errorf("informers after c1 left: %d, c1 kept %v", n, kept)
	}
	// RunWithContext returns once the informer saw its context end.
	deadline = time.Now().Add(5 * time.Second)
	for !c1.informer.IsStopped() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !c1.informer.IsStopped() {
		t.Error("c1's informer still runs")
	}
	cancel()
	<-started
}
