package sync

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/kubefed-io/kubefed/api/types/v1beta1"
	"github.com/kubefed-io/kubefed/pkg/jsonvalue"
)

// maxConditionMessage bounds the Propagation condition's message, which
// names every failing cluster, so that a large federation cannot push the
// object past the apiserver's size limit.
const maxConditionMessage = 4096

// buildStatus is the status a federated object's outcomes add up to. A
// reason means the object could not be placed at all; outcomes are then
// ignored. Condition times are taken from old when the condition did not
// change, so an unchanged status is equal to old and is not written.
func buildStatus(old map[string]any, generation int64, outcomes []outcome, reason, message string, now time.Time) map[string]any {
	clusters := []any{}
	if reason == "" {
		sortOutcomes(outcomes)
		var problems []string
		for _, o := range outcomes {
			if !o.listed {
				continue
			}
			c := map[string]any{"name": o.cluster}
			if o.status != "" {
				c["status"] = string(o.status)
				p := o.cluster + ": " + string(o.status)
				if o.message != "" {
					p += ": " + o.message
				}
				problems = append(problems, p)
			}
			if o.remote != nil {
				c["remoteStatus"] = jsonvalue.Copy(o.remote)
			}
			clusters = append(clusters, c)
		}
		if len(problems) > 0 {
			reason = typesv1beta1.ReasonCheckClusters
			message = strings.Join(problems, "; ")
		}
	}
	if len(message) > maxConditionMessage {
		message = message[:maxConditionMessage] + "…"
	}
	cond := map[string]any{
		"type":   typesv1beta1.ConditionPropagation,
		"status": string(metav1.ConditionTrue),
	}
	if reason != "" {
		cond["status"] = string(metav1.ConditionFalse)
		cond["reason"] = reason
		cond["message"] = message
	}
	stamp := now.UTC().Format(time.RFC3339)
	cond["lastUpdateTime"] = stamp
	cond["lastTransitionTime"] = stamp
	if prev := oldCondition(old); prev != nil {
		if prev["status"] == cond["status"] {
			if t, ok := prev["lastTransitionTime"]; ok {
				cond["lastTransitionTime"] = t
			}
			if prev["reason"] == cond["reason"] && prev["message"] == cond["message"] {
				if t, ok := prev["lastUpdateTime"]; ok {
					cond["lastUpdateTime"] = t
				}
			}
		}
	}
	status := map[string]any{
		"observedGeneration": generation,
		"conditions":         []any{cond},
	}
	if len(clusters) > 0 {
		status["clusters"] = clusters
	}
	return status
}

func oldCondition(old map[string]any) map[string]any {
	conds, _ := old["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typesv1beta1.ConditionPropagation {
			return m
		}
	}
	return nil
}

// sameJSON compares two JSON values as their encodings, which is blind to
// the int64/float64 difference of decoded numbers.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// writeStatus writes fed's status when it changed.
func (w *typeWorker) writeStatus(ctx context.Context, fed *unstructured.Unstructured, outcomes []outcome, reason, message string) error {
	old, _ := fed.Object["status"].(map[string]any)
	status := buildStatus(old, fed.GetGeneration(), outcomes, reason, message, time.Now())
	if sameJSON(old, status) {
		return nil
	}
	if reason != "" && (oldCondition(old) == nil || oldCondition(old)["reason"] != reason) {
		w.recorder.Eventf(fed, corev1.EventTypeWarning, reason, "%s", message)
	}
	if log := w.log.V(1); log.Enabled() {
		was, _ := json.Marshal(old)
		now, _ := json.Marshal(status)
		log.Info("writing status", "federatedObject", objectKey(fed), "old", string(was), "new", string(now))
	}
	obj := fed.DeepCopy()
	obj.Object["status"] = status
	if _, err := w.hostResource(obj.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}
