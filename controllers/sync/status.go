package sync

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

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

// statusRecord is the status this engine last wrote to an object: the
// host cache may not show it yet, and comparing with the cache alone would
// write it again.
type statusRecord struct {
	status map[string]any
	// before and after are the object's resourceVersions around the write.
	before, after string
}

// syncStatus writes the status a federated object's members add up to,
// once the members of its latest plans answered (or statusHold passed),
// and releases an object being deleted once no member holds a copy.
func (w *typeWorker) syncStatus(ctx context.Context, key string) (time.Duration, error) {
	w.stateMu.Lock()
	st := w.states[key]
	var v statusView
	released := false
	if st != nil {
		v = st.view(time.Now())
		released = st.released()
	}
	w.stateMu.Unlock()
	if st == nil {
		return 0, nil
	}
	obj, exists, err := w.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return 0, err
	}
	if st.gone {
		// Copies of an object that is gone: forget them once released.
		if !exists && released {
			w.dropStateIf(key, st)
		}
		return v.wait, nil
	}
	fed, ok := obj.(*unstructured.Unstructured)
	if !exists || !ok || fed.GetUID() != st.uid || fed.GetGeneration() != st.generation {
		// The object changed or went away; its reconcile plans again.
		return 0, nil
	}
	if st.reason != "" {
		return 0, w.writeStatus(ctx, key, fed, nil, st.reason, st.message)
	}
	if v.pending {
		return 0, nil
	}
	if v.wait > 0 {
		return v.wait, nil
	}
	if st.deleting {
		if anyListed(v.outcomes) {
			return 0, w.writeStatus(ctx, key, fed, v.outcomes, "", "")
		}
		return 0, w.releaseFinalizer(ctx, fed, st.leftBehind)
	}
	failed := false
	for _, o := range v.outcomes {
		failed = failed || o.status != ""
	}
	if !failed {
		w.settled(fed)
	}
	return 0, w.writeStatus(ctx, key, fed, v.outcomes, "", "")
}

func anyListed(outcomes []outcome) bool {
	for _, o := range outcomes {
		if o.listed {
			return true
		}
	}
	return false
}

// dropStateIf forgets an object's state if it is still st.
func (w *typeWorker) dropStateIf(key string, st *objectState) {
	w.stateMu.Lock()
	if w.states[key] == st {
		delete(w.states, key)
	}
	w.stateMu.Unlock()
}

// cacheBehind reports whether a cached object at resourceVersion rv is older
// than our status write rec. Resource versions of one resource compare as
// integers (apimachinery's resourceversion package); where one does not,
// only the version our write started from counts as behind.
func cacheBehind(rv string, rec statusRecord) bool {
	if c, err := resourceversion.CompareResourceVersion(rv, rec.after); err == nil {
		return c < 0
	}
	return rv == rec.before
}

// statusSeen forgets our last status write of an object once the host
// cache shows it (or something newer).
func (w *typeWorker) statusSeen(fed *unstructured.Unstructured) {
	key := objectKey(fed)
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	if rec, ok := w.statusWritten[key]; ok && !cacheBehind(fed.GetResourceVersion(), rec) {
		delete(w.statusWritten, key)
	}
}

// writeStatus writes fed's status when it changed. It is a merge patch of
// the status alone, guarded by the object's UID: the status worker is the
// only writer of an object's status at a time and writes all of it, so a
// resourceVersion precondition would only add conflicts with our own
// finalizer and the users' spec writes.
func (w *typeWorker) writeStatus(ctx context.Context, key string, fed *unstructured.Unstructured, outcomes []outcome, reason, message string) error {
	old, _ := fed.Object["status"].(map[string]any)
	w.statusMu.Lock()
	rec, ok := w.statusWritten[key]
	w.statusMu.Unlock()
	if ok && cacheBehind(fed.GetResourceVersion(), rec) {
		// The cache does not show our last write yet.
		old = rec.status
	}
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
		log.Info("writing status", "federatedObject", key, "old", string(was), "new", string(now))
	}
	patch := map[string]any{}
	for k, v := range status {
		patch[k] = v
	}
	for k := range old {
		if _, ok := status[k]; !ok {
			patch[k] = nil
		}
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": string(fed.GetUID())},
		"status":   patch,
	})
	if err != nil {
		return err
	}
	updated, err := w.hostResource(fed.GetNamespace()).Patch(ctx, fed.GetName(), types.MergePatchType, body, metav1.PatchOptions{}, "status")
	statusWrites.Inc()
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			// Deleted, or replaced by an object of the same name.
			return nil
		}
		return fmt.Errorf("write status: %w", err)
	}
	w.statusMu.Lock()
	w.statusWritten[key] = statusRecord{status: status, before: fed.GetResourceVersion(), after: updated.GetResourceVersion()}
	w.statusMu.Unlock()
	return nil
}
