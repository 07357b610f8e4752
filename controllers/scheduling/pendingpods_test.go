package scheduling

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
